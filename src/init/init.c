/* init.c - rq_init / rq_finalize: assemble every layer into a context (the
 * top of the library: every layer below, each hook set here). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "boot/boot.h"
#include "net/net.h"
#include "boot/pmix.h"
#include "coll/coll.h"
#include "core/sys.h"
#include "ctx.h"
#include "am/am.h"
#include "deliver/deliver.h"
#include "pdq/pdq.h"
#include "progress/promote.h"

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A process joins one job, once: the context of this process while it is
 * live, and whether rq_init was ever called (a second call would start a
 * separate one-rank job, or attach the same rank twice). */
static _Atomic(rq_ctx_t *) live_ctx;
static _Atomic int init_called;

/* Publish our pid, count ourselves in, wait for every rank. */
static int attach_all(rq_ctx_t *ctx)
{
    struct rqi_job_hdr *h = ctx->shm.hdr;
    /* Claim the rank slot: once per job.  A second process (or a second
     * program of the same rank, which inherits RQ_JOB_FD) would read the
     * first one's packets again.  The release orders the pid before the
     * attach count: whoever acquires attached == nranks sees every pid. */
    int32_t none = 0;
    if (!atomic_compare_exchange_strong_explicit(&rqi_shm_area(&ctx->shm, (uint32_t)ctx->rank)->pid,
                                                 &none, (int32_t)getpid(), memory_order_release,
                                                 memory_order_relaxed)) {
        fprintf(stderr,
                "librq: rank %d of this job was already attached (pid %d): a rank joins a job "
                "once\n",
                ctx->rank, (int)none);
        return RQ_EPERM;
    }
    atomic_fetch_add(&h->attached, 1u);
    uint64_t deadline = mono_ms() + ctx->cfg.v[RQI_CFG_INIT_TIMEOUT_MS];
    unsigned spins = 0;
    while (rqi_load_acquire(&h->attached) < h->nlocal) {
        if (rqi_load_acquire(&h->failed) != 0)
            return RQ_EPEER;
        if ((++spins & 1023u) == 0 && mono_ms() > deadline) {
            fprintf(stderr, "librq: rank %d: peers did not attach within %llu ms\n", ctx->rank,
                    (unsigned long long)ctx->cfg.v[RQI_CFG_INIT_TIMEOUT_MS]);
            return RQ_ETIMEDOUT;
        }
        if (spins > 64)
            usleep(100);
    }
    return 0;
}

/* RQ_YIELD_IDLE: auto yields when this machine runs more of the job's
 * ranks than it has CPUs online (then a rank spinning on an empty receive
 * holds a CPU that a peer with work needs, as MPI's yield-when-idle under
 * oversubscription).  Simulated nodes (RQ_NODE_ID) share the machine. */
static int yield_idle_wanted(const rq_ctx_t *ctx)
{
    switch (ctx->cfg.v[RQI_CFG_YIELD_IDLE]) {
    case RQI_YIELD_ALWAYS:
        return 1;
    case RQI_YIELD_NEVER:
        return 0;
    default: {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        long here = ctx->host_ranks > (int)ctx->shm.hdr->nlocal ? ctx->host_ranks
                                                                  : (long)ctx->shm.hdr->nlocal;
        return cpus > 0 && here > cpus;
    }
    }
}

void rqi_hooks_init(struct rqi_hooks *h)
{
    *h = (struct rqi_hooks){.gas_serve = rqi_gas_serve,
                            .gas_help = rqi_gas_help,
                            .async_help = rqi_async_help,
                            .async_announce = rqi_async_announce,
                            .async_reap = rqi_async_reap,
                            .outbox_flush = rqi_outbox_flush_all,
                            .pdq_push = rqi_pdq_push,
                            .pdq_defer = rqi_pdq_defer,
                            .pdq_wake = rqi_pdq_wake};
}

