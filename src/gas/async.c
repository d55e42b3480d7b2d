/* async.c - the copy engine of the non-blocking bulk transfers (the
 * protocol and its memory ordering are in async.h). */
#define _GNU_SOURCE
#include "gas/async.h"
#include "net/net.h"

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#include "am/am.h"
#include "ctx.h"
#include "deliver/deliver.h"
#include "gas/gas.h"
#include "progress/progress.h"
#include "vni/vni.h"

static void on_pull(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);
static void on_pull_nak(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);

int rqi_async_init(rq_ctx_t *ctx)
{
    struct rqi_async *a = &ctx->async;
    /* The job's other ranks may read our memory (pulled long requests):
     * Yama's ptrace scope 1 otherwise allows only our ancestors.  EINVAL
     * without Yama: nothing to allow. */
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    ctx->sys[RQI_SYS_PULL].fn = on_pull;
    ctx->sys[RQI_SYS_PULL_NAK].fn = on_pull_nak;
    if (pthread_mutex_init(&a->lock, NULL) != 0)
        return RQ_ENOMEM;
    if (pthread_cond_init(&a->wake, NULL) != 0) {
        pthread_mutex_destroy(&a->lock);
        return RQ_ENOMEM;
    }
    a->tail = &a->head;
    a->landed_tail = &a->landed;
    a->pulls_tail = &a->pulls;
    a->min = ctx->cfg.v[RQI_CFG_ASYNC_MIN];
    a->pull_mode = (int)ctx->cfg.v[RQI_CFG_ASYNC_PULL];
    a->inited = 1;
    return 0;
}

static void free_list(struct rqi_aop *op)
{
    while (op != NULL) {
        struct rqi_aop *n = op->next;
        free(op);
        op = n;
    }
}

void rqi_async_fini(rq_ctx_t *ctx)
{
    struct rqi_async *a = &ctx->async;
    if (!a->inited)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    pthread_cond_broadcast(&a->wake);
    pthread_mutex_unlock(&a->lock);
    if (a->started)
        pthread_join(a->thread, NULL);
    /* Only a failed job leaves transfers here: their counters never move. */
    free_list(a->head);
    free_list(a->landed);
    free_list(a->pulls);
    a->head = a->landed = a->pulls = NULL;
    pthread_cond_destroy(&a->wake);
    pthread_mutex_destroy(&a->lock);
    a->inited = 0;
}

void rqi_async_complete(rq_ctx_t *ctx, struct rqi_aop *op)
{
    /* Once the job failed a counter never moves (deliver.h: the gate). */
    if (op->done != NULL && rqi_complete_enter(ctx)) {
        /* Releases the bytes (and the announcement) to the application's
         * acquire load of its counter. */
        __atomic_fetch_add(op->done, 1, __ATOMIC_RELEASE);
        rqi_complete_leave(ctx);
    }
    free(op);
    /* After *done: rqi_async_quiet seeing 0 has seen every counter move. */
    atomic_fetch_sub_explicit(&ctx->async.pending, 1, memory_order_release);
}

/* A long request's bytes have all landed: its announcement waits for the
 * context's owner. */
static void op_landed(rq_ctx_t *ctx, struct rqi_aop *op, int on_engine)
{
    struct rqi_async *a = &ctx->async;
    if (op->kind != RQI_AOP_LONG) {
        rqi_async_complete(ctx, op);
        return;
    }
    pthread_mutex_lock(&a->lock);
    op->next = NULL;
    *a->landed_tail = op;
    a->landed_tail = &op->next;
    rqi_store_release(&a->landed_n, 1u);
    pthread_mutex_unlock(&a->lock);
    /* The progress thread sends it unless the application, polling, does
     * first; an application thread that copied the last piece is inside
     * librq and sends it from its own poll. */
    if (on_engine && ctx->async.ring)
        rqi_vni_ring(ctx, ctx->rank, RQI_BELL_ASYNC);
}

