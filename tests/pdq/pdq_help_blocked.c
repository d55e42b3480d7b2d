/* pdq_help_blocked.c - a multiplexed PDQ's one helper blocks in a handler
 * in the middle of a run from the lanes (its solo run: docs/pdq.md, "The
 * one helper's run"), and the fallback threads take the rest in: every
 * message runs once, each key in order, and the blocker sees the message
 * queued after it run.  One rank, a multiplexed PDQ of T fallback threads,
 * R rounds; each round queues, to itself, F quick messages of key A, a
 * blocker of key A (it waits, at most 20 s, until the release has run),
 * F quick messages of key C and the release (key B); then the main thread,
 * the PDQ's only helper, calls rq_pdq_help(max) until all have run: its
 * help blocks in the blocker until a fallback thread, seeing the helper
 * stopped, takes the lanes in.
 * argv: fallback threads (1 or more), rounds, max (rq_pdq_help's). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "rq.h"

#define QID       9
#define H_BLOCK   30
#define H_RELEASE 31
#define H_QUICK   32
#define QUICK     500
#define KEY_A     11
#define KEY_B     22
#define KEY_C     33

static _Atomic int released;
static _Atomic uint64_t blocked_ok, blocked_late, releases, quick_a, quick_c, order_errors;
static uint64_t next_a, next_c; /* per-key sequence: only that key's handler touches it */

static void on_block(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    for (double t0 = check_now_s(); !atomic_load(&released) && check_now_s() - t0 < 20.0;) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(atomic_load(&released) ? &blocked_ok : &blocked_late, 1);
    if (m->args[0] != next_a++) /* the blocker comes after key A's first run */
        atomic_fetch_add(&order_errors, 1);
}

static void on_release(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    atomic_store(&released, 1);
    atomic_fetch_add(&releases, 1);
}

static void on_quick(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    uint64_t *next = m->key == KEY_A ? &next_a : &next_c;
    if (m->args[0] != (*next)++)
        atomic_fetch_add(&order_errors, 1);
    atomic_fetch_add(m->key == KEY_A ? &quick_a : &quick_c, 1);
}

static uint64_t handled(void)
{
    return atomic_load(&blocked_ok) + atomic_load(&blocked_late) + atomic_load(&releases) +
           atomic_load(&quick_a) + atomic_load(&quick_c);
}

int main(int argc, char **argv)
{
    CHECK(argc == 4);
    const unsigned threads = (unsigned)atoi(argv[1]), rounds = (unsigned)atoi(argv[2]),
                   max = (unsigned)atoi(argv[3]);
    CHECK(threads >= 1 && rounds >= 1 && max >= 1);
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_handler_register(ctx, H_BLOCK, on_block, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_RELEASE, on_release, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_QUICK, on_quick, NULL, 0), 0);
    rq_pdq_attr_t at = {threads, RQ_PDQ_MULTIPLEXED, 0};
    rq_pdq_t *pdq;
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    const int me = rq_rank(ctx);
    uint64_t sa = 0, sc = 0;
    for (unsigned r = 0; r < rounds; r++) {
        atomic_store(&released, 0);
        for (unsigned i = 0; i < QUICK; i++, sa++)
            CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, KEY_A, H_QUICK, &sa, 1, NULL, 0, 0), 0);
        CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, KEY_A, H_BLOCK, &sa, 1, NULL, 0, 0), 0);
        sa++;
        for (unsigned i = 0; i < QUICK; i++, sc++)
            CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, KEY_C, H_QUICK, &sc, 1, NULL, 0, 0), 0);
        CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, KEY_B, H_RELEASE, NULL, 0, NULL, 0, 0), 0);
        const uint64_t due = (uint64_t)(r + 1) * (2u * QUICK + 2u);
        for (double t0 = check_now_s(); handled() < due && check_now_s() - t0 < 60.0;)
            CHECK(rq_pdq_help(pdq, max) >= 0);
        CHECK_EQ(handled(), due);
        CHECK_EQ(atomic_load(&blocked_late), 0);
        CHECK_EQ(atomic_load(&blocked_ok), (uint64_t)(r + 1));
        CHECK_EQ(atomic_load(&releases), (uint64_t)(r + 1));
        CHECK_EQ(atomic_load(&quick_a), (uint64_t)(r + 1) * QUICK);
        CHECK_EQ(atomic_load(&quick_c), (uint64_t)(r + 1) * QUICK);
    }
    CHECK_EQ(atomic_load(&order_errors), 0);
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
