/* deliver.h - two-case delivery: packets are read in place from the
 * inbound ring (direct) or copied into the per-queue virtual buffer
 * (buffered) when they cannot be delivered now: a sender blocked on a full
 * ring drains its own ring this way without running any handler, which is
 * what makes handler sends deadlock-free.  Every queue is read in the
 * order: packet held by a view, then its buffer FIFO, then the ring, which
 * keeps per-(source, queue) FIFO order across both cases. */
#ifndef RQI_DELIVER_H
#define RQI_DELIVER_H

#include "ctx.h"
#include "net/wait.h"
#include "net/shm_bulk.h"

/* The largest payload a receiver accepts (ctx->large_max) is this node's
 * physical memory: a first fragment or a UCX packet announcing more could
 * never be allocated, so it is refused as forged (see rq_request). */

enum { RQI_PKT_OK = 0, RQI_PKT_REJECT = 1, RQI_PKT_BROKEN = 2 };

/* The checks of a packet's fields shared by both transports: every field
 * that steers a read or a write, against this job's limits (payloads up
 * to len_max in place).  RQI_PKT_OK or RQI_PKT_REJECT. */
static inline int rqi_pkt_fields_check(const rq_ctx_t *ctx, const struct rqi_pkt *p,
                                       uint64_t len_max)
{
    if (RQI_UNLIKELY(p->job != ctx->job32))
        return RQI_PKT_REJECT;
    const unsigned keyed = (p->flags & RQI_PF_KEY) != 0;
    if (RQI_UNLIKELY(p->src >= (uint32_t)ctx->size || p->qid >= RQ_MAX_QUEUES ||
                     p->nargs > RQ_MAX_ARGS + keyed || p->len > len_max ||
                     p->kind < RQI_PK_INLINE || p->kind > RQI_PK_RNDV || p->kind == RQI_PK_PAD ||
                     (p->flags & ~(RQI_PF_SYSTEM | RQI_PF_KEY | RQI_PF_INTR)) != 0))
        return RQI_PKT_REJECT;
    /* A key word rides behind the arguments of a PDQ message, never on
     * the AM queue or a system packet. */
    if (keyed && (p->qid == RQ_AM_QUEUE || (p->flags & RQI_PF_SYSTEM) ||
                  (p->nargs == 0 && p->kind != RQI_PK_FRAG)))
        return RQI_PKT_REJECT;
    if (p->flags & RQI_PF_SYSTEM) {
        if (p->qid != RQ_AM_QUEUE || p->tag >= RQI_SYS_COUNT)
            return RQI_PKT_REJECT;
    } else if (p->qid == RQ_AM_QUEUE && p->tag >= RQ_MAX_HANDLERS) {
        return RQI_PKT_REJECT;
    }
    if (p->kind == RQI_PK_LONG) {
        const struct rqi_pkt_long *e = rqi_pkt_ext((struct rqi_pkt *)p);
        if (p->len != 0 || e->off > ctx->seg_bytes || e->len > ctx->seg_bytes - e->off)
            return RQI_PKT_REJECT;
    } else if (p->kind == RQI_PK_FRAG) {
        const struct rqi_pkt_frag *e = rqi_pkt_ext((struct rqi_pkt *)p);
        if (p->len == 0 || e->total > ctx->large_max || e->offset > e->total ||
            p->len > e->total - e->offset || (e->offset != 0 && p->nargs != 0) ||
            (keyed && e->offset == 0 && p->nargs == 0))
            return RQI_PKT_REJECT;
    } else if (p->kind == RQI_PK_RNDV) {
        /* The payload lies in the sender's staging area: a block header
         * at a 64-byte boundary, then len bytes, all inside the area. */
        const struct rqi_pkt_rndv *e = rqi_pkt_ext((struct rqi_pkt *)p);
        const uint64_t room = ctx->bulk_bytes > RQI_BULK_HDR ? ctx->bulk_bytes - RQI_BULK_HDR : 0;
        if (p->len != 0 || e->len == 0 || e->len > room || e->off > room - e->len ||
            (e->off & 63u) != 0)
            return RQI_PKT_REJECT;
    }
    return RQI_PKT_OK;
}

/* The staging block a validated RNDV packet p names, or NULL when no live
 * block of its sender matches (a stale or forged packet). */
