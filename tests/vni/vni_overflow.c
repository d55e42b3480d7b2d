/* vni_overflow - overflow control against a runaway sender.  Rank 0 sends
 * count packets of 1 KiB to rank 1, which computes without polling for a
 * while, so its progress thread buffers everything the atomicity timer
 * gives up on.
 *   "on"  (run with RQ_OVERFLOW_BYTES=1M and RQ_OVERFLOW_FREE_BYTES huge, so
 *         the node always counts as low on memory): rank 1's buffer stops
 *         growing near the threshold while rank 0 is held (it has not
 *         finished), STOP is counted; after rank 1 consumes, the job
 *         resumes and everything arrives in order.
 *   "off" (default thresholds, plenty of memory): the buffer takes the
 *         whole flood - the contrast that shows what the control bounds.
 * Both end with the buffer empty (memory given back).  Needs 2 ranks. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rq.h>

#include "check.h"

enum { H_DATA = 1 };
#define PAYLOAD 1024
static uint64_t count = 20000; /* packets; argv[2] */

static uint64_t got;

static void on_data(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->args[0], got);
    CHECK_EQ(m->len, PAYLOAD);
    CHECK(((const unsigned char *)m->data)[PAYLOAD - 1] == pattern_byte(0, got, PAYLOAD - 1));
    got++;
}

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_size(ctx), 2);
    CHECK(argc > 1);
    const int on = strcmp(argv[1], "on") == 0;
    if (argc > 2)
        count = strtoull(argv[2], NULL, 0);
    /* The threshold in force (rqbench-style runs vary it). */
    uint64_t threshold = 1u << 20;
    const char *t = getenv("RQ_OVERFLOW_BYTES");
    if (on && t != NULL) {
        char *end;
        threshold = strtoull(t, &end, 0);
        if (*end == 'k' || *end == 'K') threshold <<= 10;
        if (*end == 'm' || *end == 'M') threshold <<= 20;
    }
    int me = rq_rank(ctx);
    rq_handler_register(ctx, H_DATA, on_data, NULL, 0);
    _Atomic uint64_t *w = rq_segment_peer(ctx, 1);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 1) {
        atomic_store(&w[0], 1); /* out of the barrier: no more polling */
        rq_stats_t st;
        uint64_t t0 = now_ms(), held_since = 0;
        for (;;) {
            CHECK(now_ms() - t0 < 60000);
            usleep(1000);
            CHECK_EQ(rq_stats(ctx, &st), 0);
            if (!on && atomic_load(&w[1]) == 1)
                break; /* the whole flood is in */
            if (on && st.overflow_stops > 0 && held_since == 0)
                held_since = now_ms();
            if (held_since != 0 && now_ms() - held_since >= 300)
                break; /* stopped for 300 ms */
        }
        if (on) {
            CHECK(atomic_load(&w[1]) == 0); /* the runaway sender is held */
            CHECK_EQ(st.overflow_stops, 1);
            CHECK(st.buffer_bytes_max < threshold + threshold / 2 + (256u << 10));
        } else {
            CHECK_EQ(st.overflow_stops, 0);
            CHECK(st.buffer_bytes_max > 10 * threshold);
        }
        uint64_t peak = st.buffer_bytes_max;
        CHECK_EQ(rq_wait_until(ctx, &got, count), 0);
        CHECK_EQ(rq_stats(ctx, &st), 0);
        CHECK_EQ(st.buffer_bytes_now, 0);
        printf("vni_overflow %s: threshold %llu, flood %llu bytes: peak buffer %llu bytes "
               "while the sender was %s; %llu STOPs\n",
               argv[1], (unsigned long long)(on ? threshold : 0),
               (unsigned long long)(count * PAYLOAD), (unsigned long long)peak,
               on ? "held" : "free", (unsigned long long)st.overflow_stops);
    } else {
        while (atomic_load(&w[0]) == 0)
            ;
        unsigned char buf[PAYLOAD];
        for (uint64_t i = 0; i < count; i++) {
            buf[PAYLOAD - 1] = pattern_byte(0, i, PAYLOAD - 1);
            CHECK_EQ(rq_request(ctx, 1, H_DATA, &i, 1, buf, sizeof buf, 0), 0);
        }
        atomic_store(&w[1], 1);
    }
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
