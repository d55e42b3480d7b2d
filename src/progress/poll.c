/* poll.c - the one place that runs handlers: rq_poll and the internal
 * poll, the handler table, receiver-placed payloads (rq_place), and the
 * waits built on them (rq_wait_until, rq_test, rqi_poll_until).  With
 * am.c (the send side) and net/shm_ring.h this is the whole hot path:
 *   poll: peek own ring -> validate -> run the handler in place -> release.
 * The only indirect calls are the user's handler and, off the hot path,
 * the hooks of the layers above (progress.h). */
#include "progress/progress.h"
#include "net/net.h"

#include <stdlib.h>
#include <string.h>

#include "deliver/deliver.h"
#include "net/ucx.h"

int rq_test(rq_ctx_t *ctx, const volatile uint64_t *word, uint64_t at_least)
{
    if (ctx == NULL || word == NULL)
        return RQ_EINVAL;
    /* Pairs with the completer's release increment. */
    if (__atomic_load_n(word, __ATOMIC_ACQUIRE) >= at_least)
        return 1;
    int locked = rqi_ctx_enter(ctx);
    int rc = rqi_job_failed(ctx) ? RQ_EPEER : 0;
    if (rc == 0) {
        (void)rqi_poll(ctx);
        rc = __atomic_load_n(word, __ATOMIC_ACQUIRE) >= at_least;
    }
    rqi_ctx_leave(ctx, locked);
    return rc;
}

int rq_handler_register(rq_ctx_t *ctx, unsigned id, rq_handler_fn fn, void *arg,
                        unsigned flags)
{
    const unsigned known = RQ_HF_INTERRUPT | RQ_HF_PLACE | RQ_HF_PROMOTE;
    if (ctx == NULL || id >= RQ_MAX_HANDLERS || (flags & ~known) != 0)
        return RQ_EINVAL;
    /* Promoted parts call in from the pool's threads: thread-safe mode,
     * switched on only while no handler runs here (a call in progress
     * entered without the lock). */
    if ((flags & RQ_HF_PROMOTE) && rqi_load_relaxed(&ctx->mt.on) == 0) {
        if (rqi_in_handler(ctx) || rqi_vni_on_progress)
            return RQ_EPERM;
        rqi_store_relaxed(&ctx->mt.on, 1u);
    }
    /* Bracketed: the progress thread may be reading the table. */
    int locked = rqi_ctx_enter(ctx);
    ctx->handlers[id].fn = fn;
    ctx->handlers[id].arg = arg;
    ctx->handlers[id].flags = flags;
    rqi_ctx_leave(ctx, locked);
    return 0;
}

/* An RQ_HF_PLACE handler and a payload above rq_medium_max(): the handler
 * sees it unplaced (data NULL) and may name its destination (rq_place);
 * the payload waits where the transport left it until the handler
 * returns. */
static RQI_NOINLINE void run_placed(rq_ctx_t *ctx, const struct rqi_handler *h,
                                    const rq_msg_t *m)
{
    rq_msg_t u = *m;
    u.data = NULL;
    ctx->place = (struct rqi_place){&u, m->data, m->len, 0, ctx->place_ucx};
    h->fn(ctx, &u, h->arg);
    ctx->place.msg = NULL; /* placed or discarded: the message is gone */
}

static inline int run_handler(rq_ctx_t *ctx, const rq_msg_t *m)
{
    const struct rqi_handler *h =
        (m->rqi_flags & RQI_PF_SYSTEM) ? &ctx->sys[m->handler] : &ctx->handlers[m->handler];
    if (RQI_UNLIKELY(h->fn == NULL)) {
        ctx->stats.rejected++; /* no handler installed for this id */
        return 0;
    }
    rqi_am_handler_depth++;
    if (RQI_UNLIKELY(h->flags & RQ_HF_PLACE) && m->len > ctx->medium_max &&
        !(m->rqi_flags & RQI_PF_SYSTEM))
        run_placed(ctx, h, m);
    else
        h->fn(ctx, m, h->arg);
    rqi_am_handler_depth--;
    return 1;
}

int rqi_run_handler(rq_ctx_t *ctx, const rq_msg_t *m)
{
    return run_handler(ctx, m);
}

/* Run the completion callbacks of earlier placements, as handlers.
 * Returns how many ran. */
