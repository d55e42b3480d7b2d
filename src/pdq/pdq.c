/* pdq.c - the parallel dispatch queue (Falsafi & Wood): handlers run on
 * several threads, serialized per synchronization key by the queue, so no
 * handler locks or busy-waits.
 *
 * STRUCTURE
 *   Messages for the PDQ's queue id are copied out of the lanes by the
 *   intake (rqi_pdq_push, called by whoever owns the context: a polling
 *   application thread, an idle PDQ thread that takes the context lock, or
 *   the progress thread woken by a doorbell) into `waiting`, a list in
 *   arrival order.  Dispatch scans at most `window` entries from its head
 *   and takes the first that may run:
 *     RQ_KEY_NOSYNC      always;
 *     RQ_KEY_SEQUENTIAL  only at the head with nothing running; then
 *                        nothing else is dispatched until it completes;
 *                        the scan never passes it (later messages wait);
 *     any other key      when no handler with that key runs (`busy`).
 *   A skipped message keeps its place, so per-key order is arrival order
 *   (an earlier message of a key is always found before a later one).
 *   The thread that takes a keyed message also takes the run of that
 *   key's messages right behind it (up to PDQ_BATCH) and runs them in
 *   order: nobody else could run them meanwhile, and a hot key then costs
 *   one dispatch per batch.  Other keys are never batched, so a handler
 *   that waits for another key's message cannot hold it back.
 *   Dispatched entries move to `running` until their batch completes.
 *   Direct dispatch skips all of it for a small message that comes up
 *   while nothing waits and its key is free: the PDQ thread or helper
 *   that takes it in runs it at once from a copy on its stack (see
 *   direct_run).
 *
 * WHO WRITES WHAT (memory ordering)
 *   Every field below `lk` is read and written under `lk` (a spinlock:
 *   its exchange acquires and its unlocking store releases), including the entries'
 *   links, `busy`, the counters and `stop`; handlers run outside it, on an
 *   entry no other thread touches while it is in `running`.
 *   No lost wakeup: a push signals `work` when a thread sleeps with no
 *   deadline, unless the pusher is a thread that takes packets in to
 *   dispatch them itself next (pump_for: it dispatches, signals when a
 *   second entry may run, and a helper signals on leaving entries
 *   behind); a completing thread dispatches again itself.  A thread that
 *   found nothing looks once more under lk right before it sleeps, and
 *   takes mu before letting lk go.  A multiplexed thread sleeping until a
 *   helper's deadline is not signalled for pushes: helpers take the work,
 *   and the thread looks itself at the deadline.
 *   last_help_ns  stored relaxed by helpers, read relaxed by PDQ threads
 *                 (when to fall back, when to sleep): a heuristic clock,
 *                 no data rides on it.
 *   area->pdq_idle (job segment)  bit qid is set (seq_cst RMW) when the
 *                 last awake PDQ thread goes to sleep with no deadline,
 *                 cleared when one wakes (a multiplexed thread sleeping
 *                 until a helper's deadline leaves it clear: helpers take
 *                 packets in, and the thread does at the deadline).  A
 *                 sender publishes its packet (release), then
 *                 issues a seq_cst fence and loads the bit; the sleeper
 *                 sets the bit, then loads the lanes' tails and heads
 *                 (seq_cst RMW before them).  One of the two sees the
 *                 other, so either the sender or the sleeper rings
 *                 RQI_BELL_PDQ and the progress thread takes the packet
 *                 in (waking a PDQ thread through `work`).
 *
 *   mu/work  a mutex and condition variable used only to sleep: a sleeper
 *            takes mu before it lets lk go; a waker signals under lk,
 *            then mu.
 *
 * LOCK ORDER  context lock (core/mt.h) -> lk -> mu.  A thread holding lk
 * never takes the context lock, and handlers run holding none.
 */
#define _GNU_SOURCE
#include "pdq/pdq.h"
#include "net/net.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "am/am.h"
#include "core/sys.h"
#include "deliver/deliver.h"
#include "pdq/keyset.h"


/* The PDQ whose thread (a PDQ thread or a helper) is taking packets in
 * to run them itself: its pushes need not wake a sleeper (pump_for). */
static _Thread_local struct rq_pdq *pumping __attribute__((tls_model("initial-exec")));

#define PDQ_MAX_THREADS 1024u
#define PDQ_SMALL_BYTES 256u /* entries up to this size are recycled */
#define PDQ_FREE_MAX    4096u
#define PDQ_BATCH       16u  /* entries of one key dispatched at once */
#define PDQ_IDLE_SPINS  64u  /* empty looks (~100 ns each) before yielding */

