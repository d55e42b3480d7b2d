/* null - FUGU's embarrassingly parallel program (thesis Tables 7-1/7-2):
 * every rank busy-waits a fixed number of iterations of work_ns each,
 * with no communication.  Its slowdown under a competing load measures
 * the CPU fraction that load takes (thesis section 7.2.1).  The run
 * checks that every rank did every iteration.
 *
 * Usage: null <iterations> [work_ns (default 1000)] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include <rq.h>

#include "app.h"
#include "fail.h"
#include "finegrain.h"

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    uint64_t iters, work = 1000;
    if (argc != 2 && argc != 3)
        return rqa_fail(ctx, "Usage: null <iterations> [work_ns]");
    if (rqa_parse_count(argv[1], 1, &iters) != 0)
        return rqa_fail(ctx, "ERROR: iterations must be in [1, " RQA_COUNT_MAX_S "]");
    if (argc == 3 && rqa_parse_count(argv[2], 1, &work) != 0)
        return rqa_fail(ctx, "ERROR: work_ns must be in [1, " RQA_COUNT_MAX_S "]");
    const int me = rq_rank(ctx), np = rq_size(ctx);
    int rc = rq_barrier(ctx);
    if (me == 0)
        printf("librq null: %d ranks, %llu iterations of %llu ns\n", np,
               (unsigned long long)iters, (unsigned long long)work);
    double t0 = rqa_now();
    uint64_t done = 0;
    for (uint64_t i = 0; i < iters; i++, done++)
        rqa_fg_spin_ns((double)work);
    double secs = rqa_now() - t0, slowest = 0;
    uint64_t all = 0;
    if (rc == 0)
        rc = rq_allreduce(ctx, &secs, &slowest, 1, RQ_DOUBLE, RQ_MAX);
    if (rc == 0)
        rc = rq_allreduce(ctx, &done, &all, 1, RQ_UINT64, RQ_SUM);
    struct rqa_fg fg = {0}, tot;
    if (rc == 0)
        rc = rqa_fg_sum_rq(ctx, &fg, &tot);
    if (rqa_run_failed(ctx, rc, all != iters * (uint64_t)np))
        return rqa_fail(ctx, NULL);
    if (me == 0) {
        rqa_fg_print("null", np, slowest, &tot);
        printf("Solution validates\n");
        printf("Slowdown over the work alone: %.4f\n", slowest * 1e9 / ((double)iters * work));
    }
    fflush(stdout);
    return rq_finalize(ctx) != 0;
}
