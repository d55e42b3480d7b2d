/* vni.c - the doorbell, the ownership protocol between the application
 * and the progress thread (its fences are in vni.h), atomicity sections,
 * interrupt modes and the count of active messages held outside the
 * lanes.  The progress thread itself is progress/thread.c. */
#define _GNU_SOURCE
#include "core/sys.h"
#include "vni/vni.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"

/* Atomicity depth of handlers run by the progress thread (already atomic;
 * kept only to validate begin/end pairs). */
static _Thread_local int progress_atomic __attribute__((tls_model("initial-exec")));



/* ---- the doorbell ----------------------------------------------------- */

void rqi_vni_bell_ring(struct rqi_vni_area *a, uint32_t bit)
{
    /* The RMW is the sender's half of the sleeping/bell Dekker pair. */
    uint32_t old = atomic_fetch_or(&a->bell, bit);
    if ((old & bit) != bit && atomic_load(&a->sleeping) != 0)
        rqi_futex(&a->bell, FUTEX_WAKE, 1, NULL);
}

/* Take the pending bits, sleeping until some arrive or timeout_ns passes
 * (UINT64_MAX: no timeout). */
uint32_t rqi_vni_bell_take(struct rqi_vni_area *a, uint64_t timeout_ns)
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
    rqi_vni_bell_ring(a, RQI_BELL_INTR);
}

void rqi_vni_ring(rq_ctx_t *ctx, int dst, uint32_t bit)
{
    rqi_vni_bell_ring(area_of(ctx, dst), bit);
}

void rqi_vni_full(rq_ctx_t *ctx, int dst)
{
    rqi_vni_bell_ring(area_of(ctx, dst), RQI_BELL_FULL);
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
        rqi_vni_bell_ring(ctx->vni.area, RQI_BELL_RETRY);
}

static void progress_fence(const struct rqi_vni *v)
{
    rqi_asym_heavy(v->heavy);
}

int rqi_vni_main_busy(const struct rqi_vni *v, int handlers)
{
    /* Pairs with the main thread's store_release of calls / atomic. */
    return rqi_load_acquire(&v->calls) != 0 ||
           (handlers && rqi_load_acquire(&v->atomic) != 0);
}

/* Take the context: 1, or 0 after backing off (the main thread is in a
 * librq call, or, for handlers, in an atomicity section; leaving it rings
 * RQI_BELL_RETRY). */
int rqi_vni_claim(struct rqi_vni *v, int handlers)
{
    /* Two tries: the main thread may leave between our look and
     * deferred = 1 without seeing it, so look again after the fence. */
    for (int tries = 0; tries < 2; tries++) {
        rqi_store_relaxed(&v->claim, 1u);
        progress_fence(v);
        /* Success leaves deferred alone: only the main thread clears it
         * (vni.h), or a retry that an interrupt waits for would be lost. */
        if (!rqi_vni_main_busy(v, handlers))
            return 1;
        atomic_store(&v->deferred, 1u);
        rqi_store_release(&v->claim, 0u);
        progress_fence(v);
        if (rqi_vni_main_busy(v, handlers))
            return 0;
    }
    return 0;
}

void rqi_vni_unclaim(struct rqi_vni *v)
{
    rqi_store_release(&v->claim, 0u);
}

/* ---- active messages held outside the lanes (deliver.h) ---------------- */

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
    if (was == 0 && v->on && !rqi_vni_on_progress && rqi_vni_cls_interrupts((uint32_t)v->intr_mode, cls))
        rqi_vni_bell_ring(v->area, RQI_BELL_INTR);
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
        rqi_vni_bell_ring(v->area, RQI_BELL_INTR | (v->net_on ? RQI_BELL_NET : 0u));
    return 0;
}

void rqi_vni_pdq_sent(rq_ctx_t *ctx, int dst, unsigned qid)
{
    /* The sender's half of the pdq_idle Dekker pair (pdq/pdq.c, at the
     * top).  One sender rings per sleep, the one that sets `rung`: while
     * the woken thread was on its way up every send rang, and each ring
     * that found the progress thread asleep again woke it on the CPU the
     * PDQ thread needed (a one-thread PDQ under a stream: thousands of
     * futex calls a run, half its rate).  The sleeper sets its bit, then
     * clears `rung`, then looks at the lanes: a sender that finds `rung`
     * set found it set after that clear by one that then rang, and that
     * ring is taken after the bit was set, so it wakes the sleeper; a
     * sender whose `rung` the clear undid published before the look at
     * the lanes, which finds its packet (the sleeper then rings itself). */
    struct rqi_vni_area *a = &rqi_shm_area(&ctx->shm, (uint32_t)dst)->vni;
    /* The fence between the packet's publication and the look at the
     * bit: a compiler fence when dst's sleeper issues a global membarrier
     * and this process is among its targets (the sleeper's barrier runs
     * here, between the two, or after both: asym.h), else a full fence,
     * which waited for the packet's stores to reach dst's core on every
     * send (82-160 ns a keyed send against 42-55 for a request, rqbench
     * pdq's stream). */
    if (ctx->vni.mb_global && rqi_load_relaxed(&a->pdq_mb) != 0)
        atomic_signal_fence(memory_order_seq_cst);
    else
        rqi_full_fence();
    const uint64_t bit = 1ull << (qid & 63);
    if (qid < 64 && (rqi_load_relaxed(&a->pdq_idle) & bit) != 0 &&
        (rqi_load_relaxed(&a->pdq_rung) & bit) == 0 &&
        (atomic_fetch_or(&a->pdq_rung, bit) & bit) == 0)
        rqi_vni_ring(ctx, dst, RQI_BELL_PDQ);
}
