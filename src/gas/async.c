/* async.c - the copy engine of the non-blocking bulk transfers (the
 * protocol and its memory ordering are in async.h). */
#define _GNU_SOURCE
#include "gas/async.h"

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "am/am.h"
#include "ctx.h"
#include "deliver/deliver.h"
#include "gas/gas.h"
#include "vni/vni.h"

int rqi_async_init(rq_ctx_t *ctx)
{
    struct rqi_async *a = &ctx->async;
    if (pthread_mutex_init(&a->lock, NULL) != 0)
        return RQ_ENOMEM;
    if (pthread_cond_init(&a->wake, NULL) != 0) {
        pthread_mutex_destroy(&a->lock);
        return RQ_ENOMEM;
    }
    a->tail = &a->head;
    a->landed_tail = &a->landed;
    a->min = ctx->cfg.v[RQI_CFG_ASYNC_MIN];
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
    a->head = a->landed = NULL;
    pthread_cond_destroy(&a->wake);
    pthread_mutex_destroy(&a->lock);
    a->inited = 0;
}

void rqi_async_complete(rq_ctx_t *ctx, struct rqi_aop *op)
{
    (void)ctx;
    if (op->done != NULL)
        /* Releases the bytes (and the announcement) to the application's
         * acquire load of its counter. */
        __atomic_fetch_add(op->done, 1, __ATOMIC_RELEASE);
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
 * nothing was queued. */
static int copy_piece(rq_ctx_t *ctx, int on_engine)
{
    struct rqi_async *a = &ctx->async;
    pthread_mutex_lock(&a->lock);
    struct rqi_aop *op = a->head;
    if (op == NULL) {
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
    RQI_TSAN_SEGMENT_BEGIN();
    memcpy(op->to + at, op->from + at, n);
    RQI_TSAN_SEGMENT_END();
    if (atomic_fetch_add_explicit(&op->copied, n, memory_order_acq_rel) + n == len)
        op_landed(ctx, op, on_engine);
    return 1;
}

static void *engine_main(void *arg)
{
    rq_ctx_t *ctx = arg;
    struct rqi_async *a = &ctx->async;
    /* Not on its rank's CPU (a rank bound to one core would compute
     * where the copy should run): any CPU the job may use, which the
     * kernel narrows to the cgroup's.  The scheduler puts it beside an
     * idle or waiting rank. */
    cpu_set_t any;
    CPU_ZERO(&any);
    for (int c = 0; c < CPU_SETSIZE; c++)
        CPU_SET(c, &any);
    (void)pthread_setaffinity_np(pthread_self(), sizeof any, &any);
    for (;;) {
        pthread_mutex_lock(&a->lock);
        while (a->head == NULL && !a->stop)
            pthread_cond_wait(&a->wake, &a->lock);
        int stop = a->stop;
        pthread_mutex_unlock(&a->lock);
        if (stop)
            return NULL;
        (void)copy_piece(ctx, 1);
    }
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
    return 0;
}

static int submit(rq_ctx_t *ctx, struct rqi_aop *op)
{
    struct rqi_async *a = &ctx->async;
    op->next = NULL;
    op->claimed = 0;
    atomic_store_explicit(&op->copied, 0, memory_order_relaxed);
    pthread_mutex_lock(&a->lock);
    int rc = engine_start(ctx);
    if (rc == 0) {
        atomic_fetch_add_explicit(&a->pending, 1, memory_order_relaxed);
        *a->tail = op;
        a->tail = &op->next;
        rqi_store_release(&a->queued, 1u);
        pthread_cond_signal(&a->wake);
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
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
            rc = rqi_ucx_put_nb(ctx, op->peer, op->off, op->from, op->len, &op->ucx);
        } else if (op->kind == RQI_AOP_GET) {
            rc = rqi_ucx_get_nb(ctx, op->to, op->peer, op->off, op->len, &op->ucx);
        } else {
            struct rqi_ucx_out o = {RQI_PK_LONG, RQ_AM_QUEUE, op->handler, 0, op->nargs,
                                    op->flags & RQ_INTERRUPT, op->args, op->from, op->len,
                                    op->off};
            rc = rqi_ucx_send_nb(ctx, op->peer, &o, &op->ucx);
        }
        if (rc != 0) { /* not issued: the callback never runs */
            free(op);
            atomic_fetch_sub_explicit(&a->pending, 1, memory_order_relaxed);
        }
        return rc;
    }
    if (op->len != 0 && op->len >= a->min && op->peer != ctx->rank && submit(ctx, op) == 0)
        return 0;
    /* At the call: small, in place, or no copy thread could start. */
    if (op->len != 0) {
        RQI_TSAN_SEGMENT_BEGIN();
        memcpy(op->to, op->from, op->len);
        RQI_TSAN_SEGMENT_END();
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
    return copy_piece(ctx, 0);
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

int rqi_async_quiet(rq_ctx_t *ctx)
{
    struct rqi_async *a = &ctx->async;
    unsigned spins = 0;
    /* Pairs with the completer's fetch_sub(release). */
    while (atomic_load_explicit(&a->pending, memory_order_acquire) != 0) {
        if (rqi_poll(ctx) > 0 || rqi_async_help(ctx)) {
            spins = 0;
            continue;
        }
        if (rqi_load_relaxed(&a->landed_n) != 0) {
            (void)rqi_async_announce(ctx);
            continue;
        }
        int rc = rqi_wait_step(ctx, &spins);
        if (rc != 0)
            return rc;
    }
    return 0;
}
