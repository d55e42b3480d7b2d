/* vni_async - interrupt-mode delivery with no application call at all.
 * Every rank is in RQ_INTR_ALL and, after setup, its main thread never
 * calls librq until the end of the phase: everything must arrive through
 * the progress thread, whichever path a packet took (in place, the virtual
 * buffer after a revocation or a sender's drain, an outbox).
 *
 *   stream  [n [sec_us plain_us]]
 *                 rank 0 streams n short requests to rank 1, which
 *                 alternates atomicity sections (up to sec_us) with plain
 *                 computation (up to plain_us); the atomicity timer
 *                 revokes the sections that a full lane outlasts.
 *   chain   [k]   every rank starts k handler-send chains around the ring
 *                 of ranks (each hop a 256-byte medium from a handler),
 *                 a few at a time between short atomicity sections, then
 *                 alternates sections and computation.
 *   outbox  [n]   rank 0 sends one request; rank 1's handler answers with
 *                 n requests of 1000 bytes, more than a lane holds, so
 *                 most are parked in its outbox; rank 0 must get all.
 *
 * A phase that stops making progress for 30 s prints each rank's rq_stats
 * and fails.  The end of a phase is announced by a message (interrupting
 * too), so no rank polls while waiting for it. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rq.h>

#include "check.h"

enum { H_DATA = 1, H_HOP, H_DONE, H_STOP, H_START };

static rq_ctx_t *job;
static _Atomic uint64_t got, done_chains, stopped, started;
static uint64_t next_seq[64];
static uint64_t n_out = 2000;
static char payload[1000];

static uint64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static void spin_us(unsigned us)
{
    uint64_t end = now_us() + us;
    while (now_us() < end)
        ;
}

static void on_data(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK(m->src >= 0 && m->src < 64);
    CHECK_EQ(m->args[0], next_seq[m->src]++); /* FIFO per pair, exactly once */
    if (m->len != 0)
        for (size_t i = 0; i < m->len; i++)
            CHECK_EQ(((const unsigned char *)m->data)[i], pattern_byte(m->src, m->args[0], i));
    atomic_fetch_add(&got, 1);
}

/* A chain hop: args = {chain id, hops left}; forward until 0, then tell
 * the chain's origin. */
static void on_hop(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    char buf[256];
    CHECK_EQ(m->len, sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++)
        CHECK_EQ(((const unsigned char *)m->data)[i], (unsigned char)(m->args[0] + i));
    int me = rq_rank(c), n = rq_size(c);
    if (m->args[1] == 0) {
        int origin = (int)(m->args[0] % (uint64_t)n);
        CHECK_EQ(rq_request(c, origin, H_DONE, NULL, 0, NULL, 0, 0), 0);
        return;
    }
    uint64_t args[2] = {m->args[0], m->args[1] - 1};
    memcpy(buf, m->data, sizeof buf);
    CHECK_EQ(rq_request(c, (me + 1) % n, H_HOP, args, 2, buf, sizeof buf, 0), 0);
}

static void on_done(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    atomic_fetch_add(&done_chains, 1);
}

static void on_stop(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    atomic_store(&stopped, 1);
}

/* Rank 1, outbox mode: answer with n_out requests of 1000 bytes. */
static void on_start(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    for (uint64_t i = 0; i < n_out; i++) {
        for (size_t k = 0; k < sizeof payload; k++)
            payload[k] = (char)pattern_byte(rq_rank(c), i, k);
        CHECK_EQ(rq_request(c, m->src, H_DATA, &i, 1, payload, sizeof payload, 0), 0);
    }
    atomic_store(&started, 1);
}

static void stall(const char *what, uint64_t have, uint64_t want)
{
    rq_stats_t s;
    CHECK_EQ(rq_stats(job, &s), 0);
    fprintf(stderr,
            "vni_async: rank %d stalled in %s at %llu of %llu: sent %llu received %llu direct %llu "
            "buffered %llu buffer_bytes_now %llu interrupts %llu revocations %llu parked %llu\n",
            rq_rank(job), what, (unsigned long long)have, (unsigned long long)want,
            (unsigned long long)s.sent, (unsigned long long)s.received,
            (unsigned long long)s.direct, (unsigned long long)s.buffered,
            (unsigned long long)s.buffer_bytes_now, (unsigned long long)s.interrupts,
            (unsigned long long)s.revocations, (unsigned long long)s.parked);
    exit(1);
}

/* Compute until *w reaches want, making no librq call; with sections,
 * alternate atomicity sections of sec_us with plain stretches of plain_us
 * (both randomised).  Fails after 30 s without progress. */