static inline struct rqi_bulk_hdr *rqi_rndv_block(const rq_ctx_t *ctx, struct rqi_pkt *p)
{
    const struct rqi_pkt_rndv *e = rqi_pkt_ext(p);
    struct rqi_bulk_hdr *h = rqi_bulk_block(ctx->bulk[p->src], e->off, e->len, e->cookie);
    /* A live block: the sender's hot window resident in our mapping before
     * its payload is read (net/shm_bulk.h: RESIDENCE); the bounds were
     * checked with the packet, and a forged one maps nothing more. */
    const uint64_t end = e->off + rqi_bulk_block_bytes(e->len);
    if (RQI_UNLIKELY(h != NULL && end > ctx->bulk_resident[p->src]))
        rqi_bulk_make_resident(ctx->bulk[p->src], ctx->bulk_bytes, &ctx->bulk_resident[p->src],
                               end, 0);
    return h;
}

/* A delivered packet is done with: a RNDV packet hands its staging block
 * back to the sender (before the slots are released). */
static inline void rqi_pkt_done(const rq_ctx_t *ctx, struct rqi_pkt *p)
{
    if (RQI_UNLIKELY(p->kind == RQI_PK_RNDV)) {
        const struct rqi_pkt_rndv *e = rqi_pkt_ext(p);
        rqi_bulk_release((struct rqi_bulk_hdr *)(ctx->bulk[p->src] + e->off), e->cookie);
    }
}

/* Validate the published packet p at lane rx's scan position.
 * RQI_PKT_BROKEN: its slot count cannot be trusted (the lane's framing is
 * lost); RQI_PKT_REJECT: drop it (its slot count is sound). */
static inline int rqi_pkt_check(const rq_ctx_t *ctx, const struct rqi_ring_rx *rx,
                                struct rqi_pkt *p)
{
    uint64_t off = rx->scan & (rx->nslots - 1);
    if (RQI_UNLIKELY(p->nslots == 0 || off + p->nslots > rx->nslots))
        return RQI_PKT_BROKEN;
    if (p->kind == RQI_PK_PAD)
        return RQI_UNLIKELY(p->job != ctx->job32) ? RQI_PKT_REJECT : RQI_PKT_OK;
    if (rqi_pkt_fields_check(ctx, p, ctx->medium_max) != RQI_PKT_OK ||
        RQI_UNLIKELY(p->nslots != rqi_pkt_slots(p->kind, p->nargs, p->len)))
        return RQI_PKT_REJECT;
    if (RQI_UNLIKELY(p->kind == RQI_PK_RNDV) &&
        (ctx->remote[p->src] || rqi_rndv_block(ctx, p) == NULL))
        return RQI_PKT_REJECT;
    return RQI_PKT_OK;
}

/* The next valid packet at a scan position of one of our lanes (tried in
 * order from lane_rr), with its lane in *rxo, or NULL when none is
 * published.  PAD packets and rejected packets are consumed (and counted)
 * on the way; a broken lane marks the context failed. */
struct rqi_pkt *rqi_rx_next(rq_ctx_t *ctx, struct rqi_ring_rx **rxo);
/* The same for one lane. */
struct rqi_pkt *rqi_rx_next_lane(rq_ctx_t *ctx, struct rqi_ring_rx *rx);

/* 1 when no lane has a packet published: the empty poll, the common case
 * while waiting, in one pass over the lanes' sequence words, handing
 * released space back to the senders on the way. */
static RQI_ALWAYS_INLINE int rqi_rx_all_empty(rq_ctx_t *ctx)
{
    unsigned k = 0;
    while (k < ctx->nlanes && rqi_ring_rx_peek(&ctx->rx[k]) == NULL)
        rqi_ring_rx_idle(&ctx->rx[k++]);
    return k == ctx->nlanes;
}

/* Copy the valid packet p at rx's scan into its queue's FIFO (or
 * reassembly) and release its slots.  0, or RQ_ENOMEM (p stays). */
int rqi_ingest(rq_ctx_t *ctx, struct rqi_ring_rx *rx, struct rqi_pkt *p);
/* The same for a validated INLINE or LONG packet p whose payload (len
 * bytes) is at data, wherever it came from (the UCX transport).  0 or
 * RQ_ENOMEM (nothing taken). */
int rqi_ingest_pkt(rq_ctx_t *ctx, struct rqi_pkt *p, void *data, size_t len);

/* Ingest every published packet of every lane: make room without running
 * handlers.  0 or RQ_ENOMEM. */
int rqi_drain(rq_ctx_t *ctx);

/* Nonzero when one of our lanes holds a packet that is taken but not
 * released (a handler running in place, a view): draining cannot free the
 * space behind it. */
