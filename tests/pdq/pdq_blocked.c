/* pdq_blocked.c - handlers that block do not hold back ready work, with
 * every other thread of the PDQ idle or stuck (docs/pdq.md, 10.: one
 * stuck thread, the watcher, looks again on its own; the others sleep
 * until woken).  One rank, a dedicated PDQ of T threads, R rounds; each
 * round queues, to itself, T - 1 blockers on distinct random keys, each
 * after 3000 quick messages of its key (each blocker waits, at most 20 s,
 * until its own cold message has run), then the cold messages on other
 * random keys.  The threads not running a blocker's key see its owner
 * keep up and sleep; then T - 1 threads block, and the last one must wake
 * on its own (the watcher) and take every cold message out of whichever
 * shard holds it: every blocker must see its cold message run, every
 * message must run once, and the round must end.
 * argv: threads (2 or more), rounds. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "rq.h"

#define QID      9
#define H_BLOCK  30
#define H_COLD   31
#define H_FILL   32
#define MAXT     64
#define FILLERS  3000

static _Atomic int cold_ran[MAXT];
static _Atomic uint64_t blocked_ok, blocked_late, colds, fills;

static void on_block(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    const uint64_t b = m->args[0];
    for (double t0 = check_now_s(); !atomic_load(&cold_ran[b]) && check_now_s() - t0 < 20.0;) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(atomic_load(&cold_ran[b]) ? &blocked_ok : &blocked_late, 1);
}

static void on_cold(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    atomic_store(&cold_ran[m->args[0]], 1);
    atomic_fetch_add(&colds, 1);
}

static void on_fill(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    atomic_fetch_add(&fills, 1);
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    const unsigned threads = (unsigned)atoi(argv[1]), rounds = (unsigned)atoi(argv[2]);
    CHECK(threads >= 2 && threads <= MAXT && rounds >= 1);
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_handler_register(ctx, H_BLOCK, on_block, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_COLD, on_cold, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_FILL, on_fill, NULL, 0), 0);
    /* A window wide enough that every cold message may go around. */
    rq_pdq_attr_t at = {threads, RQ_PDQ_DEDICATED, 4096};
    rq_pdq_t *pdq;
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    const int me = rq_rank(ctx);
    const unsigned nb = threads - 1;
    srand(12345);
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned b = 0; b < nb; b++)
            atomic_store(&cold_ran[b], 0);
        for (unsigned b = 0; b < nb; b++) {
            /* A run of quick messages of the blocker's key first: the
             * free threads watch its shard's owner keep up, and go to
             * sleep, before the blocker stops it. */
            const uint64_t key = 1000u * (b + 1) + (uint64_t)(rand() % 1000), arg = b;
            for (unsigned i = 0; i < FILLERS; i++)
                CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, key, H_FILL, NULL, 0, NULL, 0, 0), 0);
            CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, key, H_BLOCK, &arg, 1, NULL, 0, 0), 0);
        }
        for (unsigned b = 0; b < nb; b++) {
            uint64_t arg = b, k = 200000u + (uint64_t)(rand() % 4096);
            CHECK_EQ(rq_pdq_enqueue(ctx, me, QID, k, H_COLD, &arg, 1, NULL, 0, 0), 0);
        }
        CHECK_EQ(rq_pdq_drain(pdq), 0); /* a blocker left waiting gives up after 20 s: late */
        CHECK_EQ(atomic_load(&blocked_late), 0);
        CHECK_EQ(atomic_load(&blocked_ok), (uint64_t)(r + 1) * nb);
        CHECK_EQ(atomic_load(&colds), (uint64_t)(r + 1) * nb);
        CHECK_EQ(atomic_load(&fills), (uint64_t)(r + 1) * nb * FILLERS);
    }
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