static void compute_until(const char *what, _Atomic uint64_t *w, uint64_t want, int sections,
                          unsigned sec_us, unsigned plain_us)
{
    unsigned r = 777u + (unsigned)rq_rank(job);
    uint64_t last = atomic_load(w), since = now_us();
    while (atomic_load(w) < want) {
        r = r * 1103515245u + 12345u;
        if (sections) {
            CHECK_EQ(rq_atomic_begin(job), 0);
            spin_us(1 + (r >> 16) % sec_us);
            CHECK_EQ(rq_atomic_end(job), 0);
        }
        spin_us(1 + (r >> 8) % plain_us);
        uint64_t v = atomic_load(w);
        if (v != last) {
            last = v;
            since = now_us();
        } else if (now_us() - since > 30000000u) {
            stall(what, v, want);
        }
    }
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    job = ctx;
    CHECK(argc >= 2);
    const char *mode = argv[1];
    int me = rq_rank(ctx), n = rq_size(ctx);
    CHECK(n >= 2 && n <= 64);
    CHECK_EQ(rq_handler_register(ctx, H_DATA, on_data, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_HOP, on_hop, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_DONE, on_done, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_STOP, on_stop, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_START, on_start, NULL, 0), 0);
    if (strcmp(mode, "outbox") == 0 && argc > 2) /* before any handler can run */
        n_out = strtoull(argv[2], NULL, 10);
    CHECK_EQ(rq_interrupts(ctx, RQ_INTR_ALL), 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    if (strcmp(mode, "stream") == 0) {
        uint64_t total = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000;
        if (me == 0) {
            for (uint64_t i = 0; i < total; i++)
                CHECK_EQ(rq_request(ctx, 1, H_DATA, &i, 1, NULL, 0, 0), 0);
        } else if (me == 1) {
            unsigned sec = argc > 3 ? (unsigned)atoi(argv[3]) : 3000;
            unsigned plain = argc > 4 ? (unsigned)atoi(argv[4]) : 100;
            compute_until("stream", &got, total, 1, sec, plain);
        }
    } else if (strcmp(mode, "chain") == 0) {
        uint64_t k = argc > 2 ? strtoull(argv[2], NULL, 10) : 200;
        uint64_t hops = 3u * (uint64_t)n;
        char buf[256];
        /* Chains start while the ranks compute: a start that finds the
         * ring full drains the sender's own lanes into its buffer. */
        for (uint64_t c = 0; c < k; c++) {
            uint64_t id = c * (uint64_t)n + (uint64_t)me, args[2] = {id, hops};
            for (size_t i = 0; i < sizeof buf; i++)
                buf[i] = (char)(id + i);
            CHECK_EQ(rq_request(ctx, (me + 1) % n, H_HOP, args, 2, buf, sizeof buf, 0), 0);
            if (c % 8 == 7) {
                CHECK_EQ(rq_atomic_begin(ctx), 0);
                spin_us(20);
                CHECK_EQ(rq_atomic_end(ctx), 0);
            }
        }
        compute_until("chain", &done_chains, k, 1, 200, 50);
        if (me != 0) {
            CHECK_EQ(rq_request(ctx, 0, H_DONE, NULL, 0, NULL, 0, 0), 0);
            compute_until("chain end", &stopped, 1, 1, 200, 50);
        } else {
            compute_until("chain others", &done_chains, k + (uint64_t)n - 1, 1, 200, 50);
            for (int r = 1; r < n; r++)
                CHECK_EQ(rq_request(ctx, r, H_STOP, NULL, 0, NULL, 0, 0), 0);
        }
    } else if (strcmp(mode, "outbox") == 0) {
        if (me == 0) {
            CHECK_EQ(rq_request(ctx, 1, H_START, NULL, 0, NULL, 0, 0), 0);
            compute_until("outbox", &got, n_out, 0, 1, 20);
            CHECK_EQ(rq_request(ctx, 1, H_STOP, NULL, 0, NULL, 0, 0), 0);
        } else if (me == 1) {
            compute_until("outbox end", &stopped, 1, 0, 1, 20);
        }
    } else {
        fprintf(stderr, "usage: vni_async stream|chain|outbox [count]\n");
        return 2;
    }
    rq_stats_t s;
    CHECK_EQ(rq_stats(ctx, &s), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_interrupts(ctx, RQ_INTR_OFF), 0);
    printf("vni_async %s: rank %d received %llu (direct %llu, buffered %llu), interrupts %llu, "
           "revocations %llu, parked %llu: ok\n",
           mode, me, (unsigned long long)s.received, (unsigned long long)s.direct,
           (unsigned long long)s.buffered, (unsigned long long)s.interrupts,
           (unsigned long long)s.revocations, (unsigned long long)s.parked);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
