/* mt_bias.c - the context lock's bias (src/core/mt.h) handed between
 * threads many times: a thread that calls alone long enough owns the lock
 * and enters without the mutex; any other thread must take it back first,
 * whether the owner is inside a call or not, or has exited.
 *
 * Every round: (a) the threads take turns, each alone for a burst long
 * enough to own the lock (its successor revokes an idle owner); (b) all
 * threads call at once (revocation while the owner is inside); (c) a
 * short-lived thread calls alone until it owns the lock, then exits (its
 * bias must be given up, not read after its death).  With "pdq", a PDQ is
 * open instead of RQ_THREAD_SAFE: its threads run keyed handlers that
 * reply, taking the context from whichever thread owns it.
 *
 * Each call is a request to the next rank, with payload, and a poll; a
 * handler replies to every eighth.  Checked: per (source, sending thread)
 * requests arrive in order with their payloads whole, handlers never
 * overlap, nothing lost, every reply and PDQ reply back.
 * argv: threads (2..6), rounds, [pdq]. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rq.h"

#define MAXR      16
#define MAXT      8   /* senders: threads + the short-lived one */
#define H_MSG     30
#define H_REPLY   31
#define H_KEYED   32
#define H_KREPLY  33
#define QID       5
#define ALONE     1500 /* calls alone: more than the lock's 1024 to own it */
#define TOGETHER  400
#define MAXBYTES  96

static rq_ctx_t *ctx;
static int nranks, me, with_pdq;
static unsigned nthreads;
/* AM handlers run one at a time (on whichever thread polls). */
static uint64_t expect_seq[MAXR][MAXT];
static uint64_t received, errors;
static _Atomic int in_handler;
static _Atomic uint64_t replies[MAXT], keyed_in, keyed_back;
static uint64_t sent_seq[MAXT]; /* each sender's own */
static _Atomic unsigned turn;

static size_t payload_len(uint64_t seq) { return (size_t)(seq * 13u % (MAXBYTES + 1)); }

static void on_msg(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)arg;
    if (atomic_exchange(&in_handler, 1) != 0)
        errors++; /* two AM handlers at once: the lock let two in */
    uint64_t t = m->args[0], seq = m->args[1];
    if (m->nargs != 2 || t >= MAXT || m->src >= MAXR || expect_seq[m->src][t] != seq ||
        m->len != payload_len(seq)) {
        errors++;
    } else {
        const unsigned char *p = m->data;
        for (size_t i = 0; i < m->len; i++)
            if (p[i] != pattern_byte(m->src * MAXT + (int)t, seq, i)) {
                errors++;
                break;
            }
        expect_seq[m->src][t] = seq + 1;
        received++;
        if (seq % 8 == 0)
            CHECK_EQ(rq_reply(c, m, H_REPLY, &t, 1, NULL, 0, 0), 0);
    }
    atomic_store(&in_handler, 0);
}

static void on_reply(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)c, (void)arg;
    atomic_fetch_add(&replies[m->args[0] % MAXT], 1);
}

/* PDQ handler (on the PDQ's threads): reply from there. */
static void on_keyed(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)arg;
    atomic_fetch_add(&keyed_in, 1);
    CHECK_EQ(rq_reply(c, m, H_KREPLY, NULL, 0, NULL, 0, 0), 0);
}

static void on_kreply(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)c, (void)m, (void)arg;
    atomic_fetch_add(&keyed_back, 1);
}

/* One call of thread t: a request to the next rank (and a keyed message
 * to it every fourth call with a PDQ), then a poll. */
static void one_call(unsigned t)
{
    unsigned char buf[MAXBYTES];
    uint64_t seq = sent_seq[t]++;
    size_t len = payload_len(seq);
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern_byte(me * MAXT + (int)t, seq, i);
    uint64_t a[2] = {t, seq};
    CHECK_EQ(rq_request(ctx, (me + 1) % nranks, H_MSG, a, 2, buf, len, 0), 0);
    if (with_pdq && seq % 4 == 0)
        CHECK_EQ(rq_pdq_enqueue(ctx, (me + 1) % nranks, QID, seq % 61, H_KEYED, NULL, 0, NULL, 0,
                                0),
                 0);
    CHECK(rq_poll(ctx) >= 0);
}

