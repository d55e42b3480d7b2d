/* gas_spin - spin locks on global-address operations: every rank may spin
 * on a word with rq_amo / rq_read / rq_get, including a word of its own
 * segment, while the holder needs that rank's service to release it.  The
 * results must be the same under every strategy (RQ_GAS_STRATEGY) and
 * transport: no spin may starve the peers it waits for.
 *
 *   handoff  rank 1 holds a lock word in rank 0's segment; it must
 *            rq_read from rank 0 before it releases; rank 0 spins on its
 *            own word (CSWAP, then FADD 0, then rq_read, then rq_get +
 *            rq_sync: one round each).
 *   mutex    every rank takes the lock in rank 0's segment with CSWAP,
 *            increments a counter there with rq_read + rq_write (not
 *            atomic: only the lock protects it) and releases with SWAP;
 *            the counter must end at ranks x iterations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "check.h"

enum { LOCK = 0, COUNTER = 8, DATA = 64 };

static uint64_t spin_own(rq_ctx_t *ctx, int how)
{
    uint64_t v = 0, spins = 0;
    for (;;) {
        switch (how) {
        case 0:
            CHECK_EQ(rq_amo(ctx, 0, LOCK, RQ_AMO_CSWAP, 2, 0, &v), 0);
            if (v == 0)
                return spins;
            break;
        case 1:
            CHECK_EQ(rq_amo(ctx, 0, LOCK, RQ_AMO_FADD, 0, 0, &v), 0);
            break;
        case 2:
            CHECK_EQ(rq_read(ctx, &v, 0, LOCK, 8), 0);
            break;
        default:
            CHECK_EQ(rq_get(ctx, &v, 0, LOCK, 8, 0), 0);
            CHECK_EQ(rq_sync(ctx), 0);
            break;
        }
        if (how != 0 && v == 0)
            return spins;
        spins++;
    }
}

static void handoff(rq_ctx_t *ctx)
{
    int me = rq_rank(ctx);
    char *seg;
    size_t size;
    CHECK_EQ(rq_segment(ctx, (void **)&seg, &size), 0);
    if (me == 0)
        for (int i = 0; i < 256; i++)
            seg[DATA + i] = (char)i;
    for (int how = 0; how < 4; how++) {
        if (me == 0)
            CHECK_EQ(rq_amo(ctx, 0, LOCK, RQ_AMO_SWAP, 0, 0, NULL), 0);
        CHECK_EQ(rq_barrier(ctx), 0);
        if (me == 1) {
            uint64_t old;
            CHECK_EQ(rq_amo(ctx, 0, LOCK, RQ_AMO_CSWAP, 1, 0, &old), 0);
            CHECK_EQ(old, 0);
        }
        CHECK_EQ(rq_barrier(ctx), 0);
        if (me == 0) {
            spin_own(ctx, how);
        } else if (me == 1) {
            /* Hold the lock until a read served by rank 0 completes. */
            char buf[256];
            CHECK_EQ(rq_read(ctx, buf, 0, DATA, sizeof buf), 0);
            for (int i = 0; i < 256; i++)
                CHECK_EQ(buf[i], (char)i);
            CHECK_EQ(rq_amo(ctx, 0, LOCK, RQ_AMO_SWAP, 0, 0, NULL), 0);
        }
        CHECK_EQ(rq_barrier(ctx), 0);
    }
}

static void mutex(rq_ctx_t *ctx, int iters)
{
    int me = rq_rank(ctx), n = rq_size(ctx);
    CHECK_EQ(rq_barrier(ctx), 0);
    for (int i = 0; i < iters; i++) {
        uint64_t old;
        do
            CHECK_EQ(rq_amo(ctx, 0, LOCK, RQ_AMO_CSWAP, (uint64_t)me + 1, 0, &old), 0);
        while (old != 0);
        uint64_t c;
        CHECK_EQ(rq_read(ctx, &c, 0, COUNTER, 8), 0);
        c++;
        CHECK_EQ(rq_write(ctx, 0, COUNTER, &c, 8), 0);
        CHECK_EQ(rq_amo(ctx, 0, LOCK, RQ_AMO_SWAP, 0, 0, &old), 0);
        CHECK_EQ(old, (uint64_t)me + 1);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 0) {
        uint64_t c;
        CHECK_EQ(rq_read(ctx, &c, 0, COUNTER, 8), 0);
        CHECK_EQ(c, (uint64_t)n * (uint64_t)iters);
    }
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK(rq_size(ctx) >= 2);
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    handoff(ctx);
    mutex(ctx, iters);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (rq_rank(ctx) == 0)
        printf("gas_spin: %d ranks, handoff with 4 spin kinds and a %d-round mutex: ok\n",
               rq_size(ctx), iters);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
