/* dsm_reinit.c - rqdsm instances one after another in one process, each
 * with fewer application threads than the last (rqdsm.h THREADS: the
 * per-thread read records belong to their instance).  Instance i has
 * app_threads = 8 >> i; 7 >> i helper threads and the main thread each
 * read a block of a small region (one of 1, 3, 17 blocks: rows of small
 * regions on lines of their own), so the main thread holds the last
 * record of the instance; the next instance, often at the same address
 * (glibc's malloc; ASan's does not reuse it at once), must not let it use
 * that record: kept by address alone, it indexed past the smaller
 * instance's rows (found by reading cache.c's row_of; an overrun here is
 * silent without ASan).  Reads from other ranks' writes check the bytes.
 * dsm_reinit ORG. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rq.h>
#include <rqdsm.h>

#include "check.h"
#include "dsm_org.h"

enum { BLOCK = 64 };

static rqdsm_region_t *reg;
static size_t nblocks;
static pthread_barrier_t pb;

static void read_all(void)
{
    for (size_t b = 0; b < nblocks; b++) {
        CHECK_EQ(rqdsm_start_read(reg, b * BLOCK, BLOCK), 0);
        const uint64_t *w = (const uint64_t *)((const char *)rqdsm_ptr(reg) + b * BLOCK);
        CHECK_EQ(*w, 1000 + b);
        CHECK_EQ(rqdsm_end_read(reg, b * BLOCK, BLOCK), 0);
    }
}

static void *helper(void *arg)
{
    (void)arg;
    read_all();
    pthread_barrier_wait(&pb); /* every helper has its record first */
    return NULL;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK(argc >= 2);
    const int me = rq_rank(ctx), np = rq_size(ctx);
    static const size_t sizes[] = {1, 3, 17};
    for (unsigned i = 0; i < 4; i++) {
        const unsigned threads = 8u >> i;
        rqdsm_attr_t a = {.block = BLOCK, .threads = 1, .app_threads = threads};
        CHECK_EQ(dsm_org_set(&a, argv[1]), 0);
        rqdsm_t *dsm;
        CHECK_EQ(rqdsm_init(ctx, &a, &dsm), 0);
        nblocks = sizes[i % 3];
        rqdsm_rid_t rid = 0;
        if (me == 0)
            CHECK_EQ(rqdsm_create(dsm, nblocks * BLOCK, &rid), 0);
        CHECK_EQ(rq_broadcast(ctx, 0, &rid, sizeof rid), 0);
        CHECK_EQ(rqdsm_map(dsm, rid, &reg), 0);
        if (me == np - 1) { /* written away from the home */
            CHECK_EQ(rqdsm_start_write(reg, 0, nblocks * BLOCK), 0);
            for (size_t b = 0; b < nblocks; b++)
                *(uint64_t *)((char *)rqdsm_ptr(reg) + b * BLOCK) = 1000 + b;
            CHECK_EQ(rqdsm_end_write(reg, 0, nblocks * BLOCK), 0);
        }
        CHECK_EQ(rq_barrier(ctx), 0);
        pthread_t th[8];
        CHECK_EQ(pthread_barrier_init(&pb, NULL, threads), 0);
        for (unsigned t = 1; t < threads; t++)
            CHECK_EQ(pthread_create(&th[t], NULL, helper, NULL), 0);
        if (threads > 1)
            pthread_barrier_wait(&pb);
        read_all(); /* the main thread: the instance's last record */
        for (unsigned t = 1; t < threads; t++)
            pthread_join(th[t], NULL);
        pthread_barrier_destroy(&pb);
        CHECK_EQ(rq_barrier(ctx), 0);
        CHECK_EQ(rqdsm_unmap(reg), 0);
        CHECK_EQ(rqdsm_finalize(dsm), 0);
    }
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("dsm_reinit %s: ok (%d ranks)\n", argv[1], np);
    return 0;
}
