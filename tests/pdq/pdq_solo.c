/* pdq_solo - the PDQ's solo run (src/pdq/pdq.c: a PDQ thread that runs
 * messages straight from the lanes while nothing of its PDQ is queued or
 * running) against everything that may happen while one of its messages
 * runs with the context let go:
 *   A  arrivals: every other rank streams keyed messages to rank 0 (four
 *      keys, every 8th handler of a key runs 40 us) while rank 0's
 *      application thread polls now and then (its intake puts a running
 *      message in the books); with 2 threads the second one also steps in
 *      after a stall.
 *      Checked: no two handlers of a key at once, per (source, key) order,
 *      none lost.
 *   B  drain: rank 0 sends itself a message whose handler runs 0-80 us,
 *      then drains at once: the handler must be over when the drain
 *      returns, whether the drain found it in a lane, queued or running.
 *   C  sequential and same key: rank 0 sends itself a slow keyed message,
 *      waits until it runs, then sends (every other round) a
 *      RQ_KEY_SEQUENTIAL one and a second message of the same key, and
 *      polls: the sequential handler must run alone, after the slow one,
 *      and the second keyed one after both (with 2 threads, the second
 *      thread is free to run it at once if nothing holds the key).
 * Each round of B and C repeats the interleaving hundreds of times.
 * With "intr" among the phases, rank 0 runs with interrupts on
 * (RQ_INTR_ALL): its progress thread takes packets in too, another
 * arrival that may come while a solo message runs.
 * argv: PDQ threads (1 or more), messages per sender in A, phases (default
 * "abc"). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "rq.h"

#define QID    9
#define NKEYS  4
#define MAXR   16
#define H_A    30
#define H_SLOW 31
#define H_SEQ  32
#define H_NEXT 33

static _Atomic int owner[NKEYS];
static uint64_t next_seq[MAXR][NKEYS]; /* per (source, key): serialized by the PDQ */
static _Atomic uint64_t got, violations, order_errors;
/* A's pace: a slow handler (40 us) every 8th message of a key, a message
 * every 8 us from each sender (the PDQ keeps up between slow ones, so it
 * runs solo), a poll by rank 0's application thread every 30 us. */
enum { SLOW_EVERY = 8 };
static const uint64_t slow_ns = 40000, poll_gap_ns = 30000, send_gap_ns = 8000;
static _Atomic int running, slow_started, slow_done, seq_ok, seq_bad, next_ok, next_bad;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_ns(uint64_t ns)
{
    const uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

/* A: args seq; every 8th of a key runs 40 us, long enough for the intake
 * of the application thread (and, past 20 us, a second PDQ thread) to
 * come in. */
static void on_a(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)a;
    if (m->key >= NKEYS || m->src >= MAXR || m->nargs != 1) {
        atomic_fetch_add(&order_errors, 1);
        return;
    }
    if (atomic_exchange(&owner[m->key], 1) != 0)
        atomic_fetch_add(&violations, 1);
    if (next_seq[m->src][m->key] != m->args[0])
        atomic_fetch_add(&order_errors, 1);
    next_seq[m->src][m->key] = m->args[0] + 1;
    if (m->args[0] % SLOW_EVERY == SLOW_EVERY - 1)
        spin_ns(slow_ns);
    atomic_store(&owner[m->key], 0);
    atomic_fetch_add(&got, 1);
}

/* B and C: runs args[0] ns, marks its end. */
static void on_slow(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)a;
    atomic_fetch_add(&running, 1);
    atomic_store(&slow_started, 1);
    spin_ns(m->args[0]);
    atomic_fetch_sub(&running, 1);
    atomic_fetch_add(&slow_done, 1);
}

/* C: alone, after the slow one. */
static void on_seq(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)m, (void)a;
    if (atomic_load(&running) == 0 && atomic_load(&slow_done) == 1)
        atomic_fetch_add(&seq_ok, 1);
    else
        atomic_fetch_add(&seq_bad, 1);
    spin_ns(2000);
}

/* C: the slow one's key, after the slow one (and the sequential one when
 * args[0] says one was sent). */
static void on_next(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)a;
    if (atomic_load(&slow_done) == 1 &&
        (uint64_t)(atomic_load(&seq_ok) + atomic_load(&seq_bad)) == m->args[0])
        atomic_fetch_add(&next_ok, 1);
    else
        atomic_fetch_add(&next_bad, 1);
}