struct pdq_entry {
    struct pdq_entry *next, *prev;
    uint64_t          key, seq;
    void             *data;
    size_t            len;
    uint32_t          src, tag;
    uint8_t           nargs, how, small, pad_;
    uint32_t          bytes; /* accounted size */
    _Alignas(8) uint64_t args[];
};

struct pdq_list { struct pdq_entry *head, *tail; };

struct rq_pdq {
    rq_ctx_t        *ctx;
    unsigned         qid, nthreads, window;
    int              mode;
    uint64_t         spin_ns, fallback_ns;
    pthread_t       *threads;
    unsigned         started;
    _Atomic uint64_t last_help_ns;

    _Atomic int      lk;     /* spinlock over everything below */
    pthread_mutex_t  mu;     /* only to sleep on `work` */
    pthread_cond_t   work;   /* PDQ threads sleep here */
    struct pdq_list  waiting, running;
    struct rqi_keyset busy;  /* keys of running handlers */
    int              seq_running;
    unsigned         nrunning, awake;
    unsigned         idle_sleepers; /* asleep with no deadline: a push wakes them */
    int              stop;
    uint64_t         arrived; /* sequence numbers for rq_pdq_drain */
    uint64_t         bytes, limit;
    struct pdq_entry *free_small;
    unsigned         nfree;
};

/* The PDQ lock: critical sections are a few list operations, so waiters
 * spin (a sleeping mutex made every hand-over between two threads a
 * futex wake: 6 instead of 19 Mmsg/s); they yield now and then in case
 * the holder was preempted (more threads than cores). */
static void q_lock(struct rq_pdq *q)
{
    unsigned backoff = 1, spent = 0;
    while (atomic_exchange_explicit(&q->lk, 1, memory_order_acquire) != 0)
        while (atomic_load_explicit(&q->lk, memory_order_relaxed) != 0) {
            /* Back off: every read of a held lock pulls its line away
             * from the holder. */
            for (unsigned i = 0; i < backoff; i++)
                rqi_cpu_relax();
            spent += backoff;
            backoff = backoff < 256 ? backoff * 2 : 256;
            if (spent >= 4096) {
                sched_yield();
                spent = 0;
            }
        }
}

static void q_unlock(struct rq_pdq *q) { atomic_store_explicit(&q->lk, 0, memory_order_release); }

/* Under lk: wake one sleeping thread. */
static void wake_one(struct rq_pdq *q)
{
    pthread_mutex_lock(&q->mu);
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
}

/* ---- lists ------------------------------------------------------------ */

static void list_append(struct pdq_list *l, struct pdq_entry *e)
{
    e->next = NULL;
    e->prev = l->tail;
    if (l->tail != NULL)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
}

static void list_unlink(struct pdq_list *l, struct pdq_entry *e)
{
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
}

/* ---- intake ------------------------------------------------------------ */

static void entry_free(struct rq_pdq *q, struct pdq_entry *e)
{
    if (e->how == RQI_PDQ_DIRECT)
        return; /* on its runner's stack */
    q->bytes -= e->bytes;
    if (e->how == RQI_PDQ_OWN)
        free(e->data);
    if (e->small && q->nfree < PDQ_FREE_MAX) {
        e->next = q->free_small;
        q->free_small = e;
        q->nfree++;
    } else {
        free(e);
    }
}

/* Queue a message whose key is already split from its arguments. */
static int entry_push(struct rq_pdq *q, uint32_t src, uint32_t tag, uint64_t key,
                      const uint64_t *args, unsigned nargs, void *data, size_t len, int how)
{
    size_t inl = how == RQI_PDQ_COPY ? len : 0;
    size_t size = sizeof(struct pdq_entry) + 8u * nargs + inl;
    uint64_t acct = size + (how == RQI_PDQ_OWN ? len : 0);
    int small = size <= PDQ_SMALL_BYTES;
    q_lock(q);
    if (q->limit != 0 && q->bytes + acct > q->limit) {
        q_unlock(q);
        return RQ_ENOMEM; /* RQ_VBUF_MAX: the packet waits in its lane */
    }
    struct pdq_entry *e = NULL;
    if (small && q->free_small != NULL) {
        e = q->free_small;
        q->free_small = e->next;
        q->nfree--;
    }
    q_unlock(q);
    if (e == NULL && (e = malloc(small ? PDQ_SMALL_BYTES : size)) == NULL)
        return RQ_ENOMEM;
    e->key = key;
    e->src = src;
    e->tag = tag;
    e->nargs = (uint8_t)nargs;
    e->how = (uint8_t)how;
    e->small = (uint8_t)small;
    e->bytes = (uint32_t)acct;
    e->len = len;
    memcpy(e->args, args, 8u * nargs);
    if (how == RQI_PDQ_COPY) {
        e->data = e->args + nargs;
        if (len != 0)
            memcpy(e->data, data, len);
    } else {
        e->data = data;
    }
    q_lock(q);
    e->seq = q->arrived++;
    q->bytes += acct;
    list_append(&q->waiting, e);
    /* A thread that takes packets in to run them (pump_for) dispatches
     * next itself, and wakes a sleeper if a second entry may run. */
    if (q->idle_sleepers != 0 && pumping != q)
        wake_one(q);
    q_unlock(q);
    return 0;
}

