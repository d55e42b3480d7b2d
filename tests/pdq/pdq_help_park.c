/* pdq_help_park.c - a multiplexed PDQ's one helper keeps its lease between
 * helps (parked, docs/pdq.md "The one helper's run"), while the fallback
 * threads step in whenever it stops helping and, in the second mode, a
 * second application thread helps now and then.  Every other rank streams
 * keyed PDQ messages to rank 0 with pauses (so the helper's lanes run dry
 * and its lease parks), and rank 0's main thread alternates stretches of
 * helping (rq_pdq_help and rq_poll) with stretches of polls only, longer
 * than RQ_PDQ_FALLBACK_US (the fallback threads take the lanes in beside a
 * parked lease, or take the lease over).  A solo run claims no key, so a
 * lease resumed while anything of the queue ran elsewhere would run two
 * messages of one key at once: each handler marks its key busy and counts
 * an overlap, and checks each key's order per source; every message must
 * run exactly once.
 * argv: MODE THREADS COUNT
 *   phases  the main thread alone helps (its stretches as above);
 *   two     a second thread of rank 0 also helps, in short stretches,
 *           from the middle of the run on (the helper is no longer the
 *           only one: its parked lease must be taken over or ended);
 *   THREADS fallback threads (1..4); COUNT messages per sender. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "rq.h"

#define QID       11
#define H_PDQ     40
#define KEYS      8
#define MAX_RANKS 64

static _Atomic uint64_t ran, order_errors, overlaps;
static _Atomic int busy[MAX_RANKS][KEYS];
static uint64_t next_seq[MAX_RANKS][KEYS]; /* touched by the key's handlers only */
static _Atomic int done;

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void on_pdq(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    const uint64_t k = m->key % KEYS;
    if (m->src < 1 || m->src >= MAX_RANKS || m->key / KEYS != (uint64_t)m->src) {
        atomic_fetch_add(&order_errors, 1);
        return;
    }
    if (atomic_exchange(&busy[m->src][k], 1) != 0)
        atomic_fetch_add(&overlaps, 1);
    if (m->args[0] != next_seq[m->src][k]++)
        atomic_fetch_add(&order_errors, 1);
    /* One in eight takes a while: the windows where another thread could
     * run the key beside it are wider. */
    if ((m->args[0] & 7) == 0)
        for (const double t0 = check_now_s(); check_now_s() - t0 < 2e-7;)
            ;
    atomic_store(&busy[m->src][k], 0);
    atomic_fetch_add(&ran, 1);
}

struct second {
    rq_pdq_t *pdq;
    uint64_t  from; /* starts once this many messages ran */
};

static void *second_helper(void *arg)
{
    const struct second *s = arg;
    while (!atomic_load(&done) && atomic_load(&ran) < s->from)
        sleep_us(50);
    while (!atomic_load(&done)) {
        for (const double t0 = check_now_s(); check_now_s() - t0 < 50e-6;)
            CHECK(rq_pdq_help(s->pdq, 4) >= 0);
        sleep_us(300);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK(argc == 4);
    const int two = strcmp(argv[1], "two") == 0;
    CHECK(two || strcmp(argv[1], "phases") == 0);
    const unsigned threads = (unsigned)strtoul(argv[2], NULL, 10);
    CHECK(threads >= 1 && threads <= 4);
    const uint64_t count = strtoull(argv[3], NULL, 10);
    CHECK(count >= 1);
    const int me = rq_rank(ctx), n = rq_size(ctx);
    CHECK(n >= 2 && n <= MAX_RANKS);
    CHECK_EQ(rq_handler_register(ctx, H_PDQ, on_pdq, NULL, 0), 0);
    rq_pdq_attr_t at = {threads, RQ_PDQ_MULTIPLEXED, 0};
    rq_pdq_t *pdq;
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    /* The main thread helps first: it is the PDQ's one helper. */
    CHECK_EQ(rq_pdq_help(pdq, 1), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 0) {
        const uint64_t due = count * (uint64_t)(n - 1);
        pthread_t t;
        struct second s = {pdq, due / 2};
        if (two)
            CHECK_EQ(pthread_create(&t, NULL, second_helper, &s), 0);
        unsigned stretch = 0;
        for (const double t0 = check_now_s(); atomic_load(&ran) < due && check_now_s() - t0 < 90.0;
             stretch++) {
            /* Even stretches help (0.5 ms), odd ones only poll (1 ms:
             * past RQ_PDQ_FALLBACK_US, the fallback threads step in). */
            const double len = stretch % 2 == 0 ? 500e-6 : 1e-3;
            for (const double s0 = check_now_s(); check_now_s() - s0 < len;) {
                if (stretch % 2 == 0)
                    CHECK(rq_pdq_help(pdq, 64) >= 0);
                CHECK(rq_poll(ctx) >= 0);
            }
        }
        atomic_store(&done, 1);
        if (two)
            CHECK_EQ(pthread_join(t, NULL), 0);
        CHECK_EQ(atomic_load(&ran), due);
    } else {
        uint64_t seq[KEYS] = {0};
        for (uint64_t i = 0; i < count; i++) {
            const uint64_t k = i % KEYS, key = (uint64_t)me * KEYS + k;
            CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, key, H_PDQ, &seq[k], 1, NULL, 0, 0), 0);
            seq[k]++;
            /* Pauses of 10-100 us now and then: the lanes run dry and
             * the helper's lease parks between its helps, and the run
             * spans many of rank 0's stretches. */
            if (i % 16 == 15)
                for (const double t0 = check_now_s(); check_now_s() - t0 < 1e-5 * (double)(1 + i / 16 % 10);)
                    ;
        }
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 0) {
        CHECK_EQ(atomic_load(&order_errors), 0);
        CHECK_EQ(atomic_load(&overlaps), 0);
    }
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
