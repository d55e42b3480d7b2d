/* vni.c - atomicity sections, interrupts and the progress thread (the
 * ownership protocol and its fences are in vni.h). */
#define _GNU_SOURCE
#include "core/sys.h"
#include "vni/vni.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "am/am.h"
#include "ctx.h"
#include "deliver/deliver.h"

_Atomic uint32_t rqi_vni_fence_word;
/* Atomicity depth of handlers run by the progress thread (already atomic;
 * kept only to validate begin/end pairs). */
static _Thread_local int progress_atomic;



/* ---- the doorbell ----------------------------------------------------- */

static void bell_ring(struct rqi_vni_area *a, uint32_t bit)
{
    /* The RMW is the sender's half of the sleeping/bell Dekker pair. */
    uint32_t old = atomic_fetch_or(&a->bell, bit);
    if ((old & bit) != bit && atomic_load(&a->sleeping) != 0)
        rqi_futex(&a->bell, FUTEX_WAKE, 1, NULL);
}

/* Take the pending bits, sleeping until some arrive or timeout_ns passes
 * (UINT64_MAX: no timeout). */
static uint32_t bell_take(struct rqi_vni_area *a, uint64_t timeout_ns)
{
    uint32_t bits = atomic_exchange(&a->bell, 0u);
    if (bits != 0 || timeout_ns == 0)
        return bits;
    atomic_store(&a->sleeping, 1u);
    bits = atomic_exchange(&a->bell, 0u);
    if (bits == 0) {
        struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
        rqi_futex(&a->bell, FUTEX_WAIT, 0u, timeout_ns == UINT64_MAX ? NULL : &ts);
        bits = atomic_exchange(&a->bell, 0u);
    }
    atomic_store(&a->sleeping, 0u);
    return bits;
}

static struct rqi_vni_area *area_of(rq_ctx_t *ctx, int r)
{
    return &rqi_shm_area(&ctx->shm, (uint32_t)r)->vni;
}

void rqi_vni_sent(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, unsigned pflags,
                  unsigned flags)
{
    if (pflags & RQI_PF_SYSTEM)
        return;
    struct rqi_vni_area *a = area_of(ctx, dst);
    uint32_t m = rqi_load_relaxed(&a->intr_mode);
    if (m == RQ_INTR_OFF)
        return;
    /* Handler flags are the same on every rank (rq_handler_register). */
    if (m == RQ_INTR_SELECTIVE && !(flags & RQ_INTERRUPT) &&
        !(qid == RQ_AM_QUEUE && (ctx->handlers[tag].flags & RQ_HF_INTERRUPT)))
        return;
    bell_ring(a, RQI_BELL_INTR);
}

void rqi_vni_ring(rq_ctx_t *ctx, int dst, uint32_t bit)
{
    bell_ring(area_of(ctx, dst), bit);
}

void rqi_vni_full(rq_ctx_t *ctx, int dst)
{
    bell_ring(area_of(ctx, dst), RQI_BELL_FULL);
}

/* ---- ownership (see vni.h) ------------------------------------------- */

void rqi_vni_wait_claim(rq_ctx_t *ctx)
{
    unsigned spins = 0;
    /* Pairs with the progress thread's store_release(claim, 0). */
    while (rqi_load_acquire(&ctx->vni.claim) != 0) {
        if (++spins < 256)
            rqi_cpu_relax();
        else
            sched_yield();
    }
}

void rqi_vni_retry(rq_ctx_t *ctx)
{
    if (atomic_exchange(&ctx->vni.deferred, 0u) != 0)
        bell_ring(ctx->vni.area, RQI_BELL_RETRY);
}