int rqi_pdq_push(struct rq_pdq *q, uint32_t src, uint32_t tag, unsigned flags,
                 const uint64_t *args, unsigned nargs, void *data, size_t len, int how)
{
    uint64_t key = RQ_KEY_NOSYNC; /* a plain rq_enqueue to a PDQ's qid */
    if ((flags & RQI_PF_KEY) && nargs != 0)
        key = args[--nargs];
    return entry_push(q, src, tag, key, args, nargs, data, len, how);
}

/* ---- dispatch ------------------------------------------------------------ */

static void take(struct rq_pdq *q, struct pdq_entry *e)
{
    list_unlink(&q->waiting, e);
    list_append(&q->running, e);
    q->nrunning++;
}

/* Move to `running` the first entry of the window that may run now and
 * the run of its key's entries right behind it (at most cap <= PDQ_BATCH: one
 * thread runs them in order, one lock round trip for all; a hot key
 * costs one dispatch per batch, not per message).  Returns how many, 0
 * when none may run.  *more: another entry of the window may run too. */
static unsigned dispatch(struct rq_pdq *q, struct pdq_entry **batch, unsigned cap, int *more)
{
    *more = 0;
    if (q->seq_running)
        return 0;
    unsigned seen = 0;
    struct pdq_entry *e = q->waiting.head;
    for (; e != NULL && seen < q->window; e = e->next, seen++) {
        if (e->key == RQ_KEY_SEQUENTIAL) {
            if (e != q->waiting.head || q->nrunning != 0)
                return 0; /* nothing passes a sequential message */
            q->seq_running = 1;
            take(q, e);
            batch[0] = e;
            return 1; /* it runs alone */
        }
        if (e->key == RQ_KEY_NOSYNC || !rqi_keyset_has(&q->busy, e->key))
            break;
    }
    if (e == NULL || seen >= q->window)
        return 0;
    const uint64_t key = e->key;
    const unsigned skipped = seen; /* stay queued ahead of what is taken */
    if (key != RQ_KEY_NOSYNC) {
        if (rqi_keyset_reserve(&q->busy) != 0)
            return 0; /* out of memory: retried at the next dispatch */
        rqi_keyset_put(&q->busy, key);
    }
    unsigned n = 0;
    do {
        struct pdq_entry *next = e->next;
        take(q, e);
        batch[n++] = e;
        e = next;
        seen++;
    } while (key != RQ_KEY_NOSYNC && n < cap && e != NULL && e->key == key &&
             seen < q->window);
    /* Only then is a second runnable entry of use.  The window counts
     * from the head of what stays queued: the skipped entries, then
     * those behind the batch (counting the batch too hid a runnable
     * entry right behind it from a small window). */
    if (q->idle_sleepers != 0)
        for (seen = skipped; e != NULL && seen < q->window; e = e->next, seen++) {
            if (e->key == RQ_KEY_SEQUENTIAL)
                break;
            if (e->key == RQ_KEY_NOSYNC || (e->key != key && !rqi_keyset_has(&q->busy, e->key))) {
                *more = 1;
                break;
            }
        }
    return n;
}

/* Retire a dispatched batch (under lk); `rejected` of them found no
 * handler. */
static void complete(struct rq_pdq *q, struct pdq_entry **batch, unsigned n, unsigned rejected)
{
    if (n == 0)
        return;
    const uint64_t key = batch[0]->key;
    for (unsigned i = 0; i < n; i++) {
        list_unlink(&q->running, batch[i]);
        entry_free(q, batch[i]);
    }
    q->nrunning -= n;
    if (rejected != 0) /* rq_stats' `rejected`; the PDQ may be gone by then */
        atomic_fetch_add_explicit(&q->ctx->pdq_rejected, rejected, memory_order_relaxed);
    if (key == RQ_KEY_SEQUENTIAL)
        q->seq_running = 0;
    else if (key != RQ_KEY_NOSYNC)
        rqi_keyset_del(&q->busy, key);
}

/* Run a batch's handlers on this thread (no lock held).  Returns how many
 * found no handler installed for their id (counted as rejected). */
