/* dsm_promote.c - DSM sections from promoted handlers (rq_handler_promote,
 * rqdsm.h THREADS): every rank sends K requests to every rank; each
 * handler promotes itself and the part, on a pool thread, adds one to a
 * counter of a region homed on rank 0 inside a write section (the
 * blocks move between ranks as parts on every rank write them), then
 * reads it back in a read section.  RQ_PROMOTE_THREADS=1, and the main
 * thread waits in rq_wait_until meanwhile, so one thread of a rank is in
 * rqdsm at a time.  Checked: no update lost (each counter's total), reads
 * never go back, under the organisation argv[1] (pdq, multiplexed, poll,
 * spinlock). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>
#include <rqdsm.h>

#include "check.h"
#include "dsm_org.h"

enum { H_WORK = 3, COUNTERS = 4, BLOCK = 64 };

static rqdsm_region_t *region;
static volatile uint64_t parts_done;
static _Atomic uint64_t errors;
static uint64_t last_seen[COUNTERS]; /* a pool thread at a time: see above */

static void part(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)c;
    (void)arg;
    const unsigned k = (unsigned)(m->args[0] % COUNTERS);
    const size_t off = (size_t)k * BLOCK;
    uint64_t *w = (uint64_t *)((char *)rqdsm_ptr(region) + off);
    int ok = rqdsm_start_write(region, off, 8) == 0;
    if (ok) {
        *w += 1;
        ok = rqdsm_end_write(region, off, 8) == 0;
    }
    ok = ok && rqdsm_start_read(region, off, 8) == 0;
    if (ok) {
        uint64_t v = *w;
        ok = v > last_seen[k]; /* our own add is there: never back */
        last_seen[k] = v;
        ok = rqdsm_end_read(region, off, 8) == 0 && ok;
    }
    if (!ok)
        atomic_fetch_add(&errors, 1);
    __atomic_fetch_add(&parts_done, 1, __ATOMIC_RELEASE);
}

static void on_work(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    if (rq_handler_promote(c, m, part, arg) != 0)
        atomic_fetch_add(&errors, 1);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    int me = rq_rank(ctx), np = rq_size(ctx);
    CHECK(argc >= 2);
    uint64_t k = argc > 2 ? strtoull(argv[2], NULL, 10) : 100;
    rqdsm_attr_t a = {.block = BLOCK, .threads = 2};
    CHECK_EQ(dsm_org_set(&a, argv[1]), 0);
    CHECK_EQ(rq_handler_register(ctx, H_WORK, on_work, NULL, RQ_HF_PROMOTE), 0);
    rqdsm_t *dsm;
    CHECK_EQ(rqdsm_init(ctx, &a, &dsm), 0);
    rqdsm_rid_t rid = 0;
    if (me == 0)
        CHECK_EQ(rqdsm_create(dsm, COUNTERS * BLOCK, &rid), 0);
    CHECK_EQ(rq_broadcast(ctx, 0, &rid, sizeof rid), 0);
    CHECK_EQ(rqdsm_map(dsm, rid, &region), 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    for (uint64_t s = 0; s < k; s++)
        for (int d = 0; d < np; d++) {
            uint64_t arg = s * (uint64_t)np + (uint64_t)d;
            CHECK_EQ(rq_request(ctx, (me + d) % np, H_WORK, &arg, 1, NULL, 0, 0), 0);
        }
    CHECK_EQ(rq_wait_until(ctx, &parts_done, k * (uint64_t)np), 0);
    CHECK_EQ(atomic_load(&errors), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    /* Every part's add, on every rank, is in the counters. */
    uint64_t want[COUNTERS] = {0}, sum = 0;
    for (uint64_t s = 0; s < k; s++)
        for (int d = 0; d < np; d++)
            want[(s * (uint64_t)np + (uint64_t)d) % COUNTERS] += (uint64_t)np;
    CHECK_EQ(rqdsm_start_read(region, 0, COUNTERS * BLOCK), 0);
    for (unsigned c = 0; c < COUNTERS; c++) {
        uint64_t v = *(uint64_t *)((char *)rqdsm_ptr(region) + c * BLOCK);
        CHECK_EQ(v, want[c]);
        sum += v;
    }
    CHECK_EQ(rqdsm_end_read(region, 0, COUNTERS * BLOCK), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rqdsm_unmap(region), 0);
    CHECK_EQ(rqdsm_finalize(dsm), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("dsm_promote %s: ok (%d ranks, %llu adds)\n", argv[1], np,
               (unsigned long long)sum);
    return 0;
}
