/* water - the n-squared molecular-dynamics kernel of SPLASH-2 Water on
 * rqdsm (FUGU runs Water on CRL, thesis section 7.1; simplified, see
 * kernel.h).  Each rank owns a block of molecules and homes two regions:
 * their positions and the forces on them.  A step: every rank reads every
 * position region (read misses where an owner moved its molecules), computes
 * its pairs into a private force array, then adds its contributions into
 * every owner's force region in a write section (the contended, fine-grain
 * part: every rank writes every force region each step); after a barrier
 * each owner moves its molecules.  Compared with a serial run.
 *
 * --app-threads A runs A application threads per rank (a rank is an
 * A-processor node sharing one copy of each region): each computes the
 * pairs of an A-th of the rank's molecules into its own force array and
 * adds them in; idle threads at a barrier run the protocol's handlers.
 *
 * Usage: water [--protocol P] [--threads T] [--app-threads A] [--dsm-block B]
 *              <molecules> <steps> */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>
#include <rqdsm.h>

#include "app.h"
#include "dsmapp.h"
#include "fail.h"
#include "kernel.h"
#include "placement.h"

/* One run: what the rank's application threads share.  Thread t of A
 * takes the t-th of A equal parts of the rank's molecules. */
struct water_run {
    rq_ctx_t              *ctx;
    rqdsm_t               *dsm;
    const struct water    *w;
    rqdsm_region_t       **pos_r, **frc_r;
    double                *vel;
    size_t                 n;
    uint64_t               steps;
    size_t                 lo, hi;
    int                    me, np;
    int                    rc;    /* a barrier's failure (thread 0 keeps it) */
    _Atomic uint64_t       pairs;
};

static void part_of(const struct water_run *W, int t, size_t *lo, size_t *hi)
{
    int a = rqa_app_threads();
    *lo = W->lo + rqa_block_lo(W->hi - W->lo, a, t);
    *hi = W->lo + rqa_block_lo(W->hi - W->lo, a, t + 1);
}

static void water_init(int t, void *arg)
{
    struct water_run *W = arg;
    size_t lo, hi;
    part_of(W, t, &lo, &hi);
    if (hi > lo) {
        size_t off = 3 * (lo - W->lo) * sizeof(double), len = 3 * (hi - lo) * sizeof(double);
        rqdsm_start_write(W->pos_r[W->me], off, len);
        for (size_t i = lo; i < hi; i++)
            water_position(W->w, i, (double *)rqdsm_ptr(W->pos_r[W->me]) + 3 * (i - W->lo));
        rqdsm_end_write(W->pos_r[W->me], off, len);
    }
    int rc = rqa_team_barrier(W->ctx, W->dsm);
    if (t == 0)
        W->rc = rc;
}

/* Each thread: its own copy of every position and its own force array;
 * the rank's copy of each region is shared (the first thread's miss
 * serves the others). */
