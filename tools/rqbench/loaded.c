/* loaded.c - rqbench loaded: active messages with every rank sending and
 * receiving at once (Liu & Culler, section 5.1.2).  K = 1024 per rank.
 *   ring      rank i sends K requests to i+1 while receiving K from i-1.
 *   traverse  P-1 steps; in step s rank j exchanges K requests with rank
 *             j XOR s (ranks whose partner is >= P sit the step out).
 * Both report the time per message averaged over the ranks: g + o_r in
 * LogP, since every rank both sends and receives. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>

#include "bench.h"

enum { H_COUNT = 10 };
enum { K = 1024 };

static volatile uint64_t counted;
static uint64_t counted_due;

static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; counted++; }

/* Exchange with dst (send K) and src (receive K); returns ns per message
 * on this rank, NAN if this rank sat out. */
static double exchange(struct rqb *b, int dst, int src)
{
    uint64_t x = 1;
    rq_barrier(b->ctx);
    if (dst < 0 || dst >= b->np || src < 0 || src >= b->np)
        return NAN;
    uint64_t t0 = rqb_now_ns();
    for (int i = 0; i < K; i++)
        rq_request(b->ctx, dst, H_COUNT, &x, 1, NULL, 0, 0);
    rq_wait_until(b->ctx, &counted, counted_due += K);
    return rqb_elapsed_ns(t0) / K;
}

/* Mean over the ranks that took part. */
static double mean_of_active(struct rqb *b, double v)
{
    double in[2] = {isnan(v) ? 0 : v, isnan(v) ? 0 : 1}, out[2];
    rq_allreduce(b->ctx, in, out, 2, RQ_DOUBLE, RQ_SUM);
    return out[1] > 0 ? out[0] / out[1] : NAN;
}

static double ring(struct rqb *b, void *arg)
{
    (void)arg;
    double v = exchange(b, (b->me + 1) % b->np, (b->me + b->np - 1) % b->np);
    return mean_of_active(b, v);
}

static double traverse(struct rqb *b, void *arg)
{
    int step = *(const int *)arg, peer = b->me ^ step;
    double v = exchange(b, peer, peer);
    return mean_of_active(b, v);
}

int rqb_fam_loaded(struct rqb *b)
{
    rq_handler_register(b->ctx, H_COUNT, on_count, NULL, 0);
    struct rqb_summary s;
    char note[112];
    rqb_measure(b, "ring", ring, NULL, &s);
    snprintf(note, sizeof note, "%d ranks, mean over ranks", b->np);
    rqb_row(b, "ring (per message)", NAN, "ns", &s, note);
    int steps = 1;
    while (steps < b->np)
        steps <<= 1;
    for (int step = 1; step < steps; step++) {
        char what[32];
        snprintf(what, sizeof what, "traverse step %d", step);
        rqb_measure(b, what, traverse, &step, &s);
        rqb_row(b, "traverse (per message)", step, "ns", &s, "partner = rank XOR step");
    }
    return 0;
}