static unsigned run(struct rq_pdq *q, struct pdq_entry **batch, unsigned n)
{
    rq_ctx_t *ctx = q->ctx;
    unsigned rejected = 0;
    rqi_pdq_handler_depth++;
    for (unsigned i = 0; i < n; i++) {
        struct pdq_entry *e = batch[i];
        if (e->tag >= RQ_MAX_HANDLERS || ctx->handlers[e->tag].fn == NULL) {
            rejected++;
            continue;
        }
        const struct rqi_handler *h = &ctx->handlers[e->tag];
        rq_msg_t m = {(int)e->src, q->qid, e->tag, e->nargs, e->args, e->data, e->len, e->key, 0, 0};
        h->fn(ctx, &m, h->arg);
    }
    rqi_pdq_handler_depth--;
    return rejected;
}

/* Retire the last batch and dispatch the next, under lk; wake one more
 * thread when another entry may run too. */
static unsigned next_locked(struct rq_pdq *q, struct pdq_entry **batch, unsigned n,
                            unsigned rejected)
{
    complete(q, batch, n, rejected);
    int more;
    n = dispatch(q, batch, PDQ_BATCH, &more);
    if (more)
        wake_one(q);
    return n;
}

/* ---- direct dispatch --------------------------------------------------
 * The PDQ's own two-case delivery.  A small keyed packet for q that comes
 * up at the head of a lane while q has nothing waiting and its key is
 * free runs at once on the thread that found it: copied to that thread's
 * stack (its slots are released at once, so the lane is never pinned),
 * never queued, never dispatched.  An entry on the same stack stands for
 * it in `running`: its key is busy, rq_pdq_drain sees its sequence
 * number.  Anything else queues (`waiting`), as before. */

#define PDQ_DIRECT_BYTES 512u /* arguments + payload run directly */

/* Under lk: claim the direct run of a message with key, e standing for
 * it.  0 when it must queue (something waits: per-key order; the key is
 * busy; a sequential message, which waits for everything running). */
static int direct_claim(struct rq_pdq *q, uint64_t key, struct pdq_entry *e)
{
    if (q->waiting.head != NULL || q->seq_running || key == RQ_KEY_SEQUENTIAL)
        return 0;
    if (key != RQ_KEY_NOSYNC) {
        if (rqi_keyset_has(&q->busy, key) || rqi_keyset_reserve(&q->busy) != 0)
            return 0;
        rqi_keyset_put(&q->busy, key);
    }
    e->key = key;
    e->seq = q->arrived++;
    e->data = NULL;
    e->len = 0;
    e->how = RQI_PDQ_DIRECT;
    e->small = 0;
    e->bytes = 0;
    list_append(&q->running, e);
    q->nrunning++;
    return 1;
}

/* The context is ours (taken once, by trylock) and p is q's valid inline
 * packet at rx's scan.  If it may run now: take it out of the lane, let
 * the context go, run it and return 1, or 2 when no handler was
 * installed for it (the context is no longer ours).  0: it must queue
 * (the context is still ours). */
static int direct_run(struct rq_pdq *q, struct rqi_ring_rx *rx, struct rqi_pkt *p)
{
    rq_ctx_t *ctx = q->ctx;
    rq_msg_t m;
    rqi_msg_from_pkt(ctx, p, &m);
    uint64_t copy[PDQ_DIRECT_BYTES / 8];
    if (8u * m.nargs + m.len > sizeof copy)
        return 0;
    struct pdq_entry e;
    q_lock(q);
    int ok = direct_claim(q, m.key, &e);
    q_unlock(q);
    if (!ok)
        return 0;
    memcpy(copy, m.args, 8u * m.nargs);
    if (m.len != 0)
        memcpy(copy + m.nargs, m.data, m.len);
    m.args = copy;
    m.data = m.len != 0 ? (void *)(copy + m.nargs) : NULL;
    m.rqi_flags = 0;
    uint64_t pos = rqi_ring_rx_take(rx, p);
    rqi_ring_rx_release(rx, p, pos);
    ctx->stats.received++; /* as the intake counts it: a PDQ's packets are
                              neither run in place nor buffered */
    rqi_vni_leave(&ctx->vni, ctx);
    rqi_mt_unlock(&ctx->mt);
    unsigned rejected = 0;
    pumping = NULL; /* what the handler's sends take in wakes as usual */
    rqi_pdq_handler_depth++;
    if (m.handler < RQ_MAX_HANDLERS && ctx->handlers[m.handler].fn != NULL)
        ctx->handlers[m.handler].fn(ctx, &m, ctx->handlers[m.handler].arg);
    else
        rejected = 1;
    rqi_pdq_handler_depth--;
    struct pdq_entry *done = &e;
    q_lock(q);
    complete(q, &done, 1, rejected);
    q_unlock(q);
    return 1 + (int)rejected;
}