static void progress_fence(const struct rqi_vni *v)
{
    if (v->heavy)
        rqi_full_fence();
    else
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

static int main_busy(const struct rqi_vni *v, int handlers)
{
    /* Pairs with the main thread's store_release of calls / atomic. */
    return rqi_load_acquire(&v->calls) != 0 ||
           (handlers && rqi_load_acquire(&v->atomic) != 0);
}

/* Take the context: 1, or 0 after backing off (the main thread is in a
 * librq call, or, for handlers, in an atomicity section; leaving it rings
 * RQI_BELL_RETRY). */
static int claim(struct rqi_vni *v, int handlers)
{
    /* Two tries: the main thread may leave between our look and
     * deferred = 1 without seeing it, so look again after the fence. */
    for (int tries = 0; tries < 2; tries++) {
        rqi_store_relaxed(&v->claim, 1u);
        progress_fence(v);
        /* Success leaves deferred alone: only the main thread clears it
         * (vni.h), or a retry that an interrupt waits for would be lost. */
        if (!main_busy(v, handlers))
            return 1;
        atomic_store(&v->deferred, 1u);
        rqi_store_release(&v->claim, 0u);
        progress_fence(v);
        if (main_busy(v, handlers))
            return 0;
    }
    return 0;
}

static void unclaim(struct rqi_vni *v)
{
    rqi_store_release(&v->claim, 0u);
}

/* ---- the progress thread ---------------------------------------------- */

/* Released heads of our lanes (shared words: readable without owning the
 * context), and whether every lane is empty (released up to its tail). */
static int lanes_snapshot(rq_ctx_t *ctx, uint64_t *heads)
{
    int empty = 1;
    for (unsigned l = 0; l < ctx->nlanes; l++) {
        const struct rqi_ring_ctrl *c = ctx->rx[l].ctrl;
        heads[l] = rqi_load_acquire(&c->head);
        if (rqi_load_relaxed(&c->tail) != heads[l])
            empty = 0;
    }
    return empty;
}

/* Every lane released up to marks[]: the packets published before the
 * marks were taken have been consumed. */
static int lanes_past(rq_ctx_t *ctx, const uint64_t *marks)
{
    for (unsigned l = 0; l < ctx->nlanes; l++)
        if (rqi_load_acquire(&ctx->rx[l].ctrl->head) < marks[l])
            return 0;
    return 1;
}

static void tails_snapshot(rq_ctx_t *ctx, uint64_t *tails)
{
    for (unsigned l = 0; l < ctx->nlanes; l++)
        tails[l] = rqi_load_acquire(&ctx->rx[l].ctrl->tail);
}

/* Whether an active message of interrupt class cls interrupts under mode. */
static int cls_interrupts(uint32_t mode, unsigned cls)
{
    return mode == RQ_INTR_ALL || (mode == RQ_INTR_SELECTIVE && cls == RQI_CLS_INTR);
}

/* Active messages held outside the lanes that interrupt under the current
 * mode (deliver.h): an interrupt is owed until they have run. */
static int held_owed(const struct rqi_vni *v)
{
    uint32_t m = rqi_load_relaxed(&v->area->intr_mode);
    /* Pairs with the owner's store_release of the counts. */
    return (cls_interrupts(m, RQI_CLS_INTR) && rqi_load_acquire(&v->held[RQI_CLS_INTR - 1])) ||
           (cls_interrupts(m, RQI_CLS_PLAIN) && rqi_load_acquire(&v->held[RQI_CLS_PLAIN - 1]));
}

void rqi_held_add(rq_ctx_t *ctx, unsigned cls)
{
    if (cls == RQI_CLS_NONE)
        return;
    struct rqi_vni *v = &ctx->vni;
    _Atomic uint64_t *h = &v->held[cls - 1];
    uint64_t was = rqi_load_relaxed(h);
    rqi_store_release(h, was + 1);
    /* The progress thread reads the counts after taking its bell: ring it
     * unless it is the one holding the message (it looks before it runs
     * interrupts) or an earlier message already rang. */
    if (was == 0 && v->on && !rqi_vni_on_progress && cls_interrupts((uint32_t)v->intr_mode, cls))
        bell_ring(v->area, RQI_BELL_INTR);
}

/* Owning the context, outside any atomicity section: run handlers the way
 * rq_poll does until nothing is left (returns 0) or the main thread wants
 * in (returns 1: the interrupt is not finished).  Nothing runs once
 * interrupts are off. */
static int run_interrupt(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    if (v->intr_mode == RQ_INTR_OFF)
        return 0;
    v->interrupts++;
    while (rqi_poll(ctx) > 0)
        if (main_busy(v, 1))
            return 1;
    return 0;
}

/* Outbox retries while sends stay parked: the destination frees room
 * without telling us, so look again after a back-off. */
#define OB_RETRY_MIN_NS 20000u
#define OB_RETRY_MAX_NS 1000000u

/* How often a rank in overflow looks at the node's free memory. */
#define OVF_LOOK_NS 1000000u

static void *progress_main(void *arg)
{
    rq_ctx_t *ctx = arg;
    struct rqi_vni *v = &ctx->vni;
    rqi_vni_on_progress = 1;
    uint64_t heads[RQI_MAX_LANES], now[RQI_MAX_LANES], intr_marks[RQI_MAX_LANES];
    int intr = 0, full = 0, buffering = 0, pdq = 0, net = 0, landed = 0;
    uint64_t deadline = 0, ob_next = 0, ob_backoff = OB_RETRY_MIN_NS, ovf_next = 0;
    for (;;) {
        /* deadline UINT64_MAX: a claim backed off; RQI_BELL_RETRY resumes. */
        uint64_t wait = UINT64_MAX, t = rqi_mono_ns();
        if (full && deadline != UINT64_MAX)
            wait = deadline > t ? deadline - t : 0;
        /* In overflow, memory back above the high-water mark lifts our
         * STOP (overflow.c), even while the application computes. */
        if (rqi_load_relaxed(&v->ovf_member)) {
            if (t >= ovf_next) {
                ovf_next = t + OVF_LOOK_NS;
                if (rqi_overflow_memory_high(ctx) && claim(v, 0)) {
                    rqi_overflow_high_exit(ctx);
                    unclaim(v);
                }
            }
            wait = ovf_next - t < wait ? ovf_next - t : wait;
        }
        int ob = rqi_load_acquire(&v->ob_pending) != 0;
        if (ob) {
            uint64_t w = ob_next > t ? ob_next - t : 0;
            wait = w < wait ? w : wait;
        }
        uint32_t bits = bell_take(v->area, wait);
        if (bits & RQI_BELL_STOP)
            break;
        if (bits & RQI_BELL_INTR) {
            /* The interrupting packets lie below the lanes' tails now;
             * once the heads pass them, whoever consumed them (maybe the
             * main thread's own poll) has served the interrupt, unless it
             * only moved them into the virtual buffer (held_owed below). */
            intr = 1;
            tails_snapshot(ctx, intr_marks);
        }
        if (intr && lanes_past(ctx, intr_marks))
            intr = 0;
        if ((bits & RQI_BELL_RETRY) && full && deadline == UINT64_MAX)
            deadline = 0;
        if ((bits & RQI_BELL_FULL) && v->timeout_ns != 0 && !full) {
            full = 1;
            lanes_snapshot(ctx, heads);
            deadline = buffering ? 0 : rqi_mono_ns() + v->timeout_ns;
        }
        /* Another node's packets: take them in (no handler runs) and
         * keep the network armed; they may interrupt too. */
        if (bits & RQI_BELL_NET)
            net = 1;
        while (net && claim(v, 0)) {
            rqi_netwake_service(ctx);
            net = 0;
            unclaim(v);
        }
        /* A PDQ's threads all sleep and packets came for it: take in
         * what the lanes hold (no handler runs); the intake wakes them. */
        if (bits & RQI_BELL_PDQ)
            pdq = 1;
        while (pdq && claim(v, 0)) {
            (void)rqi_drain(ctx);
            pdq = 0;
            unclaim(v);
        }
        /* Long requests whose bytes the copy engine has landed: their
         * announcements leave without an application call (sending runs
         * no handler: no atomicity section stops it). */
        if (bits & RQI_BELL_ASYNC) {
            /* A target pulled one of ours: complete it (no claim needed). */
            (void)rqi_async_reap(ctx);
            landed |= rqi_load_relaxed(&ctx->async.landed_n) != 0;
        }
        while (landed && claim(v, 0)) {
            (void)rqi_async_announce(ctx);
            landed = 0;
            unclaim(v);
        }
        /* Sends parked in the outbox (by a handler, or by the main thread
         * before it went off to compute) leave without an application
         * call: "no pattern of sends from handlers deadlocks" holds in
         * interrupt mode too.  Sending runs no handler: no atomicity
         * section stops it. */
        if (ob && ((bits & RQI_BELL_OUTBOX) || rqi_mono_ns() >= ob_next)) {
            if (claim(v, 0)) {
                uint64_t before = ctx->ob.records;
                rqi_outbox_flush_all(ctx);
                ob_backoff = ctx->ob.records < before ? OB_RETRY_MIN_NS
                             : ob_backoff < OB_RETRY_MAX_NS ? 2 * ob_backoff
                                                            : OB_RETRY_MAX_NS;
                unclaim(v);
            }
            ob_next = rqi_mono_ns() + ob_backoff;
        }
        if (full && rqi_mono_ns() >= deadline) {
            int empty = lanes_snapshot(ctx, now);
            int moved = 0;
            for (unsigned l = 0; l < ctx->nlanes; l++)
                moved |= now[l] != heads[l];
            if (empty || (moved && !buffering)) {
                full = 0; /* the main thread drains; a still blocked sender rings again */
            } else if (claim(v, 0)) {
                /* Revocation: the atomicity timer expired.  Move what the
                 * lanes hold into the virtual buffer (no handler runs);
                 * while the buffer stays non-empty the next full lane is
                 * drained at once (buffered mode, as in FUGU).  The active
                 * messages moved are counted held: still owed. */
                uint64_t before = ctx->vb.records;
                if (rqi_drain(ctx) == 0 && ctx->vb.records > before)
                    v->revocations++;
                buffering = ctx->vb.records != 0;
                unclaim(v);
                full = 0;
            } else {
                deadline = UINT64_MAX;
            }
        }
        /* Last, so that a back-off here leaves deferred set whatever the
         * steps above claimed: the main thread's leaving rings
         * RQI_BELL_RETRY.  Cut short by the main thread, an interrupt
         * claims again the same way. */
        if (held_owed(v))
            intr = 1;
        while (intr && claim(v, 1)) {
            intr = run_interrupt(ctx);
            unclaim(v);
        }
    }
    return NULL;
}

int rqi_vni_init(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    v->area = area_of(ctx, ctx->rank);
    v->timeout_ns = ctx->cfg.v[RQI_CFG_ATOMIC_TIMEOUT_US] * 1000u;
#if defined(__SANITIZE_THREAD__)
    v->heavy = 1; /* ThreadSanitizer does not model membarrier */
#else
    v->heavy = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0;
#endif
    int rc = rqi_overflow_init(ctx);
    if (rc != 0)
        return rc;
    /* Signals go to the application's threads, never to ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&v->thread, NULL, progress_main, ctx) != 0 ? RQ_ENOMEM : 0;
    if (rc == 0 && (rc = rqi_netwake_start(ctx)) != 0) {
        bell_ring(v->area, RQI_BELL_STOP);
        pthread_join(v->thread, NULL);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return rc;
    v->on = 1;
    return 0;
}

void rqi_vni_fini(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    if (v->on) {
        /* The progress thread first: it reads the watcher's state. */
        bell_ring(v->area, RQI_BELL_STOP);
        pthread_join(v->thread, NULL);
        rqi_netwake_stop(ctx);
        v->on = 0;
    }
    if (v->intr_mode != RQ_INTR_OFF) {
        atomic_fetch_sub(&ctx->shm.hdr->intr_ranks, 1u);
        v->intr_mode = RQ_INTR_OFF;
    }
    rqi_overflow_leave(ctx);
}

