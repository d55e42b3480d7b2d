/* bitonic-mpi - the same bitonic sort with MPI, as an MPI user writes it:
 * the same local sort and network; each step swaps blocks with the
 * partner in one MPI_Sendrecv and merge-splits.  Same keys, checks and
 * output as the librq version (keys.h).
 *
 * Usage: bitonic-mpi [--reps R] <keys per rank> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "fail.h"
#include "keys.h"
#include "keys_mpi.h"
#include "placement.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const double line_ns = rqa_placement_mpi();
    struct rx_args a;
    char err[200];
    if (rx_parse(argc, argv, &a, err, sizeof err) != 0)
        return rqa_mpi_fail(err);
    if ((np & (np - 1)) != 0) {
        snprintf(err, sizeof err, "ERROR: the number of ranks must be a power of two: %d", np);
        return rqa_mpi_fail(err);
    }
    const uint64_t n = a.n;
    if (n > INT32_MAX)
        return rqa_mpi_fail("ERROR: more keys than an MPI count");
    uint32_t *blk[2] = {malloc(n * sizeof(uint32_t)), malloc(n * sizeof(uint32_t))};
    uint32_t *theirs = malloc(n * sizeof *theirs);
    double *times = malloc((size_t)a.reps * sizeof *times);
    if (!blk[0] || !blk[1] || !theirs || !times)
        return rqa_mpi_fail("ERROR: out of memory");
    if (me == 0) {
        printf("Split-C bitonic sort, MPI version (sendrecv)\n");
        printf("Number of ranks      = %d\n", np);
        printf("Keys per rank        = %llu\n", (unsigned long long)n);
        rqa_placement_print(line_ns);
    }
    int ok = 1, cur = 0;
    for (int rep = 0; rep < a.reps; rep++) {
        rx_fill(blk[0], n, me);
        uint64_t fp_in[3], fp_in_all[3];
        rx_fingerprint(blk[0], n, fp_in);
        MPI_Allreduce(fp_in, fp_in_all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        rx_local_sort(blk[0], blk[1], n);
        cur = 0;
        for (int k = 1; (1 << k) <= np; k++)
            for (int j = k - 1; j >= 0; j--) {
                const int partner = me ^ (1 << j);
                const int up = ((me >> k) & 1) == 0, keep_low = (me < partner) == up;
                MPI_Sendrecv(blk[cur], (int)n, MPI_UINT32_T, partner, 0, theirs, (int)n,
                             MPI_UINT32_T, partner, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                rx_merge_split(blk[cur], theirs, n, keep_low, blk[cur ^ 1]);
                cur ^= 1;
            }
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(&t, &times[rep], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        ok &= rx_check_mpi(blk[cur], n, me, np, fp_in_all);
    }
    int failed = 0;
    if (me == 0)
        failed = rx_result("bitonic-mpi", ok, np, &a, rqa_median(times, a.reps));
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(blk[0]);
    free(blk[1]);
    free(theirs);
    free(times);
    fflush(stdout);
    MPI_Finalize();
    return failed;
}
