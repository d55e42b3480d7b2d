/* dsm_threads.c - the DSM from several application threads per rank
 * (rqdsm.h THREADS).  dsm_threads ORG T K:
 *   ORG  pdq, multiplexed, poll or spinlock (the protocol's organisation);
 *   T    application threads per rank; K  operations per thread.
 * Phases, every thread of every rank at once:
 *   mixed     K random operations on 8 counters (one per block) of a
 *             region homed on rank 0 and 8 of one homed on the last rank:
 *             a write section adds one; a read section checks the value
 *             never goes back for this thread and does not change while
 *             held (a while later, still the same); a read of a range of
 *             blocks checks each; a read nested in the thread's own write
 *             sees its own add.  Then: every add is there (no update
 *             lost), on every rank (read after the remote writes).
 *   coalesce  rank 0 writes one block (every other copy invalidated),
 *             then all T threads of every other rank read it at once:
 *             one read miss per rank (the others wait for the same grant);
 *             then 40 rounds of the same with a range of all 8 blocks:
 *             8 read misses per rank and round (nobody asks again for a
 *             copy another thread's grant made good).
 *   hold      thread 0 of every rank but 0 reads one block for 20 ms
 *             while rank 0's threads write it and the other threads of
 *             the holding ranks read it: the bytes it holds never change
 *             meanwhile (4 rounds);
 *   errors    a write inside the thread's own read of the block
 *             (RQ_EINVAL), an end of another thread's section (RQ_ERANGE),
 *             an end with no start (RQ_ERANGE); nothing changes.
 *   counts    after the others, waves of short-lived threads (more in all
 *             than the DSM's private counter blocks, and more at once
 *             than T) read a block held here: read_hits grows by exactly
 *             their sections (per-thread counters summed, indices handed
 *             back by exiting threads and reused, the shared block).
 * Thread 0 of each rank makes the job-wide calls (barriers) between
 * phases while the others wait on a pthread barrier. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rq.h>
#include <rqdsm.h>

#include "check.h"
#include "dsm_org.h"

enum { COUNTERS = 8, BLOCK = 64, MAX_T = 16 };

static rq_ctx_t *ctx;
static rqdsm_t *dsm;
static rqdsm_region_t *reg[2];
static int me, np, nthreads;
static uint64_t k;
static pthread_barrier_t pb;
static _Atomic uint64_t adds[2][COUNTERS]; /* this rank's adds, per counter */
static _Atomic int errors;
static rqdsm_region_t *shared_sec_region; /* errors phase: thread 0's open read */

static uint64_t *word(int g, unsigned c)
{
    return (uint64_t *)((char *)rqdsm_ptr(reg[g]) + (size_t)c * BLOCK);
}

static void fail(const char *what, int line)
{
    fprintf(stderr, "dsm_threads rank %d: %s (line %d)\n", me, what, line);
    atomic_fetch_add(&errors, 1);
}
#define EXPECT(c) do { if (!(c)) fail(#c, __LINE__); } while (0)

/* Between phases: the ranks meet (thread 0), the threads of a rank too. */
static void meet(int t)
{
    pthread_barrier_wait(&pb);
    if (t == 0)
        CHECK_EQ(rq_barrier(ctx), 0);
    pthread_barrier_wait(&pb);
}

