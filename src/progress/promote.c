/* promote.c - the promotion pool: rq_handler_promote queues a copy of the
 * running handler's message with the function that continues it; pool
 * threads run those parts outside any handler (promote.h, rq.h).
 *
 * THE POOL
 *   Created by the first promotion of the context (a compare-and-swap on
 *   ctx->promote; a loser frees its copy).  Threads start on demand: a
 *   promotion that finds more parts queued than threads idle starts one,
 *   up to RQ_PROMOTE_THREADS; beyond that parts wait their turn in FIFO
 *   order.  An idle thread looks at `queued` for RQ_PROMOTE_SPIN_US
 *   (yielding the CPU between looks) and then sleeps on `cv`; one idle
 *   thread looks at a time (`spinning`), the others sleep, and a thread
 *   that takes a part while more wait and nobody looks wakes a sleeper.
 *
 * WHO WRITES WHAT (memory ordering)
 *   mu (pthread mutex) guards the FIFO (head, tail), threads, idle,
 *     sleeping, spinning, the thread ids, and every store to `stop` (spinners also
 *     load it relaxed, a hint), `queued` and `inflight`.  A part's
 *     copy is written by the promoting thread before it takes mu and
 *     read by the pool thread after it took mu: the mutex orders them.
 *   queued   parts in the FIFO: stored under mu (relaxed; the mutex
 *     publishes), loaded relaxed by spinning threads as a hint only (a
 *     spinner that sees it nonzero takes mu and looks at the FIFO).
 *   inflight parts queued or running: stored under mu with release after
 *     a part returned, loaded with acquire by rqi_promote_quiet, so the
 *     finalizer sees every effect of the parts it waited for.
 *   Sleep: a thread increments `sleeping` and waits on cv under mu, after
 *     looking at the FIFO under mu; a promoter appends under mu and
 *     signals if `sleeping` is nonzero: no wake-up is lost.
 *   promoted, started: counters stored under mu, loaded relaxed by
 *     rq_stats.
 *   ctx->promote: CAS with acq_rel (the pool's initialised fields are
 *     published by it); loaded with acquire.
 */
#define _GNU_SOURCE
#include "progress/promote.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "core/atomics.h"
#include "core/sys.h"
#include "progress/progress.h"

/* A promoted part: the function, its argument, and the message's copy. */
struct part {
    struct part  *next;
    rq_promoted_fn fn;
    void         *arg;
    rq_msg_t      msg;
    uint64_t      args[RQ_MAX_ARGS];
    unsigned char data[]; /* the payload, when it was copied */
};

struct rqi_promote {
    rq_ctx_t        *ctx;
    pthread_mutex_t  mu;
    pthread_cond_t   cv;
    struct part     *head, *tail;
    _Atomic uint64_t queued;
    _Atomic uint64_t inflight;
    _Atomic uint64_t promoted;  /* parts ever promoted (rq_stats) */
    _Atomic uint64_t started;   /* threads ever started (rq_stats) */
    unsigned         threads, idle, sleeping, spinning, max;
    _Atomic unsigned stop;      /* set under mu; spinners load it relaxed */
    uint64_t         spin_ns;
    pthread_t       *tids;
    unsigned         ntids;
};

static _Thread_local int on_pool __attribute__((tls_model("initial-exec")));

int rqi_promote_on_pool(void) { return on_pool; }

static void run_part(rq_ctx_t *ctx, struct part *p)
{
    p->fn(ctx, &p->msg, p->arg);
    free(p);
}

/* Under mu: the oldest part, out of the FIFO. */
static struct part *pop(struct rqi_promote *pl)
{
    struct part *p = pl->head;
    if (p != NULL) {
        pl->head = p->next;
        if (pl->head == NULL)
            pl->tail = NULL;
        rqi_store_relaxed(&pl->queued, rqi_load_relaxed(&pl->queued) - 1);
    }
    return p;
}

/* Spin (yielding) until a part is queued, the pool stops, or spin_ns
 * passed.  Called without mu. */
static void look_a_while(struct rqi_promote *pl)
{
    if (pl->spin_ns == 0)
        return;
    uint64_t until = rqi_mono_ns() + pl->spin_ns;
    for (unsigned i = 1;; i++) {
        if (rqi_load_relaxed(&pl->queued) != 0 || rqi_load_relaxed(&pl->stop) != 0)
            return;
        if (i % 64 == 0) {
            if (rqi_mono_ns() >= until)
                return;
            sched_yield(); /* the application may need this CPU */
        }
        rqi_cpu_relax();
    }
}

