/* pdq_window.c - which window a PDQ opened with attr.window = 0 uses
 * (rq.h: RQ_PDQ_WINDOW when it is set, else 64 or 32 per thread, whichever
 * is more) and that a named window is kept.  One rank, dedicated threads:
 * the first message of hot key 7 blocks (at most 2 s) until a cold-key
 * message queued behind `behind` more hot ones has run.  With a window
 * wider than those, the cold message goes around the busy key and runs;
 * with a narrower one it is held back until the hot handler gives up.
 * (Two threads at least: the hot handler blocks one.)
 * argv: threads, attr.window (0: the default), behind, runs|held. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "rq.h"

#define QID    6
#define H_HOT  20
#define H_COLD 21

static _Atomic int cold_ran, cold_during_wait, hot_first_done;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_hot(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    if (m->args[0] != 0)
        return;
    /* Held back, the cold message cannot run before this returns: wait
     * long enough that a dispatch that lets it go would have run it. */
    for (uint64_t t0 = now_ns(); !atomic_load(&cold_ran) && now_ns() - t0 < 2000000000u;) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&cold_during_wait, atomic_load(&cold_ran));
    atomic_store(&hot_first_done, 1);
}

static void on_cold(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    atomic_store(&cold_ran, 1);
}

int main(int argc, char **argv)
{
    CHECK(argc == 5);
    const unsigned threads = (unsigned)atoi(argv[1]), window = (unsigned)atoi(argv[2]);
    const uint64_t behind = strtoull(argv[3], NULL, 10);
    const int expect_runs = strcmp(argv[4], "runs") == 0;
    CHECK(expect_runs || strcmp(argv[4], "held") == 0);
    CHECK(threads >= 2);
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_handler_register(ctx, H_HOT, on_hot, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_COLD, on_cold, NULL, 0), 0);
    rq_pdq_attr_t at = {threads, RQ_PDQ_DEDICATED, window};
    rq_pdq_t *pdq;
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    const int me = rq_rank(ctx);
    for (uint64_t i = 0; i <= behind; i++)
        CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, 7, H_HOT, &i, 1, NULL, 0, 0), 0);
    uint64_t z = 0;
    CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, 8, H_COLD, &z, 1, NULL, 0, 0), 0);
    CHECK_EQ(rq_pdq_drain(pdq), 0);
    CHECK_EQ(atomic_load(&hot_first_done), 1);
    CHECK_EQ(atomic_load(&cold_ran), 1);
    CHECK_EQ(atomic_load(&cold_during_wait), expect_runs);
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
