/* pdq_rt.c - rqbench pdq: one message's way through a parallel dispatch
 * queue beside an active message's, in the same run (the part of a DSM
 * miss that the PDQ adds: docs/dsm.md, Table 1).
 *
 * Rank 0 sends K requests to rank 1, one at a time; each handler answers
 * with an active message whose handler rank 0 waits for (rq_wait_until).
 * Beside the round trips, the time of rank 0's send call itself in the
 * same exchange (the packet's slot lines were last read by rank 1: what
 * a send costs the sender in a request-reply protocol, rqdsm's):
 *   active message   rq_request to an AM handler; rank 1 polls (rq_poll);
 *   PDQ, helped      rq_pdq_enqueue (a new key each) to rank 1's dedicated
 *                    PDQ of one thread; rank 1's application thread calls
 *                    rq_poll and rq_pdq_help in a loop, as a waiting rqdsm
 *                    call does (whoever gets there first runs the handler);
 *   PDQ, its thread  the same, but rank 1's application thread spins on a
 *                    counter without calling librq: the PDQ's thread takes
 *                    the message in and runs it (the application computes).
 * Rank 1's PDQ is opened after the active-message rows, so those run
 * with the context not yet thread-safe, as in `rqbench am`. */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#include "bench.h"

enum { H_RT_ECHO = 72, H_RT_BACK = 73, H_RT_PDQ = 74, RTQ = 8, RT_K = 1024 };
enum { HOW_AM, HOW_HELPED, HOW_THREAD };

static volatile uint64_t back; /* rank 0: answers counted */
static uint64_t back_due;
static _Atomic uint64_t served; /* rank 1: requests served (any thread) */
static uint64_t served_due;

static void on_echo(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    rq_reply(c, m, H_RT_BACK, NULL, 0, NULL, 0, 0);
    atomic_fetch_add_explicit(&served, 1, memory_order_release);
}

static void on_pdq(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    rq_request(c, m->src, H_RT_BACK, NULL, 0, NULL, 0, 0);
    atomic_fetch_add_explicit(&served, 1, memory_order_release);
}

static void on_back(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    back++;
}

struct rt {
    int       how;
    int       send_call; /* time rank 0's send calls, not the round trip */
    rq_pdq_t *pdq;       /* rank 1 */
};

/* What a clock read pair costs: taken off the timed send calls. */
static double clock_pair_ns(void)
{
    uint64_t sum = 0;
    for (int i = 0; i < RT_K; i++) {
        uint64_t a = rqb_now_ns();
        sum += rqb_now_ns() - a;
    }
    return (double)sum / RT_K;
}

static double round_trips(struct rqb *b, void *arg)
{
    const struct rt *t = arg;
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        const double pair = t->send_call ? clock_pair_ns() : 0;
        uint64_t t0 = rqb_now_ns(), in_send = 0;
        for (int i = 0; i < RT_K; i++) {
            uint64_t s0 = t->send_call ? rqb_now_ns() : 0;
            if (t->how == HOW_AM)
                rq_request(b->ctx, 1, H_RT_ECHO, NULL, 0, NULL, 0, 0);
            else
                rq_pdq_enqueue(b->ctx, 1, RTQ, (uint64_t)i, H_RT_PDQ, NULL, 0, NULL, 0, 0);
            if (t->send_call)
                in_send += rqb_now_ns() - s0;
            rq_wait_until(b->ctx, &back, ++back_due);
        }
        r = t->send_call ? (double)in_send / RT_K - pair : rqb_elapsed_ns(t0) / RT_K;
    } else if (b->me == 1) {
        served_due += RT_K;
        unsigned spins = 0;
        while (atomic_load_explicit(&served, memory_order_acquire) < served_due) {
            if (t->how == HOW_AM) {
                rq_poll(b->ctx);
            } else if (t->how == HOW_HELPED) {
                rq_poll(b->ctx);
                rq_pdq_help(t->pdq, 64);
            } else if (++spins % 1024 == 0) {
                sched_yield(); /* computing, but not hogging a shared core */
            } else {
                __builtin_ia32_pause();
            }
        }
    }
    return r;
}

void rqb_pdq_round_trips(struct rqb *b)
{
    if (b->np < 2)
        return;
    rq_handler_register(b->ctx, H_RT_ECHO, on_echo, NULL, 0);
    rq_handler_register(b->ctx, H_RT_PDQ, on_pdq, NULL, 0);
    rq_handler_register(b->ctx, H_RT_BACK, on_back, NULL, 0);
    struct rt t = {HOW_AM, 0, NULL};
    struct rqb_summary am, helped, thread, call_am, call_pdq;
    rqb_measure(b, "round trip: active message", round_trips, &t, &am);
    rqb_row(b, "round trip: active message", NAN, "ns", &am,
            "rq_request, the handler replies; rank 1 polls");
    t.send_call = 1;
    rqb_measure(b, "send call: active message", round_trips, &t, &call_am);
    rqb_row(b, "send call: active message", NAN, "ns", &call_am,
            "rank 0's rq_request in the exchange above, a clock pair off");
    t.send_call = 0;
    int failed = 0;
    if (b->me == 1) {
        rq_pdq_attr_t at = {1, RQ_PDQ_DEDICATED, 0};
        failed = rq_pdq_open(b->ctx, RTQ, &at, &t.pdq) != 0;
    }
    double f = rqb_from(b, 1, failed);
    if (f != 0) {
        rqb_row_na(b, "round trip: PDQ message", NAN, "ns", "rq_pdq_open failed");
        return;
    }
    t.how = HOW_HELPED;
    rqb_measure(b, "round trip: PDQ, helped", round_trips, &t, &helped);
    rqb_row(b, "round trip: PDQ message, helped", NAN, "ns", &helped,
            "rank 1's application thread polls and helps (rq_pdq_help)");
    t.send_call = 1;
    rqb_measure(b, "send call: PDQ message", round_trips, &t, &call_pdq);
    rqb_row(b, "send call: PDQ message", NAN, "ns", &call_pdq,
            "rank 0's rq_pdq_enqueue in the exchange above, a clock pair off");
    t.send_call = 0;
    t.how = HOW_THREAD;
    rqb_measure(b, "round trip: PDQ, its thread", round_trips, &t, &thread);
    rqb_row(b, "round trip: PDQ message, its thread", NAN, "ns", &thread,
            "rank 1's application thread computes: the PDQ thread serves");
    if (b->me == 1)
        rq_pdq_close(t.pdq);
    rqb_row_derived(b, "round trip: PDQ helped / active message", NAN, "x",
                    helped.median / am.median, "same run");
    rqb_row_derived(b, "round trip: PDQ its thread / active message", NAN, "x",
                    thread.median / am.median, "same run");
}
