/* thread.c - the progress thread of a rank (FUGU's interrupt handler and
 * atomicity timer, the RQ paper's "network processor" for sends): it takes
 * the context from the application while the application is outside librq
 * (vni.h: the ownership protocol) to run interrupting handlers, move
 * packets into the virtual buffer when the atomicity timer expires, take
 * in another node's packets, send parked packets and the announcements of
 * landed transfers, and watch memory in overflow.  Woken by its doorbell
 * (vni/vni.c). */
#define _GNU_SOURCE
#include "progress/progress.h"

#include <signal.h>
#include <unistd.h>

#include "core/sys.h"
#include "deliver/deliver.h"

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

/* Active messages held outside the lanes that interrupt under the current
 * mode (deliver.h): an interrupt is owed until they have run. */
static int held_owed(const struct rqi_vni *v)
{
    uint32_t m = rqi_load_relaxed(&v->area->intr_mode);
    /* Pairs with the owner's store_release of the counts. */
    return (rqi_vni_cls_interrupts(m, RQI_CLS_INTR) && rqi_load_acquire(&v->held[RQI_CLS_INTR - 1])) ||
           (rqi_vni_cls_interrupts(m, RQI_CLS_PLAIN) && rqi_load_acquire(&v->held[RQI_CLS_PLAIN - 1]));
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
        if (rqi_vni_main_busy(v, 1))
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
                if (rqi_overflow_memory_high(ctx) && rqi_vni_claim(v, 0)) {
                    rqi_overflow_high_exit(ctx);
                    rqi_vni_unclaim(v);
                }
            }
            wait = ovf_next - t < wait ? ovf_next - t : wait;
        }
        int ob = rqi_load_acquire(&v->ob_pending) != 0;
        if (ob) {
            uint64_t w = ob_next > t ? ob_next - t : 0;
            wait = w < wait ? w : wait;
        }
        uint32_t bits = rqi_vni_bell_take(v->area, wait);
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
        while (net && rqi_vni_claim(v, 0)) {
            rqi_netwake_service(ctx);
            net = 0;
            rqi_vni_unclaim(v);
        }
        /* A PDQ's threads all sleep and packets came for it: wake one,
         * which takes them in itself (into its ring, hot in cache; taken
         * in here they would wait in a heap backlog).  Under the claim, so
         * no PDQ is closed meanwhile. */
        if (bits & RQI_BELL_PDQ)
            pdq = 1;
        while (pdq && rqi_vni_claim(v, 0)) {
            uint64_t idle = rqi_load_relaxed(&v->area->pdq_idle);
            for (unsigned qid = 0; qid < RQ_MAX_QUEUES && qid < 64; qid++)
                if ((idle >> qid & 1) && ctx->pdq[qid] != NULL)
                    ctx->hooks.pdq_wake(ctx->pdq[qid]);
            pdq = 0;
            rqi_vni_unclaim(v);
        }
        /* Long requests whose bytes the copy engine has landed: their
         * announcements leave without an application call (sending runs
         * no handler: no atomicity section stops it). */
        if (bits & RQI_BELL_ASYNC) {
            /* A target pulled one of ours: complete it (no claim needed). */
            (void)ctx->hooks.async_reap(ctx);
            landed |= rqi_load_relaxed(&ctx->async.landed_n) != 0;
        }
        while (landed && rqi_vni_claim(v, 0)) {
            (void)ctx->hooks.async_announce(ctx);
            landed = 0;
            rqi_vni_unclaim(v);
        }
        /* Sends parked in the outbox (by a handler, or by the main thread
         * before it went off to compute) leave without an application
         * call: "no pattern of sends from handlers deadlocks" holds in
         * interrupt mode too.  Sending runs no handler: no atomicity
         * section stops it. */
        if (ob && ((bits & RQI_BELL_OUTBOX) || rqi_mono_ns() >= ob_next)) {
            if (rqi_vni_claim(v, 0)) {
                uint64_t before = ctx->ob.records;
                ctx->hooks.outbox_flush(ctx);
                ob_backoff = ctx->ob.records < before ? OB_RETRY_MIN_NS
                             : ob_backoff < OB_RETRY_MAX_NS ? 2 * ob_backoff
                                                            : OB_RETRY_MAX_NS;
                rqi_vni_unclaim(v);
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
            } else if (rqi_vni_claim(v, 0)) {
                /* Revocation: the atomicity timer expired.  Move what the
                 * lanes hold into the virtual buffer (no handler runs);
                 * while the buffer stays non-empty the next full lane is
                 * drained at once (buffered mode, as in FUGU).  The active
                 * messages moved are counted held: still owed. */
                uint64_t before = ctx->vb.records;
                if (rqi_drain(ctx) == 0 && ctx->vb.records > before)
                    v->revocations++;
                buffering = ctx->vb.records != 0;
                rqi_vni_unclaim(v);
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
        while (intr && rqi_vni_claim(v, 1)) {
            intr = run_interrupt(ctx);
            rqi_vni_unclaim(v);
        }
    }
    return NULL;
}

int rqi_vni_init(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    v->area = &rqi_shm_area(&ctx->shm, (uint32_t)ctx->rank)->vni;
    v->timeout_ns = ctx->cfg.v[RQI_CFG_ATOMIC_TIMEOUT_US] * 1000u;
    v->heavy = rqi_asym_register();
    /* Before any PDQ of this rank exists, so before any sender reads it. */
    v->mb_global = rqi_asym_register_global() == 0;
    if (v->mb_global)
        atomic_store_explicit(&v->area->pdq_mb, 1u, memory_order_relaxed);
    int rc = rqi_overflow_init(ctx);
    if (rc != 0)
        return rc;
    /* Signals go to the application's threads, never to ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&v->thread, NULL, progress_main, ctx) != 0 ? RQ_ENOMEM : 0;
    if (rc == 0 && (rc = rqi_netwake_start(ctx)) != 0) {
        rqi_vni_bell_ring(v->area, RQI_BELL_STOP);
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
        rqi_vni_bell_ring(v->area, RQI_BELL_STOP);
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