static RQI_NOINLINE int run_place_done(rq_ctx_t *ctx)
{
    int n = 0;
    struct rqi_place_done *d;
    while ((d = ctx->place_done) != NULL) {
        ctx->place_done = d->next;
        if (ctx->place_done == NULL)
            ctx->place_done_tail = &ctx->place_done;
        rqi_am_handler_depth++;
        d->fn(ctx, d->arg, d->status);
        rqi_am_handler_depth--;
        free(d);
        n++;
    }
    return n;
}

/* A placement over UCX: the counter and callback of one pull.  d first:
 * run_place_done frees the record through it. */
struct place_wait {
    struct rqi_place_done d;
    volatile uint64_t    *done;
};

static void queue_place_done(rq_ctx_t *ctx, struct rqi_place_done *d)
{
    if (ctx->place_done_tail == NULL)
        ctx->place_done_tail = &ctx->place_done;
    *ctx->place_done_tail = d;
    ctx->place_done_tail = &d->next;
}

/* The pulled payload has landed (or the job failed): from the worker's
 * progress, on the context's owner. */
static void place_landed(rq_ctx_t *ctx, void *arg, int ok)
{
    struct place_wait *w = arg;
    if (ok && w->done != NULL)
        atomic_fetch_add_explicit((_Atomic uint64_t *)(uintptr_t)w->done, 1,
                                  memory_order_release);
    if (w->d.fn == NULL) {
        free(w);
        return;
    }
    w->d.status = ok ? 0 : RQ_EPEER;
    queue_place_done(ctx, &w->d);
}

static int place_remote(rq_ctx_t *ctx, struct rqi_place *pl, void *dst, volatile uint64_t *done,
                        rq_place_fn fn, void *arg)
{
    struct place_wait *w = malloc(sizeof *w);
    if (w == NULL)
        return RQ_ENOMEM;
    *w = (struct place_wait){{NULL, fn, arg, 0}, done};
    int rc = ctx->net->place(ctx, pl->ucx, dst, place_landed, w);
    if (rc != 0) {
        free(w);
        return rc;
    }
    pl->ucx = NULL;
    pl->placed = 1;
    return 0;
}

static int place_body(rq_ctx_t *ctx, const rq_msg_t *msg, void *dst, volatile uint64_t *done,
                      rq_place_fn fn, void *arg)
{
    struct rqi_place *pl = &ctx->place;
    if (msg == NULL || dst == NULL || msg != pl->msg || pl->placed || !rqi_in_handler(ctx))
        return RQ_EINVAL;
    if (pl->ucx != NULL)
        return place_remote(ctx, pl, dst, done, fn, arg);
    struct rqi_place_done *d = NULL;
    if (fn != NULL && (d = malloc(sizeof *d)) == NULL)
        return RQ_ENOMEM;
    memcpy(dst, pl->src, pl->len);
    pl->placed = 1;
    if (done != NULL)
        /* Releases the copy to whoever acquires the counter. */
        atomic_fetch_add_explicit((_Atomic uint64_t *)(uintptr_t)done, 1, memory_order_release);
    if (d != NULL) {
        *d = (struct rqi_place_done){NULL, fn, arg, 0};
        queue_place_done(ctx, d);
    }
    return 0;
}

int rq_place(rq_ctx_t *ctx, const rq_msg_t *msg, void *dst, volatile uint64_t *done,
             rq_place_fn fn, void *arg)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    /* Only from the running handler, which already owns the context. */
    return place_body(ctx, msg, dst, done, fn, arg);
}

int rq_place_segment(rq_ctx_t *ctx, const rq_msg_t *msg, uint64_t off, volatile uint64_t *done,
                     rq_place_fn fn, void *arg)
{
    if (ctx == NULL || msg == NULL || msg != ctx->place.msg || ctx->place.placed)
        return RQ_EINVAL;
    if (off > ctx->seg_bytes || ctx->place.len > ctx->seg_bytes - off) {
        ctx->stats.rejected++;
        return RQ_ERANGE;
    }
    return place_body(ctx, msg, ctx->seg[ctx->rank] + off, done, fn, arg);
}

int rq_poll(rq_ctx_t *ctx)
{
    if (RQI_UNLIKELY(ctx == NULL))
        return RQ_EINVAL;
    RQI_GUARDED_RECV(ctx, rqi_poll(ctx));
}