static void water_steps(int t, void *arg)
{
    struct water_run *W = arg;
    const size_t n = W->n;
    const int np = W->np, me = W->me;
    size_t lo, hi;
    part_of(W, t, &lo, &hi);
    double *pos = calloc(3 * n, sizeof *pos), *f = calloc(3 * n, sizeof *f);
    int rc = pos == NULL || f == NULL ? RQ_ENOMEM : 0;
    uint64_t pairs = 0;
    const size_t off = 3 * (lo - W->lo) * sizeof(double), len = 3 * (hi - lo) * sizeof(double);
    for (uint64_t s = 0; s < W->steps && rc == 0; s++) {
        for (int r = 0; r < np; r++) {
            size_t rl = rqa_block_lo(n, np, r), rh = rqa_block_lo(n, np, r + 1);
            rqdsm_start_read(W->pos_r[r], 0, 0);
            memcpy(pos + 3 * rl, rqdsm_ptr(W->pos_r[r]), 3 * (rh - rl) * sizeof(double));
            rqdsm_end_read(W->pos_r[r], 0, 0);
        }
        memset(f, 0, 3 * n * sizeof *f);
        pairs += water_forces(W->w, pos, lo, hi, f);
        for (int k = 1; k <= np; k++) { /* my neighbour first: spread the contention */
            int r = (me + k) % np;
            size_t rl = rqa_block_lo(n, np, r), rh = rqa_block_lo(n, np, r + 1);
            rqdsm_start_write(W->frc_r[r], 0, 0);
            double *g = rqdsm_ptr(W->frc_r[r]);
            for (size_t e = 0; e < 3 * (rh - rl); e++)
                g[e] += f[3 * rl + e];
            rqdsm_end_write(W->frc_r[r], 0, 0);
        }
        rc = rqa_team_barrier(W->ctx, W->dsm);
        if (hi > lo) { /* my molecules: take their forces, move them */
            rqdsm_start_write(W->frc_r[me], off, len);
            double *g = (double *)rqdsm_ptr(W->frc_r[me]) + 3 * (lo - W->lo);
            memcpy(f + 3 * lo, g, len);
            memset(g, 0, len);
            rqdsm_end_write(W->frc_r[me], off, len);
            rqdsm_start_write(W->pos_r[me], off, len);
            water_move(W->w, pos, W->vel, f, lo, hi);
            memcpy((double *)rqdsm_ptr(W->pos_r[me]) + 3 * (lo - W->lo), pos + 3 * lo, len);
            rqdsm_end_write(W->pos_r[me], off, len);
        }
        if (rc == 0)
            rc = rqa_team_barrier(W->ctx, W->dsm);
    }
    free(pos);
    free(f);
    atomic_fetch_add(&W->pairs, pairs);
    if (t == 0)
        W->rc = rc;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    double line = rqa_placement_rq(ctx);
    rqdsm_t *dsm;
    char org[96];
    const char *usage = "Usage: water [--protocol P] [--threads T] [--app-threads A] "
                        "[--dsm-block B] <molecules> <steps>";
    if (rqa_dsm_start(ctx, &argc, argv, &dsm, org, sizeof org) != 0)
        return rqa_fail(ctx, usage);
    uint64_t n, steps;
    if (argc != 3 || rqa_parse_u64(argv[1], &n) != 0 || rqa_parse_u64(argv[2], &steps) != 0)
        return rqa_fail(ctx, usage);
    const int me = rq_rank(ctx), np = rq_size(ctx);
    if (n < 2 || n < (uint64_t)np || n > 1000000 || steps < 1 || steps > 100000)
        return rqa_fail(ctx, "ERROR: need ranks <= molecules <= 1000000, 2 or more, and "
                             "1 <= steps <= 100000");
    const struct water w = water_setup(n);
    const size_t lo = rqa_block_lo(n, np, me), hi = rqa_block_lo(n, np, me + 1);

    /* my two regions; every rank maps every rank's */
    uint64_t *mine = calloc(2 * (size_t)np, 8), *rid = calloc(2 * (size_t)np, 8);
    rqdsm_region_t **pos_r = calloc((size_t)np, sizeof *pos_r);
    rqdsm_region_t **frc_r = calloc((size_t)np, sizeof *frc_r);
    double *vel = calloc(3 * n, sizeof *vel); /* the rank's threads' parts */
    if (!mine || !rid || !pos_r || !frc_r || !vel)
        return rqa_fail(ctx, "ERROR: out of memory");
    size_t bytes = 3 * (hi - lo) * sizeof(double);
    if (rqdsm_create(dsm, bytes, &mine[2 * me]) != 0 ||
        rqdsm_create(dsm, bytes, &mine[2 * me + 1]) != 0)
        return rqa_fail(ctx, "ERROR: rqdsm_create failed");
    if (rq_allreduce(ctx, mine, rid, 2 * (size_t)np, RQ_UINT64, RQ_SUM) != 0)
        return rqa_fail(ctx, "ERROR: allreduce failed");
    for (int r = 0; r < np; r++)
        if (rqdsm_map(dsm, rid[2 * r], &pos_r[r]) != 0 ||
            rqdsm_map(dsm, rid[2 * r + 1], &frc_r[r]) != 0)
            return rqa_fail(ctx, "ERROR: rqdsm_map failed");
    struct water_run W = {ctx, dsm, &w, pos_r, frc_r, vel, n, steps, lo, hi, me, np, 0, 0};
    if (rqa_team_run(water_init, &W) != 0)
        return rqa_fail(ctx, "ERROR: an application thread did not start");
    int rc = W.rc;
    if (me == 0)
        printf("librq water: %llu molecules, %llu steps, %d ranks, %s\n",
               (unsigned long long)n, (unsigned long long)steps, np, org);
    double t0 = rqa_now();
    if (rc == 0 && rqa_team_run(water_steps, &W) != 0)
        return rqa_fail(ctx, "ERROR: an application thread did not start");
    rc = rc != 0 ? rc : W.rc;
    uint64_t pairs = atomic_load(&W.pairs);
    double secs = rqa_now() - t0;
    if (rc != 0)
        return rqa_fail(ctx, "ERROR: a barrier failed");
    uint64_t all_pairs = 0;
    rq_allreduce(ctx, &pairs, &all_pairs, 1, RQ_UINT64, RQ_SUM);
    if (me == 0) {
        rqa_placement_print(line);
        printf("Time (s)             = %.6f\n", secs);
        printf("Pairs in range       = %llu per step\n", (unsigned long long)(all_pairs / steps));
    }
    rqa_dsm_report(ctx, dsm, "water", secs);

    int bad = 0;
    double worst = 0;
    if (me == 0) {
        double *sp = malloc(3 * n * sizeof *sp), *sv = malloc(3 * n * sizeof *sv);
        if (!sp || !sv)
            return rqa_fail(ctx, "ERROR: out of memory");
        water_serial(&w, (int)steps, sp, sv);
        for (int r = 0; r < np; r++) {
            size_t rl = rqa_block_lo(n, np, r), rh = rqa_block_lo(n, np, r + 1);
            rqdsm_start_read(pos_r[r], 0, 0);
            const double *p = rqdsm_ptr(pos_r[r]);
            for (size_t e = 0; e < 3 * (rh - rl); e++) {
                double d = fabs(p[e] - sp[3 * rl + e]);
                d = d > 0.5 * w.box ? w.box - d : d; /* across the wrap */
                worst = d > worst ? d : worst;
            }
            rqdsm_end_read(pos_r[r], 0, 0);
        }
        free(sp);
        free(sv);
        bad = !(worst <= 1e-7 * w.box);
    }
    rqa_dsm_barrier(ctx, dsm);
    if (me == 0) {
        printf("Max |x - serial|     = %.3g\n", worst);
        printf(bad ? "ERROR: positions differ from the serial run\n" : "Solution validates\n");
    }
    for (int r = 0; r < np; r++) {
        rqdsm_unmap(pos_r[r]);
        rqdsm_unmap(frc_r[r]);
    }
    rc = rqdsm_finalize(dsm);
    free(mine);
    free(rid);
    free(pos_r);
    free(frc_r);
    free(vel);
    rq_finalize(ctx);
    return bad || rc != 0;
}