/* ---- public calls ------------------------------------------------------ */

int rq_atomic_begin(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    if (rqi_vni_on_progress) {
        progress_atomic++;
        return 0;
    }
    struct rqi_vni *v = &ctx->vni;
    rqi_store_relaxed(&v->atomic, rqi_load_relaxed(&v->atomic) + 1);
    if (v->on) {
        rqi_vni_fence(v);
        /* A handler the progress thread runs now finishes first. */
        if (RQI_UNLIKELY(rqi_load_acquire(&v->claim) != 0))
            rqi_vni_wait_claim(ctx);
    }
    return 0;
}

int rq_atomic_end(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    if (rqi_vni_on_progress) {
        if (progress_atomic == 0)
            return RQ_EINVAL;
        progress_atomic--;
        return 0;
    }
    struct rqi_vni *v = &ctx->vni;
    int32_t d = rqi_load_relaxed(&v->atomic);
    if (d == 0)
        return RQ_EINVAL;
    rqi_store_release(&v->atomic, d - 1);
    if (d == 1 && v->on) {
        rqi_vni_fence(v);
        if (RQI_UNLIKELY(rqi_load_relaxed(&v->deferred) != 0))
            rqi_vni_retry(ctx); /* an interrupt waited for this section */
    }
    return 0;
}

