/* pdq_help_poll.c - rank 0's one application thread serves a multiplexed
 * PDQ by alternating rq_pdq_help and rq_poll, as rqdsm's waits do, while
 * every other rank sends keyed PDQ messages and active messages into the
 * same lanes.  A poll leaves a PDQ packet at a lane's head to the
 * helper's next help (rqi_pdq_defer, docs/pdq.md "The one helper's run"),
 * so what is behind it waits for that help: every message must still run
 * once, each key in order per source.  Each sender sends in bursts, an
 * active message then a PDQ message, a PDQ message every third burst
 * more, a microsecond apart: a lane found empty, then an active message
 * and a PDQ message behind it, is where a poll took the active message
 * and left the PDQ one to a help whose look (at the lane's published
 * head) still saw the active message (the case rqdsm's dsmlat hung on).
 * The helps run one message each (max 1), so polls also find a PDQ
 * packet behind another.
 * argv: MODE COUNT
 *   alternate  help, poll, help, poll ... until all have run (run with
 *              the fallback held off: only the helper runs them, and a
 *              packet left to a help that never takes it hangs the test);
 *   once       one help, then only polls: the packets the polls take in
 *              after it queue, and the fallback threads run them;
 *   zero       rq_pdq_help(max 0) and polls until every active message
 *              ran (a help of none holds the fallback off and takes
 *              nothing in: a poll after it must not leave a PDQ packet,
 *              and the active messages behind it, to it), then helps of
 *              64 and polls until the PDQ messages ran;
 *   COUNT      bursts per sender. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rq.h"

#define QID    9
#define H_PDQ  30
#define H_AM   31
#define KEYS   4
#define MAX_RANKS 64

static _Atomic uint64_t pdq_ran, am_ran, order_errors;
/* Each (source, key)'s next sequence number: only that key's handlers,
 * one at a time, touch it. */
static uint64_t next_seq[MAX_RANKS][KEYS];

static void on_pdq(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    const uint64_t key = m->key % KEYS;
    if (m->src < 0 || m->src >= MAX_RANKS || m->key / KEYS != (uint64_t)m->src ||
        m->args[0] != next_seq[m->src][key]++)
        atomic_fetch_add(&order_errors, 1);
    atomic_fetch_add(&pdq_ran, 1);
}

static void on_am(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    atomic_fetch_add(&am_ran, 1);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK(argc == 3);
    const int alternate = strcmp(argv[1], "alternate") == 0, zero = strcmp(argv[1], "zero") == 0;
    CHECK(alternate || zero || strcmp(argv[1], "once") == 0);
    const uint64_t count = strtoull(argv[2], NULL, 10);
    CHECK(count >= 1);
    const int me = rq_rank(ctx), n = rq_size(ctx);
    CHECK(n >= 2 && n <= MAX_RANKS);
    CHECK_EQ(rq_handler_register(ctx, H_PDQ, on_pdq, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_AM, on_am, NULL, 0), 0);
    rq_pdq_attr_t at = {1, RQ_PDQ_MULTIPLEXED, 0};
    rq_pdq_t *pdq;
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    if (me == 0) {
        /* A message of its own, run by a help: the thread is the PDQ's
         * helper (its counter slot taken) before the others send. */
        const uint64_t first = 0;
        CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, 0, H_PDQ, &first, 1, NULL, 0, 0), 0);
        for (double t0 = check_now_s(); atomic_load(&pdq_ran) < 1 && check_now_s() - t0 < 60.0;)
            CHECK(rq_pdq_help(pdq, 64) >= 0);
        CHECK_EQ(atomic_load(&pdq_ran), 1);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 0) {
        const uint64_t due = 1 + (count + count / 3) * (uint64_t)(n - 1), due_am = count * (uint64_t)(n - 1);
        if (zero) {
            for (double t0 = check_now_s(); atomic_load(&am_ran) < due_am && check_now_s() - t0 < 60.0;) {
                CHECK_EQ(rq_pdq_help(pdq, 0), 0);
                CHECK(rq_poll(ctx) >= 0);
            }
            CHECK_EQ(atomic_load(&am_ran), due_am);
        } else if (!alternate) {
            CHECK(rq_pdq_help(pdq, 1) >= 0);
        }
        for (double t0 = check_now_s();
             (atomic_load(&pdq_ran) < due || atomic_load(&am_ran) < due_am) &&
             check_now_s() - t0 < 60.0;) {
            if (alternate || zero)
                CHECK(rq_pdq_help(pdq, zero ? 64 : 1) >= 0);
            CHECK(rq_poll(ctx) >= 0);
        }
        CHECK_EQ(atomic_load(&pdq_ran), due);
        CHECK_EQ(atomic_load(&am_ran), due_am);
        CHECK_EQ(atomic_load(&order_errors), 0);
    } else {
        uint64_t seq[KEYS] = {0}, sent = 0;
        for (uint64_t i = 0; i < count; i++) {
            CHECK_EQ(rq_request(ctx, 0, H_AM, &i, 1, NULL, 0, 0), 0);
            for (unsigned j = 0; j < (i % 3 == 2 ? 2u : 1u); j++, sent++) {
                const uint64_t k = sent % KEYS, key = (uint64_t)me * KEYS + k;
                CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, key, H_PDQ, &seq[k], 1, NULL, 0, 0), 0);
                seq[k]++;
            }
            for (const double t0 = check_now_s(); check_now_s() - t0 < 1e-6;)
                ;
        }
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