/* Take one piece of the oldest queued transfer and copy it: 1, or 0 when
 * nothing was queued or the job failed.  After a failure nothing more is
 * copied: what is queued stays queued (rqi_async_fini frees it), and a
 * transfer whose last piece was in flight does not complete (the gate). */
static int copy_piece(rq_ctx_t *ctx, int on_engine)
{
    struct rqi_async *a = &ctx->async;
    pthread_mutex_lock(&a->lock);
    struct rqi_aop *op = a->head;
    if (op == NULL || rqi_job_failed_any(ctx)) {
        pthread_mutex_unlock(&a->lock);
        return 0;
    }
    /* len read here: once our bytes count, another copier may free op. */
    const uint64_t len = op->len, at = op->claimed;
    const uint64_t n = len - at < RQI_ASYNC_CHUNK ? len - at : RQI_ASYNC_CHUNK;
    op->claimed = at + n;
    if (op->claimed == len) {
        a->head = op->next;
        if (a->head == NULL) {
            a->tail = &a->head;
            rqi_store_release(&a->queued, 0u);
        }
    }
    if (on_engine)
        a->engine_bytes += n;
    else
        a->caller_bytes += n;
    pthread_mutex_unlock(&a->lock);
    /* A peer's segment is written or read here, ordered for the peer by
     * the announcement or by the application's own synchronization. */
    RQI_TSAN_IGNORE_BEGIN();
    memcpy(op->to + at, op->from + at, n);
    RQI_TSAN_IGNORE_END();
    if (atomic_fetch_add_explicit(&op->copied, n, memory_order_acq_rel) + n == len)
        op_landed(ctx, op, on_engine);
    return 1;
}

static void *engine_main(void *arg)
{
    rq_ctx_t *ctx = arg;
    struct rqi_async *a = &ctx->async;
    for (;;) {
        pthread_mutex_lock(&a->lock);
        /* A failed job copies nothing more: sleep until rqi_async_fini. */
        while ((a->head == NULL || rqi_job_failed_any(ctx)) && !a->stop)
            pthread_cond_wait(&a->wake, &a->lock);
        int stop = a->stop;
        pthread_mutex_unlock(&a->lock);
        if (stop)
            return NULL;
        (void)copy_piece(ctx, 1);
    }
}

/* Under the lock, on the issuing thread: keep the copy thread off the CPU
 * the caller runs on (it goes on computing there), on any other CPU of the
 * machine, which the kernel narrows to the job's cgroup; the scheduler
 * then puts it beside an idle or waiting rank.  Without this a rank bound
 * to one core, or the wake-up placing the thread beside its waker, would
 * leave the copy and the computation taking turns.  One CPU only: no
 * choice. */
static void engine_place(struct rqi_async *a)
{
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu == a->avoid_cpu || cpu >= CPU_SETSIZE)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (c != cpu)
            CPU_SET(c, &set);
    if (pthread_setaffinity_np(a->thread, sizeof set, &set) != 0) {
        CPU_SET(cpu, &set);
        (void)pthread_setaffinity_np(a->thread, sizeof set, &set);
    }
    a->avoid_cpu = cpu;
}

/* Under the lock: start the copy thread once.  0 or RQ_ENOMEM. */
static int engine_start(rq_ctx_t *ctx)
{
    struct rqi_async *a = &ctx->async;
    if (a->started)
        return 0;
    /* Signals go to the application's threads, never to ours. */
    a->ring = ctx->vni.on;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&a->thread, NULL, engine_main, ctx);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return RQ_ENOMEM;
    a->started = 1;
    a->avoid_cpu = -1;
    return 0;
}

