/* rqueue.c - rqbench rq: remote queues (RQ paper, section 2.1).
 * Rank 0 fills rank 1's inbound ring with K = 1024 packets while rank 1
 * runs no librq code; then rank 1 times consuming them, so each figure is
 * the cost of one side only.
 *   enqueue            rank 0: rq_enqueue of a 1-word packet.
 *   dequeue            rank 1: rq_dequeue (copy out, remove).
 *   peek + pop         rank 1: rq_peek (view in place), rq_pop.
 *   peek_n + pop_n     rank 1: runs of up to RQ_PEEK_MAX views, one
 *                      rq_pop_n per run (the batched zero-copy form).
 *   key redistribution the radix-sort step of the paper: each packet
 *                      carries (index, key) and the receiver stores
 *                      key at table[index], either by an active-message
 *                      handler run from rq_poll, or in an inlined loop:
 *                      per packet (rq_peek + rq_pop) or batched (rq_peek_n
 *                      + rq_pop_n).  The paper reports the inlined loop
 *                      13% faster on the CM-5 (Strata's radix sort). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>

#include "bench.h"

enum { H_KEY = 50, QID = 1 };
enum { K = 1024 };
enum { M_ENQ, M_DEQ, M_PEEKPOP, M_PEEKN, M_KEYS_AM, M_KEYS_RQ1, M_KEYS_RQ };

static uint64_t table[K];
static volatile uint64_t stored;
/* Absolute target: rank 1 may run some handlers while still in the
 * barrier, before it starts the timed loop. */
static uint64_t stored_due;

static void on_key(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    table[m->args[0] % K] = m->args[1];
    stored++;
}

static double run(struct rqb *b, void *arg)
{
    const int mode = *(const int *)arg;
    volatile uint64_t *phase = rqb_flag(b, 1);
    static uint64_t round;
    double r = 0;
    rq_barrier(b->ctx);
    round++;
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (uint64_t i = 0; i < K; i++) {
            uint64_t a[2] = {(i * 7919) % K, i};
            if (mode == M_KEYS_AM)
                rq_request(b->ctx, 1, H_KEY, a, 2, NULL, 0, 0);
            else
                rq_enqueue(b->ctx, 1, QID, 0, a, mode >= M_KEYS_RQ1 ? 2 : 1, NULL, 0, 0);
        }
        r = rqb_elapsed_ns(t0) / K;
        __atomic_store_n(phase, round, __ATOMIC_RELEASE);
    } else if (b->me == 1) {
        rqb_spin_until(phase, round);
        uint64_t t0 = rqb_now_ns(), w[2] = {0, 0};
        rq_msg_t v, vs[RQ_PEEK_MAX];
        int got = 0;
        switch (mode) {
        case M_ENQ:
        case M_DEQ:
            while (got < K)
                got += rq_dequeue(b->ctx, QID, w, 1, NULL, 0) == 1;
            break;
        case M_PEEKPOP:
            while (got < K) {
                if (rq_peek(b->ctx, QID, &v) == 1) {
                    w[0] += v.args[0];
                    rq_pop(b->ctx, QID);
                    got++;
                }
            }
            break;
        case M_PEEKN:
            while (got < K) {
                int n = rq_peek_n(b->ctx, QID, vs, RQ_PEEK_MAX);
                for (int i = 0; i < n; i++)
                    w[0] += vs[i].args[0];
                if (n > 0)
                    got += rq_pop_n(b->ctx, QID, (unsigned)n);
            }
            break;
        case M_KEYS_AM:
            stored_due += K;
            while (stored < stored_due)
                rq_poll(b->ctx);
            break;
        case M_KEYS_RQ:
            while (got < K) {
                int n = rq_peek_n(b->ctx, QID, vs, RQ_PEEK_MAX);
                for (int i = 0; i < n; i++)
                    table[vs[i].args[0] % K] = vs[i].args[1];
                if (n > 0)
                    got += rq_pop_n(b->ctx, QID, (unsigned)n);
            }
            break;
        default:
            while (got < K) {
                if (rq_peek(b->ctx, QID, &v) == 1) {
                    table[v.args[0] % K] = v.args[1];
                    rq_pop(b->ctx, QID);
                    got++;
                }
            }
            break;
        }
        r = rqb_elapsed_ns(t0) / K;
    }
    return rqb_from(b, mode == M_ENQ ? 0 : 1, r);
}

int rqb_fam_rq(struct rqb *b)
{
    rq_handler_register(b->ctx, H_KEY, on_key, NULL, 0);
    rq_queue_open(b->ctx, QID);
    static const char *const names[] = {
        "enqueue (1 word)", "dequeue (copy out)", "peek + pop (in place)",
        "peek_n + pop_n (in place, runs)", "key redistribution: AM handler",
        "key redistribution: inlined, per packet", "key redistribution: inlined dequeue"};
    static const char *const notes[] = {
        "sender side, receiver idle", "receiver side, ring full", "receiver side, ring full",
        "receiver side, ring full", "rq_poll runs a handler per packet", "rq_peek/rq_pop loop, no handler",
        "rq_peek_n/rq_pop_n loop, no handler"};
    double keys[2] = {0, 0};
    for (int mode = M_ENQ; mode <= M_KEYS_RQ; mode++) {
        struct rqb_summary s;
        rqb_measure(b, names[mode], run, &mode, &s);
        rqb_row(b, names[mode], NAN, "ns", &s, notes[mode]);
        if (mode == M_KEYS_AM || mode == M_KEYS_RQ)
            keys[mode == M_KEYS_RQ] = s.median;
    }
    if (b->me == 0 && keys[1] > 0) {
        char note[112];
        snprintf(note, sizeof note, "AM handler time / inlined loop time (paper: 1.13 on the CM-5)");
        rqb_row_derived(b, "handler vs inlined dequeue", NAN, "x", keys[0] / keys[1], note);
    }
    return 0;
}
