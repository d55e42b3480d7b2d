/* init.c - the DSM instance: start and stop, the protocol's handler table,
 * statistics.  The top of rqdsm: it calls every file below it (proto.c,
 * regions.c, cache.c, home.c) and none calls it. */
#define _GNU_SOURCE
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsm.h"

/* Whether application threads serve the protocol in their section calls
 * too, not only while they wait.  Under the multiplexed organisation they
 * are the node's protocol processors.  Under a dedicated one, when the
 * node runs more threads (its ranks' protocol and application threads)
 * than it has CPUs: a protocol thread then shares a CPU with an
 * application thread, so a request that comes while the rank computes
 * waits for the doorbell to wake the progress thread and the protocol
 * thread (each a context switch on a busy CPU) where a help in the next
 * section serves it at once (lu at 2 x 1, one protocol thread, on 2
 * vCPUs: docs/dsm.md).  With CPUs to spare, or a job of one rank, nothing
 * changes: the protocol threads serve alone, as the PDQ paper's dedicated
 * processors. */
static int serves_in_sections(rq_ctx_t *ctx, const rqdsm_attr_t *a)
{
    if (a->protocol == RQDSM_PROTO_POLL)
        return 0;
    if (a->pdq_mode == RQ_PDQ_MULTIPLEXED)
        return 1;
    if (rq_size(ctx) == 1)
        return 0; /* no requests come; a help's time stamp would only wake
                     the protocol threads (beside a helper they sleep until
                     it is stale): barnes 1 x 2 ran 10% slower */
    long local = 0;
    for (int r = 0; r < rq_size(ctx); r++)
        local += rq_segment_peer(ctx, r) != NULL;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const long app = a->app_threads > 1 ? (long)a->app_threads : 1;
    return cpus > 0 && local * ((long)a->threads + app) > cpus;
}

/* Every handler is timed (FUGU Table 7-2's T_handler): the TSC around
 * it, added to the rank's counters. */
#define ticks rqdsm_ticks

#define TIMED(fn)                                                              \
    static void timed_##fn(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)      \
    {                                                                          \
        rqdsm_t *d = arg;                                                      \
        uint64_t t0 = ticks();                                                 \
        fn(ctx, m, arg);                                                       \
        STAT(d, handlers);                                                     \
        STAT_ADD(d, handler_ticks, ticks() - t0);                              \
    }
TIMED(rqdsm_h_request)
TIMED(rqdsm_h_inv_ack)
TIMED(rqdsm_h_recall_data)
TIMED(rqdsm_h_data)
TIMED(rqdsm_h_inv)
TIMED(rqdsm_h_recall)
TIMED(rqdsm_h_map_req)
TIMED(rqdsm_h_reply)
TIMED(rqdsm_h_destroy)

static const rq_handler_fn handlers[H_COUNT] = {
    [H_RD_REQ] = timed_rqdsm_h_request,      [H_WR_REQ] = timed_rqdsm_h_request,
    [H_FLUSH_REQ] = timed_rqdsm_h_request,   [H_DROP] = timed_rqdsm_h_request,
    [H_INV_ACK] = timed_rqdsm_h_inv_ack,     [H_RECALL_DATA] = timed_rqdsm_h_recall_data,
    [H_DATA] = timed_rqdsm_h_data,           [H_INV] = timed_rqdsm_h_inv,
    [H_RECALL] = timed_rqdsm_h_recall,       [H_MAP_REQ] = timed_rqdsm_h_map_req,
    [H_REPLY] = timed_rqdsm_h_reply,         [H_DESTROY] = timed_rqdsm_h_destroy,
};

/* ns per TSC tick, over 2 ms of the monotonic clock. */
static double calibrate(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t t0 = ticks();
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 2000000L);
    uint64_t t1 = ticks();
    double ns = (double)((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec));
    return t1 > t0 ? ns / (double)(t1 - t0) : 0;
}