static int submit(rq_ctx_t *ctx, struct rqi_aop *op, int count)
{
    struct rqi_async *a = &ctx->async;
    op->next = NULL;
    op->claimed = 0;
    atomic_store_explicit(&op->copied, 0, memory_order_relaxed);
    pthread_mutex_lock(&a->lock);
    int rc = engine_start(ctx);
    if (rc == 0) {
        engine_place(a);
        if (count)
            atomic_fetch_add_explicit(&a->pending, 1, memory_order_relaxed);
        *a->tail = op;
        a->tail = &op->next;
        rqi_store_release(&a->queued, 1u);
        pthread_cond_signal(&a->wake);
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

/* ---- pulled long requests (async.h) ------------------------------------ */

static int pull_ok(const rq_ctx_t *ctx, const struct rqi_aop *op)
{
    const struct rqi_async *a = &ctx->async;
    if (op->kind != RQI_AOP_LONG || a->cma_off || a->pull_mode == RQI_PULL_OFF || op->len == 0 ||
        op->len < a->min || ctx->btx.base == NULL ||
        op->peer == ctx->rank || (op->flags & RQ_INTERRUPT) ||
        (ctx->handlers[op->handler].flags & RQ_HF_INTERRUPT))
        return 0;
    /* A system message interrupts nobody: a target with interrupts on
     * gets the engine's announcement instead. */
    return rqi_load_relaxed(&rqi_shm_area(&ctx->shm, (uint32_t)op->peer)->vni.intr_mode) ==
           RQ_INTR_OFF;
}

static void pulls_unlink(struct rqi_async *a, struct rqi_aop *op)
{
    struct rqi_aop **pp = &a->pulls;
    while (*pp != op)
        pp = &(*pp)->next;
    *pp = op->next;
    if (a->pulls_tail == &op->next)
        a->pulls_tail = pp;
    rqi_store_release(&a->npulls, rqi_load_relaxed(&a->npulls) - 1);
}

/* 0: sent; 1: no room for the completion block (take another path);
 * else RQ_E* with op freed. */
static int pull_start(rq_ctx_t *ctx, struct rqi_aop *op)
{
    struct rqi_async *a = &ctx->async;
    uint64_t boff, undo;
    const uint64_t cookie = rqi_bulk_alloc(&ctx->btx, 0, (uint32_t)op->peer, &boff, &undo);
    if (cookie == 0)
        return 1;
    op->hdr = rqi_bulk_at(ctx->btx.base, ctx->btx.size, boff);
    op->cookie = cookie;
    /* Everything the message needs is read now: once it is sent the
     * target may finish and our progress thread free op before rqi_send
     * even returns. */
    const uint64_t w[6] = {(uint64_t)(uintptr_t)op->from, op->len, op->off, boff, cookie,
                           op->handler | (uint64_t)op->nargs << 32};
    uint64_t args[RQ_MAX_ARGS];
    const unsigned nargs = op->nargs;
    const int peer = op->peer;
    struct rqi_bulk_hdr *hdr = op->hdr;
    memcpy(args, op->args, 8u * nargs);
    op->next = NULL;
    pthread_mutex_lock(&a->lock);
    *a->pulls_tail = op;
    a->pulls_tail = &op->next;
    rqi_store_release(&a->npulls, rqi_load_relaxed(&a->npulls) + 1);
    atomic_fetch_add_explicit(&a->pending, 1, memory_order_relaxed);
    pthread_mutex_unlock(&a->lock);
    int rc = rqi_send(ctx, peer, RQ_AM_QUEUE, RQI_SYS_PULL, RQI_PF_SYSTEM, w, 6, args, 8u * nargs,
                      0);
    if (rc != 0) { /* not sent: nobody will pull it (the job failed) */
        pthread_mutex_lock(&a->lock);
        pulls_unlink(a, op);
        pthread_mutex_unlock(&a->lock);
        atomic_fetch_sub_explicit(&a->pending, 1, memory_order_relaxed);
        rqi_store_release(&hdr->cookie, 0); /* the block is free again */
        free(op);
    }
    return rc;
}

/* Read len bytes at from in process pid into to, RQI_ASYNC_CHUNK at a
 * time so that a failure of the job stops it within one piece: 1, 0 if
 * refused, -1 if the job failed. */
static int pull_bytes(const rq_ctx_t *ctx, pid_t pid, char *to, uint64_t from, uint64_t len)
{
    while (len > 0) {
        if (rqi_job_failed_any(ctx))
            return -1;
        const size_t piece = len < RQI_ASYNC_CHUNK ? (size_t)len : RQI_ASYNC_CHUNK;
        struct iovec l = {to, piece}, r = {(void *)(uintptr_t)from, piece};
        ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n <= 0)
            return 0;
        to += n;
        from += (uint64_t)n;
        len -= (uint64_t)n;
    }
    return 1;
}

/* Target, as a handler: args from, len, off, block offset, cookie,
 * handler | nargs << 32; payload: the request's arguments. */
static void on_pull(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)arg;
    uint64_t args[RQ_MAX_ARGS];
    if (m->nargs != 6 || m->src == ctx->rank || ctx->remote[m->src]) {
        ctx->stats.rejected++;
        return;
    }
    const uint64_t from = m->args[0], len = m->args[1], off = m->args[2];
    const uint64_t boff = m->args[3], cookie = m->args[4];
    const unsigned handler = (unsigned)(m->args[5] & 0xffffffffu);
    const uint64_t nargs = m->args[5] >> 32;
    const uint64_t room = ctx->bulk_bytes > RQI_BULK_HDR ? ctx->bulk_bytes - RQI_BULK_HDR : 0;
    struct rqi_bulk_hdr *h = NULL;
    if (handler >= RQ_MAX_HANDLERS || nargs > RQ_MAX_ARGS || m->len != 8u * nargs ||
        off > ctx->seg_bytes || len > ctx->seg_bytes - off || len == 0 || boff > room ||
        (boff & 63u) != 0 || cookie == RQI_PULL_REFUSED ||
        (h = rqi_bulk_block(ctx->bulk[m->src], boff, 0, cookie)) == NULL) {
        ctx->stats.rejected++; /* forged, stale or corrupt: nothing is read or written */
        return;
    }
    if (nargs != 0)
        memcpy(args, m->data, 8u * nargs);
    const pid_t pid = rqi_load_acquire(&rqi_shm_area(&ctx->shm, (uint32_t)m->src)->pid);
    char *to = ctx->seg[ctx->rank] + off;
    const int pulled = ctx->async.pull_mode == RQI_PULL_REFUSE ? 0 : pull_bytes(ctx, pid, to, from, len);
    if (pulled < 0)
        return; /* the job failed: the transfer never completes */
    if (pulled == 0) {
        /* Not allowed to read it: the initiator copies it itself. */
        uint64_t c = cookie;
        atomic_compare_exchange_strong_explicit(&h->cookie, &c, RQI_PULL_REFUSED,
                                                memory_order_release, memory_order_relaxed);
        (void)rqi_send(ctx, m->src, RQ_AM_QUEUE, RQI_SYS_PULL_NAK, RQI_PF_SYSTEM, &cookie, 1,
                       NULL, 0, 0);
        return;
    }
    /* Releases the bytes in our segment to the initiator's reaper. */
    rqi_bulk_release(h, cookie);
    rqi_vni_ring(ctx, m->src, RQI_BELL_ASYNC); /* its progress thread reaps */
    rq_msg_t u = {m->src, RQ_AM_QUEUE, handler, (unsigned)nargs, args, to, (size_t)len,
                  RQ_KEY_NOSYNC, 0, 0};
    (void)rqi_run_handler(ctx, &u);
}

