/* poll_batch - how many handlers one rq_poll runs (rq.h: a lane's arrivals,
 * at most RQ_POLL_BATCH per call, 0 when nothing arrived).  Args: K messages
 * per sender, B = the job's RQ_POLL_BATCH.  50 rounds of each, so the
 * lanes wrap (RQ_RING_BYTES small in CTest).
 *   self:  every rank sends K requests to itself, all published before
 *          its first poll: the calls return min(B, left) each, then 0.
 *   peers: each other rank sends K requests to rank 0, then raises its
 *          flag in rank 0's segment (a release store through the local
 *          mapping, after its packets); rank 0 waits for the flags without
 *          polling, then polls: the first call returns min(B, K) (a lane
 *          is read while it has packets), none more than B, none 0 before
 *          all (size - 1) * K ran, then 0.  Nothing else is sent to rank
 *          0 meanwhile: rank 0 opens each round by its own flag, and the
 *          others wait for it (spinning, not polling) before the final
 *          barrier. */
#include <sched.h>
#include <stdlib.h>

#include <rq.h>

#include "check.h"

enum { H_COUNT = 7, ROUNDS = 50 };
static uint64_t ran;

static void on_count(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    CHECK_EQ(m->nargs, 1);
    ran++;
}

static int min_int(int a, int b) { return a < b ? a : b; }

/* Spin until *w == v without polling (yielding: ranks may share a CPU). */
static void wait_word(volatile uint64_t *w, uint64_t v)
{
    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) != v)
        sched_yield();
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    const int k = argc > 1 ? atoi(argv[1]) : 10, b = argc > 2 ? atoi(argv[2]) : 64;
    CHECK(k > 0 && b > 0);
    const int me = rq_rank(ctx), np = rq_size(ctx);
    CHECK_EQ(rq_handler_register(ctx, H_COUNT, on_count, NULL, 0), 0);

    for (int round = 0; round < ROUNDS; round++) {
        ran = 0;
        for (uint64_t i = 0; i < (uint64_t)k; i++)
            CHECK_EQ(rq_request(ctx, me, H_COUNT, &i, 1, NULL, 0, 0), 0);
        for (int left = k; left > 0; left -= min_int(b, left))
            CHECK_EQ(rq_poll(ctx), min_int(b, left));
        CHECK_EQ(rq_poll(ctx), 0);
        CHECK_EQ(ran, (uint64_t)k);
    }

    /* flag[0]: rank 0's round opened (round + 1); flag[8 r]: rank r sent
     * its round (round + 1).  The segment starts zero-filled. */
    volatile uint64_t *flag = rq_segment_peer(ctx, 0);
    CHECK(np == 1 || flag != NULL);
    if (np > 1 && me == 0) {
        const uint64_t total = (uint64_t)(np - 1) * (uint64_t)k;
        for (int round = 0; round < ROUNDS; round++) {
            ran = 0;
            __atomic_store_n(&flag[0], (uint64_t)round + 1, __ATOMIC_RELEASE);
            for (int r = 1; r < np; r++)
                wait_word(&flag[8 * r], (uint64_t)round + 1);
            for (int first = 1; ran < total; first = 0) {
                int n = rq_poll(ctx);
                CHECK(n > 0 && n <= b);
                if (first)
                    CHECK_EQ(n, min_int(b, k));
            }
            CHECK_EQ(rq_poll(ctx), 0);
            CHECK_EQ(ran, total);
        }
        __atomic_store_n(&flag[0], (uint64_t)ROUNDS + 1, __ATOMIC_RELEASE);
    } else if (np > 1) {
        for (int round = 0; round < ROUNDS; round++) {
            wait_word(&flag[0], (uint64_t)round + 1);
            for (uint64_t i = 0; i < (uint64_t)k; i++)
                CHECK_EQ(rq_request(ctx, 0, H_COUNT, &i, 1, NULL, 0, 0), 0);
            __atomic_store_n(&flag[8 * me], (uint64_t)round + 1, __ATOMIC_RELEASE);
        }
        wait_word(&flag[0], (uint64_t)ROUNDS + 1);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