static void ctx_free(rq_ctx_t *ctx)
{
    rqi_vni_fini(ctx);
    rqi_promote_free(ctx); /* its threads may still use the network */
    ctx->net->fini(ctx);
    /* After the progress thread and UCX (both may complete transfers),
     * before the segments are unmapped (the copy thread writes them). */
    rqi_async_fini(ctx);
    rqi_gas_fini(ctx);
    rqi_coll_fini(ctx);
    while (ctx->place_done != NULL) { /* callbacks the job never polled for */
        struct rqi_place_done *d = ctx->place_done->next;
        free(ctx->place_done);
        ctx->place_done = d;
    }
    while (ctx->reasm != NULL) {
        struct rqi_reasm *n = ctx->reasm->next;
        free(ctx->reasm->buf);
        free(ctx->reasm);
        ctx->reasm = n;
    }
    rqi_vbuf_destroy(&ctx->vb, ctx->fifo, RQ_MAX_QUEUES);
    if (ctx->outbox != NULL)
        rqi_vbuf_destroy(&ctx->ob, ctx->outbox, (unsigned)ctx->size);
    free(ctx->outbox);
    rqi_peers_close(&ctx->peers);
    rqi_mt_fini(&ctx->mt);
    free(ctx->tx);
    free(ctx->txl);
    free(ctx->seg);
    free(ctx->bulk);
    free(ctx->bulk_resident);
    free(ctx->stage);
    free(ctx->seg_copy);
    free(ctx->remote);
    rqi_shm_detach(&ctx->shm);
#ifdef RQ_HAVE_PMIX
    if (ctx->pmix)
        rqi_pmix_fini();
#endif
    free(ctx);
}