/* Initiator, as a handler: the target of the transfer whose completion
 * block has cookie args[0] could not read us.  The copy engine takes it
 * (and every later one). */
static void on_pull_nak(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)arg;
    struct rqi_async *a = &ctx->async;
    if (m->nargs != 1) {
        ctx->stats.rejected++;
        return;
    }
    pthread_mutex_lock(&a->lock);
    struct rqi_aop *op = a->pulls;
    while (op != NULL && op->cookie != m->args[0])
        op = op->next;
    /* Only a block the target marked refused: a stale or forged refusal
     * must not take a transfer away from a target that pulls it. */
    if (op != NULL && rqi_load_acquire(&op->hdr->cookie) == RQI_PULL_REFUSED)
        pulls_unlink(a, op);
    else
        op = NULL;
    pthread_mutex_unlock(&a->lock);
    if (op == NULL) {
        ctx->stats.rejected++;
        return;
    }
    rqi_store_release(&op->hdr->cookie, 0); /* the block is free again */
    a->cma_off = 1;
    if (submit(ctx, op, 0) != 0) { /* no copy thread: copy and announce now */
        memcpy(op->to, op->from, op->len);
        op_landed(ctx, op, 0);
    }
}

int rqi_async_reap(rq_ctx_t *ctx)
{
    struct rqi_async *a = &ctx->async;
    if (rqi_load_relaxed(&a->npulls) == 0)
        return 0;
    struct rqi_aop *done = NULL;
    pthread_mutex_lock(&a->lock);
    for (struct rqi_aop *op = a->pulls, *next; op != NULL; op = next) {
        next = op->next;
        /* Pairs with the target's release CAS after the bytes landed. */
        if (rqi_load_acquire(&op->hdr->cookie) == 0) {
            pulls_unlink(a, op);
            op->next = done;
            done = op;
        }
    }
    pthread_mutex_unlock(&a->lock);
    int n = 0;
    while (done != NULL) {
        struct rqi_aop *next = done->next;
        rqi_async_complete(ctx, done);
        done = next;
        n++;
    }
    return n;
}