/* Active messages from other nodes: in place from UCX's receive buffer
 * (direct), unless buffered ones are older (then they join the buffer, to
 * be run in order by the caller).  Returns handlers run. */
static RQI_NOINLINE int poll_remote(rq_ctx_t *ctx, int batch)
{
    if (rqi_vfifo_head(&ctx->fifo[RQ_AM_QUEUE]) != NULL || RQI_UNLIKELY(ctx->buffer_always)) {
        (void)ctx->net->drain(ctx);
        return 0;
    }
    int n = 0;
    rq_msg_t m;
    struct rqi_ucx_rx *e;
    while (n < batch && (e = ctx->net->am_next(ctx, &m)) != NULL) {
        ctx->stats.received++;
        ctx->stats.direct++;
        if (RQI_UNLIKELY(ctx->net->rx_deferred(e))) {
            /* Its payload is still at the sender: rq_place pulls it.  A
             * handler that no longer places gets it pulled here first. */
            if (ctx->handlers[m.handler].flags & RQ_HF_PLACE) {
                ctx->place_ucx = e;
            } else if (ctx->net->rx_fetch(ctx, e, &m) != 0) {
                ctx->net->rx_free(ctx, e); /* the job failed */
                break;
            }
        }
        n += run_handler(ctx, &m);
        ctx->place_ucx = NULL;
        ctx->net->rx_free(ctx, e);
    }
    return n;
}

_Thread_local uint32_t rqi_poll_seq __attribute__((tls_model("initial-exec")));

