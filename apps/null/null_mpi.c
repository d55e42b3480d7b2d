/* null-mpi - the null program with MPI (no communication in the loop).
 *
 * Usage: null-mpi <iterations> [work_ns (default 1000)] */
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
    uint64_t iters, work = 1000;
    if (argc != 2 && argc != 3)
        return rqa_mpi_fail("Usage: null-mpi <iterations> [work_ns]");
    if (rqa_parse_count(argv[1], 1, &iters) != 0)
        return rqa_mpi_fail("ERROR: iterations must be in [1, " RQA_COUNT_MAX_S "]");
    if (argc == 3 && rqa_parse_count(argv[2], 1, &work) != 0)
        return rqa_mpi_fail("ERROR: work_ns must be in [1, " RQA_COUNT_MAX_S "]");
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        printf("MPI null: %d ranks, %llu iterations of %llu ns\n", np, (unsigned long long)iters,
               (unsigned long long)work);
    double t0 = MPI_Wtime();
    uint64_t done = 0, all;
    for (uint64_t i = 0; i < iters; i++, done++)
        rqa_fg_spin_ns((double)work);
    double secs = MPI_Wtime() - t0, slowest;
    MPI_Allreduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&done, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    struct rqa_fg fg = {0}, tot;
    rqa_fg_sum_mpi(&fg, &tot);
    if (me == 0) {
        if (all != iters * (uint64_t)np) {
            printf("ERROR: %llu of %llu iterations done\n", (unsigned long long)all,
                   (unsigned long long)(iters * (uint64_t)np));
        } else {
            rqa_fg_print("null-mpi", np, slowest, &tot);
            printf("Solution validates\n");
            printf("Slowdown over the work alone: %.4f\n", slowest * 1e9 / ((double)iters * work));
        }
    }
    fflush(stdout);
    MPI_Finalize();
    return all != iters * (uint64_t)np;
}