/* Another node's transfer finished (UCX callback, on the owner). */
static void ucx_done(rq_ctx_t *ctx, struct rqi_ucx_done *d, int ok)
{
    struct rqi_aop *op = (struct rqi_aop *)(void *)((char *)d - offsetof(struct rqi_aop, ucx));
    if (ok) {
        rqi_async_complete(ctx, op);
    } else { /* the job failed: the counter never moves */
        free(op);
        atomic_fetch_sub_explicit(&ctx->async.pending, 1, memory_order_release);
    }
}

int rqi_async_issue(rq_ctx_t *ctx, struct rqi_aop *op)
{
    struct rqi_async *a = &ctx->async;
    int rc;
    if (ctx->remote[op->peer]) {
        op->ucx.fn = ucx_done;
        atomic_fetch_add_explicit(&a->pending, 1, memory_order_relaxed);
        if (op->kind == RQI_AOP_PUT) {
            rc = ctx->net->put_nb(ctx, op->peer, op->off, op->from, op->len, &op->ucx);
        } else if (op->kind == RQI_AOP_GET) {
            rc = ctx->net->get_nb(ctx, op->to, op->peer, op->off, op->len, &op->ucx);
        } else {
            struct rqi_ucx_out o = {RQI_PK_LONG, RQ_AM_QUEUE, op->handler, 0, op->nargs,
                                    op->flags & RQ_INTERRUPT, op->args, op->from, op->len,
                                    op->off};
            rc = ctx->net->send_nb(ctx, op->peer, &o, &op->ucx);
        }
        if (rc != 0) { /* not issued: the callback never runs */
            free(op);
            atomic_fetch_sub_explicit(&a->pending, 1, memory_order_relaxed);
        }
        return rc;
    }
    if (pull_ok(ctx, op) && (rc = pull_start(ctx, op)) != 1)
        return rc;
    if (op->len != 0 && op->len >= a->min && op->peer != ctx->rank && submit(ctx, op, 1) == 0)
        return 0;
    /* At the call: small, in place, or no copy thread could start. */
    if (op->len != 0) {
        RQI_TSAN_IGNORE_BEGIN();
        memcpy(op->to, op->from, op->len);
        RQI_TSAN_IGNORE_END();
    }
    atomic_fetch_add_explicit(&a->pending, 1, memory_order_relaxed);
    if (op->kind == RQI_AOP_LONG &&
        (rc = rqi_send_landed(ctx, op->peer, op->handler, op->args, op->nargs, op->off,
                              op->len, op->flags)) != 0) {
        free(op);
        atomic_fetch_sub_explicit(&a->pending, 1, memory_order_relaxed);
        return rc;
    }
    rqi_async_complete(ctx, op);
    return 0;
}

