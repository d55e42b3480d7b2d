/* barrier-mpi - the barrier loop with MPI: "coll" (default) MPI_Barrier,
 * "p2p" the same dissemination as librq's am variant, an MPI_Irecv posted
 * before each round's MPI_Send and completed by MPI_Wait.
 *
 * Usage: barrier-mpi [--variant coll|p2p] <iterations> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>

#include "app.h"
#include "fail.h"
#include "finegrain.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    static const char *const names[] = {"coll", "p2p"};
    const int v = rqa_variant(&argc, argv, "variant", names, 2, "coll");
    uint64_t iters;
    if (v < 0)
        return rqa_mpi_fail("ERROR: unknown variant");
    if (argc != 2)
        return rqa_mpi_fail("Usage: barrier-mpi [--variant coll|p2p] <iterations>");
    if (rqa_parse_count(argv[1], 1, &iters) != 0)
        return rqa_mpi_fail("ERROR: iterations must be in [1, " RQA_COUNT_MAX_S "]");
    int rounds = 0;
    while ((1 << rounds) < np)
        rounds++;
    struct rqa_fg fg = {0};
    if (me == 0)
        printf("MPI barrier: %d ranks, %llu barriers, %s\n", np, (unsigned long long)iters,
               v == 0 ? "MPI_Barrier" : "dissemination of MPI_Irecv/MPI_Send");
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    uint64_t bad = 0;
    for (uint64_t e = 0; e < iters; e++) {
        if (v == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            continue;
        }
        for (int k = 0; k < rounds; k++) {
            uint64_t out = e, in = 0;
            MPI_Request r;
            MPI_Irecv(&in, 1, MPI_UINT64_T, (me - (1 << k) % np + np) % np, k, MPI_COMM_WORLD, &r);
            MPI_Send(&out, 1, MPI_UINT64_T, (me + (1 << k)) % np, k, MPI_COMM_WORLD);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            bad += in != e;
            fg.sent++;
            fg.received++;
        }
    }
    double secs = MPI_Wtime() - t0, slowest;
    MPI_Allreduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    uint64_t tot_bad;
    MPI_Allreduce(&bad, &tot_bad, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    struct rqa_fg tot;
    rqa_fg_sum_mpi(&fg, &tot);
    if (me == 0) {
        if (tot_bad != 0) {
            printf("ERROR: %llu barrier messages out of order\n", (unsigned long long)tot_bad);
        } else {
            rqa_fg_print("barrier-mpi", np, slowest, &tot);
            printf("Solution validates\n");
            printf("Rate (barriers/s): %.0f  Avg time (us): %.3f\n", (double)iters / slowest,
                   slowest * 1e6 / (double)iters);
        }
    }
    fflush(stdout);
    MPI_Finalize();
    return tot_bad != 0;
}
