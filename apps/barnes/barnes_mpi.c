/* barnes-mpi - the same Barnes-Hut kernel as barnes, as an MPI user would
 * write it at this scale: each rank owns a block of bodies; a step gathers
 * every body (MPI_Allgatherv of 32 bytes per body), builds the whole tree
 * in private memory (a replicated tree: no fine-grain traffic at all),
 * walks it for its own bodies and moves them.  Compared with the serial
 * run.
 *
 * Usage: barnes-mpi <bodies> <steps> */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "finegrain.h"
#include "kernel.h"
#include "placement.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    double line = rqa_placement_mpi();
    uint64_t n, steps;
    if (argc != 3 || rqa_parse_u64(argv[1], &n) != 0 || rqa_parse_u64(argv[2], &steps) != 0 ||
        n < 2 || n < (uint64_t)np || n > 4000000 || steps < 1 || steps > 100000) {
        if (me == 0)
            fprintf(stderr, "Usage: barnes-mpi <bodies> <steps> (ranks <= bodies <= "
                            "4000000, 1 <= steps <= 100000)\n");
        MPI_Finalize();
        return 1;
    }
    const struct barnes b = barnes_setup(n);
    const size_t lo = rqa_block_lo(n, np, me), hi = rqa_block_lo(n, np, me + 1);
    int *cnt = malloc((size_t)np * sizeof *cnt), *dsp = malloc((size_t)np * sizeof *dsp);
    struct bh_body *all = calloc(n, sizeof *all);
    double *vel = calloc(3 * (hi - lo) + 1, sizeof *vel), *acc = calloc(3 * (hi - lo) + 1, 8);
    if (!cnt || !dsp || !all || !vel || !acc) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int r = 0; r < np; r++) { /* 4 doubles per body */
        cnt[r] = (int)(4 * (rqa_block_lo(n, np, r + 1) - rqa_block_lo(n, np, r)));
        dsp[r] = (int)(4 * rqa_block_lo(n, np, r));
    }
    for (size_t i = lo; i < hi; i++)
        barnes_body(&b, i, &all[i], vel + 3 * (i - lo));
    struct bh_local tree = {0};
    struct bh_access a;
    bh_local_access(&tree, &a);
    struct rqa_fg fg = {0};
    uint64_t inter = 0;
    int bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        printf("MPI barnes: %llu bodies, %llu steps, %d ranks\n", (unsigned long long)n,
               (unsigned long long)steps, np);
    double t0 = rqa_now();
    for (uint64_t s = 0; s < steps && !bad; s++) {
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, cnt, dsp, MPI_DOUBLE,
                       MPI_COMM_WORLD);
        fg.sent += (uint64_t)(np - 1);
        fg.received += (uint64_t)(np - 1);
        struct bh_box box;
        if (bh_local_build(&b, &tree, all, &box) != 0) {
            bad = 1;
            break;
        }
        for (size_t i = lo; i < hi; i++)
            inter += bh_accel(&b, &a, 0, box, (int32_t)i, all[i].pos, acc + 3 * (i - lo));
        for (size_t i = lo; i < hi; i++)
            bh_move(&b, &all[i], vel + 3 * (i - lo), acc + 3 * (i - lo));
    }
    double secs = rqa_now() - t0, slowest = 0;
    MPI_Reduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    uint64_t all_inter = 0;
    MPI_Reduce(&inter, &all_inter, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    struct rqa_fg tot;
    rqa_fg_sum_mpi(&fg, &tot);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Gatherv(me == 0 ? MPI_IN_PLACE : (void *)&all[lo], cnt[me], MPI_DOUBLE, all, cnt, dsp,
                MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0) {
        rqa_placement_print(line);
        printf("Time (s)             = %.6f\n", slowest);
        printf("Interactions         = %llu per step\n",
               (unsigned long long)(all_inter / steps));
        rqa_fg_print("barnes-mpi", np, slowest, &tot);
        struct bh_body *sb = malloc(n * sizeof *sb);
        double worst = 0;
        if (bad || sb == NULL || barnes_serial(&b, (int)steps, sb) != 0)
            bad = 1;
        for (size_t i = 0; !bad && i < n; i++)
            for (int d = 0; d < 3; d++)
                worst = fmax(worst, fabs(all[i].pos[d] - sb[i].pos[d]));
        bad = bad || !(worst <= 1e-9);
        printf("Max |x - serial|     = %.3g\n", worst);
        printf(bad ? "ERROR: positions differ from the serial run\n" : "Solution validates\n");
        free(sb);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    bh_local_free(&tree);
    free(cnt);
    free(dsp);
    free(all);
    free(vel);
    free(acc);
    MPI_Finalize();
    return bad;
}
