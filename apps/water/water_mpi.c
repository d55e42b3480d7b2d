/* water-mpi - the same simplified Water kernel as water, as an MPI user
 * would write it: each rank owns a block of molecules; a step gathers all
 * positions (MPI_Allgatherv), computes its pairs into a private force
 * array, and sums the forces onto their owners (MPI_Reduce_scatter), then
 * moves its molecules.  Compared with the serial run.
 *
 * Usage: water-mpi <molecules> <steps> */
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
        n < 2 || n < (uint64_t)np || n > 1000000 || steps < 1 || steps > 100000) {
        if (me == 0)
            fprintf(stderr, "Usage: water-mpi <molecules> <steps> (ranks <= molecules <= "
                            "1000000, 1 <= steps <= 100000)\n");
        MPI_Finalize();
        return 1;
    }
    const struct water w = water_setup(n);
    const size_t lo = rqa_block_lo(n, np, me), hi = rqa_block_lo(n, np, me + 1);
    int *cnt = malloc((size_t)np * sizeof *cnt), *dsp = malloc((size_t)np * sizeof *dsp);
    double *pos = calloc(3 * n, sizeof *pos), *vel = calloc(3 * n, sizeof *vel);
    double *f = calloc(3 * n, sizeof *f), *mine = calloc(3 * (hi - lo) + 1, sizeof *mine);
    if (!cnt || !dsp || !pos || !vel || !f || !mine) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int r = 0; r < np; r++) {
        cnt[r] = (int)(3 * (rqa_block_lo(n, np, r + 1) - rqa_block_lo(n, np, r)));
        dsp[r] = (int)(3 * rqa_block_lo(n, np, r));
    }
    for (size_t i = lo; i < hi; i++)
        water_position(&w, i, pos + 3 * i);
    struct rqa_fg fg = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        printf("MPI water: %llu molecules, %llu steps, %d ranks\n", (unsigned long long)n,
               (unsigned long long)steps, np);
    double t0 = rqa_now();
    for (uint64_t s = 0; s < steps; s++) {
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, pos, cnt, dsp, MPI_DOUBLE,
                       MPI_COMM_WORLD);
        memset(f, 0, 3 * n * sizeof *f);
        water_forces(&w, pos, lo, hi, f);
        MPI_Reduce_scatter(f, mine, cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        memcpy(f + 3 * lo, mine, 3 * (hi - lo) * sizeof *f);
        water_move(&w, pos, vel, f, lo, hi);
        fg.sent += 2 * (uint64_t)(np - 1);
        fg.received += 2 * (uint64_t)(np - 1);
    }
    double secs = rqa_now() - t0, slowest = 0;
    MPI_Reduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    struct rqa_fg tot;
    rqa_fg_sum_mpi(&fg, &tot);
    MPI_Gatherv(me == 0 ? MPI_IN_PLACE : pos + 3 * lo, cnt[me], MPI_DOUBLE, pos, cnt, dsp,
                MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int bad = 0;
    if (me == 0) {
        rqa_placement_print(line);
        printf("Time (s)             = %.6f\n", slowest);
        rqa_fg_print("water-mpi", np, slowest, &tot);
        double *sp = malloc(3 * n * sizeof *sp), *sv = malloc(3 * n * sizeof *sv);
        double worst = 0;
        if (!sp || !sv)
            MPI_Abort(MPI_COMM_WORLD, 1);
        water_serial(&w, (int)steps, sp, sv);
        for (size_t e = 0; e < 3 * n; e++) {
            double d = fabs(pos[e] - sp[e]);
            d = d > 0.5 * w.box ? w.box - d : d;
            worst = d > worst ? d : worst;
        }
        bad = !(worst <= 1e-7 * w.box);
        printf("Max |x - serial|     = %.3g\n", worst);
        printf(bad ? "ERROR: positions differ from the serial run\n" : "Solution validates\n");
        free(sp);
        free(sv);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(cnt);
    free(dsp);
    free(pos);
    free(vel);
    free(f);
    free(mine);
    MPI_Finalize();
    return bad;
}