static int attr_fill(const rqdsm_attr_t *in, rqdsm_attr_t *a)
{
    *a = in ? *in : (rqdsm_attr_t){0};
    if (a->block == 0)
        a->block = 128;
    if (a->protocol == 0)
        a->protocol = RQDSM_PROTO_PDQ;
    if (a->threads == 0)
        a->threads = 1;
    if (a->pdq_mode == 0)
        a->pdq_mode = RQ_PDQ_DEDICATED;
    if (a->qid == 0)
        a->qid = RQDSM_QID;
    if (a->handler_base == 0)
        a->handler_base = RQDSM_HANDLER_BASE;
    if (a->block < RQDSM_BLOCK_MIN || a->block > RQDSM_BLOCK_MAX || (a->block & (a->block - 1)))
        return RQ_EINVAL;
    if (a->protocol < RQDSM_PROTO_PDQ || a->protocol > RQDSM_PROTO_SPINLOCK)
        return RQ_EINVAL;
    if (a->threads > 1024 || a->qid >= RQ_MAX_QUEUES || a->app_threads > 1024)
        return RQ_EINVAL;
    if (a->pdq_mode != RQ_PDQ_DEDICATED && a->pdq_mode != RQ_PDQ_MULTIPLEXED)
        return RQ_EINVAL;
    if (a->handler_base > RQ_MAX_HANDLERS - H_COUNT)
        return RQ_EINVAL;
    return 0;
}

/* Every rank must pass the same attributes: compare a digest's min and max. */
static int same_everywhere(rq_ctx_t *ctx, const rqdsm_attr_t *a, int local_rc)
{
    uint64_t h = 1469598103934665603ull;
    const uint64_t v[] = {a->block,        (uint64_t)a->protocol, a->threads,
                          (uint64_t)a->pdq_mode, a->qid, a->handler_base,
                          a->app_threads > 1, (uint64_t)(local_rc != 0)};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    uint64_t lo[2] = {h, (uint64_t)(local_rc != 0)}, hi[2];
    uint64_t mn[2];
    int rc = rq_allreduce(ctx, lo, mn, 2, RQ_UINT64, RQ_MIN);
    if (rc == 0)
        rc = rq_allreduce(ctx, lo, hi, 2, RQ_UINT64, RQ_MAX);
    if (rc != 0)
        return rc;
    return mn[0] == hi[0] && hi[1] == 0 ? 0 : RQ_EINVAL;
}

