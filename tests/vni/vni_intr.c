/* vni_intr - interrupt-style delivery.  Rank 1 never polls while rank 0
 * sends; it alternates atomicity sections (with a flag raised inside) and
 * plain computation.  Checked on rank 1:
 *   (1) SELECTIVE: packets for a handler registered RQ_HF_INTERRUPT, and
 *       packets sent with RQ_INTERRUPT, run asynchronously (all of them,
 *       in order, without a poll) and never while the flag is up;
 *   (2) SELECTIVE: plain packets alone do not interrupt: they wait for a
 *       poll;
 *   (3) ALL: every packet interrupts;
 *   (4) OFF: nothing runs asynchronously any more;
 *   (5) OFF -> ALL takes up the packets already waiting (nothing rang
 *       for them: the call must), and calls that leave ALL as it is
 *       (which wake nobody) lose none of the packets arriving meanwhile.
 *       (Not from SELECTIVE: there the take-up rung by entering it may
 *       run late and legitimately take plain packets that came since.)
 * Needs 2 ranks, on one node or two.  The phase flags between the ranks
 * are words of the writer's own segment; the other rank reads them with
 * rq_amo (across nodes, rank 1's progress thread serves rank 0's reads
 * while rank 1 computes: its interrupts are on). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rq.h>

#include "check.h"

enum { H_INTR = 1, H_PLAIN = 2 };
#define N 2000

static _Atomic int in_section, violations;
static _Atomic uint64_t intr_got, plain_got, async_runs;
static uint64_t intr_next, plain_next;
static pthread_t main_thread;

static void note_async(void)
{
    if (!pthread_equal(pthread_self(), main_thread))
        atomic_fetch_add(&async_runs, 1);
    if (atomic_load(&in_section))
        atomic_fetch_add(&violations, 1);
}

static void on_intr(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    note_async();
    CHECK_EQ(m->args[0], intr_next++);
    atomic_fetch_add(&intr_got, 1);
}

static void on_plain(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    note_async();
    CHECK_EQ(m->args[0], plain_next++);
    atomic_fetch_add(&plain_got, 1);
}

static rq_ctx_t *job; /* for the flag helpers */

/* Our own flag word: 0 on rank 0 (the phase), 1 on rank 1 (stopped polling). */
static void flag_set(uint64_t v)
{
    void *base;
    size_t size;
    CHECK_EQ(rq_segment(job, &base, &size), 0);
    atomic_store((_Atomic uint64_t *)base + rq_rank(job), v);
}

/* The other rank's flag word: an atomic fetch-add of 0, so that the
 * owner's store and this read are atomic on both sides. */
static uint64_t flag_get(void)
{
    int peer = 1 - rq_rank(job);
    uint64_t v;
    CHECK_EQ(rq_amo(job, peer, 8u * (unsigned)peer, RQ_AMO_FADD, 0, 0, &v), 0);
    return v;
}

static void spin_us(unsigned us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < (long)us);
}

/* Rank 1: compute, partly inside atomicity sections, never polling, until
 * *counter reaches want (or 60 s: a failure). */