struct role {
    unsigned t;
    unsigned rounds;
    pthread_barrier_t *bar;
};

static void *sender(void *arg)
{
    struct role *r = arg;
    for (unsigned round = 0; round < r->rounds; round++) {
        /* (a) turns: alone for ALONE calls, then the next thread. */
        while (atomic_load(&turn) != r->t)
            sched_yield(); /* outside librq: the holder is alone */
        for (unsigned i = 0; i < ALONE; i++)
            one_call(r->t);
        atomic_store(&turn, (r->t + 1) % nthreads);
        pthread_barrier_wait(r->bar);
        /* (b) together. */
        for (unsigned i = 0; i < TOGETHER; i++)
            one_call(r->t);
        pthread_barrier_wait(r->bar);
        /* (c) thread 0 lets a short-lived thread own the lock and exit. */
        pthread_barrier_wait(r->bar);
    }
    return NULL;
}

static void *short_lived(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < ALONE; i++)
        one_call(MAXT - 1);
    return NULL;
}

int main(int argc, char **argv)
{
    nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 3;
    unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 4;
    with_pdq = argc > 3 && strcmp(argv[3], "pdq") == 0;
    CHECK(nthreads >= 2 && nthreads <= MAXT - 2 && rounds >= 1);
    if (!with_pdq)
        setenv("RQ_THREAD_SAFE", "1", 1);
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    nranks = rq_size(ctx);
    me = rq_rank(ctx);
    CHECK(nranks <= MAXR);
    CHECK_EQ(rq_handler_register(ctx, H_MSG, on_msg, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_REPLY, on_reply, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_KEYED, on_keyed, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_KREPLY, on_kreply, NULL, 0), 0);
    rq_pdq_t *pdq = NULL;
    if (with_pdq) {
        rq_pdq_attr_t at = {.threads = 2, .mode = RQ_PDQ_DEDICATED, .window = 0};
        CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    pthread_barrier_t bar;
    CHECK_EQ(pthread_barrier_init(&bar, NULL, nthreads + 1), 0);
    pthread_t th[MAXT];
    struct role roles[MAXT];
    for (unsigned t = 0; t < nthreads; t++) {
        roles[t] = (struct role){.t = t, .rounds = rounds, .bar = &bar};
        CHECK_EQ(pthread_create(&th[t], NULL, sender, &roles[t]), 0);
    }
    for (unsigned round = 0; round < rounds; round++) {
        pthread_barrier_wait(&bar); /* (a) done */
        pthread_barrier_wait(&bar); /* (b) done */
        pthread_t s;
        CHECK_EQ(pthread_create(&s, NULL, short_lived, NULL), 0);
        CHECK_EQ(pthread_join(s, NULL), 0);
        /* The main thread calls right after the owner died. */
        for (unsigned i = 0; i < 200; i++)
            one_call(MAXT - 2);
        pthread_barrier_wait(&bar); /* (c) done */
    }
    for (unsigned t = 0; t < nthreads; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);
    pthread_barrier_destroy(&bar);

    /* Every sender's requests reach the next rank; we get the previous
     * rank's (the same counts on every rank). */
    uint64_t want = 0, want_keyed = 0;
    for (unsigned t = 0; t < MAXT; t++) {
        want += sent_seq[t];
        want_keyed += with_pdq ? (sent_seq[t] + 3) / 4 : 0;
        CHECK_EQ(rq_wait_until(ctx, (const volatile uint64_t *)&replies[t], (sent_seq[t] + 7) / 8),
                 0);
    }
    CHECK_EQ(rq_wait_until(ctx, (const volatile uint64_t *)&received, want), 0);
    CHECK_EQ(rq_wait_until(ctx, (const volatile uint64_t *)&keyed_back, want_keyed), 0);
    if (pdq != NULL)
        CHECK_EQ(rq_pdq_drain(pdq), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(errors, 0);
    CHECK_EQ(received, want);
    CHECK_EQ(atomic_load(&keyed_in), want_keyed);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("mt_bias: ok (%d ranks, %u threads, %u rounds%s, %llu requests per rank)\n", nranks,
               nthreads, rounds, with_pdq ? ", PDQ" : "", (unsigned long long)want);
    return 0;
}
