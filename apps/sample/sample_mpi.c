/* sample-mpi - the same sample sort with MPI, as an MPI user writes it:
 * MPI_Allgather of the samples, the same splitters, the keys grouped by
 * destination, MPI_Alltoall of the counts, one MPI_Alltoallv, then the
 * same local radix sort.  Same keys, checks and output as the librq
 * version (keys.h).
 *
 * Usage: sample-mpi [--reps R] <keys per rank> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "fail.h"
#include "keys.h"
#include "keys_mpi.h"
#include "placement.h"

#define SX_OVERSAMPLE 64u /* as the librq version */

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
    const uint64_t n = a.n;
    uint64_t cap = 3 * n + 4096 < (uint64_t)np * n ? 3 * n + 4096 : (uint64_t)np * n;
    if (cap < (uint64_t)np * SX_OVERSAMPLE)
        cap = (uint64_t)np * SX_OVERSAMPLE;
    if (cap > INT32_MAX)
        return rqa_mpi_fail("ERROR: more keys than an MPI count");
    uint32_t *keys = malloc(n * sizeof *keys), *grouped = malloc(n * sizeof *grouped);
    uint32_t *recv = malloc(cap * sizeof *recv), *tmp = malloc(cap * sizeof *tmp);
    uint32_t *mine = malloc(SX_OVERSAMPLE * sizeof *mine), *split = malloc((size_t)np * 4);
    int *ints = malloc(4 * (size_t)np * sizeof *ints);
    double *times = malloc((size_t)a.reps * sizeof *times);
    if (!keys || !grouped || !recv || !tmp || !mine || !split || !ints || !times)
        return rqa_mpi_fail("ERROR: out of memory");
    int *scount = ints, *rcount = ints + np, *sdispl = ints + 2 * np, *rdispl = ints + 3 * np;
    if (me == 0) {
        printf("Split-C sample sort, MPI version (alltoallv)\n");
        printf("Number of ranks      = %d\n", np);
        printf("Keys per rank        = %llu\n", (unsigned long long)n);
        printf("Samples per rank     = %u\n", SX_OVERSAMPLE);
        rqa_placement_print(line_ns);
    }
    int ok = 1, overflow = 0;
    for (int rep = 0; rep < a.reps; rep++) {
        rx_fill(keys, n, me);
        uint64_t fp_in[3], fp_in_all[3];
        rx_fingerprint(keys, n, fp_in);
        MPI_Allreduce(fp_in, fp_in_all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        uint64_t s = 0x5a3b1e00ull + (uint64_t)rep * 0x10000ull + (uint64_t)me;
        for (unsigned i = 0; i < SX_OVERSAMPLE; i++)
            mine[i] = keys[rqa_splitmix(&s) % n];
        MPI_Allgather(mine, SX_OVERSAMPLE, MPI_UINT32_T, tmp, SX_OVERSAMPLE, MPI_UINT32_T,
                      MPI_COMM_WORLD);
        rx_splitters(tmp, np, SX_OVERSAMPLE, split);
        memset(scount, 0, (size_t)np * sizeof *scount);
        for (uint64_t i = 0; i < n; i++)
            scount[rx_bucket(keys[i], split, np)]++;
        sdispl[0] = 0;
        for (int d = 1; d < np; d++)
            sdispl[d] = sdispl[d - 1] + scount[d - 1];
        for (uint64_t i = 0; i < n; i++)
            grouped[sdispl[rx_bucket(keys[i], split, np)]++] = keys[i];
        for (int d = 0; d < np; d++)
            sdispl[d] -= scount[d];
        MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
        uint64_t total = 0;
        for (int r = 0; r < np; r++) {
            rdispl[r] = (int)(total < cap ? total : cap);
            total += (uint64_t)rcount[r];
        }
        int over = total > cap, any_over;
        MPI_Allreduce(&over, &any_over, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any_over) {
            overflow = 1;
            break;
        }
        MPI_Alltoallv(grouped, scount, sdispl, MPI_UINT32_T, recv, rcount, rdispl, MPI_UINT32_T,
                      MPI_COMM_WORLD);
        rx_local_sort(recv, tmp, total);
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(&t, &times[rep], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        ok &= rx_check_mpi(recv, total, me, np, fp_in_all);
    }
    int failed = 1;
    if (me == 0) {
        if (overflow)
            printf("ERROR: a rank would receive more than %llu keys (unlucky splitters)\n",
                   (unsigned long long)cap);
        else
            failed = rx_result("sample-mpi", ok, np, &a, rqa_median(times, a.reps));
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(keys);
    free(grouped);
    free(recv);
    free(tmp);
    free(mine);
    free(split);
    free(ints);
    free(times);
    fflush(stdout);
    MPI_Finalize();
    return failed;
}