/* Take in the PDQ packets at the heads of our lanes, if the context is
 * free: the intake when nobody polls.  A lane whose head is another
 * queue's packet is left to the application's poll (or, once every PDQ
 * thread sleeps, to the progress thread).  With `direct` (the caller
 * runs q's handlers), the first of q's packets that may run now runs at
 * once instead (direct_run), and the intake stops there: *direct = 1, or
 * 2 when it found no handler.  Returns packets taken or run. */
static unsigned pump(struct rq_pdq *q, int *direct)
{
    rq_ctx_t *ctx = q->ctx;
    if (!rqi_mt_trylock(&ctx->mt))
        return 0;
    /* Direct only with the context's lock taken here (not nested in a
     * call that holds it) and delivery not forced through the buffer. */
    if (direct != NULL && (ctx->mt.depth != 1 || ctx->buffer_always || ctx->buffer_delay_ns))
        direct = NULL;
    rqi_vni_enter(&ctx->vni, ctx);
    unsigned n = 0;
    /* Other nodes' PDQ messages are pushed as they are taken in. */
    if (RQI_UNLIKELY(ctx->ucx != NULL))
        n += (unsigned)ctx->net->progress(ctx);
    for (unsigned l = 0; l < ctx->nlanes; l++) {
        struct rqi_ring_rx *rx = &ctx->rx[l];
        struct rqi_pkt *p;
        while ((p = rqi_rx_next_lane(ctx, rx)) != NULL && ctx->pdq[p->qid] != NULL) {
            if (direct != NULL && ctx->pdq[p->qid] == q && p->kind == RQI_PK_INLINE &&
                (*direct = direct_run(q, rx, p)) != 0)
                return n + 1; /* it ran; the context is let go */
            if (rqi_ingest(ctx, rx, p) != 0)
                break;
            n++;
        }
    }
    rqi_vni_leave(&ctx->vni, ctx);
    rqi_mt_unlock(&ctx->mt);
    return n;
}

/* pump, by a thread that dispatches q's entries right after it: the
 * first of them is its own, so the pushes wake nobody; dispatch wakes a
 * sleeper when a second entry may run (`more`). */
static unsigned pump_for(struct rq_pdq *q, int *direct)
{
    pumping = q;
    unsigned n = pump(q, direct);
    pumping = NULL;
    return n;
}

/* ---- threads ------------------------------------------------------------ */

static _Atomic uint64_t *idle_word(struct rq_pdq *q)
{
    return &rqi_shm_area(&q->ctx->shm, (uint32_t)q->ctx->rank)->vni.pdq_idle;
}

/* Some lane holds a published packet not yet released (read from the
 * shared words, without owning the context). */
static int lanes_busy(const rq_ctx_t *ctx)
{
    for (unsigned l = 0; l < ctx->nlanes; l++) {
        const struct rqi_ring_ctrl *c = ctx->rx[l].ctrl;
        if (rqi_load_acquire(&c->tail) != rqi_load_acquire(&c->head))
            return 1;
    }
    return 0;
}

/* Under lk: the last awake thread arms the doorbell before it sleeps. */
static void sleep_arm(struct rq_pdq *q)
{
    atomic_fetch_or(idle_word(q), 1ull << q->qid);
    /* Packets published before the bit was visible: have them taken in.
     * Other nodes' packets cannot ring: have the network armed instead. */
    if (lanes_busy(q->ctx))
        rqi_vni_ring(q->ctx, q->ctx->rank, RQI_BELL_PDQ);
    if (q->ctx->vni.net_on)
        rqi_vni_ring(q->ctx, q->ctx->rank, RQI_BELL_NET);
}

static void wait_until_ns(struct rq_pdq *q, uint64_t deadline)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t d = deadline > now ? deadline - now : 0;
    ts.tv_sec += (time_t)(d / 1000000000u);
    ts.tv_nsec += (long)(d % 1000000000u);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&q->work, &q->mu, &ts);
}

/* Under lk: sleep until signalled (or until deadline, 0: none).  mu is
 * taken before lk is let go, so a waker (which signals under lk, then mu)
 * cannot signal between the decision to sleep and the wait. */
static void sleep_locked(struct rq_pdq *q, uint64_t deadline)
{
    q->idle_sleepers += deadline == 0;
    /* A thread sleeping until a helper's deadline (a multiplexed
     * fallback thread, or a dedicated one beside a helper) leaves the
     * doorbell unarmed: the helper takes packets in as it helps, and the
     * thread itself at the deadline; arming it would make every sender
     * ring (and wake) the progress thread for packets a helper takes. */
    if (--q->awake == 0) {
        if (deadline == 0)
            sleep_arm(q);
        else if (q->ctx->vni.net_on)
            rqi_vni_ring(q->ctx, q->ctx->rank, RQI_BELL_NET);
    }
    pthread_mutex_lock(&q->mu);
    q_unlock(q);
    if (deadline != 0)
        wait_until_ns(q, deadline);
    else
        pthread_cond_wait(&q->work, &q->mu);
    pthread_mutex_unlock(&q->mu);
    q_lock(q);
    q->idle_sleepers -= deadline == 0;
    if (q->awake++ == 0)
        atomic_fetch_and(idle_word(q), ~(1ull << q->qid));
}