static void phase_mixed(int t)
{
    uint64_t seen[2][COUNTERS] = {{0}};
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(me * MAX_T + t + 1);
    for (uint64_t i = 0; i < k; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int g = (int)(x >> 60) & 1;
        unsigned c = (unsigned)(x >> 40) % COUNTERS;
        size_t off = (size_t)c * BLOCK;
        switch ((x >> 20) % 4) {
        case 0: /* write: add one */
        case 1:
            EXPECT(rqdsm_start_write(reg[g], off, 8) == 0);
            *word(g, c) += 1;
            EXPECT(*word(g, c) > seen[g][c]);
            seen[g][c] = *word(g, c);
            if ((x >> 8) % 4 == 0) { /* a read nested in our own write */
                EXPECT(rqdsm_start_read(reg[g], off, 8) == 0);
                EXPECT(*word(g, c) == seen[g][c]);
                EXPECT(rqdsm_end_read(reg[g], off, 8) == 0);
            }
            EXPECT(rqdsm_end_write(reg[g], off, 8) == 0);
            atomic_fetch_add(&adds[g][c], 1);
            break;
        case 2: /* read one: never back, and held: nobody changes it meanwhile */
            EXPECT(rqdsm_start_read(reg[g], off, 8) == 0);
            EXPECT(*word(g, c) >= seen[g][c]);
            seen[g][c] = *word(g, c);
            for (int spin = 0; spin < 200; spin++)
                __asm__ volatile("pause");
            EXPECT(*(volatile uint64_t *)word(g, c) == seen[g][c]);
            EXPECT(rqdsm_end_read(reg[g], off, 8) == 0);
            break;
        default: /* read them all: a range of blocks */
            EXPECT(rqdsm_start_read(reg[g], 0, COUNTERS * BLOCK) == 0);
            for (unsigned j = 0; j < COUNTERS; j++) {
                EXPECT(*word(g, j) >= seen[g][j]);
                seen[g][j] = *word(g, j);
            }
            EXPECT(rqdsm_end_read(reg[g], 0, COUNTERS * BLOCK) == 0);
            break;
        }
    }
}

static void check_totals(int t)
{
    if (t != 0)
        return;
    uint64_t mine[2 * COUNTERS], all[2 * COUNTERS];
    for (int g = 0; g < 2; g++)
        for (unsigned c = 0; c < COUNTERS; c++)
            mine[g * COUNTERS + c] = atomic_load(&adds[g][c]);
    CHECK_EQ(rq_allreduce(ctx, mine, all, 2 * COUNTERS, RQ_UINT64, RQ_SUM), 0);
    for (int g = 0; g < 2; g++) {
        EXPECT(rqdsm_start_read(reg[g], 0, COUNTERS * BLOCK) == 0);
        for (unsigned c = 0; c < COUNTERS; c++)
            if (*word(g, c) != all[g * COUNTERS + c]) {
                fprintf(stderr, "rank %d: region %d counter %u: %llu, adds %llu\n", me, g, c,
                        (unsigned long long)*word(g, c),
                        (unsigned long long)all[g * COUNTERS + c]);
                fail("an add was lost", __LINE__);
            }
        EXPECT(rqdsm_end_read(reg[g], 0, COUNTERS * BLOCK) == 0);
    }
}

static rqdsm_stats_t before;

/* Each thread of each rank but 0 reads blocks [0, nb) of region 0 at
 * once, right after rank 0 wrote them all: every rank must fetch each
 * block exactly once (the threads that come later wait for the same
 * grant, and none asks again for a copy another thread's grant made
 * good: a second grant would copy the bytes in under its readers). */
static void coalesce_round(int t, unsigned nb)
{
    if (t == 0 && me == 0) { /* every other copy goes */
        EXPECT(rqdsm_start_write(reg[0], 0, (size_t)nb * BLOCK) == 0);
        for (unsigned c = 0; c < nb; c++)
            *word(0, c) += 1000;
        EXPECT(rqdsm_end_write(reg[0], 0, (size_t)nb * BLOCK) == 0);
    }
    if (t == 0)
        CHECK_EQ(rqdsm_stats(dsm, &before), 0);
    meet(t);
    EXPECT(rqdsm_start_read(reg[0], 0, (size_t)nb * BLOCK) == 0);
    for (unsigned c = 0; c < nb; c++)
        EXPECT(*word(0, c) >= 1000);
    EXPECT(rqdsm_end_read(reg[0], 0, (size_t)nb * BLOCK) == 0);
    pthread_barrier_wait(&pb);
    if (t == 0 && me != 0) {
        rqdsm_stats_t after;
        CHECK_EQ(rqdsm_stats(dsm, &after), 0);
        if (after.read_misses - before.read_misses != nb) {
            fprintf(stderr, "rank %d: %llu read requests for %u blocks by %d threads\n", me,
                    (unsigned long long)(after.read_misses - before.read_misses), nb,
                    nthreads);
            fail("a second request", __LINE__);
        }
    }
    meet(t);
}

