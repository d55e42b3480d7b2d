/* am.c - rqbench am: short active messages between rank 0 and rank 1.
 *   latency  rank 0 sends a 1-argument AM, rank 1's handler counts it and
 *            rank 1 answers; one-way = round trip / 2, over o.iters trips.
 *   rate     rank 0 streams o.msgs 1-argument AMs; rank 1 polls them and
 *            acknowledges the last; rate = msgs / (ack time - start).
 *   poll     rank 1 times 10^7 rq_poll calls that find nothing.
 * Each is repeated o.reps times; median [min, max] is printed, beside the
 * physical limits measured between the same cores in the same run. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>

#include "bench.h"

enum { H_COUNT = 1, H_ACK = 2 };
static volatile uint64_t counted, acked;
/* How many H_COUNT / H_ACK messages this rank has been promised so far:
 * a peer may run ahead out of a barrier and deliver the next phase's first
 * messages early, so targets are absolute, never "counted-at-start + n". */
static uint64_t counted_due, acked_due;

static void on_count(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx; (void)m; (void)arg;
    counted++;
}
static void on_ack(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx; (void)m; (void)arg;
    acked++;
}

static double am_latency(rq_ctx_t *ctx, long iters)
{
    int me = rq_rank(ctx);
    rq_barrier(ctx);
    uint64_t base = counted_due, t0 = rqb_now_ns();
    double r = 0;
    if (me <= 1)
        counted_due += (uint64_t)iters;
    for (long i = 1; i <= iters; i++) {
        uint64_t a = (uint64_t)i;
        if (me == 0) {
            rq_request(ctx, 1, H_COUNT, &a, 1, NULL, 0, 0);
            rq_wait_until(ctx, &counted, base + (uint64_t)i);
        } else if (me == 1) {
            rq_wait_until(ctx, &counted, base + (uint64_t)i);
            rq_request(ctx, 0, H_COUNT, &a, 1, NULL, 0, 0);
        }
    }
    if (me == 0)
        r = (double)(rqb_now_ns() - t0) / (double)iters / 2.0;
    rq_barrier(ctx);
    return r;
}

static double am_rate(rq_ctx_t *ctx, long msgs)
{
    int me = rq_rank(ctx);
    rq_barrier(ctx);
    double r = 0;
    if (me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (long i = 0; i < msgs; i++) {
            uint64_t a = (uint64_t)i;
            rq_request(ctx, 1, H_COUNT, &a, 1, NULL, 0, 0);
        }
        rq_wait_until(ctx, &acked, ++acked_due);
        r = (double)msgs / ((double)(rqb_now_ns() - t0) * 1e-9);
    } else if (me == 1) {
        counted_due += (uint64_t)msgs;
        rq_wait_until(ctx, &counted, counted_due);
        rq_request(ctx, 0, H_ACK, NULL, 0, NULL, 0, 0);
    }
    rq_barrier(ctx);
    return r;
}

static double poll_cost(rq_ctx_t *ctx)
{
    const long n = 10000000;
    double r = 0;
    rq_barrier(ctx);
    if (rq_rank(ctx) == 1) {
        uint64_t t0 = rqb_now_ns();
        for (long i = 0; i < n; i++)
            rq_poll(ctx);
        r = (double)(rqb_now_ns() - t0) / (double)n;
    }
    /* Rank 1 reports to rank 0 through the barrier-free reduction. */
    double out;
    rq_allreduce(ctx, &r, &out, 1, RQ_DOUBLE, RQ_MAX);
    return out;
}

static void row(const char *name, const struct rqb_sample *s, const char *unit, const char *note)
{
    printf("  %-34s %10.2f %-8s [%8.2f .. %8.2f]  %s\n", name, rqb_median(s), unit, rqb_min(s),
           rqb_max(s), note);
}

int rqb_am(rq_ctx_t *ctx, const struct rqb_opts *o)
{
    int me = rq_rank(ctx);
    if (rq_size(ctx) < 2) {
        fprintf(stderr, "rqbench am: needs at least 2 ranks (rqrun -n 2 --bind core rqbench am)\n");
        return 1;
    }
    rq_handler_register(ctx, H_COUNT, on_count, NULL, 0);
    rq_handler_register(ctx, H_ACK, on_ack, NULL, 0);
    int cpu[2];
    uint64_t c1 = (uint64_t)sched_getcpu();
    uint64_t cpus[2] = {me == 0 ? c1 : 0, me == 1 ? c1 : 0}, all[2];
    rq_allreduce(ctx, cpus, all, 2, RQ_UINT64, RQ_SUM);
    cpu[0] = (int)all[0];
    cpu[1] = (int)all[1];

    struct rqb_sample L = {0}, L2 = {0}, ring = {0}, lat = {0}, rate = {0}, poll = {0};
    /* Warm-up: one short run of everything, not recorded. */
    rqb_cacheline_oneway_ns(ctx, o->iters / 10);
    am_latency(ctx, o->iters / 10);
    am_rate(ctx, o->msgs / 10);
    for (int r = 0; r < o->reps; r++) {
        if (me == 0 && !o->quick) {
            fprintf(stderr, "\rrqbench am: repetition %d/%d", r + 1, o->reps);
            fflush(stderr);
        }
        rqb_add(&L, rqb_cacheline_oneway_ns(ctx, o->iters));
        rqb_add(&L2, rqb_twoline_oneway_ns(ctx, o->iters));
        rqb_add(&ring, rqb_raw_ring_rate(ctx, o->msgs) / 1e6);
        rqb_add(&lat, am_latency(ctx, o->iters));
        rqb_add(&rate, am_rate(ctx, o->msgs) / 1e6);
        rqb_add(&poll, poll_cost(ctx));
    }
    if (me != 0)
        return 0;
    if (!o->quick)
        fprintf(stderr, "\n");
    double l = rqb_median(&L), al = rqb_median(&lat);
    double rr = rqb_median(&ring), ar = rqb_median(&rate);
    printf("rqbench am: ranks 0,1 on cpus %d,%d; %d repetitions; median [min .. max]\n",
           cpu[0], cpu[1], o->reps);
    printf("placement: %s (cache line one-way L = %.0f ns)\n",
           l < 100 ? "near (shared cache)" : "far (no shared cache)", l);
    printf("physical limits (same cores, same run)\n");
    row("cache-line one-way latency L", &L, "ns", "one line bounced");
    row("two-line one-way latency", &L2, "ns", "one line per direction");
    row("raw SPSC ring, 64-byte slots", &ring, "M/s", "");
    printf("librq, shared memory\n");
    char note[96];
    snprintf(note, sizeof note, "= L + %.0f ns = two-line + %.0f ns", al - l,
             al - rqb_median(&L2));
    row("short AM one-way latency", &lat, "ns", note);
    snprintf(note, sizeof note, "= %.2f x raw ring", ar / rr);
    row("short AM streaming rate", &rate, "M/s", note);
    row("unsuccessful rq_poll", &poll, "ns", "");
    return 0;
}