static void compute_until(rq_ctx_t *ctx, _Atomic uint64_t *counter, uint64_t want)
{
    unsigned r = 12345;
    for (int i = 0; atomic_load(counter) < want; i++) {
        CHECK(i < 600000);
        r = r * 1103515245u + 12345u;
        CHECK_EQ(rq_atomic_begin(ctx), 0);
        CHECK_EQ(rq_atomic_begin(ctx), 0); /* nested */
        atomic_store(&in_section, 1);
        spin_us(20 + (r >> 16) % 80);
        atomic_store(&in_section, 0);
        CHECK_EQ(rq_atomic_end(ctx), 0);
        CHECK_EQ(rq_atomic_end(ctx), 0);
        spin_us(20 + (r >> 8) % 80);
    }
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    job = ctx;
    CHECK_EQ(rq_size(ctx), 2);
    int me = rq_rank(ctx);
    main_thread = pthread_self();
    CHECK_EQ(rq_handler_register(ctx, H_INTR, on_intr, NULL, RQ_HF_INTERRUPT), 0);
    CHECK_EQ(rq_handler_register(ctx, H_PLAIN, on_plain, NULL, 0), 0);
    if (me == 1)
        CHECK_EQ(rq_interrupts(ctx, RQ_INTR_SELECTIVE), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    /* Rank 1 may still poll inside the barrier after rank 0 left it: rank
     * 0 starts once rank 1 says it has stopped polling. */
    if (me == 1)
        flag_set(1);
    else
        while (flag_get() != 1)
            ;

    /* (1) interrupting packets, half by handler flag, half by send flag */
    uint64_t sent_plain = 0;
    if (me == 0) {
        for (uint64_t i = 0; i < N; i++) {
            CHECK_EQ(rq_request(ctx, 1, H_INTR, &i, 1, NULL, 0, 0), 0);
            if (i % 2 == 0) {
                /* a plain handler with RQ_INTERRUPT: interrupts too */
                CHECK_EQ(rq_request(ctx, 1, H_PLAIN, &sent_plain, 1, NULL, 0, RQ_INTERRUPT), 0);
                sent_plain++;
            }
            if (i % 64 == 0)
                usleep(100);
        }
    } else {
        compute_until(ctx, &intr_got, N);
        compute_until(ctx, &plain_got, N / 2);
        CHECK_EQ(atomic_load(&violations), 0);
        CHECK(atomic_load(&async_runs) == N + N / 2); /* every one without a poll */
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    /* (2) plain packets alone wait for a poll (rank 0 starts once rank 1
     * has left the barrier, whose polling would run them: seen once in a
     * clean-clone run, 63 of them) */
    if (me == 1)
        flag_set(10);
    if (me == 0) {
        while (flag_get() != 10)
            spin_us(10);
        for (uint64_t i = 0; i < 100; i++, sent_plain++)
            CHECK_EQ(rq_request(ctx, 1, H_PLAIN, &sent_plain, 1, NULL, 0, 0), 0);
        flag_set(11); /* after the sends, by program order */
    } else {
        while (flag_get() != 11)
            spin_us(10);
        usleep(20000);
        CHECK_EQ(atomic_load(&plain_got), N / 2);
        uint64_t want = N / 2 + 100;
        CHECK_EQ(rq_wait_until(ctx, (volatile uint64_t *)&plain_got, want), 0);
        CHECK_EQ(rq_interrupts(ctx, RQ_INTR_ALL), 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    /* (3) ALL: plain packets interrupt (rank 0 starts once rank 1 has
     * left the barrier, whose polling would run them: across two nodes
     * under load, 12 of 2000 once) */
    uint64_t runs0 = atomic_load(&async_runs);
    if (me == 1)
        flag_set(12);
    if (me == 0) {
        while (flag_get() != 12)
            spin_us(10);
        for (uint64_t i = 0; i < N; i++, sent_plain++)
            CHECK_EQ(rq_request(ctx, 1, H_PLAIN, &sent_plain, 1, NULL, 0, 0), 0);
    } else {
        compute_until(ctx, &plain_got, N / 2 + 100 + N);
        CHECK_EQ(atomic_load(&violations), 0);
        CHECK_EQ(atomic_load(&async_runs) - runs0, N);
        CHECK_EQ(rq_interrupts(ctx, RQ_INTR_OFF), 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    /* (4) OFF: nothing runs without a poll (rank 0 starts once rank 1 has
     * left the barrier, whose polling would run them) */
    if (me == 1)
        flag_set(2);
    if (me == 0) {
        while (flag_get() != 2)
            spin_us(10);
        for (uint64_t i = 0; i < 10; i++, sent_plain++)
            CHECK_EQ(rq_request(ctx, 1, H_PLAIN, &sent_plain, 1, NULL, 0, RQ_INTERRUPT), 0);
        flag_set(2);
    } else {
        while (flag_get() != 2)
            spin_us(10);
        usleep(20000);
        CHECK_EQ(atomic_load(&plain_got), N / 2 + 100 + N);
        CHECK_EQ(rq_wait_until(ctx, (volatile uint64_t *)&plain_got, N / 2 + 110 + N), 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    /* (5) widening the mode takes up what waits; repeating it (no wake-up
     * any more: nothing new can interrupt) loses nothing */
    uint64_t base = N / 2 + 110 + N;
    /* as at the start: rank 1 may still poll inside the barrier */
    if (me == 1)
        flag_set(3);
    if (me == 0) {
        while (flag_get() != 3)
            spin_us(10);
        for (uint64_t i = 0; i < 50; i++, sent_plain++)
            CHECK_EQ(rq_request(ctx, 1, H_PLAIN, &sent_plain, 1, NULL, 0, 0), 0);
        flag_set(3);
        while (flag_get() != 4)
            spin_us(10);
        for (uint64_t i = 0; i < 200; i++, sent_plain++) {
            CHECK_EQ(rq_request(ctx, 1, H_PLAIN, &sent_plain, 1, NULL, 0, 0), 0);
            if (i % 16 == 0)
                usleep(200);
        }
    } else {
        while (flag_get() != 3)
            spin_us(10);
        usleep(20000);
        CHECK_EQ(atomic_load(&plain_got), base); /* OFF: they wait */
        uint64_t before = atomic_load(&async_runs);
        CHECK_EQ(rq_interrupts(ctx, RQ_INTR_ALL), 0); /* no packet rings: the call must */
        compute_until(ctx, &plain_got, base + 50);
        flag_set(4);
        for (int i = 0; atomic_load(&plain_got) < base + 250; i++) {
            CHECK(i < 600000);
            CHECK_EQ(rq_interrupts(ctx, RQ_INTR_ALL), 0); /* unchanged: a no-op */
            spin_us(50);
        }
        CHECK_EQ(atomic_load(&async_runs) - before, 250);
        CHECK_EQ(atomic_load(&violations), 0);
        CHECK_EQ(rq_interrupts(ctx, RQ_INTR_OFF), 0);
        rq_stats_t st;
        CHECK_EQ(rq_stats(ctx, &st), 0);
        CHECK(st.interrupts > 0);
        printf("vni_intr: %llu handlers run by interrupt in %llu deliveries, none inside an "
               "atomicity section: ok\n",
               (unsigned long long)atomic_load(&async_runs), (unsigned long long)st.interrupts);
    }
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