static void *pool_main(void *arg)
{
    struct rqi_promote *pl = arg;
    on_pool = 1;
    char name[16]; /* what top, perf and gdb show */
    snprintf(name, sizeof name, "rq-promote");
    pthread_setname_np(pthread_self(), name);
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        struct part *p = NULL;
        int looked = 0;
        while (!rqi_load_relaxed(&pl->stop) && (p = pop(pl)) == NULL) {
            /* One idle thread looks; the others sleep (a herd spinning on
             * `queued` would fight over mu for each part). */
            if (!looked && !pl->spinning && pl->spin_ns != 0) {
                pl->spinning = 1;
                pthread_mutex_unlock(&pl->mu);
                look_a_while(pl);
                pthread_mutex_lock(&pl->mu);
                pl->spinning = 0;
                looked = 1;
                continue;
            }
            pl->sleeping++;
            pthread_cond_wait(&pl->cv, &pl->mu);
            pl->sleeping--;
            looked = 0;
        }
        if (p == NULL) /* stopped: what is queued runs on the finalizer */
            break;
        pl->idle--;
        /* More waiting and nobody looking: wake a sleeper for them. */
        if (rqi_load_relaxed(&pl->queued) != 0 && !pl->spinning && pl->sleeping != 0)
            pthread_cond_signal(&pl->cv);
        pthread_mutex_unlock(&pl->mu);
        run_part(pl->ctx, p);
        pthread_mutex_lock(&pl->mu);
        pl->idle++;
        atomic_store_explicit(&pl->inflight, rqi_load_relaxed(&pl->inflight) - 1,
                              memory_order_release);
    }
    pl->threads--;
    pl->idle--;
    pthread_mutex_unlock(&pl->mu);
    return NULL;
}

static struct rqi_promote *pool_of(rq_ctx_t *ctx)
{
    struct rqi_promote *pl = atomic_load_explicit(&ctx->promote, memory_order_acquire);
    if (pl != NULL)
        return pl;
    pl = calloc(1, sizeof *pl);
    unsigned max = (unsigned)ctx->cfg.v[RQI_CFG_PROMOTE_THREADS];
    pthread_t *tids = calloc(max, sizeof *tids);
    if (pl == NULL || tids == NULL) {
        free(pl);
        free(tids);
        return NULL;
    }
    pl->ctx = ctx;
    pl->max = max;
    pl->tids = tids;
    pl->spin_ns = ctx->cfg.v[RQI_CFG_PROMOTE_SPIN_US] * 1000u;
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->cv, NULL);
    struct rqi_promote *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&ctx->promote, &none, pl, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        pthread_mutex_destroy(&pl->mu);
        pthread_cond_destroy(&pl->cv);
        free(tids);
        free(pl);
        return none;
    }
    return pl;
}

/* Under mu: start one more thread.  Signals stay with the application's
 * threads. */