/* Multiplexed mode: an application thread helped within the bound; the
 * fallback threads stay out of its way until then. */
static uint64_t help_deadline(struct rq_pdq *q)
{
    if (q->mode != RQ_PDQ_MULTIPLEXED)
        return 0;
    uint64_t until = rqi_load_relaxed(&q->last_help_ns) + q->fallback_ns;
    return rqi_mono_ns() < until ? until : 0;
}

static void *worker_main(void *arg)
{
    struct rq_pdq *q = arg;
    uint64_t idle_since = 0;
    unsigned spins = 0;
    q_lock(q);
    struct pdq_entry *batch[PDQ_BATCH];
    unsigned n = 0, rejected = 0;
    int pending = 0; /* batch dispatched by the last look before sleeping */
    while (!q->stop) {
        if (!pending) {
            uint64_t helped = help_deadline(q);
            if (helped != 0) {
                complete(q, batch, n, rejected); /* the last batch's bookkeeping */
                n = 0;
                sleep_locked(q, helped);
                continue;
            }
            n = next_locked(q, batch, n, rejected);
        }
        pending = 0;
        if (n != 0) {
            q_unlock(q);
            rejected = run(q, batch, n);
            q_lock(q);
            idle_since = 0;
            spins = 0;
            continue;
        }
        q_unlock(q);
        int direct = 0;
        unsigned got = pump_for(q, &direct);
        uint64_t now = rqi_mono_ns();
        if (got != 0) {
            idle_since = 0;
            spins = 0;
        } else {
            if (idle_since == 0)
                idle_since = now;
            /* Look again at once for a few microseconds (a long pause
             * between looks is latency: 32 pauses were 0.9 us on AMD
             * EPYC), then yield at every look: oversubscribed or idle,
             * be kind to the threads with work. */
            if (++spins > PDQ_IDLE_SPINS)
                sched_yield();
            else
                rqi_cpu_relax();
        }
        q_lock(q);
        if (got == 0 && now - idle_since >= q->spin_ns && !q->stop) {
            /* A last look under lk, atomic with falling asleep: what was
             * pushed or freed while lk was free signalled nobody. */
            int more;
            n = dispatch(q, batch, PDQ_BATCH, &more);
            if (n != 0) {
                if (more)
                    wake_one(q);
                pending = 1;
                continue;
            }
            rejected = 0;
            /* An application thread that helped within the spin time
             * takes packets in as it helps: sleep until then with the
             * doorbell unarmed (armed, every sender would wake the
             * progress thread for packets the helper takes anyway), and
             * look once at the deadline.  Otherwise sleep until woken. */
            uint64_t until = rqi_load_relaxed(&q->last_help_ns) + q->spin_ns;
            if (until <= now || q->spin_ns == 0)
                until = 0;
            sleep_locked(q, until);
            if (until == 0) {
                idle_since = 0;
                spins = 0;
            }
        }
    }
    complete(q, batch, n, rejected);
    q_unlock(q);
    return NULL;
}

/* ---- public calls ------------------------------------------------------ */

static int qid_ok(unsigned qid) { return qid > RQ_AM_QUEUE && qid < RQ_MAX_QUEUES; }

static void pdq_free(struct rq_pdq *q)
{
    struct pdq_entry *e;
    while ((e = q->waiting.head) != NULL) {
        list_unlink(&q->waiting, e);
        entry_free(q, e);
    }
    while ((e = q->free_small) != NULL) {
        q->free_small = e->next;
        free(e);
    }
    rqi_keyset_fini(&q->busy);
    pthread_cond_destroy(&q->work);
    pthread_mutex_destroy(&q->mu);
    free(q->threads);
    free(q);
}

/* Stop and join the threads (the PDQ stays attached). */
static void stop_threads(struct rq_pdq *q)
{
    q_lock(q);
    q->stop = 1;
    pthread_mutex_lock(&q->mu);
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->mu);
    q_unlock(q);
    for (unsigned i = 0; i < q->started; i++)
        pthread_join(q->threads[i], NULL);
    q->started = 0;
}

/* Attach q to its qid, taking in what the queue kept before it opened.
 * The caller owns the context. */