int rqdsm_init(rq_ctx_t *ctx, const rqdsm_attr_t *attr, rqdsm_t **out)
{
    if (ctx == NULL || out == NULL)
        return RQ_EINVAL;
    *out = NULL;
    rqdsm_attr_t a;
    int local = attr_fill(attr, &a);
    int me = rq_rank(ctx), np = rq_size(ctx);
    if (local == 0 && np - 1 > MAX_HOME)
        local = RQ_EINVAL;
    /* Collective even on bad input, so that no rank waits alone. */
    int rc = same_everywhere(ctx, &a, local);
    if (rc != 0)
        return local != 0 ? local : rc;
    rqdsm_t *d = calloc(1, sizeof *d);
    if (d == NULL)
        return RQ_ENOMEM;
    d->homes = calloc((size_t)np, sizeof *d->homes);
    d->st = rqdsm_counters_alloc();
    if (d->homes == NULL || d->st == NULL) {
        free(d->homes);
        free(d->st);
        free(d);
        return RQ_ENOMEM;
    }
    static _Atomic uint64_t instances;
    d->gen = atomic_fetch_add_explicit(&instances, 1, memory_order_relaxed) + 1;
    d->ctx = ctx;
    d->me = me;
    d->np = np;
    d->block = a.block;
    d->block_shift = (unsigned)__builtin_ctz(a.block);
    d->protocol = a.protocol;
    d->pdq_mode = a.pdq_mode;
    d->serve_sections = serves_in_sections(ctx, &a);
    d->app_mt = a.app_threads > 1;
    d->app_threads = a.app_threads > 1 ? a.app_threads : 1;
    d->qid = a.qid;
    d->hbase = a.handler_base;
    d->words = (unsigned)((np + 63) / 64);
    d->ns_per_tick = calibrate();
    /* Several application threads polling need a thread-safe context;
     * the PDQ of the other organisations makes it so, and under POLL the
     * flag RQ_HF_PROMOTE does (its documented effect, rq.h). */
    const unsigned hflags =
        a.app_threads > 1 && d->protocol == RQDSM_PROTO_POLL ? RQ_HF_PROMOTE : 0;
    for (unsigned h = 0; h < H_COUNT && rc == 0; h++)
        rc = rq_handler_register(ctx, d->hbase + h, handlers[h], d, hflags);
    if (rc == 0 && d->protocol != RQDSM_PROTO_POLL) {
        rq_pdq_attr_t pa = {a.threads, a.pdq_mode, 0};
        rc = rq_pdq_open(ctx, d->qid, &pa, &d->pdq);
    }
    /* Nobody sends before every rank has its handlers. */
    int64_t all = rc, worst = 0;
    int brc = rq_allreduce(ctx, &all, &worst, 1, RQ_INT64, RQ_MIN);
    if (brc != 0 || worst != 0) {
        if (d->pdq)
            rq_pdq_close(d->pdq);
        for (unsigned h = 0; h < H_COUNT; h++)
            rq_handler_register(ctx, d->hbase + h, NULL, NULL, 0);
        free(d->homes);
        free(d->st);
        free(d);
        return rc != 0 ? rc : brc != 0 ? brc : RQ_EINVAL;
    }
    *out = d;
    return 0;
}

/* Handle everything that has arrived (and what that sends), then stop. */
static int quiesce(rqdsm_t *d)
{
    int rc = rq_barrier(d->ctx);
    if (rc == 0 && d->pdq)
        rc = rq_pdq_drain(d->pdq);
    else
        while (rc >= 0 && (rc = rq_poll(d->ctx)) > 0)
            ;
    int rc2 = rq_barrier(d->ctx);
    return rc < 0 ? rc : rc2;
}

int rqdsm_finalize(rqdsm_t *d)
{
    if (d == NULL)
        return RQ_EINVAL;
    int rc = quiesce(d);
    if (d->pdq) {
        int c = rq_pdq_close(d->pdq);
        rc = rc != 0 ? rc : c;
    }
    for (unsigned h = 0; h < H_COUNT; h++)
        rq_handler_register(d->ctx, d->hbase + h, NULL, NULL, 0);
    rqdsm_free_all(d);
    free(d->homes);
    free(d->st);
    free(d);
    return rc;
}

int rqdsm_stats(const rqdsm_t *d, rqdsm_stats_t *o)
{
    if (d == NULL || o == NULL)
        return RQ_EINVAL;
#define GET(f) o->f = STAT_SUM(d, f)
    GET(read_hits);
    GET(write_hits);
    GET(read_misses);
    GET(write_misses);
    GET(upgrades);
    GET(invalidations);
    GET(recalls);
    GET(deferred);
    GET(home_requests);
    GET(messages);
    GET(dropped);
    GET(handlers);
#undef GET
#define NS(f, t) o->f = (uint64_t)((double)STAT_SUM(d, t) * d->ns_per_tick)
    NS(handler_ns, handler_ticks);
    NS(miss_ns, miss_ticks);
    NS(request_ns, request_ticks);
    NS(resume_ns, resume_ticks);
    NS(fill_ns, fill_ticks);
    NS(reply_ns, reply_ticks);
    NS(reply_send_ns, reply_send_ticks);
#undef NS
    o->timed_misses = STAT_SUM(d, timed_misses);
    o->fills = STAT_SUM(d, fills);
    o->replies = STAT_SUM(d, replies);
    return 0;
}

unsigned rqdsm_block(const rqdsm_t *d)
{
    return d ? d->block : 0;
}