int rq_init(int *argc, char ***argv, rq_ctx_t **out)
{
    (void)argc;
    (void)argv;
    if (out == NULL)
        return RQ_EINVAL;
    *out = NULL;
    if (atomic_exchange(&init_called, 1) != 0) {
        fprintf(stderr, "librq: rq_init called twice in one process (once per process)\n");
        return RQ_EPERM;
    }
    rq_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return RQ_ENOMEM;
    ctx->shm.fd = -1;
    char err[256];
    rqi_mt_init(&ctx->mt);
    if (rqi_config_load(&ctx->cfg, err, sizeof err) != 0) {
        fprintf(stderr, "librq: %s\n", err);
        free(ctx);
        return RQ_EINVAL;
    }
    struct rqi_boot b = {0, 0, -1, 0, NULL, 1, 0};
    int rc = rqi_boot(&ctx->cfg, &b, rqi_shm_create, err, sizeof err);
    ctx->pmix = b.pmix;
    ctx->host_ranks = b.host_ranks;
    ctx->host_index = b.host_index;
    ctx->remote = b.remote;
    if (rc != 0) {
        fprintf(stderr, "librq: %s\n", err);
        if (b.job_fd >= 0)
            close(b.job_fd);
        ctx_free(ctx);
        return rc;
    }
    ctx->rank = b.rank;
    ctx->size = b.size;
    rqi_hooks_init(&ctx->hooks);
    ctx->net = rqi_net_default();
    rqi_fail_init(&ctx->fail, ctx->rank);
    rc = rqi_shm_attach(b.job_fd, &ctx->shm, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "librq: %s\n", err);
        close(b.job_fd);
        ctx_free(ctx);
        return rc;
    }
    rqi_fail_attach(&ctx->fail, &ctx->shm.hdr->failed);
    const struct rqi_job_hdr *h = ctx->shm.hdr;
    if (h->nranks != (uint32_t)ctx->size) {
        fprintf(stderr, "librq: RQ_SIZE=%d but the job has %u ranks\n", ctx->size, h->nranks);
        ctx_free(ctx);
        return RQ_EINVAL;
    }
    ctx->job32 = (uint32_t)h->job_id;
    ctx->hdr_w0 = (uint64_t)ctx->job32 | (uint64_t)(uint32_t)ctx->rank << 32;
    ctx->medium_max = h->medium_max;
    ctx->seg_bytes = h->seg_bytes;
    ctx->bulk_bytes = h->bulk_bytes;
    ctx->bulk_stream = (int)ctx->cfg.v[RQI_CFG_BULK_STREAM];
    ctx->large_max = rqi_phys_bytes();
    ctx->tx = calloc((size_t)ctx->size, sizeof *ctx->tx);
    ctx->txl = aligned_alloc(_Alignof(struct rqi_tx_lock), (size_t)ctx->size * sizeof *ctx->txl);
    if (ctx->txl != NULL)
        memset(ctx->txl, 0, (size_t)ctx->size * sizeof *ctx->txl);
    ctx->seg = calloc((size_t)ctx->size, sizeof *ctx->seg);
    ctx->bulk = calloc((size_t)ctx->size, sizeof *ctx->bulk);
    ctx->bulk_resident = calloc((size_t)ctx->size, sizeof *ctx->bulk_resident);
    ctx->stage = calloc((size_t)ctx->size, sizeof *ctx->stage);
    ctx->seg_copy = calloc((size_t)ctx->size, sizeof *ctx->seg_copy);
    ctx->outbox = calloc((size_t)ctx->size, sizeof *ctx->outbox);
    if (ctx->remote == NULL) /* every rank on this node: all flags 0 */
        ctx->remote = calloc((size_t)ctx->size, 1);
    if (ctx->tx == NULL || ctx->txl == NULL || ctx->seg == NULL || ctx->bulk == NULL ||
        ctx->bulk_resident == NULL || ctx->stage == NULL ||
        ctx->seg_copy == NULL || ctx->outbox == NULL || ctx->remote == NULL) {
        ctx_free(ctx);
        return RQ_ENOMEM;
    }
    uint64_t nslots = h->ring_bytes / RQI_SLOT_BYTES;
    /* A sender uses lane (its index among the node's ranks) mod nlanes in
     * every receiver on the node; a lane with one sender (lane + nlanes >=
     * nlocal) is single-producer.  Ranks on other nodes never use a lane. */
    uint32_t local_index = 0;
    for (int r = 0; r < ctx->rank; r++)
        local_index += !ctx->remote[r];
    uint32_t my_lane = local_index % h->nlanes;
    int exclusive = my_lane + h->nlanes >= h->nlocal;
    ctx->my_lane = my_lane;
    ctx->lane_exclusive = exclusive;
    int nremote = 0;
    for (int r = 0; r < ctx->size; r++) {
        if (ctx->remote[r]) {
            nremote++; /* another node: no ring, no mapped segment */
            continue;
        }
        struct rqi_rank_area *a = rqi_shm_area(&ctx->shm, (uint32_t)r);
        ctx->tx[r].slots = rqi_shm_lane(&ctx->shm, (uint32_t)r, my_lane);
        ctx->tx[r].ctrl = &a->ring[my_lane];
        ctx->tx[r].nslots = nslots;
        ctx->tx[r].head_cache = 0;
        ctx->tx[r].exclusive = exclusive;
        ctx->seg[r] = rqi_shm_segment(&ctx->shm, (uint32_t)r);
        ctx->bulk[r] = rqi_shm_bulk(&ctx->shm, (uint32_t)r);
    }
    if (h->bulk_bytes != 0) {
        ctx->btx.base = ctx->bulk[ctx->rank];
        ctx->btx.size = h->bulk_bytes;
    }
    ctx->nlanes = h->nlanes;
    for (uint32_t l = 0; l < h->nlanes; l++) {
        struct rqi_ring_rx *rx = &ctx->rx[l];
        rx->slots = rqi_shm_lane(&ctx->shm, (uint32_t)ctx->rank, l);
        rx->ctrl = &rqi_shm_area(&ctx->shm, (uint32_t)ctx->rank)->ring[l];
        rx->nslots = nslots;
        rx->batch = nslots / 8;
    }
    rqi_vbuf_init(&ctx->vb, (size_t)ctx->cfg.v[RQI_CFG_VBUF_CHUNK_BYTES]);
    rqi_vbuf_init(&ctx->ob, (size_t)ctx->cfg.v[RQI_CFG_VBUF_CHUNK_BYTES]);
    rqi_coll_init(ctx);
    if ((rc = attach_all(ctx)) != 0 ||
        (rc = rqi_peers_open(&ctx->peers, &ctx->shm, ctx->rank)) != 0 ||
        (rc = rqi_gas_init(ctx)) != 0 || (rc = rqi_async_init(ctx)) != 0) {
        ctx_free(ctx);
        return rc;
    }
    ctx->ucx_up = (struct rqi_ucx_up){rqi_ingest_pkt, rqi_held_add};
    if (nremote != 0 && (rc = ctx->net->init(ctx, err, sizeof err)) != 0) {
        fprintf(stderr, "librq: rank %d: %s\n", ctx->rank, err);
        ctx_free(ctx);
        return rc;
    }
    if ((rc = rqi_vni_init(ctx)) != 0) {
        ctx_free(ctx);
        return rc;
    }
    if (ctx->cfg.v[RQI_CFG_THREAD_SAFE])
        rqi_store_relaxed(&ctx->mt.on, 1u);
    ctx->yield_idle = yield_idle_wanted(ctx);
    ctx->buffer_always = (int)ctx->cfg.v[RQI_CFG_BUFFER_ALWAYS];
    ctx->buffer_delay_ns = ctx->cfg.v[RQI_CFG_BUFFER_DELAY_NS];
    atomic_store(&live_ctx, ctx);
    *out = ctx;
    return 0;
}