static int attach(rq_ctx_t *ctx, struct rq_pdq *q)
{
    unsigned qid = q->qid;
    if (ctx->pdq[qid] != NULL || ctx->open[qid] || ctx->view[qid].n != 0)
        return RQ_EINVAL;
    struct rqi_vrec *v;
    while ((v = rqi_vfifo_head(&ctx->fifo[qid])) != NULL) {
        rq_msg_t m;
        rqi_msg_from_vrec(v, &m);
        int rc = entry_push(q, (uint32_t)m.src, m.handler, m.key, m.args, m.nargs, m.data,
                            m.len, RQI_PDQ_COPY);
        if (rc != 0)
            return rc;
        rqi_vbuf_pop(&ctx->vb, &ctx->fifo[qid]);
        ctx->stats.buffered++;
    }
    rqi_mode_update(ctx);
    ctx->pdq[qid] = q;
    return 0;
}

int rq_pdq_open(rq_ctx_t *ctx, unsigned qid, const rq_pdq_attr_t *attr, rq_pdq_t **pdq)
{
    if (pdq != NULL)
        *pdq = NULL;
    if (ctx == NULL || attr == NULL || pdq == NULL || !qid_ok(qid) ||
        (attr->mode != RQ_PDQ_DEDICATED && attr->mode != RQ_PDQ_MULTIPLEXED) ||
        attr->threads == 0 || attr->threads > PDQ_MAX_THREADS || attr->window > 65536u)
        return RQ_EINVAL;
    if (rqi_in_handler(ctx) || rqi_vni_on_progress)
        return RQ_EPERM;
    struct rq_pdq *q = calloc(1, sizeof *q);
    if (q == NULL)
        return RQ_ENOMEM;
    q->ctx = ctx;
    q->qid = qid;
    q->mode = attr->mode;
    q->nthreads = attr->threads;
    q->window = attr->window != 0 ? attr->window : (unsigned)ctx->cfg.v[RQI_CFG_PDQ_WINDOW];
    q->spin_ns = ctx->cfg.v[RQI_CFG_PDQ_SPIN_US] * 1000u;
    q->fallback_ns = ctx->cfg.v[RQI_CFG_PDQ_FALLBACK_US] * 1000u;
    q->limit = ctx->vb.limit;
    q->threads = calloc(attr->threads, sizeof *q->threads);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (q->threads == NULL || rqi_keyset_init(&q->busy, 64) != 0) {
        free(q->threads);
        rqi_keyset_fini(&q->busy);
        free(q);
        return RQ_ENOMEM;
    }
    atomic_init(&q->lk, 0);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work, &ca);
    pthread_condattr_destroy(&ca);
    q->awake = attr->threads;

    /* From here on any thread may call into the context (sticky). */
    rqi_store_relaxed(&ctx->mt.on, 1u);
    int locked = rqi_ctx_enter(ctx);
    int rc = attach(ctx, q);
    rqi_ctx_leave(ctx, locked);
    if (rc != 0) {
        pdq_free(q);
        return rc;
    }
    /* Signals go to the application's threads, never to ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (; q->started < q->nthreads; q->started++)
        if (pthread_create(&q->threads[q->started], NULL, worker_main, q) != 0)
            break;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (q->started < q->nthreads) {
        rq_pdq_close(q);
        return RQ_ENOMEM;
    }
    *pdq = q;
    return 0;
}

int rq_pdq_enqueue(rq_ctx_t *ctx, int dst, unsigned qid, uint64_t key, unsigned handler,
                   const uint64_t *args, unsigned nargs, const void *data, size_t len,
                   unsigned flags)
{
    int rc = rqi_send_check(ctx, dst, args, nargs, data, len, flags);
    if (rc != 0)
        return rc;
    if (!qid_ok(qid) || handler >= RQ_MAX_HANDLERS)
        return RQ_EINVAL;
    /* The key rides as one more argument word (RQI_PF_KEY). */
    uint64_t a[RQ_MAX_ARGS + 1];
    for (unsigned i = 0; i < nargs; i++)
        a[i] = args[i];
    a[nargs] = key;
    RQI_GUARDED(ctx, rqi_send(ctx, dst, qid, handler, RQI_PF_KEY, a, nargs + 1, data, len, flags));
}


/* Run up to max ready handlers on this thread; take packets in once when
 * none is ready.  Returns handlers run. */
