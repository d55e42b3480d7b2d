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
 *                2L + 4o in LogP.  With 3 or more ranks, also to every
 *                destination rank (Liu & Culler Figure 2: on one node the
 *                distance between cores, across nodes a second level).
 *   reply, rpc   Table 1's other rows: one-to-one, one-to-two and
 *                two-to-one with the K messages sent from inside a
 *                handler, as rq_reply (to the requester that started the
 *                burst: CMAML_reply) or as rq_request (CMAML_rpc, "an
 *                active message sent in a handler without following the
 *                request-reply protocol").  A reply goes to one requester,
 *                so one-to-two with replies sends K/2 to each of two
 *                requesters in turn, not alternately.
 * Derived: L = round-trip/2 - o_s - o_r (the software-visible latency). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>

#include "bench.h"

enum { H_COUNT = 1, H_ACK = 2, H_ECHO = 3, H_GO = 4, H_BURST = 5 };
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

/* H_BURST: send args[2] messages from this handler, as replies to the
 * requester (args[0] = 1) or as requests to rank args[1] (or alternately
 * to ranks args[1] and args[1] + 1 when args[3] is 1).  The first burst
 * handler's start is the timed interval's start on this rank. */
static uint64_t burst_t0;
static void on_burst(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    uint64_t x = 1;
    if (burst_t0 == 0)
        burst_t0 = rqb_now_ns();
    int alt = m->args[3] != 0;
    for (uint64_t i = 0; i < m->args[2]; i++) {
        if (m->args[0])
            rq_reply(c, m, H_COUNT, &x, 1, NULL, 0, 0);
        else
            rq_request(c, (int)m->args[1] + (alt ? (int)(i & 1) : 0), H_COUNT, &x, 1, NULL, 0, 0);
    }
}

enum { T_ONE_ONE, T_ONE_TWO, T_TWO_ONE };
struct hsend_arg { int reply, shape; };

/* Table 1's reply and rpc rows: the burst sent from a handler. */
static double handler_sends(struct rqb *b, void *argp)
{
    const struct hsend_arg *h = argp;
    double r = 0;
    burst_t0 = 0; /* before the barrier: a burst request may arrive inside it */
    rq_barrier(b->ctx);
    uint64_t reply = (uint64_t)h->reply;
    if (h->shape == T_TWO_ONE) {
        if (b->me == 0) {
            /* ranks 1 and 2 each send K to rank 0 from a handler */
            uint64_t args[4] = {reply, 0, K, 0};
            uint64_t t0 = rqb_now_ns();
            rq_request(b->ctx, 1, H_BURST, args, 4, NULL, 0, 0);
            rq_request(b->ctx, 2, H_BURST, args, 4, NULL, 0, 0);
            rq_wait_until(b->ctx, &counted, counted_due += 2 * K);
            r = rqb_elapsed_ns(t0) / (2 * K);
        }
        /* ranks 1 and 2 run the burst handler from the next collective's
         * polling (the stop decision's broadcast) */
        return r;
    }
    int two = h->shape == T_ONE_TWO;
    if (b->me == 0) {
        if (!h->reply) {
            uint64_t args[4] = {0, 1, K, (uint64_t)two};
            rq_request(b->ctx, 0, H_BURST, args, 4, NULL, 0, 0); /* to itself */
        }
        acked_due += two ? 2 : 1;
        rq_wait_until(b->ctx, &acked, acked_due);
        r = (double)(rqb_now_ns() - burst_t0) / K;
    } else if (b->me == 1 || (two && b->me == 2)) {
        if (h->reply) {
            uint64_t args[4] = {1, 0, two ? K / 2 : K, 0};
            rq_request(b->ctx, 0, H_BURST, args, 4, NULL, 0, 0);
        }
        rq_wait_until(b->ctx, &counted, counted_due += two ? K / 2 : K);
        rq_request(b->ctx, 0, H_ACK, NULL, 0, NULL, 0, 0);
    }
    return r;
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
    return rqb_fill_then_drain(b, H_COUNT, K, &counted, &counted_due, *(const int *)arg);
}

static double round_trip(struct rqb *b, void *arg)
{
    const int dst = arg != NULL ? *(const int *)arg : 1;
    double r = 0;
    uint64_t x = 1;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < K; i++) {
            rq_request(b->ctx, dst, H_ECHO, &x, 1, NULL, 0, 0);
            rq_wait_until(b->ctx, &counted, ++counted_due);
        }
        r = rqb_elapsed_ns(t0) / K;
    } else if (b->me == dst) {
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
    rq_handler_register(b->ctx, H_BURST, on_burst, NULL, 0);
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
    /* Table 1's reply and rpc rows (CM-5 figures: CMAML, cycles at 32 MHz) */
    static const char *const hs_name[2][3] = {
        {"one-to-one, rpc (request from a handler)", "one-to-two, rpc",
         "two-to-one, rpc"},
        {"one-to-one, reply", "one-to-two, reply (K/2 to each in turn)", "two-to-one, reply"}};
    static const char *const hs_note[2][3] = {
        {"L&C CMAML_rpc 60.8 cycles, 1.90 us", "L&C CMAML_rpc 40.0 cycles, 1.25 us",
         "L&C CMAML_rpc 61.8 cycles, 1.93 us"},
        {"L&C CMAML_reply 65.3 cycles, 2.04 us; CMAM_reply_4 49.9",
         "L&C CMAML_reply 41.0 cycles, 1.28 us; CMAM_reply_4 40.0",
         "L&C CMAML_reply 66.6 cycles, 2.08 us; CMAM_reply_4 51.2"}};
    for (int rep = 0; rep < 2; rep++)
        for (int shape = 0; shape < 3; shape++) {
            if (shape != T_ONE_ONE && b->np < 3) {
                rqb_row_na(b, hs_name[rep][shape], NAN, "ns", "needs 3 ranks");
                continue;
            }
            struct hsend_arg h = {rep, shape};
            rqb_measure(b, hs_name[rep][shape], handler_sends, &h, &s);
            rqb_row(b, hs_name[rep][shape], NAN, "ns", &s, hs_note[rep][shape]);
        }
    int side = 0;
    rqb_measure(b, "send into idle ring", quiescent, &side, &os);
    rqb_row(b, "send into idle ring (o_s)", NAN, "ns", &os, "receiver runs no librq code");
    side = 1;
    rqb_measure(b, "receive from full ring", quiescent, &side, &orv);
    rqb_row(b, "receive from full ring (o_r)", NAN, "ns", &orv, "handler included");
    rqb_measure(b, "round-trip", round_trip, NULL, &rt);
    rqb_row(b, "round-trip (2L + 4o)", NAN, "ns", &rt, "request, reply from the handler");
    /* Liu & Culler Figure 2: the round trip from rank 0 to each rank (on a
     * node the distance is the cores'; across nodes a second level) */
    if (b->np > 2)
        rqb_row(b, "round-trip by destination", 1, "ns", &rt,
                "rank 0 to rank param and back (L&C Figure 2)");
    for (int d = 2; d < b->np; d++) {
        struct rqb_summary rd;
        rqb_measure(b, "round-trip by destination", round_trip, &d, &rd);
        rqb_row(b, "round-trip by destination", d, "ns", &rd,
                "rank 0 to rank param and back (L&C Figure 2)");
    }
    if (b->me == 0) {
        char note[112];
        double L = rt.median / 2 - os.median - orv.median;
        snprintf(note, sizeof note, "round-trip/2 - o_s - o_r; cache-line L = %.0f ns",
                 b->rep.line_ns);
        rqb_row_derived(b, "latency L (derived)", NAN, "ns", L, note);
    }
    rqb_promote_rows(b); /* last: it makes the context thread-safe */
    return 0;
}
