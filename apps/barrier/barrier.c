/* barrier - FUGU's synchronization-bound program (thesis Tables 7-1 and
 * 7-2: 10000 barriers): a loop of barriers and nothing else, the extreme
 * of sensitivity to scheduling.  Variants: "am", a dissemination barrier
 * made of active messages (round k: a short request to rank + 2^k,
 * counted by its handler); "coll" (default, the faster: docs/apps.md),
 * rq_barrier.
 *
 * Usage: barrier [--variant am|coll] <iterations> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include <rq.h>

#include "app.h"
#include "fail.h"
#include "finegrain.h"

enum { H_ARRIVE = 1 };
#define MAX_ROUNDS 32

static volatile uint64_t arrived[MAX_ROUNDS];
static struct rqa_fg fg;
static uint64_t bad;

static void on_arrive(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    uint64_t t0 = rqa_ticks();
    uint64_t k = m->args[1];
    /* One source per round, FIFO: the epochs arrive in order. */
    if (m->nargs != 2 || k >= MAX_ROUNDS || m->args[0] != arrived[k])
        bad++;
    else
        arrived[k]++;
    fg.received++;
    fg.handlers++;
    fg.handler_ticks += rqa_ticks() - t0;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    static const char *const names[] = {"am", "coll"};
    const int v = rqa_variant(&argc, argv, "variant", names, 2, "coll");
    uint64_t iters;
    if (v < 0)
        return rqa_fail(ctx, "ERROR: unknown variant");
    if (argc != 2)
        return rqa_fail(ctx, "Usage: barrier [--variant am|coll] <iterations>");
    if (rqa_parse_count(argv[1], 1, &iters) != 0)
        return rqa_fail(ctx, "ERROR: iterations must be in [1, " RQA_COUNT_MAX_S "]");
    const int me = rq_rank(ctx), np = rq_size(ctx);
    int rounds = 0;
    while ((1 << rounds) < np)
        rounds++;
    int rc = rq_handler_register(ctx, H_ARRIVE, on_arrive, NULL, 0);
    if (rc == 0)
        rc = rq_barrier(ctx);
    if (me == 0)
        printf("librq barrier: %d ranks, %llu barriers, %s\n", np, (unsigned long long)iters,
               v == 0 ? "dissemination of active messages" : "rq_barrier");
    double t0 = rqa_now();
    for (uint64_t e = 0; e < iters && rc == 0; e++) {
        if (v == 1) {
            rc = rq_barrier(ctx);
            continue;
        }
        for (int k = 0; k < rounds && rc == 0; k++) {
            uint64_t a[2] = {e, (uint64_t)k};
            rc = rq_request(ctx, (me + (1 << k)) % np, H_ARRIVE, a, 2, NULL, 0, 0);
            fg.sent++;
            if (rc == 0)
                rc = rq_wait_until(ctx, &arrived[k], e + 1);
        }
    }
    double secs = rqa_now() - t0, slowest = 0;
    if (rc == 0)
        rc = rq_allreduce(ctx, &secs, &slowest, 1, RQ_DOUBLE, RQ_MAX);
    for (int k = 0; k < rounds && rc == 0 && v == 0; k++)
        bad += arrived[k] != iters;
    struct rqa_fg tot;
    if (rc == 0)
        rc = rqa_fg_sum_rq(ctx, &fg, &tot);
    if (rqa_run_failed(ctx, rc, bad))
        return rqa_fail(ctx, NULL);
    if (me == 0) {
        rqa_fg_print("barrier", np, slowest, &tot);
        printf("Solution validates\n");
        printf("Rate (barriers/s): %.0f  Avg time (us): %.3f\n", (double)iters / slowest,
               slowest * 1e6 / (double)iters);
    }
    fflush(stdout);
    return rq_finalize(ctx) != 0;
}
