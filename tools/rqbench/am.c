/* am.c - rqbench am: basic active messages on an unloaded network
 * (Liu & Culler, section 5.1.1).  Each message runs a handler that
 * increments a counter, as in the paper.  K = 1024 messages per repetition.
 *
 *   one-to-one   rank 0 sends K requests to rank 1, which acknowledges the
 *                last; time per message.  Bounded by the slower side: the
 *                gap g.
 *   one-to-two   rank 0 alternates between ranks 1 and 2 (3+ ranks): the
 *                receivers no longer limit it, so this is the send overhead.
 *   two-to-one   ranks 1 and 2 send K each to rank 0 (3+ ranks); rank 0
 *                times receiving all 2K: the receive overhead.
 *   send into idle ring / receive from full ring
 *                the same two overheads isolated on any 2 ranks: rank 0
 *                times K sends while rank 1 runs no librq code (K fits in
 *                the ring), then rank 1 times polling all K (handler
 *                included).  These give o_s and o_r of LogP.
 *   round-trip   request, the handler replies, the reply's handler counts:
 *                2L + 4o in LogP.
 * Derived: L = round-trip/2 - o_s - o_r (the software-visible latency). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>

#include "bench.h"

enum { H_COUNT = 1, H_ACK = 2, H_ECHO = 3, H_GO = 4 };
enum { K = 1024 };

static volatile uint64_t counted, acked, gone, echoed;
/* What each counter has been promised so far: a fast peer may run into the
 * next repetition before this rank leaves the last, so targets are
 * absolute, never "counter at start + K". */
static uint64_t counted_due, acked_due, gone_due, echoed_due;

static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; counted++; }
static void on_ack(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; acked++; }
static void on_go(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; gone++; }
static void on_echo(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    rq_reply(c, m, H_COUNT, m->args, m->nargs, NULL, 0, 0);
    echoed++;
}

static double one_to_one(struct rqb *b, void *arg)
{
    (void)arg;
    double r = 0;
    uint64_t x = 1;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < K; i++)
            rq_request(b->ctx, 1, H_COUNT, &x, 1, NULL, 0, 0);
        rq_wait_until(b->ctx, &acked, ++acked_due);
        r = rqb_elapsed_ns(t0) / K;
    } else if (b->me == 1) {
        rq_wait_until(b->ctx, &counted, counted_due += K);
        rq_request(b->ctx, 0, H_ACK, NULL, 0, NULL, 0, 0);
    }
    return r;
}

static double one_to_two(struct rqb *b, void *arg)
{
    (void)arg;
    double r = 0;
    uint64_t x = 1;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < K; i++)
            rq_request(b->ctx, 1 + (i & 1), H_COUNT, &x, 1, NULL, 0, 0);
        acked_due += 2;
        rq_wait_until(b->ctx, &acked, acked_due);
        r = rqb_elapsed_ns(t0) / K;
    } else if (b->me <= 2) {
        rq_wait_until(b->ctx, &counted, counted_due += K / 2);
        rq_request(b->ctx, 0, H_ACK, NULL, 0, NULL, 0, 0);
    }
    return r;
}

static double two_to_one(struct rqb *b, void *arg)
{
    (void)arg;
    double r = 0;
    uint64_t x = 1;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        rq_request(b->ctx, 1, H_GO, NULL, 0, NULL, 0, 0);
        rq_request(b->ctx, 2, H_GO, NULL, 0, NULL, 0, 0);
        rq_wait_until(b->ctx, &counted, counted_due += 2 * K);
        r = rqb_elapsed_ns(t0) / (2 * K);
    } else if (b->me <= 2) {
        rq_wait_until(b->ctx, &gone, ++gone_due);
        for (int i = 0; i < K; i++)
            rq_request(b->ctx, 0, H_COUNT, &x, 1, NULL, 0, 0);
    }
    return r;
}

/* Rank 0 times K sends into rank 1's idle ring (o_s); rank 1, which ran
 * no librq code meanwhile, then times draining them (o_r). */
static double quiescent(struct rqb *b, void *arg)
{
    const int recv_side = *(const int *)arg;
    volatile uint64_t *phase = rqb_flag(b, 0);
    static uint64_t round;
    double r = 0;
    uint64_t x = 1;
    rq_barrier(b->ctx);
    round++;
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < K; i++)
            rq_request(b->ctx, 1, H_COUNT, &x, 1, NULL, 0, 0);
        r = rqb_elapsed_ns(t0) / K;
        __atomic_store_n(phase, round, __ATOMIC_RELEASE);
    } else if (b->me == 1) {
        rqb_spin_until(phase, round);
        counted_due += K;
        uint64_t t0 = rqb_now_ns();
        while (counted < counted_due)
            rq_poll(b->ctx);
        r = rqb_elapsed_ns(t0) / K;
    }
    return rqb_from(b, recv_side, r);
}

static double round_trip(struct rqb *b, void *arg)
{
    (void)arg;
    double r = 0;
    uint64_t x = 1;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < K; i++) {
            rq_request(b->ctx, 1, H_ECHO, &x, 1, NULL, 0, 0);
            rq_wait_until(b->ctx, &counted, ++counted_due);
        }
        r = rqb_elapsed_ns(t0) / K;
    } else if (b->me == 1) {
        rq_wait_until(b->ctx, &echoed, echoed_due += K);
    }
    return r;
}

int rqb_fam_am(struct rqb *b)
{
    rq_handler_register(b->ctx, H_COUNT, on_count, NULL, 0);
    rq_handler_register(b->ctx, H_ACK, on_ack, NULL, 0);
    rq_handler_register(b->ctx, H_ECHO, on_echo, NULL, 0);
    rq_handler_register(b->ctx, H_GO, on_go, NULL, 0);
    struct rqb_summary s, os, orv, rt;
    rqb_measure(b, "one-to-one", one_to_one, NULL, &s);
    rqb_row(b, "one-to-one (gap g)", NAN, "ns", &s, "K=1024 requests, one ack");
    if (b->np >= 3) {
        rqb_measure(b, "one-to-two", one_to_two, NULL, &s);
        rqb_row(b, "one-to-two (send overhead)", NAN, "ns", &s, "alternating ranks 1 and 2");
        rqb_measure(b, "two-to-one", two_to_one, NULL, &s);
        rqb_row(b, "two-to-one (receive overhead)", NAN, "ns", &s, "2K from ranks 1 and 2");
    } else {
        rqb_row_na(b, "one-to-two (send overhead)", NAN, "ns", "needs 3 ranks");
        rqb_row_na(b, "two-to-one (receive overhead)", NAN, "ns", "needs 3 ranks");
    }
    int side = 0;
    rqb_measure(b, "send into idle ring", quiescent, &side, &os);
    rqb_row(b, "send into idle ring (o_s)", NAN, "ns", &os, "receiver runs no librq code");
    side = 1;
    rqb_measure(b, "receive from full ring", quiescent, &side, &orv);
    rqb_row(b, "receive from full ring (o_r)", NAN, "ns", &orv, "handler included");
    rqb_measure(b, "round-trip", round_trip, NULL, &rt);
    rqb_row(b, "round-trip (2L + 4o)", NAN, "ns", &rt, "request, reply from the handler");
    if (b->me == 0) {
        char note[112];
        double L = rt.median / 2 - os.median - orv.median;
        snprintf(note, sizeof note, "round-trip/2 - o_s - o_r; cache-line L = %.0f ns",
                 b->rep.line_ns);
        rqb_row_derived(b, "latency L (derived)", NAN, "ns", L, note);
    }
    return 0;
}
