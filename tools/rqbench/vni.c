/* vni.c - rqbench vni: the virtual network interface's costs, beside the
 * FUGU thesis's Table 4-4 and Liu & Culler's Table 10.
 *   send                 rank 0: rq_request of a null message (no args,
 *                        no payload), receiver idle: the inject cost.
 *   polled receive       rank 1: rq_poll running the handler of a null
 *                        message read in place (direct case).
 *   buffered receive     rank 1: the same messages moved into the virtual
 *                        buffer (insert: rq_peek of an empty named queue
 *                        copies the lane's AM packets out) and run from it
 *                        by rq_poll (extract): the buffered case.
 *   round trip, polled   a null request answered by a reply from the
 *                        handler, the responder polling;
 *   round trip, interrupt the same with the responder computing (never
 *                        polling) under RQ_INTR_ALL: its progress thread
 *                        is woken and runs the handler.  The difference is
 *                        the interrupt's cost.
 *   atomicity section    rq_atomic_begin + rq_atomic_end, uncontended
 *                        (L&C Table 10's "toggle": the state changes);
 *                        nested inside an open section ("pipeline": it
 *                        does not).
 *   rq_interrupts        Liu & Culler Table 10 on rank 0: "pipeline",
 *                        a loop of calls that leave the mode as it is
 *                        (enable when on, disable when off); "toggle",
 *                        each call timed alone while alternating (enable
 *                        when off: it also wakes the progress thread to
 *                        take up packets already here; disable when on);
 *                        and the enable/disable pair. */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <stdio.h>

#include "bench.h"

enum { H_NULL = 60, H_PING = 61, H_PONG = 62, QID = 2 };
enum { K = 1024, RT = 200, AT = 100000 };
enum {
    M_SEND,
    M_POLLED,
    M_BUFFERED,
    M_RT_POLL,
    M_RT_INTR,
    M_ATOMIC,
    M_ATOMIC_NESTED,
    M_INTR_ON_PIPE,
    M_INTR_OFF_PIPE,
    M_INTR_ON_TOGGLE,
    M_INTR_OFF_TOGGLE,
    M_INTR_PAIR,
    M_COUNT
};

static volatile uint64_t nulls, pongs;
static uint64_t nulls_due;

static void on_null(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    nulls++;
}

static void on_ping(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    rq_reply(c, m, H_PONG, NULL, 0, NULL, 0, 0);
}

static void on_pong(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    pongs++;
}

static double one_side(struct rqb *b, int mode)
{
    volatile uint64_t *phase = rqb_flag(b, 1);
    static uint64_t round;
    double r = 0;
    rq_barrier(b->ctx);
    round++;
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (uint64_t i = 0; i < K; i++)
            rq_request(b->ctx, 1, H_NULL, NULL, 0, NULL, 0, 0);
        r = rqb_elapsed_ns(t0) / K;
        __atomic_store_n(phase, round, __ATOMIC_RELEASE);
    } else if (b->me == 1) {
        rqb_spin_until(phase, round);
        nulls_due += K;
        uint64_t t0 = rqb_now_ns();
        if (mode == M_BUFFERED) {
            rq_msg_t v;
            rq_peek(b->ctx, QID, &v); /* insert: every AM packet into the buffer */
        }
        while (nulls < nulls_due)
            rq_poll(b->ctx);
        r = rqb_elapsed_ns(t0) / K;
    }
    return rqb_from(b, mode == M_SEND ? 0 : 1, r);
}

static double round_trip(struct rqb *b, int intr)
{
    volatile uint64_t *done = rqb_flag(b, 2);
    static uint64_t round;
    double r = 0;
    if (b->me == 1 && intr)
        rq_interrupts(b->ctx, RQ_INTR_ALL);
    rq_barrier(b->ctx);
    round++;
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (uint64_t i = 0; i < RT; i++) {
            uint64_t want = pongs + 1;
            rq_request(b->ctx, 1, H_PING, NULL, 0, NULL, 0, 0);
            rq_wait_until(b->ctx, &pongs, want);
        }
        r = rqb_elapsed_ns(t0) / RT;
        __atomic_store_n(done, round, __ATOMIC_RELEASE);
    } else if (b->me == 1) {
        if (intr) {
            rqb_spin_until(done, round); /* computing: no librq call */
            rq_interrupts(b->ctx, RQ_INTR_OFF);
        } else {
            while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < round)
                rq_poll(b->ctx);
        }
    }
    return rqb_from(b, 0, r);
}

static double atomic_pair(struct rqb *b, int nested)
{
    double r = 0;
    if (b->me == 0) {
        if (nested)
            rq_atomic_begin(b->ctx);
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < AT; i++) {
            rq_atomic_begin(b->ctx);
            rq_atomic_end(b->ctx);
        }
        r = rqb_elapsed_ns(t0) / AT;
        if (nested)
            rq_atomic_end(b->ctx);
    }
    return rqb_from(b, 0, r);
}

/* rq_interrupts on rank 0 (Liu & Culler Table 10).  Pipeline: IT calls
 * that keep the mode.  Toggle: TT alternations, the call of interest timed
 * alone each time, median.  Pair: IT enable + disable back to back (the
 * progress thread, woken by the first enable, has not slept again before
 * the next: what a tight loop pays). */
enum { IT = 2000 };

/* One rq_interrupts call timed alone: with the TSC where there is one (the
 * clock's 10-20 ns steps would swamp a cheap call), else the clock. */
