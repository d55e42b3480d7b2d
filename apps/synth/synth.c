/* synth - FUGU's synth-N (thesis section 7.4.2, Figures 7-21 / 7-22):
 * every rank is producer and consumer.  It sends groups of N requests,
 * each to a random other rank, a uniformly random interval (mean
 * --interval ns) of work apart; a request's handler stalls --stall ns,
 * then replies; after each group the rank waits for all of its replies
 * (the synchronization point that bounds what is outstanding to N).
 * Delivery: "poll" (rq_poll after each interval of work, the default) or
 * "intr" (RQ_INTR_ALL: the progress thread runs handlers, as FUGU did).
 * The run checks that every request was answered once (sums of ids).
 *
 * Usage: synth [--stall NS] [--interval NS] [--delivery poll|intr] <N> <requests per rank> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include <rq.h>

#include "app.h"
#include "fail.h"
#include "finegrain.h"

enum { H_REQ = 1, H_ACK = 2 };

/* Handlers' counts: under interrupt delivery the progress thread runs
 * them while the main thread computes, so the main thread keeps its own
 * (requests) and adds them in once interrupts are off. */
static struct rqa_fg fg;
static volatile uint64_t acks;
static uint64_t req_sum, ack_sum, bad;
static double stall_ns;

static void on_req(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)arg;
    uint64_t t0 = rqa_ticks();
    rqa_fg_spin_ns(stall_ns);
    req_sum += m->args[0];
    fg.received++;
    int rc = rq_reply(ctx, m, H_ACK, m->args, 1, NULL, 0, 0);
    bad += rc != 0;
    fg.sent += rc == 0;
    fg.handlers++;
    fg.handler_ticks += rqa_ticks() - t0;
}

static void on_ack(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    uint64_t t0 = rqa_ticks();
    ack_sum += m->args[0];
    fg.received++;
    acks++;
    fg.handlers++;
    fg.handler_ticks += rqa_ticks() - t0;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    static const char *const names[] = {"poll", "intr"};
    const int intr = rqa_variant(&argc, argv, "delivery", names, 2, "poll");
    double interval;
    uint64_t n, count;
    if (intr < 0)
        return rqa_fail(ctx, "ERROR: unknown delivery");
    if (rqa_take_double(&argc, argv, "stall", 100, 0, &stall_ns) != 0 ||
        rqa_take_double(&argc, argv, "interval", 1000, 0, &interval) != 0 ||
        stall_ns > 1e9 || interval > 1e9)
        return rqa_fail(ctx, "ERROR: --stall and --interval must be numbers of ns in [0, 1e9]");
    if (argc != 3)
        return rqa_fail(ctx, "Usage: synth [--stall NS] [--interval NS] [--delivery poll|intr] "
                             "<N> <requests per rank>");
    if (rqa_parse_count(argv[1], 1, &n) != 0)
        return rqa_fail(ctx, "ERROR: N must be in [1, " RQA_COUNT_MAX_S "]");
    if (rqa_parse_count(argv[2], 1, &count) != 0)
        return rqa_fail(ctx, "ERROR: requests per rank must be in [1, " RQA_COUNT_MAX_S "]");
    const int me = rq_rank(ctx), np = rq_size(ctx);
    int rc = rq_handler_register(ctx, H_REQ, on_req, NULL, 0);
    if (rc == 0)
        rc = rq_handler_register(ctx, H_ACK, on_ack, NULL, 0);
    if (rc == 0 && intr)
        rc = rq_interrupts(ctx, RQ_INTR_ALL);
    if (rc == 0)
        rc = rq_barrier(ctx);
    if (me == 0)
        printf("librq synth-%llu: %d ranks, %llu requests per rank, interval %.0f ns, "
               "stall %.0f ns, %s delivery\n",
               (unsigned long long)n, np, (unsigned long long)count, interval, stall_ns,
               intr ? "interrupt" : "polled");
    uint64_t seed = 0x5eed0000u + (uint64_t)me, sent_sum = 0, requests = 0;
    double t0 = rqa_now();
    for (uint64_t i = 0; i < count && rc == 0;) {
        for (uint64_t g = 0; g < n && i < count && rc == 0; g++, i++) {
            rqa_fg_spin_ns(2 * interval * rqa_uniform(&seed));
            if (!intr)
                (void)rq_poll(ctx);
            int dst = np == 1 ? 0 : (me + 1 + (int)(rqa_splitmix(&seed) % (uint64_t)(np - 1))) % np;
            uint64_t id = (uint64_t)me << 40 | i;
            rc = rq_request(ctx, dst, H_REQ, &id, 1, NULL, 0, 0);
            requests++;
            sent_sum += id;
        }
        if (rc == 0)
            rc = rq_wait_until(ctx, &acks, i); /* the group's synchronization point */
    }
    double secs = rqa_now() - t0, slowest = 0;
    if (rc == 0)
        rc = rq_barrier(ctx); /* serve the others' last requests */
    if (rc == 0 && intr)
        rc = rq_interrupts(ctx, RQ_INTR_OFF); /* no handler runs behind our back from here */
    fg.sent += requests;
    if (rc == 0)
        rc = rq_allreduce(ctx, &secs, &slowest, 1, RQ_DOUBLE, RQ_MAX);
    uint64_t sums[3] = {sent_sum, req_sum, ack_sum}, all[3] = {0, 0, 0};
    if (rc == 0)
        rc = rq_allreduce(ctx, sums, all, 3, RQ_UINT64, RQ_SUM);
    bad += acks != count || ack_sum != sent_sum;
    if (rc == 0 && me == 0)
        bad += all[1] != all[0];
    struct rqa_fg tot;
    if (rc == 0)
        rc = rqa_fg_sum_rq(ctx, &fg, &tot);
    if (rqa_run_failed(ctx, rc, bad))
        return rqa_fail(ctx, NULL);
    if (me == 0) {
        char name[32];
        snprintf(name, sizeof name, "synth-%llu", (unsigned long long)n);
        rqa_fg_print(name, np, slowest, &tot);
        printf("Solution validates\n");
    }
    fflush(stdout);
    return rq_finalize(ctx) != 0;
}