static void start_thread(struct rqi_promote *pl)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&pl->tids[pl->ntids], NULL, pool_main, pl) == 0) {
        pl->ntids++;
        rqi_store_relaxed(&pl->started, rqi_load_relaxed(&pl->started) + 1);
        pl->threads++;
        pl->idle++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int rq_handler_promote(rq_ctx_t *ctx, const rq_msg_t *msg, rq_promoted_fn fn, void *arg)
{
    if (ctx == NULL || msg == NULL || fn == NULL || msg->nargs > RQ_MAX_ARGS ||
        (msg->nargs != 0 && msg->args == NULL))
        return RQ_EINVAL;
    if (!rqi_in_handler(ctx) || rqi_load_relaxed(&ctx->mt.on) == 0)
        return RQ_EPERM;
    struct rqi_promote *pl = pool_of(ctx);
    if (pl == NULL)
        return RQ_ENOMEM;
    /* The payload is copied unless it already lies in this rank's segment
     * (a long message: it stays there) or was not placed (data NULL). */
    const unsigned char *d = msg->data;
    const unsigned char *seg = (const unsigned char *)ctx->seg[ctx->rank];
    const unsigned char *seg_end = seg + ctx->seg_bytes;
    int copy = d != NULL && msg->len != 0 &&
               !(d >= seg && d <= seg_end && msg->len <= (size_t)(seg_end - d));
    struct part *p = malloc(sizeof *p + (copy ? msg->len : 0));
    if (p == NULL)
        return RQ_ENOMEM;
    p->next = NULL;
    p->fn = fn;
    p->arg = arg;
    p->msg = *msg;
    if (msg->nargs != 0)
        memcpy(p->args, msg->args, msg->nargs * sizeof(uint64_t));
    p->msg.args = p->args;
    if (copy) {
        memcpy(p->data, d, msg->len);
        p->msg.data = p->data;
    }
    pthread_mutex_lock(&pl->mu);
    if (pl->tail != NULL)
        pl->tail->next = p;
    else
        pl->head = p;
    pl->tail = p;
    uint64_t q = rqi_load_relaxed(&pl->queued) + 1;
    rqi_store_relaxed(&pl->queued, q);
    rqi_store_relaxed(&pl->inflight, rqi_load_relaxed(&pl->inflight) + 1);
    if (!rqi_load_relaxed(&pl->stop)) {
        if (q > pl->idle && pl->threads < pl->max)
            start_thread(pl);
        else if (!pl->spinning && pl->sleeping != 0)
            pthread_cond_signal(&pl->cv); /* a looking thread takes it */
    }
    rqi_store_relaxed(&pl->promoted, rqi_load_relaxed(&pl->promoted) + 1);
    pthread_mutex_unlock(&pl->mu);
    return 0;
}

static int pool_quiet(rq_ctx_t *ctx, const void *arg)
{
    (void)arg;
    struct rqi_promote *pl = atomic_load_explicit(&ctx->promote, memory_order_acquire);
    return pl == NULL || atomic_load_explicit(&pl->inflight, memory_order_acquire) == 0;
}

int rqi_promote_quiet(rq_ctx_t *ctx)
{
    if (pool_quiet(ctx, NULL))
        return 0;
    int locked = rqi_ctx_enter(ctx);
    int rc = rqi_poll_until(ctx, pool_quiet, NULL);
    rqi_ctx_leave(ctx, locked);
    return rc;
}

void rqi_promote_stop(rq_ctx_t *ctx)
{
    struct rqi_promote *pl = atomic_load_explicit(&ctx->promote, memory_order_acquire);
    if (pl == NULL)
        return;
    pthread_mutex_lock(&pl->mu);
    rqi_store_relaxed(&pl->stop, 1u);
    pthread_cond_broadcast(&pl->cv);
    pthread_mutex_unlock(&pl->mu);
    for (unsigned i = 0; i < pl->ntids; i++)
        pthread_join(pl->tids[i], NULL);
    pl->ntids = 0;
}

int rqi_promote_run_queued(rq_ctx_t *ctx)
{
    struct rqi_promote *pl = atomic_load_explicit(&ctx->promote, memory_order_acquire);
    if (pl == NULL || rqi_load_relaxed(&pl->queued) == 0)
        return 0;
    int n = 0;
    for (;;) {
        pthread_mutex_lock(&pl->mu);
        struct part *p = pop(pl);
        pthread_mutex_unlock(&pl->mu);
        if (p == NULL)
            return n;
        run_part(ctx, p);
        pthread_mutex_lock(&pl->mu);
        atomic_store_explicit(&pl->inflight, rqi_load_relaxed(&pl->inflight) - 1,
                              memory_order_release);
        pthread_mutex_unlock(&pl->mu);
        n++;
    }
}

void rqi_promote_counts(rq_ctx_t *ctx, uint64_t *promoted, uint64_t *threads)
{
    struct rqi_promote *pl = atomic_load_explicit(&ctx->promote, memory_order_acquire);
    *promoted = pl != NULL ? rqi_load_relaxed(&pl->promoted) : 0;
    *threads = pl != NULL ? rqi_load_relaxed(&pl->started) : 0;
}

void rqi_promote_free(rq_ctx_t *ctx)
{
    struct rqi_promote *pl = atomic_load_explicit(&ctx->promote, memory_order_acquire);
    if (pl == NULL)
        return;
    rqi_promote_stop(ctx);
    struct part *p;
    while ((p = pop(pl)) != NULL)
        free(p);
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->cv);
    free(pl->tids);
    free(pl);
    atomic_store_explicit(&ctx->promote, NULL, memory_order_relaxed);
}