/* One block, then ranges of every block (the range's requests go out
 * at once, racing the other threads' grants), many times. */
static void phase_coalesce(int t)
{
    coalesce_round(t, 1);
    for (int i = 0; i < 40; i++)
        coalesce_round(t, COUNTERS);
}

static void phase_errors(int t)
{
    const size_t off = 3 * BLOCK;
    if (t == 0) {
        EXPECT(rqdsm_start_read(reg[1], off, 8) == 0);
        EXPECT(rqdsm_start_write(reg[1], off, 8) == RQ_EINVAL); /* inside our own read */
        shared_sec_region = reg[1];
    }
    pthread_barrier_wait(&pb);
    if (t == 1) /* thread 0's section is not ours to end */
        EXPECT(rqdsm_end_read(shared_sec_region, off, 8) == RQ_ERANGE);
    if (t != 0) {
        EXPECT(rqdsm_end_write(reg[1], off, 8) == RQ_ERANGE);
        EXPECT(rqdsm_end_read(reg[0], 0, 8) == RQ_ERANGE);
    }
    pthread_barrier_wait(&pb);
    if (t == 0)
        EXPECT(rqdsm_end_read(reg[1], off, 8) == 0);
}

/* Thread 0 of every rank but 0 holds a read section on one block for
 * 20 ms while every thread of rank 0 writes it and the other threads of
 * the holding ranks read it: the writes' invalidations wait for the
 * holders, so the held bytes never change under them (a rank that
 * answered an invalidation while a thread read fast would let a later
 * grant, fetched by one of its readers, overwrite the bytes it holds). */
static void phase_hold(int t)
{
    const size_t off = 5 * BLOCK;
    uint64_t v0 = 0;
    /* First every rank gets a shared copy (the hold below is then a hit:
     * a miss that needed another rank's copy back would wait for that
     * rank's holder, who waits at the barrier below). */
    if (t == 0) {
        EXPECT(rqdsm_start_read(reg[0], off, 8) == 0);
        EXPECT(rqdsm_end_read(reg[0], off, 8) == 0);
    }
    meet(t);
    if (t == 0 && me != 0) {
        EXPECT(rqdsm_start_read(reg[0], off, 8) == 0);
        v0 = *word(0, 5);
    }
    meet(t);
    if (me == 0) {
        for (int i = 0; i < 5; i++) {
            EXPECT(rqdsm_start_write(reg[0], off, 8) == 0);
            *word(0, 5) += 1;
            EXPECT(rqdsm_end_write(reg[0], off, 8) == 0);
        }
    } else if (t == 0) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        do {
            EXPECT(*(volatile uint64_t *)word(0, 5) == v0);
            clock_gettime(CLOCK_MONOTONIC, &b);
        } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 20000000L);
        EXPECT(rqdsm_end_read(reg[0], off, 8) == 0);
    } else {
        for (int i = 0; i < 200; i++) {
            EXPECT(rqdsm_start_read(reg[0], off, 8) == 0);
            EXPECT(rqdsm_end_read(reg[0], off, 8) == 0);
            for (int spin = 0; spin < 500; spin++)
                __asm__ volatile("pause");
        }
    }
}

static void *thread_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    meet(t);
    phase_mixed(t);
    meet(t);
    check_totals(t);
    meet(t);
    phase_coalesce(t);
    meet(t);
    phase_errors(t);
    meet(t);
    for (int i = 0; i < 4; i++) {
        phase_hold(t);
        meet(t);
    }
    return NULL;
}

