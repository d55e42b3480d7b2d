/* pdq_sleep_race.c - a message sent just as the PDQ's last thread goes to
 * sleep still wakes it (the pdq_idle pair: the sender publishes, fences,
 * loads the idle bit; the sleeper sets the bit, fences, looks at the
 * lanes; docs/pdq.md, fence table).  One rank, a dedicated PDQ of one
 * thread that spins RQ_PDQ_SPIN_US (set small by the test's registration)
 * before it sleeps; N rounds: after each message has run, wait about that
 * long (swept over +-6 us in 50 ns steps, so some sends land while the
 * thread arms its doorbell), then send the next one to ourselves and wait
 * for it without polling (only the PDQ's thread can take it in).  A lost
 * wake-up leaves the message in the lane: the round fails after 2 s.
 * argv: rounds, spin (us, as RQ_PDQ_SPIN_US). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "rq.h"

#define QID 9
#define H_RUN 30

static _Atomic uint64_t ran;

static void on_run(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    atomic_fetch_add(&ran, 1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    const unsigned rounds = (unsigned)atoi(argv[1]);
    const uint64_t spin_ns = 1000u * (uint64_t)atoi(argv[2]);
    CHECK(rounds >= 1);
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_handler_register(ctx, H_RUN, on_run, NULL, 0), 0);
    rq_pdq_attr_t at = {1, RQ_PDQ_DEDICATED, 0};
    rq_pdq_t *pdq;
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    const int me = rq_rank(ctx);
    for (unsigned r = 0; r < rounds; r++) {
        /* From the last message's run, about the thread's spin. */
        const int64_t sweep = ((int64_t)(r % 240) - 120) * 50;
        const uint64_t gap = (uint64_t)((int64_t)spin_ns + sweep > 0 ? (int64_t)spin_ns + sweep : 0);
        for (uint64_t t0 = now_ns(); now_ns() - t0 < gap;)
            ;
        CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, r % 16, H_RUN, NULL, 0, NULL, 0, 0), 0);
        const uint64_t t0 = now_ns();
        while (atomic_load(&ran) < (uint64_t)r + 1 && now_ns() - t0 < 2000000000u) {
            struct timespec ts = {0, 1000};
            nanosleep(&ts, NULL); /* no librq call: only the PDQ's thread takes it in */
        }
        CHECK_EQ(atomic_load(&ran), (uint64_t)r + 1);
    }
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