int rqi_async_help(rq_ctx_t *ctx)
{
    return copy_piece(ctx, 0) || rqi_async_reap(ctx) > 0;
}

int rqi_async_announce(rq_ctx_t *ctx)
{
    struct rqi_async *a = &ctx->async;
    pthread_mutex_lock(&a->lock);
    struct rqi_aop *op = a->landed;
    a->landed = NULL;
    a->landed_tail = &a->landed;
    rqi_store_release(&a->landed_n, 0u);
    pthread_mutex_unlock(&a->lock);
    int n = 0;
    while (op != NULL) {
        struct rqi_aop *next = op->next;
        /* Never blocks: a full lane parks it in the outbox, which is
         * committed (sent in order before anything later to the peer). */
        int rc = rqi_send_landed(ctx, op->peer, op->handler, op->args, op->nargs, op->off,
                                 op->len, op->flags);
        if (rc == 0) {
            rqi_async_complete(ctx, op);
        } else {
            /* The job failed (or the outbox is out of memory, which fails
             * it): the transfer never completes. */
            if (rc != RQ_EPEER)
                rqi_fail(ctx, "out of memory for a long request's announcement");
            free(op);
            atomic_fetch_sub_explicit(&a->pending, 1, memory_order_release);
        }
        op = next;
        n++;
    }
    return n;
}

/* Nothing of ours in flight.  Pairs with the completer's
 * fetch_sub(release). */
static int async_idle(rq_ctx_t *ctx, const void *arg)
{
    (void)arg;
    return atomic_load_explicit(&ctx->async.pending, memory_order_acquire) == 0;
}

int rqi_async_quiet(rq_ctx_t *ctx)
{
    /* The poll announces what landed; an idle step copies a piece of a
     * queued transfer (progress.h). */
    return rqi_poll_until(ctx, async_idle, NULL);
}

/* ---- rq_request_long_nb (rq.h) ----------------------------------------- */

static int long_nb_body(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                        unsigned nargs, const void *src, size_t len, uint64_t dst_off,
                        volatile uint64_t *done, unsigned flags)
{
    struct rqi_aop *op = calloc(1, sizeof *op);
    if (op == NULL)
        return RQ_ENOMEM;
    op->kind = RQI_AOP_LONG;
    op->peer = dst;
    op->off = dst_off;
    op->len = len;
    op->done = done;
    op->handler = handler;
    op->nargs = nargs;
    op->flags = flags & RQ_INTERRUPT;
    for (unsigned i = 0; i < nargs; i++)
        op->args[i] = args[i];
    op->from = src;
    op->to = ctx->remote[dst] ? NULL : ctx->seg[dst] + dst_off;
    return rqi_async_issue(ctx, op);
}

int rq_request_long_nb(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                       unsigned nargs, const void *src, size_t len, uint64_t dst_off,
                       volatile uint64_t *done, unsigned flags)
{
    /* RQ_NONBLOCK is refused: nothing here waits for room (a full lane
     * parks the announcement), so it could only mislead. */
    if (flags & RQ_NONBLOCK)
        return RQ_EINVAL;
    int rc = rqi_long_check(ctx, dst, handler, args, nargs, src, len, dst_off, flags);
    if (rc != 0)
        return rc;
    RQI_GUARDED(ctx, long_nb_body(ctx, dst, handler, args, nargs, src, len, dst_off, done, flags));
}