enum { WAVES = 3, WAVE_THREADS = 80, WAVE_READS = 200 };

static void *wave_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < WAVE_READS; i++) {
        EXPECT(rqdsm_start_read(reg[0], 0, 8) == 0);
        EXPECT(*word(0, 0) >= 1000);
        EXPECT(rqdsm_end_read(reg[0], 0, 8) == 0);
    }
    return NULL;
}

/* The counts phase (above): nobody writes, every rank reads its copy. */
static void phase_counts(void)
{
    CHECK_EQ(rqdsm_start_read(reg[0], 0, 8), 0); /* a copy here first */
    CHECK_EQ(rqdsm_end_read(reg[0], 0, 8), 0);
    rqdsm_stats_t b, a;
    CHECK_EQ(rqdsm_stats(dsm, &b), 0);
    for (int w = 0; w < WAVES; w++) {
        pthread_t th[WAVE_THREADS];
        for (int i = 0; i < WAVE_THREADS; i++)
            CHECK_EQ(pthread_create(&th[i], NULL, wave_main, NULL), 0);
        for (int i = 0; i < WAVE_THREADS; i++)
            pthread_join(th[i], NULL);
    }
    CHECK_EQ(rqdsm_stats(dsm, &a), 0);
    const uint64_t want = (uint64_t)WAVES * WAVE_THREADS * WAVE_READS;
    if (a.read_hits - b.read_hits != want || a.read_misses != b.read_misses) {
        fprintf(stderr, "rank %d: read_hits +%llu, read_misses +%llu; %llu sections\n", me,
                (unsigned long long)(a.read_hits - b.read_hits),
                (unsigned long long)(a.read_misses - b.read_misses), (unsigned long long)want);
        fail("counts", __LINE__);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
}

int main(int argc, char **argv)
{
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    me = rq_rank(ctx);
    np = rq_size(ctx);
    CHECK(argc >= 4);
    nthreads = atoi(argv[2]);
    k = strtoull(argv[3], NULL, 10);
    CHECK(nthreads >= 2 && nthreads <= MAX_T);
    rqdsm_attr_t a = {.block = BLOCK, .threads = 2, .app_threads = (unsigned)nthreads};
    CHECK_EQ(dsm_org_set(&a, argv[1]), 0);
    CHECK_EQ(rqdsm_init(ctx, &a, &dsm), 0);
    rqdsm_rid_t rid[2] = {0, 0};
    if (me == 0)
        CHECK_EQ(rqdsm_create(dsm, COUNTERS * BLOCK, &rid[0]), 0);
    if (me == np - 1)
        CHECK_EQ(rqdsm_create(dsm, COUNTERS * BLOCK, &rid[1]), 0);
    CHECK_EQ(rq_broadcast(ctx, 0, &rid[0], sizeof rid[0]), 0);
    CHECK_EQ(rq_broadcast(ctx, np - 1, &rid[1], sizeof rid[1]), 0);
    CHECK_EQ(rqdsm_map(dsm, rid[0], &reg[0]), 0);
    CHECK_EQ(rqdsm_map(dsm, rid[1], &reg[1]), 0);
    CHECK_EQ(pthread_barrier_init(&pb, NULL, (unsigned)nthreads), 0);
    pthread_t th[MAX_T];
    for (int t = 1; t < nthreads; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t), 0);
    thread_main((void *)0);
    for (int t = 1; t < nthreads; t++)
        pthread_join(th[t], NULL);
    CHECK_EQ(atomic_load(&errors), 0);
    phase_counts();
    CHECK_EQ(atomic_load(&errors), 0);
    CHECK_EQ(rqdsm_unmap(reg[0]), 0);
    CHECK_EQ(rqdsm_unmap(reg[1]), 0);
    CHECK_EQ(rqdsm_finalize(dsm), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("dsm_threads %s: ok (%d ranks x %d threads, %llu operations each)\n", argv[1], np,
               nthreads, (unsigned long long)k);
    return 0;
}
