/* check_mpi.c - the sorting programs' MPI check (keys_mpi.h). */
#include <mpi.h>
#include <stdlib.h>

#include "keys.h"
#include "keys_mpi.h"

int rx_check_mpi(const uint32_t *k, uint64_t n, int me, int np, const uint64_t fp_in[3])
{
    uint64_t *v = malloc(2 * RX_SUMMARY_LEN(np) * sizeof *v);
    if (v == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    rx_summary(k, n, me, np, v);
    MPI_Allreduce(v, v + RX_SUMMARY_LEN(np), (int)RX_SUMMARY_LEN(np), MPI_UINT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    const int ok = rx_summary_ok(v + RX_SUMMARY_LEN(np), fp_in, np);
    free(v);
    return ok;
}
