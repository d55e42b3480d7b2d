/* em3d-dsm - em3d (graph.h) on rqdsm regions, as the PDQ paper runs it on
 * its fine-grain shared memory: each rank homes one region of its E values
 * and one of its H values; a half-step reads every remote neighbour value
 * it needs in a read section of its 8 bytes (the first in a block misses,
 * the block's others hit until the owner writes again), updates its nodes
 * and writes them back in one write section, then a barrier.  Same graph,
 * check and output as em3d and em3d-mpi.
 *
 * --app-threads A runs A application threads per rank (a rank is an
 * A-processor node sharing one copy of each region): each fetches,
 * updates and publishes an A-th of the rank's ghosts and nodes; idle
 * threads at a barrier run the protocol's handlers.
 *
 * Usage: em3d-dsm [--protocol P] [--threads T] [--app-threads A] [--dsm-block B]
 *                 [--reps R] <nodes per rank> <degree> <remote fraction> <iterations> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>
#include <rqdsm.h>

#include "app.h"
#include "dsmapp.h"
#include "fail.h"
#include "graph.h"
#include "placement.h"

/* One repetition: what the rank's application threads share.  Thread t
 * of A takes the t-th of A equal parts of the ghosts to fetch and of the
 * nodes to update and publish. */
struct em_run {
    rq_ctx_t              *ctx;
    rqdsm_t               *dsm;
    const struct em_part  *part;    /* [2] */
    double               **val;     /* [2]: values, then ghosts */
    rqdsm_region_t       **reg[2];
    uint64_t               n;
    int                    me, np;
    unsigned               iters;
    int                    rc;      /* a barrier's failure (thread 0 keeps it) */
    double                 secs;    /* thread 0's time for the iterations */
};

static uint64_t share(uint64_t n, int t, uint64_t *hi)
{
    int a = rqa_app_threads();
    *hi = rqa_block_lo(n, a, t + 1);
    return rqa_block_lo(n, a, t);
}

/* My part of the ghosts of kind k that the rank's nodes of kind k ^ 1
 * read, fresh. */
static void fetch(struct em_run *E, int k, int t)
{
    const struct em_part *p = &E->part[k ^ 1];
    uint64_t hi, g = share(p->ng, t, &hi);
    for (int o = 0; o < E->np; o++) {
        uint64_t lo_o = p->gstart[o] > g ? p->gstart[o] : g;
        uint64_t hi_o = p->gstart[o + 1] < hi ? p->gstart[o + 1] : hi;
        for (uint64_t x = lo_o; x < hi_o; x++) {
            size_t off = (size_t)p->gidx[x] * sizeof(double);
            rqdsm_start_read(E->reg[k][o], off, sizeof(double));
            E->val[k][E->n + x] = ((const double *)rqdsm_ptr(E->reg[k][o]))[p->gidx[x]];
            rqdsm_end_read(E->reg[k][o], off, sizeof(double));
        }
    }
}

/* My part of the rank's values of kind k, written into its region. */
static void publish(struct em_run *E, int k, int t)
{
    uint64_t hi, lo = share(E->n, t, &hi);
    if (hi == lo)
        return;
    size_t off = lo * sizeof(double), len = (hi - lo) * sizeof(double);
    rqdsm_start_write(E->reg[k][E->me], off, len);
    memcpy((char *)rqdsm_ptr(E->reg[k][E->me]) + off, E->val[k] + lo, len);
    rqdsm_end_write(E->reg[k][E->me], off, len);
}