int rq_interrupts(rq_ctx_t *ctx, int mode)
{
    if (ctx == NULL || (mode != RQ_INTR_OFF && mode != RQ_INTR_SELECTIVE && mode != RQ_INTR_ALL))
        return RQ_EINVAL;
    struct rqi_vni *v = &ctx->vni;
    if (!v->on)
        return RQ_ENOTSUP;
    int locked = rqi_ctx_enter(ctx);
    int was = v->intr_mode;
    if ((v->intr_mode == RQ_INTR_OFF) != (mode == RQ_INTR_OFF)) {
        if (mode == RQ_INTR_OFF)
            atomic_fetch_sub(&ctx->shm.hdr->intr_ranks, 1u);
        else
            atomic_fetch_add(&ctx->shm.hdr->intr_ranks, 1u);
    }
    v->intr_mode = mode;
    atomic_store(&v->area->intr_mode, (uint32_t)mode);
    rqi_ctx_leave(ctx, locked);
    /* Packets that arrived before the switch and interrupt now are taken
     * up at once, and the network is armed for those still to come from
     * other nodes.  Only a mode that interrupts more than the old one
     * (OFF < SELECTIVE < ALL) can have such packets waiting: under the
     * same or a narrower mode every one that interrupts rang on arrival,
     * so a call that changes nothing costs no wake-up (Liu & Culler
     * Table 10's "pipeline" case). */
    if (mode > was)
        bell_ring(v->area, RQI_BELL_INTR | (v->net_on ? RQI_BELL_NET : 0u));
    return 0;
}

int rq_stats(rq_ctx_t *ctx, rq_stats_t *out)
{
    if (ctx == NULL || out == NULL)
        return RQ_EINVAL;
    int locked = rqi_ctx_enter(ctx);
    *out = ctx->stats;
    out->buffer_bytes_now = ctx->vb.bytes_now;
    out->buffer_bytes_max = ctx->vb.bytes_max;
    out->parked = ctx->parked;
    out->rejected += atomic_load_explicit(&ctx->gas.rejected, memory_order_relaxed) +
                     atomic_load_explicit(&ctx->pdq_rejected, memory_order_relaxed);
    out->interrupts = ctx->vni.interrupts;
    out->revocations = ctx->vni.revocations;
    out->overflow_high_exits = ctx->vni.ovf_high_exits;
    rqi_ctx_leave(ctx, locked);
    return 0;
}
