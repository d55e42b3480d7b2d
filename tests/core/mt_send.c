/* mt_send.c - one context, several application threads (RQ_THREAD_SAFE=1):
 * every thread sends requests, with and without payload, to every rank
 * (itself included) and polls, at the same time as the others.  Handlers
 * reply to every fourth request.  Checked: per (source, sending thread)
 * the requests arrive in the order that thread sent them, payloads whole,
 * nothing lost or duplicated, every reply back, and rq_stats counts every
 * packet sent (those that took a lane's lock alone too).
 * argv: threads per rank, requests per thread per destination. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rq.h"

#define MAXR     16
#define MAXT     8
#define H_MSG    20
#define H_REPLY  21
#define MAXBYTES 300

static rq_ctx_t *ctx;
static int nranks;
static uint64_t per_dst;
/* Handlers run one at a time under the context lock: plain fields. */
static uint64_t expect_seq[MAXR][MAXT];
static uint64_t received;
static uint64_t replies_sent;
static _Atomic uint64_t replies[MAXT];
static uint64_t errors;

static size_t payload_len(uint64_t seq) { return (size_t)(seq * 37u % (MAXBYTES + 1)); }

static void on_msg(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)arg;
    uint64_t t = m->args[0], seq = m->args[1];
    if (m->nargs != 2 || t >= MAXT || m->src >= MAXR || expect_seq[m->src][t] != seq ||
        m->len != payload_len(seq)) {
        errors++;
        return;
    }
    const unsigned char *p = m->data;
    for (size_t i = 0; i < m->len; i++)
        if (p[i] != pattern_byte(m->src * MAXT + (int)t, seq, i)) {
            errors++;
            return;
        }
    expect_seq[m->src][t] = seq + 1;
    received++;
    if (seq % 4 == 0) {
        CHECK_EQ(rq_reply(c, m, H_REPLY, &t, 1, NULL, 0, 0), 0);
        replies_sent++;
    }
}

static void on_reply(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)c, (void)arg;
    atomic_fetch_add(&replies[m->args[0] % MAXT], 1);
}

static void *sender(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg;
    int me = rq_rank(ctx);
    unsigned char buf[MAXBYTES];
    for (uint64_t seq = 0; seq < per_dst; seq++) {
        size_t len = payload_len(seq);
        for (size_t i = 0; i < len; i++)
            buf[i] = pattern_byte(me * MAXT + (int)t, seq, i);
        for (int d = 0; d < nranks; d++) {
            uint64_t a[2] = {t, seq};
            int rc;
            while ((rc = rq_request(ctx, d, H_MSG, a, 2, buf, len, 0)) == RQ_EAGAIN)
                CHECK(rq_poll(ctx) >= 0);
            CHECK_EQ(rc, 0);
        }
        if (seq % 64 == 0)
            CHECK(rq_poll(ctx) >= 0);
    }
    /* Every fourth request to each rank is answered. */
    uint64_t want = (uint64_t)nranks * ((per_dst + 3) / 4);
    CHECK_EQ(rq_wait_until(ctx, (const volatile uint64_t *)&replies[t], want), 0);
    return NULL;
}

int main(int argc, char **argv)
{
    setenv("RQ_THREAD_SAFE", "1", 1);
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    nranks = rq_size(ctx);
    int me = rq_rank(ctx);
    CHECK(nranks <= MAXR);
    unsigned nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 3;
    per_dst = argc > 2 ? strtoull(argv[2], NULL, 10) : 20000;
    CHECK(nthreads >= 1 && nthreads <= MAXT);
    CHECK_EQ(rq_handler_register(ctx, H_MSG, on_msg, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_REPLY, on_reply, NULL, 0), 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    pthread_t th[MAXT];
    for (unsigned t = 0; t < nthreads; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, sender, (void *)(uintptr_t)t), 0);
    for (unsigned t = 0; t < nthreads; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);

    uint64_t want = (uint64_t)nranks * nthreads * per_dst;
    CHECK_EQ(rq_wait_until(ctx, (const volatile uint64_t *)&received, want), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(errors, 0);
    CHECK_EQ(received, want);
    rq_stats_t st;
    CHECK_EQ(rq_stats(ctx, &st), 0);
    /* At least every request and reply sent here (the barriers' packets
     * come on top). */
    CHECK(st.sent >= want + replies_sent);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("mt_send: ok (%d ranks, %u threads, %llu per destination)\n", nranks, nthreads,
               (unsigned long long)per_dst);
    return 0;
}