static void em_rep(int t, void *arg)
{
    struct em_run *E = arg;
    uint64_t hi, lo = share(E->n, t, &hi);
    for (int k = 0; k < 2; k++) {
        for (uint64_t i = lo; i < hi; i++)
            E->val[k][i] = em_initial(E->me, k, i);
        publish(E, k, t);
    }
    int rc = rqa_team_barrier(E->ctx, E->dsm);
    double t0 = rqa_now();
    for (unsigned it = 0; it < E->iters && rc == 0; it++)
        for (int k = 0; k < 2 && rc == 0; k++) {
            fetch(E, k ^ 1, t);
            rqa_team_sync(E->dsm); /* every ghost fetched before anyone updates */
            em_update_range(&E->part[k], E->val[k ^ 1], E->val[k], lo, hi);
            publish(E, k, t);
            rc = rqa_team_barrier(E->ctx, E->dsm);
        }
    if (t == 0) {
        E->secs = rqa_now() - t0;
        E->rc = rc;
    }
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    double line = rqa_placement_rq(ctx);
    rqdsm_t *dsm;
    char org[96], err[200];
    if (rqa_dsm_start(ctx, &argc, argv, &dsm, org, sizeof org) != 0)
        return rqa_fail(ctx, "Usage: em3d-dsm [--protocol P] [--threads T] [--app-threads A] "
                             "[--dsm-block B] [--reps R] <nodes per rank> <degree> "
                             "<remote fraction> <iterations>");
    struct em_args a;
    if (em_parse(argc, argv, &a, err, sizeof err) != 0)
        return rqa_fail(ctx, err);
    const int me = rq_rank(ctx), np = rq_size(ctx);
    const uint64_t n = a.n;
    struct em_part part[2];
    if (em_part_build(&a, me, np, EM_E, &part[EM_E]) != 0 ||
        em_part_build(&a, me, np, EM_H, &part[EM_H]) != 0)
        return rqa_fail(ctx, "ERROR: out of memory");
    double *val[2];
    uint64_t *mine = calloc(2 * (size_t)np, 8), *rid = calloc(2 * (size_t)np, 8);
    rqdsm_region_t **reg[2] = {calloc((size_t)np, sizeof(void *)),
                               calloc((size_t)np, sizeof(void *))};
    double *times = malloc((size_t)a.reps * sizeof *times);
    for (int k = 0; k < 2; k++)
        val[k] = malloc((n + part[k ^ 1].ng) * sizeof(double));
    if (!mine || !rid || !reg[0] || !reg[1] || !times || !val[0] || !val[1])
        return rqa_fail(ctx, "ERROR: out of memory");
    for (int k = 0; k < 2; k++)
        if (rqdsm_create(dsm, n * sizeof(double), &mine[2 * me + k]) != 0)
            return rqa_fail(ctx, "ERROR: rqdsm_create failed");
    if (rq_allreduce(ctx, mine, rid, 2 * (size_t)np, RQ_UINT64, RQ_SUM) != 0)
        return rqa_fail(ctx, "ERROR: allreduce failed");
    for (int r = 0; r < np; r++)
        for (int k = 0; k < 2; k++)
            if (rqdsm_map(dsm, rid[2 * r + k], &reg[k][r]) != 0)
                return rqa_fail(ctx, "ERROR: rqdsm_map failed");
    if (me == 0) {
        printf("Split-C em3d on rqdsm regions (%s)\n", org);
        printf("Number of ranks      = %d\n", np);
        printf("App threads per rank = %d\n", rqa_app_threads());
        printf("Nodes per rank       = %llu (E and H each)\n", (unsigned long long)n);
        printf("Degree               = %u\n", a.degree);
        printf("Remote fraction      = %g\n", a.remote);
        printf("Iterations           = %u\n", a.iters);
        rqa_placement_print(line);
    }
    struct em_run E = {ctx, dsm, part, val, {reg[0], reg[1]}, n, me, np, a.iters, 0, 0};
    int rc = 0;
    for (int rep = 0; rep < a.reps && rc == 0; rep++) {
        if (rqa_team_run(em_rep, &E) != 0)
            return rqa_fail(ctx, "ERROR: an application thread did not start");
        rc = E.rc;
        rq_allreduce(ctx, &E.secs, &times[rep], 1, RQ_DOUBLE, RQ_MAX);
    }
    if (rc != 0)
        return rqa_fail(ctx, "ERROR: a barrier failed");
    rqa_dsm_report(ctx, dsm, "em3d-dsm", rqa_median(times, a.reps));

    /* rank 0 reads every region and checks it against the serial run */
    int failed = 0;
    if (me == 0) {
        const uint64_t tot = (uint64_t)np * n;
        double *all[2] = {malloc(tot * sizeof(double)), malloc(tot * sizeof(double))};
        double *want[2] = {malloc(tot * sizeof(double)), malloc(tot * sizeof(double))};
        double maxerr = 0;
        if (!all[0] || !all[1] || !want[0] || !want[1] || em_serial(&a, np, want[0], want[1]))
            return rqa_fail(ctx, "ERROR: out of memory for the serial check");
        for (int k = 0; k < 2; k++) {
            for (int r = 0; r < np; r++) {
                rqdsm_start_read(reg[k][r], 0, 0);
                memcpy(all[k] + (uint64_t)r * n, rqdsm_ptr(reg[k][r]), n * sizeof(double));
                rqdsm_end_read(reg[k][r], 0, 0);
            }
            double e = em_max_error(all[k], want[k], tot);
            maxerr = e > maxerr ? e : maxerr;
            free(all[k]);
            free(want[k]);
        }
        failed = em_result("em3d-dsm", maxerr, np, &a, rqa_median(times, a.reps));
    }
    rqa_dsm_barrier(ctx, dsm);
    for (int r = 0; r < np; r++)
        for (int k = 0; k < 2; k++)
            rqdsm_unmap(reg[k][r]);
    rc = rqdsm_finalize(dsm);
    for (int k = 0; k < 2; k++) {
        free(val[k]);
        free(reg[k]);
        em_part_free(&part[k]);
    }
    free(mine);
    free(rid);
    free(times);
    rq_finalize(ctx);
    return failed || rc != 0;
}
