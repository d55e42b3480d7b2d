/* pdq_wake - a PDQ whose threads sleep gets its messages without the
 * application polling.  Every rank but 0 opens a dedicated PDQ and then
 * spins in plain C, making no librq call, until its handlers have seen
 * every message; rank 0 sends them in bursts with pauses long enough for
 * the PDQ threads to fall asleep.  Same node: the sender rings the
 * doorbell.  Another node (tests/two_nodes.sh): only the network can wake
 * the rank (vni/netwake.c).  Checked: all arrive, per key in order.
 * argv: messages per receiver (default 2000). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rq.h"

#define QID   7
#define H_MSG 20
#define NKEYS 8

static _Atomic uint64_t got;
static uint64_t next_seq[NKEYS]; /* per key: serialized by the PDQ */

static void on_msg(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK(m->key < NKEYS);
    CHECK_EQ(m->args[0], next_seq[m->key]++);
    atomic_fetch_add(&got, 1);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000;
    int me = rq_rank(ctx), size = rq_size(ctx);
    CHECK(size >= 2);
    CHECK_EQ(rq_handler_register(ctx, H_MSG, on_msg, NULL, 0), 0);
    rq_pdq_t *pdq = NULL;
    if (me != 0) {
        rq_pdq_attr_t at = {.threads = 2, .mode = RQ_PDQ_DEDICATED};
        CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 0) {
        uint64_t(*seq)[NKEYS] = calloc((size_t)size, sizeof *seq); /* per (receiver, key) */
        CHECK(seq != NULL);
        for (uint64_t i = 0; i < n; i++) {
            for (int r = 1; r < size; r++) {
                uint64_t k = (i * 7 + (uint64_t)r) % NKEYS;
                CHECK_EQ(rq_pdq_enqueue(ctx, r, QID, k, H_MSG, &seq[r][k], 1, NULL, 0, 0), 0);
                seq[r][k]++;
            }
            if (i % 64 == 63)
                usleep(3000); /* the receivers' PDQ threads go to sleep */
        }
        free(seq);
    } else {
        /* No librq call until everything has been handled. */
        double t0 = check_now_s();
        while (atomic_load(&got) < n) {
            CHECK(check_now_s() - t0 < 60);
            usleep(50);
        }
        printf("pdq_wake: rank %d: %llu messages handled in %.2f s without a poll\n", me,
               (unsigned long long)n, check_now_s() - t0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(atomic_load(&got), me == 0 ? 0u : n);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
