/* dsm_one_block.c - writers and fast readers of one block, more threads
 * than CPUs (rqdsm.h THREADS: a block held for reading does not change
 * until the section ends).  dsm_one_block ORG T K:
 *   ORG  pdq, multiplexed, poll or spinlock;  T  threads per rank;
 *   K    sections per thread.
 * Every thread of every rank, on one block homed on rank 0: one section
 * in three a write that adds one, the others reads that look at the
 * value, pause, and look again (it must not have moved, nor gone back
 * from the thread's last look); then every add is there.
 * The case it was written for: a writer's count of fast read holds,
 * taken before its CAS, went stale when E_NOFAST was cleared and set again
 * meanwhile (a write's end, another writer's count) and the CAS still
 * matched: it wrote under a reader that came in between (seen by TSan in
 * dsm_threads; with a sched_yield put before that CAS, every one of 8
 * runs of this test on 8 threads x 10 000 sections and 2 CPUs saw a held
 * value move, and none of 12 since the writer counts again after its
 * CAS). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rq.h>
#include <rqdsm.h>

#include "check.h"
#include "dsm_org.h"

enum { BLOCK = 64, MAX_T = 16, PAUSES = 3000 };

static rqdsm_region_t *reg;
static uint64_t k;
static _Atomic uint64_t writes, moved, went_back, failed_calls;

static void *thread_main(void *arg)
{
    const unsigned t = (unsigned)(uintptr_t)arg;
    volatile uint64_t *p = rqdsm_ptr(reg);
    uint64_t last = 0;
    for (uint64_t i = 0; i < k; i++) {
        if ((i + t) % 3 == 0) {
            if (rqdsm_start_write(reg, 0, 8) != 0) {
                atomic_fetch_add(&failed_calls, 1);
                continue;
            }
            last = ++*p;
            atomic_fetch_add(&writes, 1);
            if (rqdsm_end_write(reg, 0, 8) != 0)
                atomic_fetch_add(&failed_calls, 1);
            continue;
        }
        if (rqdsm_start_read(reg, 0, 8) != 0) {
            atomic_fetch_add(&failed_calls, 1);
            continue;
        }
        const uint64_t v = *p;
        for (int s = 0; s < PAUSES; s++)
            __asm__ __volatile__("pause");
        if (*p != v)
            atomic_fetch_add(&moved, 1);
        if (v < last)
            atomic_fetch_add(&went_back, 1);
        last = v;
        if (rqdsm_end_read(reg, 0, 8) != 0)
            atomic_fetch_add(&failed_calls, 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK(argc == 4);
    const unsigned threads = (unsigned)atoi(argv[2]);
    k = strtoull(argv[3], NULL, 10);
    CHECK(threads >= 2 && threads <= MAX_T);
    rqdsm_attr_t a = {.block = BLOCK, .threads = 1, .app_threads = threads};
    CHECK_EQ(dsm_org_set(&a, argv[1]), 0);
    rqdsm_t *dsm;
    CHECK_EQ(rqdsm_init(ctx, &a, &dsm), 0);
    rqdsm_rid_t rid = 0;
    if (rq_rank(ctx) == 0)
        CHECK_EQ(rqdsm_create(dsm, BLOCK, &rid), 0);
    CHECK_EQ(rq_broadcast(ctx, 0, &rid, sizeof rid), 0);
    CHECK_EQ(rqdsm_map(dsm, rid, &reg), 0);
    pthread_t th[MAX_T];
    for (unsigned t = 1; t < threads; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, thread_main, (void *)(uintptr_t)t), 0);
    thread_main((void *)0);
    for (unsigned t = 1; t < threads; t++)
        pthread_join(th[t], NULL);
    CHECK_EQ(atomic_load(&failed_calls), 0);
    CHECK_EQ(atomic_load(&moved), 0);
    CHECK_EQ(atomic_load(&went_back), 0);
    /* Every rank's adds are there once all are done. */
    uint64_t all = atomic_load(&writes);
    CHECK_EQ(rq_allreduce(ctx, &all, &all, 1, RQ_UINT64, RQ_SUM), 0);
    CHECK_EQ(rqdsm_start_read(reg, 0, 8), 0);
    CHECK_EQ(*(volatile uint64_t *)rqdsm_ptr(reg), all);
    CHECK_EQ(rqdsm_end_read(reg, 0, 8), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rqdsm_unmap(reg), 0);
    CHECK_EQ(rqdsm_finalize(dsm), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