int rqi_poll(rq_ctx_t *ctx)
{
    /* Another node's packets are taken in (no handler runs), also inside
     * a handler: a sender waiting on us needs the network drained. */
    if (RQI_UNLIKELY(ctx->ucx != NULL))
        ctx->net->progress(ctx);
    /* proc strategy: global-address requests are served by whoever polls
     * (no handler runs, so also inside a handler). */
    if (ctx->gas.strategy == RQI_GAS_PROC)
        ctx->hooks.gas_serve(ctx);
    else if (ctx->gas.strategy == RQI_GAS_NP && !rqi_load_relaxed(&ctx->gas.np_active))
        ctx->hooks.gas_help(ctx);
    if (RQI_UNLIKELY(rqi_in_handler(ctx)))
        return 0; /* handlers are atomic: none runs inside another */
    if (RQI_UNLIKELY(ctx->ob.records != 0))
        ctx->hooks.outbox_flush(ctx);
    /* Long requests the copy engine landed: announce them (gas/async.h). */
    if (RQI_UNLIKELY(rqi_load_relaxed(&ctx->async.landed_n) != 0))
        (void)ctx->hooks.async_announce(ctx);
    if (RQI_UNLIKELY(rqi_load_relaxed(&ctx->async.npulls) != 0))
        (void)ctx->hooks.async_reap(ctx);
    int nd = 0; /* placement callbacks run */
    if (RQI_UNLIKELY(ctx->place_done != NULL))
        nd = run_place_done(ctx);
    struct rqi_vfifo *am = &ctx->fifo[RQ_AM_QUEUE];
    const unsigned nl = ctx->nlanes;
    const int batch = (int)ctx->cfg.v[RQI_CFG_POLL_BATCH];
    int nr = nd; /* handlers run for other nodes' messages, and callbacks */
    if (RQI_UNLIKELY(ctx->ucx != NULL) && ctx->net->am_waiting(ctx))
        nr = poll_remote(ctx, batch);
    if (RQI_LIKELY(rqi_vfifo_head(am) == NULL) && rqi_rx_all_empty(ctx))
        return nr;
    rqi_poll_seq++;
    unsigned l = ctx->lane_rr, empty = 0;
    int n = nr;
    rq_msg_t m;
    /* Stay on a lane while it has packets; return once a lane runs dry
     * after a delivery (the caller is usually waiting for exactly that), or
     * when every lane was found empty.  The next poll starts at the next
     * lane, so a busy lane cannot starve the others. */
    while (n < batch && empty < nl) {
        /* Buffered packets are older than anything still in a lane. */
        struct rqi_vrec *v = rqi_vfifo_head(am);
        if (RQI_UNLIKELY(v != NULL)) {
            rqi_msg_from_vrec(v, &m);
            unsigned cls = (v->flags & RQI_VR_CLS_MASK) >> RQI_VR_CLS_SHIFT;
            n += run_handler(ctx, &m);
            rqi_vbuf_pop(&ctx->vb, am);
            rqi_held_sub(ctx, cls);
            ctx->stats.buffered++;
            rqi_mode_update(ctx);
            continue;
        }
        struct rqi_ring_rx *rx = &ctx->rx[l];
        struct rqi_pkt *p = rqi_ring_rx_peek(rx);
        if (RQI_UNLIKELY(p != NULL &&
                         (p->qid != RQ_AM_QUEUE || p->kind == RQI_PK_FRAG ||
                          p->kind == RQI_PK_PAD || RQI_UNLIKELY(ctx->buffer_always) ||
                          rqi_pkt_check(ctx, rx, p) != RQI_PKT_OK))) {
            /* Slow cases: PAD, rejects, fragments, other queues, and every
             * packet under RQ_BUFFER_ALWAYS (it then runs from the buffer
             * at the top of the loop). */
            p = rqi_rx_next_lane(ctx, rx);
            if (p != NULL && (p->qid != RQ_AM_QUEUE || p->kind == RQI_PK_FRAG ||
                              ctx->buffer_always)) {
                /* A PDQ's packet its helper, this thread, takes in next:
                 * leave the lane to it (rqi_pdq_defer), with the space
                 * released before it handed back: the helper's look
                 * (rqi_ring_rx_waiting) reads the slot at the published
                 * head, and found the last packet taken, not this one. */
                if (p->kind == RQI_PK_INLINE && ctx->pdq[p->qid] != NULL && !ctx->buffer_always &&
                    ctx->hooks.pdq_defer(ctx->pdq[p->qid])) {
                    rqi_ring_rx_idle(rx);
                    empty++;
                    l = l + 1 == nl ? 0 : l + 1;
                    continue;
                }
                if (rqi_ingest(ctx, rx, p) != 0)
                    break; /* out of memory: leave it in the lane */
                continue;
            }
        }
        if (p == NULL) {
            rqi_ring_rx_idle(rx);
            if (n > 0)
                break; /* delivered: return now, the next poll starts at the next lane */
            empty++;
            l = l + 1 == nl ? 0 : l + 1;
            continue;
        }
        empty = 0;
        /* Direct delivery: the handler reads the packet in place. */
        uint64_t pos = rqi_ring_rx_take(rx, p);
        rqi_msg_from_pkt(ctx, p, &m);
        ctx->stats.received++;
        ctx->stats.direct++;
        n += run_handler(ctx, &m);
        rqi_pkt_done(ctx, p);
        rqi_ring_rx_release(rx, p, pos);
        /* The lane's next packet, looked for here in a branch of its own
         * rather than at the top of the loop.  In a ping-pong it is not
         * there yet and its slot line is not in this core's cache: the
         * load misses.  Predicted "empty", the return and the caller's
         * reply run in its shadow; the branch at the top, trained
         * "present" by every first look, mispredicted and replayed them
         * after the miss: up to 40-60 ns of one-way latency, by placement
         * (docs/data/am-after-delivery-2026-11-27.txt).  A packet found
         * here is looked at again at the top (a hit), not reused: the
         * handlers run in between may drain the lane into the buffer. */
        if (RQI_LIKELY(n > 0) && rqi_ring_rx_peek(rx) == NULL) {
            rqi_ring_rx_idle(rx);
            break;
        }
    }
    ctx->lane_rr = l + 1 == nl ? 0 : l + 1;
    return n;
}

struct word_wait { const volatile uint64_t *word; uint64_t at_least; };
static int word_reached(rq_ctx_t *ctx, const void *arg)
{
    (void)ctx;
    const struct word_wait *w = arg;
    /* Acquire: pairs with whoever released the word (a handler of this
     * rank, another thread, a transfer's completer). */
    return __atomic_load_n(w->word, __ATOMIC_ACQUIRE) >= w->at_least;
}

int rq_wait_until(rq_ctx_t *ctx, const volatile uint64_t *word, uint64_t at_least)
{
    if (ctx == NULL || word == NULL)
        return RQ_EINVAL;
    if (rqi_in_handler(ctx))
        return RQ_EPERM;
    struct word_wait w = {word, at_least};
    RQI_GUARDED(ctx, rqi_poll_until(ctx, word_reached, &w));
}

