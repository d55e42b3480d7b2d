/* pdq_wake_many - several senders wake one sleeping PDQ.  Rank 0 opens a
 * dedicated PDQ and spins in plain C, making no librq call, until its
 * handlers have seen every message; every other rank sends bursts with
 * pauses of its own length (0 to 3 ms, different per rank and burst), so
 * that the senders' sends fall before, during and after the PDQ threads'
 * arming of the doorbell.  One sender rings per sleep (vni.c,
 * rqi_vni_pdq_sent): a wake-up lost between a sender that skips the ring
 * and the sleeper's next arming shows as a message never handled (the
 * 60 s limit).  Checked: all arrive, per source and key in order.
 * argv: messages per sender (default 4000), PDQ threads (default 1). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rq.h"

#define QID       7
#define H_MSG     20
#define NKEYS     4
#define MAX_RANKS 64

static _Atomic uint64_t got;
static uint64_t next_seq[MAX_RANKS][NKEYS]; /* per source and key: serialized by the PDQ */

static void on_msg(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK(m->src > 0 && m->src < MAX_RANKS && m->key / MAX_RANKS < NKEYS);
    CHECK_EQ(m->key % MAX_RANKS, (uint64_t)m->src);
    CHECK_EQ(m->args[0], next_seq[m->src][m->key / MAX_RANKS]++);
    atomic_fetch_add(&got, 1);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    const uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4000;
    const unsigned threads = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
    const int me = rq_rank(ctx), size = rq_size(ctx);
    CHECK(size >= 3 && size <= MAX_RANKS && threads >= 1);
    CHECK_EQ(rq_handler_register(ctx, H_MSG, on_msg, NULL, 0), 0);
    rq_pdq_t *pdq = NULL;
    if (me == 0) {
        rq_pdq_attr_t at = {.threads = threads, .mode = RQ_PDQ_DEDICATED};
        CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    const uint64_t want = n * (uint64_t)(size - 1);
    if (me != 0) {
        uint64_t seq[NKEYS] = {0}, x = 0x9e3779b97f4a7c15ull * (uint64_t)me;
        for (uint64_t i = 0; i < n; i++) {
            const uint64_t k = i % NKEYS;
            CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, k * MAX_RANKS + (uint64_t)me, H_MSG, &seq[k], 1,
                                    NULL, 0, 0), 0);
            seq[k]++;
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            if (x % 16 == 0) /* a burst ends: a pause of 0-3 ms */
                usleep((useconds_t)(x >> 8) % 3000u);
        }
    } else {
        double t0 = check_now_s(); /* no librq call until everything has been handled */
        while (atomic_load(&got) < want) {
            CHECK(check_now_s() - t0 < 60);
            usleep(50);
        }
        printf("pdq_wake_many: %llu messages from %d senders in %.2f s without a poll\n",
               (unsigned long long)want, size - 1, check_now_s() - t0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(atomic_load(&got), me == 0 ? want : 0u);
    if (pdq != NULL)
        CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
