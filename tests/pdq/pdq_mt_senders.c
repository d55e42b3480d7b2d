/* pdq_mt_senders - several application threads of every rank call
 * rq_pdq_enqueue at once, to every rank (itself included), while the PDQ's
 * threads run the handlers.  A send that fits takes only its destination
 * lane's lock; with small rings (RQ_RING_BYTES) many take the general path
 * and wait in the outbox, so both paths interleave on one lane.  Each
 * sending thread has a key of its own per destination: a key's messages
 * come from one thread, in that thread's order, and the PDQ runs a key's
 * messages one at a time in arrival order, so each handler must see the
 * next sequence number of its (source, thread).  Payloads (0-300 bytes)
 * are checked byte by byte; nothing lost or run twice; rq_stats().sent
 * counts every message.
 * argv: mode (dedicated | multiplexed), PDQ threads, sending threads,
 * messages per sending thread per destination. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rq.h"

#define QID      3
#define H_MSG    40
#define MAXR     16
#define MAXS     8
#define MAXBYTES 300

static rq_ctx_t *ctx;
static rq_pdq_t *pdq;
static int nranks, multiplexed;
static uint64_t per_dst;
/* Written only by the handler of the key (src, t): keys are serialized. */
static uint64_t expect_seq[MAXR][MAXS];
static _Atomic uint64_t received, errors;

static size_t payload_len(uint64_t seq) { return (size_t)(seq * 37u % (MAXBYTES + 1)); }

static void on_msg(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)c, (void)arg;
    uint64_t t = m->args[0], seq = m->args[1];
    if (m->nargs != 2 || t >= MAXS || m->src < 0 || m->src >= MAXR ||
        m->key != (uint64_t)m->src * MAXS + t || expect_seq[m->src][t] != seq ||
        m->len != payload_len(seq)) {
        atomic_fetch_add(&errors, 1);
        return;
    }
    const unsigned char *p = m->data;
    for (size_t i = 0; i < m->len; i++)
        if (p[i] != pattern_byte(m->src * MAXS + (int)t, seq, i)) {
            atomic_fetch_add(&errors, 1);
            return;
        }
    expect_seq[m->src][t] = seq + 1;
    atomic_fetch_add_explicit(&received, 1, memory_order_release);
}

/* One wait step: help (multiplexed: nobody else runs them in time), poll. */
static void step(void)
{
    if (multiplexed)
        CHECK(rq_pdq_help(pdq, 64) >= 0);
    CHECK(rq_poll(ctx) >= 0);
}

static void *sender(void *arg)
{
    const uint64_t t = (uint64_t)(uintptr_t)arg;
    const int me = rq_rank(ctx);
    unsigned char buf[MAXBYTES];
    for (uint64_t seq = 0; seq < per_dst; seq++) {
        const size_t len = payload_len(seq);
        const uint64_t a[2] = {t, seq};
        pattern_fill(buf, len, me * MAXS + (int)t, seq);
        for (int d = 0; d < nranks; d++)
            CHECK_EQ(rq_pdq_enqueue(ctx, d, QID, (uint64_t)me * MAXS + t, H_MSG, a, 2, buf, len, 0), 0);
        if (seq % 32 == 0)
            step();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK(argc == 5);
    multiplexed = strcmp(argv[1], "multiplexed") == 0;
    CHECK(multiplexed || strcmp(argv[1], "dedicated") == 0);
    unsigned threads = (unsigned)atoi(argv[2]), senders = (unsigned)atoi(argv[3]);
    per_dst = strtoull(argv[4], NULL, 10);
    nranks = rq_size(ctx);
    CHECK(nranks <= MAXR && senders >= 1 && senders <= MAXS && threads >= 1);
    CHECK_EQ(rq_handler_register(ctx, H_MSG, on_msg, NULL, 0), 0);
    rq_pdq_attr_t at = {threads, multiplexed ? RQ_PDQ_MULTIPLEXED : RQ_PDQ_DEDICATED, 0};
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    pthread_t th[MAXS];
    for (unsigned t = 0; t < senders; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, sender, (void *)(uintptr_t)t), 0);
    for (unsigned t = 0; t < senders; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);
    const uint64_t want = (uint64_t)nranks * senders * per_dst;
    while (atomic_load_explicit(&received, memory_order_acquire) < want &&
           atomic_load(&errors) == 0)
        step();
    CHECK_EQ(rq_pdq_drain(pdq), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(atomic_load(&errors), 0);
    CHECK_EQ(atomic_load(&received), want);
    rq_stats_t st;
    CHECK_EQ(rq_stats(ctx, &st), 0);
    CHECK(st.sent >= (uint64_t)nranks * senders * per_dst);
    const int me = rq_rank(ctx);
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("pdq_mt_senders: ok (%d ranks, %s, %u PDQ threads, %u senders, %llu per destination)\n",
               nranks, argv[1], threads, senders, (unsigned long long)per_dst);
    return 0;
}
