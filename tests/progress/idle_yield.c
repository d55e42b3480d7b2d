/* idle_yield - RQ_YIELD_IDLE: the non-blocking receive calls (rq_poll,
 * rq_peek, rq_peek_n, rq_dequeue) share one count of calls in a row that
 * found nothing; each one past RQ_SPIN_COUNT yields the CPU and is counted
 * in rq_stats().idle_yields; a call that returns anything else resets the
 * count.  argv[1]: the mode the job runs under (auto, never, always), so
 * the test knows what to expect; auto means on exactly when the node runs
 * more ranks than it has CPUs online (every rank of an rqrun job is on
 * this node).  The test sets RQ_SPIN_COUNT to SPIN. */
#define _DEFAULT_SOURCE
#include <string.h>
#include <unistd.h>

#include <rq.h>

#include "check.h"

enum { SPIN = 10, H_PING = 1, QID = 3 };
static volatile uint64_t pinged;
static void on_ping(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    pinged++;
}

static uint64_t yields(rq_ctx_t *ctx)
{
    rq_stats_t st;
    CHECK_EQ(rq_stats(ctx, &st), 0);
    return st.idle_yields;
}

/* The model of the count: after each receive call returning rc, the
 * yields it must have caused (1 or 0). */
static int on;
static uint64_t run, expected;
static int note(int rc)
{
    CHECK(rc >= 0);
    if (rc != 0)
        run = 0;
    else if (++run > SPIN && on)
        expected++;
    return rc;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK(argc == 2);
    const int me = rq_rank(ctx), np = rq_size(ctx);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    on = strcmp(argv[1], "always") == 0 ||
             (strcmp(argv[1], "auto") == 0 && cpus > 0 && np > cpus);
    CHECK_EQ(rq_handler_register(ctx, H_PING, on_ping, NULL, 0), 0);
    CHECK_EQ(rq_queue_open(ctx, QID), 0);
    CHECK_EQ(rq_barrier(ctx), 0); /* blocking calls do not touch the count */

    /* 100 rq_poll calls: the first SPIN empty ones spin, the rest yield
     * (a late barrier packet run by one of them resets the count). */
    uint64_t y0 = yields(ctx);
    for (int i = 0; i < 100; i++)
        note(rq_poll(ctx));
    CHECK_EQ(yields(ctx) - y0, expected);

    /* The other call types continue the same count (they run no handler:
     * only QID packets make them return non-zero). */
    rq_msg_t v[4];
    uint64_t a[1];
    uint64_t y1 = yields(ctx);
    for (int i = 0; i < 20; i++) {
        CHECK_EQ(note(rq_peek(ctx, QID, v)), 0);
        CHECK_EQ(note(rq_peek_n(ctx, QID, v, 4)), 0);
        CHECK_EQ(note(rq_dequeue(ctx, QID, a, 0, NULL, 0)), 0);
    }
    CHECK_EQ(yields(ctx) - y0, expected);
    /* 60 empty calls in a row: at least 60 - SPIN of them yielded. */
    CHECK(on ? yields(ctx) - y1 >= 60 - SPIN : yields(ctx) == y1);
    CHECK_EQ(rq_barrier(ctx), 0); /* nobody sends before everyone is idle */

    /* A delivery resets it: every other rank tells rank 0 (through QID)
     * that it is out of the barrier, rank 0 pings it, and it polls until
     * its handler ran; empty calls then count from 0 again.  A queue
     * packet resets it the same way. */
    if (me == 0) {
        for (int got = 0; got < np - 1;)
            got += note(rq_dequeue(ctx, QID, a, 0, NULL, 0));
        for (int r = 1; r < np; r++)
            CHECK_EQ(rq_request(ctx, r, H_PING, NULL, 0, NULL, 0, 0), 0);
        CHECK_EQ(rq_barrier(ctx), 0);
        for (int r = 1; r < np; r++) {
            uint64_t w = 1;
            CHECK_EQ(rq_enqueue(ctx, r, QID, 0, &w, 1, NULL, 0, 0), 0);
        }
    } else {
        CHECK_EQ(rq_enqueue(ctx, 0, QID, 0, NULL, 0, NULL, 0, 0), 0);
        while (pinged == 0)
            note(rq_poll(ctx));
        CHECK_EQ(run, 0);
        for (int i = 0; i < SPIN + 3; i++)
            CHECK_EQ(note(rq_dequeue(ctx, QID, a, 0, NULL, 0)), 0);
        CHECK_EQ(yields(ctx) - y0, expected);
        CHECK_EQ(rq_barrier(ctx), 0);
        while (note(rq_peek_n(ctx, QID, v, 4)) == 0)
            ;
        CHECK_EQ(rq_pop_n(ctx, QID, 1), 1);
        uint64_t before = expected;
        for (int i = 0; i < SPIN + 3; i++)
            CHECK_EQ(note(rq_peek_n(ctx, QID, v, 4)), 0);
        CHECK_EQ(expected - before, on ? 3u : 0u);
    }
    CHECK_EQ(yields(ctx) - y0, expected);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