int rq_finalize(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    /* A context already finalized (or never ours) is not touched: only its
     * address is compared.  Any other use after rq_finalize is undefined. */
    if (atomic_load(&live_ctx) != ctx)
        return RQ_EINVAL;
    if (rqi_in_handler(ctx) || rqi_vni_on_progress || rqi_promote_on_pool())
        return RQ_EPERM;
    atomic_store(&live_ctx, NULL);
    /* Promoted handlers return (they may send and wait), open PDQs are
     * drained and closed (their threads may still send; their handlers
     * may promote), the pool's threads stop (parts promoted later run on
     * this thread, in the waves below), then the progress thread stops:
     * from here on this thread alone owns the context. */
    int prc = rqi_promote_quiet(ctx);
    for (unsigned qid = 0; qid < RQ_MAX_QUEUES; qid++)
        if (ctx->pdq[qid] != NULL)
            (void)rq_pdq_close(ctx->pdq[qid]);
    if (prc == 0)
        prc = rqi_promote_quiet(ctx);
    rqi_promote_stop(ctx);
    rqi_vni_fini(ctx);
    /* Complete our global-address operations, then wait until nothing is
     * in flight anywhere: handlers run meanwhile and may send, and what
     * they send is delivered before any rank leaves (rqi_quiesce).  Nobody
     * may still send to us once we unmap: every rank completed its
     * operations before its first wave, and proc-strategy service goes on
     * inside the waves. */
    int rc = rqi_gas_quiet(ctx);
    /* Non-blocking transfers complete too: their counters move, long
     * requests' announcements go out (and their handlers run in the
     * waves below). */
    if (rc == 0)
        rc = rqi_async_quiet(ctx);
    if (rc == 0)
        rc = prc != 0 || ctx->fail.failed ? RQ_EPEER : rqi_quiesce(ctx);
#ifdef RQ_HAVE_PMIX
    /* Across nodes, every rank must be past the barrier before any closes
     * its connections: a closed connection reads as a dead peer. */
    if (rc == 0 && ctx->ucx != NULL && rqi_pmix_fence() != 0)
        rc = RQ_EPEER;
#endif
    ctx->net->closing(ctx);
    /* Pairs with the load_acquire in rqi_peers_check: our exit from here
     * on is orderly, not a failure. */
    rqi_store_release(&rqi_shm_area(&ctx->shm, (uint32_t)ctx->rank)->departed, 1u);
    ctx_free(ctx);
    return rc;
}

int rq_rank(const rq_ctx_t *ctx) { return ctx == NULL ? -1 : ctx->rank; }
int rq_size(const rq_ctx_t *ctx) { return ctx == NULL ? 0 : ctx->size; }

int rq_stats(rq_ctx_t *ctx, rq_stats_t *out)
{
    if (ctx == NULL || out == NULL)
        return RQ_EINVAL;
    int locked = rqi_ctx_enter(ctx);
    *out = ctx->stats;
    out->sent = rqi_sent(ctx);
    out->buffer_bytes_now = ctx->vb.bytes_now;
    out->buffer_bytes_max = ctx->vb.bytes_max;
    out->parked = ctx->parked;
    out->rejected += atomic_load_explicit(&ctx->gas.rejected, memory_order_relaxed) +
                     atomic_load_explicit(&ctx->pdq_rejected, memory_order_relaxed);
    out->interrupts = ctx->vni.interrupts;
    out->revocations = ctx->vni.revocations;
    out->overflow_high_exits = ctx->vni.ovf_high_exits;
    rqi_promote_counts(ctx, &out->promoted, &out->promote_threads);
    rqi_ctx_leave(ctx, locked);
    return 0;
}