static inline int rqi_rx_pinned(const rq_ctx_t *ctx)
{
    for (unsigned l = 0; l < ctx->nlanes; l++)
        if (ctx->rx[l].head != ctx->rx[l].scan)
            return 1;
    return 0;
}



void rqi_msg_from_vrec(struct rqi_vrec *r, rq_msg_t *m);

/* Describe the (validated) packet p for a handler or a view: in place. */
static inline void rqi_msg_from_pkt(const rq_ctx_t *ctx, struct rqi_pkt *p, rq_msg_t *m)
{
    m->src = (int)p->src;
    m->qid = p->qid;
    m->handler = p->tag;
    m->nargs = p->nargs;
    m->args = rqi_pkt_args(p);
    if (p->kind == RQI_PK_LONG) {
        const struct rqi_pkt_long *e = rqi_pkt_ext(p);
        m->data = ctx->seg[ctx->rank] + e->off;
        m->len = e->len;
    } else if (p->kind == RQI_PK_RNDV) {
        const struct rqi_pkt_rndv *e = rqi_pkt_ext(p);
        m->data = ctx->bulk[p->src] + e->off + RQI_BULK_HDR;
        m->len = e->len;
    } else {
        m->data = rqi_pkt_payload(p);
        m->len = p->len;
    }
    m->key = RQ_KEY_NOSYNC;
    if (RQI_UNLIKELY(p->flags & RQI_PF_KEY) && p->nargs != 0)
        m->key = m->args[--m->nargs];
    m->rqi_flags = p->flags & RQI_PF_SYSTEM;
    m->rqi_pad = 0;
}

/* ---- active messages held in private buffers ---------------------------
 * An active message that left the lanes without running (moved into the
 * virtual buffer by a drain or a revocation, or waiting in the UCX arrival
 * list) passes the progress thread's interrupt marks: the lanes no longer
 * show it.  Its interrupt class is counted in ctx->vni.held[] so that the
 * progress thread still owes it an interrupt (progress/thread.c) until it
 * has run.  The classes (RQI_CLS_*) and rqi_held_add are vni's (vni.h). */

/* How an active message interrupts: never (a named queue, librq's own),
 * under RQ_INTR_ALL only, or under RQ_INTR_SELECTIVE too (its handler was
 * registered RQ_HF_INTERRUPT or it was sent with RQ_INTERRUPT). */
static inline unsigned rqi_cls_of(const rq_ctx_t *ctx, unsigned qid, unsigned tag,
                                  unsigned pflags)
{
    if (qid != RQ_AM_QUEUE || (pflags & RQI_PF_SYSTEM))
        return RQI_CLS_NONE;
    return (pflags & RQI_PF_INTR) || (ctx->handlers[tag].flags & RQ_HF_INTERRUPT)
               ? RQI_CLS_INTR
               : RQI_CLS_PLAIN;
}

/* One fewer held message of class cls (one more: rqi_held_add, vni.h);
 * the owner of the context only. */
static inline void rqi_held_sub(rq_ctx_t *ctx, unsigned cls)
{
    if (cls != RQI_CLS_NONE) {
        _Atomic uint64_t *h = &ctx->vni.held[cls - 1];
        /* One writer at a time (the owner): no read-modify-write needed. */
        rqi_store_release(h, rqi_load_relaxed(h) - 1);
    }
}

/* A virtual-buffer record of an active message: count it held. */
static inline void rqi_held_rec(rq_ctx_t *ctx, struct rqi_vrec *v)
{
    unsigned cls = rqi_cls_of(ctx, v->qid, v->tag, v->flags);
    v->flags = (uint8_t)((v->flags & ~RQI_VR_CLS_MASK) | cls << RQI_VR_CLS_SHIFT);
    if (cls != RQI_CLS_NONE)
        rqi_held_add(ctx, cls);
}

/* Keep the direct/buffered mode and its switch counter current, and
 * overflow control's view of the buffer (src/vni/overflow.c). */
static inline void rqi_mode_update(rq_ctx_t *ctx)
{
    int b = ctx->vb.records != 0;
    if (b != ctx->buffered_mode) {
        ctx->buffered_mode = b;
        ctx->stats.mode_switches++;
        if (!b)
            rqi_overflow_leave(ctx);
    }
    if (RQI_UNLIKELY(ctx->vb.bytes_now > ctx->vni.ovf_bytes ||
                     rqi_load_relaxed(&ctx->vni.ovf_member)))
        rqi_overflow_check(ctx);
}

#endif