static double timed_call_ns(struct rqb *b, int mode)
{
#if defined(__x86_64__)
    if (b->rep.tsc_ghz > 0) {
        unsigned aux;
        uint64_t c0 = __rdtscp(&aux);
        rq_interrupts(b->ctx, mode);
        uint64_t c1 = __rdtscp(&aux);
        return (double)(c1 - c0) / b->rep.tsc_ghz;
    }
#endif
    uint64_t t0 = rqb_now_ns();
    rq_interrupts(b->ctx, mode);
    return rqb_elapsed_ns(t0);
}
static double intr_toggle(struct rqb *b, int mode)
{
    double r = 0;
    if (b->me == 0) {
        if (mode == M_INTR_ON_PIPE || mode == M_INTR_PAIR || mode == M_INTR_OFF_PIPE) {
            int keep = mode == M_INTR_ON_PIPE ? RQ_INTR_ALL : RQ_INTR_OFF;
            rq_interrupts(b->ctx, keep);
            uint64_t t0 = rqb_now_ns();
            for (int i = 0; i < IT; i++) {
                if (mode == M_INTR_PAIR) {
                    rq_interrupts(b->ctx, RQ_INTR_ALL);
                    rq_interrupts(b->ctx, RQ_INTR_OFF);
                } else {
                    rq_interrupts(b->ctx, keep);
                }
            }
            r = rqb_elapsed_ns(t0) / IT;
        } else {
            /* Each timed call finds the progress thread asleep, as an
             * occasional toggle would: between calls this thread yields
             * (the progress thread shares its CPU) and waits for it to
             * take its bell and sleep again. */
            enum { TT = 400 };
            static double t[TT];
            int on = mode == M_INTR_ON_TOGGLE;
            for (int i = 0; i < TT; i++) {
                rq_interrupts(b->ctx, on ? RQ_INTR_OFF : RQ_INTR_ALL);
                sched_yield();
                rqb_delay_ns(20000);
                t[i] = timed_call_ns(b, on ? RQ_INTR_ALL : RQ_INTR_OFF);
            }
            struct rqb_summary s;
            rqb_summarize(t, TT, 0.9, &s);
            r = s.median;
        }
        rq_interrupts(b->ctx, RQ_INTR_OFF);
    }
    return rqb_from(b, 0, r);
}

static double run(struct rqb *b, void *arg)
{
    const int mode = *(const int *)arg;
    switch (mode) {
    case M_RT_POLL: return round_trip(b, 0);
    case M_RT_INTR: return round_trip(b, 1);
    case M_ATOMIC:  return atomic_pair(b, 0);
    case M_ATOMIC_NESTED: return atomic_pair(b, 1);
    case M_SEND:
    case M_POLLED:
    case M_BUFFERED: return one_side(b, mode);
    default:        return intr_toggle(b, mode);
    }
}

int rqb_fam_vni(struct rqb *b)
{
    if (b->np < 2)
        return 0;
    rq_handler_register(b->ctx, H_NULL, on_null, NULL, 0);
    rq_handler_register(b->ctx, H_PING, on_ping, NULL, 0);
    rq_handler_register(b->ctx, H_PONG, on_pong, NULL, 0);
    rq_queue_open(b->ctx, QID);
    double L = rqb_from(b, 0, rqb_cacheline_oneway_ns(b, b->o.quick ? 20000 : 100000));
    rqb_row_derived(b, "cache line one-way (limit L)", NAN, "ns", L,
                    "the physical limit between ranks 0 and 1, this run");
    static const char *const names[] = {
        "send (null message)", "polled receive", "buffered receive (insert + extract)",
        "round trip, polled", "round trip, interrupt", "atomicity section (begin + end)",
        "atomicity section, nested (begin + end)", "rq_interrupts enable (pipeline)",
        "rq_interrupts disable (pipeline)", "rq_interrupts enable (toggle)",
        "rq_interrupts disable (toggle)", "rq_interrupts enable + disable"};
    static const char *const notes[] = {
        "rank 0 per message, receiver idle", "rank 1 per message, in place",
        "rank 1 per message, via the virtual buffer", "responder polls",
        "responder computes; its progress thread runs the handler",
        "toggle, uncontended; L&C's section, disable + enable (toggle): 8.37 us",
        "pipeline: inside an open section; L&C disable + enable (pipeline): 0.84 us",
        "mode already on; L&C CMAML_enable (pipeline) 13.4 cycles, 420 ns",
        "mode already off; L&C CMAML_disable (pipeline) 13.4 cycles, 420 ns",
        "off -> all; wakes the progress thread; L&C 156.8 cycles, 4.90 us",
        "all -> off; L&C 120.0 cycles, 3.75 us",
        "L&C CMAML_enable + CMAML_disable 267.8 cycles, 8.37 us"};
    double v[M_COUNT];
    for (int mode = 0; mode < M_COUNT; mode++) {
        struct rqb_summary s;
        rqb_measure(b, names[mode], run, &mode, &s);
        rqb_row(b, names[mode], NAN, "ns", &s, notes[mode]);
        v[mode] = s.median;
    }
    if (b->me == 0 && v[M_POLLED] > 0) {
        rqb_row_derived(b, "buffered / polled receive", NAN, "x", v[M_BUFFERED] / v[M_POLLED],
                        "target < 4; FUGU: polled 9 cycles, buffered 180 + 52 (26x)");
        rqb_row_derived(b, "interrupt receive cost", NAN, "ns", v[M_RT_INTR] - v[M_RT_POLL],
                        "round trip with interrupt minus polled round trip");
    }
    return 0;
}
