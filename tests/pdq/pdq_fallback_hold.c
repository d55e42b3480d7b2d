/* pdq_fallback_hold.c - a multiplexed PDQ's fallback thread stays off
 * while an application thread keeps calling rq_pdq_help, even with max 0
 * ("idle: I serve, but nothing now"), and takes over once the calls stop
 * (rq.h, rq_pdq_help: each call holds the fallback threads off for
 * RQ_PDQ_FALLBACK_US, to within 2 us).  Run with RQ_PDQ_FALLBACK_US at
 * 200 ms, calls every millisecond for 400 ms: no handler may run then (a
 * helper descheduled for 199 ms would be needed for one to), and all of
 * them run once the calls stop.  Several rounds; each starts with a
 * burst of back-to-back calls, after which the helper marks the time only
 * every few calls (rq.h: up to 15 calls just before it slows down may not
 * count), and the sparse calls that follow must still hold them off.
 * The calls kept the fallback thread looking less often (up to 4x
 * RQ_PDQ_FALLBACK_US apart): it must still step in within 4x of the last
 * call.  Before the first call, the fallback thread runs what comes. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <rq.h>

#include "check.h"

enum { QID = 3, H_COUNT = 40, MSGS = 16, ROUNDS = 3, BURST = 100000 };
static _Atomic unsigned ran;

static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)m, (void)a;
    atomic_fetch_add(&ran, 1);
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_handler_register(ctx, H_COUNT, on_count, NULL, 0), 0);
    rq_pdq_t *pdq;
    rq_pdq_attr_t at = {1, RQ_PDQ_MULTIPLEXED, 0};
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    const int me = rq_rank(ctx);
    /* Before the first help nothing holds the fallback thread off (rq.h,
     * RQ_PDQ_MULTIPLEXED): messages sent now run without one. */
    {
        uint64_t x = 0;
        for (unsigned i = 0; i < MSGS; i++)
            CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, i, H_COUNT, &x, 1, NULL, 0, 0), 0);
        const double t0 = check_now_s();
        while (atomic_load(&ran) < MSGS && check_now_s() - t0 < 30)
            nap_ms(1);
        CHECK_EQ(atomic_load(&ran), MSGS);
    }
    for (unsigned round = 0; round < ROUNDS; round++) {
        for (unsigned i = 0; i < BURST; i++)
            CHECK_EQ(rq_pdq_help(pdq, 0), 0);
        const unsigned base = atomic_load(&ran);
        uint64_t x = round;
        for (unsigned i = 0; i < MSGS; i++)
            CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, i, H_COUNT, &x, 1, NULL, 0, 0), 0);
        for (int ms = 0; ms < 400; ms++) {
            CHECK_EQ(rq_pdq_help(pdq, 0), 0);
            nap_ms(1);
        }
        CHECK_EQ(atomic_load(&ran), base); /* held off */
        const double t0 = check_now_s();
        while (atomic_load(&ran) < base + MSGS && check_now_s() - t0 < 30)
            nap_ms(5);
        CHECK_EQ(atomic_load(&ran), base + MSGS); /* the fallback ran them */
        /* ... at most 4 x RQ_PDQ_FALLBACK_US after the last call (rq.h;
         * 0.8 s here), with a second for a loaded machine's scheduling. */
        CHECK(check_now_s() - t0 < 0.8 + 1.0);
    }
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    printf("pdq_fallback_hold: ok\n");
    return 0;
}