static int help_run(struct rq_pdq *q, unsigned max)
{
    struct pdq_entry *batch[PDQ_BATCH];
    unsigned done = 0;
    int n = 0, pumped = 0, more;
    q_lock(q);
    while (done < max) {
        unsigned cap = max - done < PDQ_BATCH ? max - done : PDQ_BATCH;
        unsigned got = dispatch(q, batch, cap, &more);
        if (got == 0) {
            if (pumped)
                break;
            q_unlock(q);
            pumped = 1;
            int direct = 0;
            unsigned in = pump_for(q, &direct);
            q_lock(q);
            if (direct) { /* one ran at once: run what is queued, then return
                             (the caller, maybe waiting for just that one,
                             looks sooner; it calls again for more) */
                n += direct == 1;
                done++;
                continue;
            }
            if (in == 0)
                break;
            continue;
        }
        if (more)
            wake_one(q);
        q_unlock(q);
        unsigned rejected = run(q, batch, got);
        q_lock(q);
        complete(q, batch, got, rejected);
        n += (int)(got - rejected);
        done += got;
    }
    /* What this helper took in and left (max reached) is a sleeper's. */
    if (q->waiting.head != NULL && q->idle_sleepers != 0 && q->awake == 0)
        wake_one(q);
    q_unlock(q);
    return n;
}

int rq_pdq_help(rq_pdq_t *pdq, unsigned max)
{
    if (pdq == NULL)
        return RQ_EINVAL;
    if (rqi_in_handler(pdq->ctx) || rqi_vni_on_progress)
        return RQ_EPERM;
    rqi_store_relaxed(&pdq->last_help_ns, rqi_mono_ns());
    if (max == 0)
        return 0;
    return help_run(pdq, max);
}

/* Every entry that arrived before `before` has completed (under lk). */
static int drained_locked(const struct rq_pdq *q, uint64_t before)
{
    if (q->waiting.head != NULL && q->waiting.head->seq < before)
        return 0;
    for (const struct pdq_entry *e = q->running.head; e != NULL; e = e->next)
        if (e->seq < before)
            return 0;
    return 1;
}

static int drain_body(struct rq_pdq *q)
{
    rq_ctx_t *ctx = q->ctx;
    /* 1. Everything published to our lanes before this call is taken in
     *    (our polls take it, running AM handlers as any blocking call). */
    uint64_t marks[RQI_MAX_LANES];
    for (unsigned l = 0; l < ctx->nlanes; l++)
        marks[l] = rqi_load_acquire(&ctx->rx[l].ctrl->tail);
    unsigned spins = 0;
    for (;;) {
        int locked = rqi_ctx_enter(ctx);
        int n = rqi_poll(ctx);
        int rc = ctx->fail.failed ? RQ_EPEER : 0;
        int past = 1;
        for (unsigned l = 0; l < ctx->nlanes; l++)
            if (ctx->rx[l].scan < marks[l])
                past = 0;
        if (!past && n == 0 && rc == 0)
            rc = rqi_wait_step(ctx, &spins);
        rqi_ctx_leave(ctx, locked);
        if (rc != 0)
            return rc;
        if (past)
            break;
    }
    /* 2. Everything taken in so far completes.  A multiplexed PDQ is run
     *    by idle application threads: this one is idle. */
    q_lock(q);
    uint64_t before = q->arrived;
    q_unlock(q);
    spins = 0;
    for (;;) {
        q_lock(q);
        int done = drained_locked(q, before);
        q_unlock(q);
        if (done)
            return 0;
        if (q->mode == RQ_PDQ_MULTIPLEXED && help_run(q, 64) > 0) {
            spins = 0;
            continue;
        }
        int locked = rqi_ctx_enter(ctx);
        int rc = rqi_poll(ctx) > 0 ? rqi_busy_step(ctx, &spins) : rqi_wait_step(ctx, &spins);
        rqi_ctx_leave(ctx, locked);
        if (rc != 0)
            return rc;
    }
}

int rq_pdq_drain(rq_pdq_t *pdq)
{
    if (pdq == NULL)
        return RQ_EINVAL;
    if (rqi_in_handler(pdq->ctx) || rqi_vni_on_progress)
        return RQ_EPERM;
    return drain_body(pdq);
}

static void close_body(struct rq_pdq *q)
{
    rq_ctx_t *ctx = q->ctx;
    stop_threads(q);
    int locked = rqi_ctx_enter(ctx);
    ctx->pdq[q->qid] = NULL;
    rqi_ctx_leave(ctx, locked);
    atomic_fetch_and(idle_word(q), ~(1ull << q->qid));
    /* What came in between the drain and the detach runs here, in order
     * (one thread: the keys serialize themselves). */
    struct pdq_entry *batch[PDQ_BATCH];
    unsigned n = 0, rejected = 0;
    q_lock(q);
    while ((n = next_locked(q, batch, n, rejected)) != 0) {
        q_unlock(q);
        rejected = run(q, batch, n);
        q_lock(q);
    }
    q_unlock(q);
    pdq_free(q);
}

int rq_pdq_close(rq_pdq_t *pdq)
{
    if (pdq == NULL)
        return RQ_EINVAL;
    if (rqi_in_handler(pdq->ctx) || rqi_vni_on_progress)
        return RQ_EPERM;
    int rc = drain_body(pdq);
    close_body(pdq);
    return rc;
}