static void phase_a(rq_ctx_t *ctx, int me, int size, uint64_t n)
{
    if (me != 0) {
        uint64_t seq[NKEYS] = {0};
        for (uint64_t i = 0; i < n; i++) {
            const uint64_t k = (i * 5 + (uint64_t)me) % NKEYS;
            CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, k, H_A, &seq[k], 1, NULL, 0, 0), 0);
            seq[k]++;
            spin_ns(send_gap_ns);
        }
    } else {
        /* The application thread polls now and then: its intake is an
         * arrival for the PDQ while a solo message may be running. */
        const uint64_t want = n * (uint64_t)(size - 1);
        const double deadline = check_now_s() + 120;
        while (atomic_load(&got) < want) {
            CHECK(rq_poll(ctx) >= 0);
            spin_ns(poll_gap_ns);
            CHECK(check_now_s() < deadline);
        }
    }
    CHECK_EQ(rq_barrier(ctx), 0);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    const unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
    const uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 20000;
    const char *phases = argc > 3 ? argv[3] : "abc";
    const int me = rq_rank(ctx), size = rq_size(ctx);
    CHECK(size <= MAXR && threads >= 1);
    CHECK_EQ(rq_handler_register(ctx, H_A, on_a, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_SLOW, on_slow, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_SEQ, on_seq, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_NEXT, on_next, NULL, 0), 0);
    rq_pdq_t *pdq = NULL;
    if (me == 0 && strstr(phases, "intr") != NULL)
        CHECK_EQ(rq_interrupts(ctx, RQ_INTR_ALL), 0);
    if (me == 0) {
        rq_pdq_attr_t at = {.threads = threads, .mode = RQ_PDQ_DEDICATED};
        CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    if (size > 1 && strchr(phases, 'a'))
        phase_a(ctx, me, size, n);
    if (me == 0) {
        CHECK_EQ(atomic_load(&violations), 0);
        CHECK_EQ(atomic_load(&order_errors), 0);
        CHECK_EQ(atomic_load(&got), strchr(phases, 'a') ? n * (uint64_t)(size - 1) : 0);

        /* B: a drain returns after a handler it may have found running. */
        for (uint64_t i = 0; strchr(phases, 'b') && i < 400; i++) {
            uint64_t a = (i % 5) * 20000;
            CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, i % NKEYS, H_SLOW, &a, 1, NULL, 0, 0), 0);
            if (i % 3 == 1)
                spin_ns(i % 7 * 3000); /* sometimes after the run started */
            CHECK_EQ(rq_pdq_drain(pdq), 0);
            CHECK_EQ(atomic_load(&slow_done), (int)i + 1);
        }

        /* C: a sequential message and a same-key one arrive while the
         * slow one runs. */
        const int nc = strchr(phases, 'c') ? 300 : 0;
        for (int i = 0; i < nc; i++) {
            atomic_store(&slow_done, 0);
            atomic_store(&slow_started, 0);
            atomic_store(&seq_ok, 0);
            atomic_store(&seq_bad, 0);
            uint64_t a = 20000 + (uint64_t)(i % 4) * 10000;
            const uint64_t key = (uint64_t)i % NKEYS;
            CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, key, H_SLOW, &a, 1, NULL, 0, 0), 0);
            const double deadline = check_now_s() + 30;
            while (!atomic_load(&slow_started)) /* no poll: the PDQ takes it in */
                CHECK(check_now_s() < deadline);
            const uint64_t with_seq = (uint64_t)i & 1; /* odd rounds */
            if (with_seq)
                CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, RQ_KEY_SEQUENTIAL, H_SEQ, NULL, 0, NULL, 0, 0),
                         0);
            CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, key, H_NEXT, &with_seq, 1, NULL, 0, 0), 0);
            CHECK(rq_poll(ctx) >= 0); /* this thread's intake: an arrival */
            CHECK_EQ(rq_pdq_drain(pdq), 0);
            CHECK_EQ(atomic_load(&seq_bad), 0);
            CHECK_EQ(atomic_load(&seq_ok), (int)with_seq);
        }
        CHECK_EQ(atomic_load(&next_bad), 0);
        CHECK_EQ(atomic_load(&next_ok), nc);
        CHECK_EQ(rq_pdq_close(pdq), 0);
        printf("pdq_solo: ok (%d ranks, %u threads, %llu per sender)\n", size, threads,
               (unsigned long long)n);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
