/* am.c - active messages: send (short, medium, fragmented, long), poll,
 * wait.  With shm_ring.h this file is the whole hot path:
 *   send: validate -> reserve slots in dst's ring -> copy -> publish;
 *   poll: peek own ring -> validate -> run the handler in place -> release.
 * The only indirect call is the user's handler. */
#include "am/am.h"
#include "net/net.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/copy.h"
#include "deliver/deliver.h"
#include "pdq/pdq.h"

static inline int rank_ok(const rq_ctx_t *ctx, int r) { return (unsigned)r < (unsigned)ctx->size; }

/* dst's lane lock (ctx.h, "THE LANE LOCK"), in thread-safe mode and for a
 * rank of this node: 1 taken (give it back), 0 not needed.  Held only
 * across a reservation, its copy and publication, never across a wait,
 * and taken after the context's lock, never before: a holder that spins
 * here waits for a few stores. */
static RQI_ALWAYS_INLINE int lane_lock(rq_ctx_t *ctx, int dst)
{
    if (RQI_LIKELY(rqi_load_relaxed(&ctx->mt.on) == 0) || ctx->remote[dst])
        return 0;
    _Atomic uint32_t *lk = &ctx->txl[dst].lk;
    unsigned spins = 0;
    while (RQI_UNLIKELY(atomic_exchange_explicit(lk, 1u, memory_order_acquire) != 0)) {
        while (rqi_load_relaxed(lk) != 0) {
            if (++spins < 256)
                rqi_cpu_relax();
            else
                sched_yield(); /* its holder was preempted */
        }
    }
    return 1;
}

static RQI_ALWAYS_INLINE void lane_unlock(rq_ctx_t *ctx, int dst, int locked)
{
    if (locked)
        atomic_store_explicit(&ctx->txl[dst].lk, 0u, memory_order_release);
}

/* One packet to write, from the caller's buffers or from an outbox record. */
struct pkt_desc {
    unsigned        kind, qid, tag, pflags, nargs;
    const uint64_t *args;
    const void     *data; /* INLINE/FRAG: bytes placed in the packet;
                             LONG: bytes copied into the target segment;
                             RNDV: none (already staged) */
    size_t          len;
    uint64_t        ext[3]; /* LONG: off, len; FRAG: msg id, total, offset;
                               RNDV: staging offset, len, cookie */
    unsigned        sflags; /* the caller's send flags (RQ_INTERRUPT) */
};

/* After a publish: the target may want an interrupt for it (one load of a
 * read-mostly line while no rank has interrupts on). */
static RQI_ALWAYS_INLINE void note_sent(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag,
                                        unsigned pflags, unsigned sflags)
{
    if (RQI_UNLIKELY(rqi_load_relaxed(&ctx->shm.hdr->intr_ranks) != 0))
        rqi_vni_sent(ctx, dst, qid, tag, pflags, sflags);
}

/* RQ_INTERRUPT travels in the packet (RQI_PF_INTR): a receiver that holds
 * the packet privately still knows that it interrupts. */
_Static_assert(RQ_INTERRUPT << 1 == RQI_PF_INTR, "pf_intr shifts the send flag into place");
static RQI_ALWAYS_INLINE unsigned pf_intr(unsigned sflags) { return (sflags & RQ_INTERRUPT) << 1; }

static inline size_t desc_inline_len(const struct pkt_desc *d)
{
    return d->kind == RQI_PK_LONG || d->kind == RQI_PK_RNDV ? 0 : d->len;
}

/* Fill the reserved packet p and publish it. */
static RQI_ALWAYS_INLINE void write_packet(rq_ctx_t *ctx, int dst, struct rqi_pkt *p,
                                           uint64_t pos, unsigned n, const struct pkt_desc *d)
{
    size_t inl = desc_inline_len(d);
    size_t at = sizeof(struct rqi_pkt) + rqi_pkt_ext_bytes(d->kind) + 8u * d->nargs;
    /* The packet's first line last: see rqi_pkt_copy_tail. */
    size_t first = inl != 0 ? rqi_pkt_copy_tail(p, at, d->data, inl) : 0;
    rqi_pkt_write_header(p, ctx->job32, (uint32_t)ctx->rank, d->tag, d->qid, d->nargs, d->kind,
                         (uint32_t)inl, n, d->pflags | pf_intr(d->sflags));
    if (RQI_UNLIKELY(d->kind == RQI_PK_LONG)) {
        /* Reserved first, so RQ_EAGAIN leaves the target segment untouched;
         * the copy is ordered before the packet by the publishing release. */
        if (d->len != 0)
            rqi_copy_chosen(&ctx->seg_copy[dst], ctx->bulk_stream, ctx->seg[dst] + d->ext[0],
                            d->data, d->len);
        struct rqi_pkt_long *e = rqi_pkt_ext(p);
        e->off = d->ext[0];
        e->len = d->ext[1];
    } else if (RQI_UNLIKELY(d->kind == RQI_PK_FRAG || d->kind == RQI_PK_RNDV)) {
        /* frag: msg id, total, offset; rndv: staging offset, len, cookie */
        _Static_assert(sizeof(struct rqi_pkt_frag) == sizeof(struct rqi_pkt_rndv),
                       "fragment and staged extensions have the same three words");
        uint64_t *e = rqi_pkt_ext(p);
        e[0] = d->ext[0];
        e[1] = d->ext[1];
        e[2] = d->ext[2];
    }
    uint64_t *a = rqi_pkt_args(p);
    for (unsigned i = 0; i < d->nargs; i++)
        a[i] = d->args[i];
    if (first != 0)
        memcpy((char *)p + at, d->data, first);
    rqi_ring_tx_publish(p, pos);
    ctx->stats.sent++;
}

/* Reserve and write without waiting: 0, or RQ_EAGAIN (nothing written). */
static RQI_ALWAYS_INLINE int try_write(rq_ctx_t *ctx, int dst, const struct pkt_desc *d)
{
    if (RQI_UNLIKELY(ctx->remote[dst])) {
        struct rqi_ucx_out o = {d->kind,   d->qid,  d->tag, d->pflags, d->nargs,
                                d->sflags, d->args, d->data, d->len,   d->ext[0]};
        return ctx->net->send(ctx, dst, &o);
    }
    unsigned n = rqi_pkt_slots(d->kind, d->nargs, desc_inline_len(d));
    uint64_t pos;
    struct rqi_pkt *p = rqi_ring_tx_reserve(&ctx->tx[dst], n, ctx->job32, (uint32_t)ctx->rank, &pos);
    if (p == NULL)
        return RQ_EAGAIN;
    write_packet(ctx, dst, p, pos, n, d);
    note_sent(ctx, dst, d->qid, d->tag, d->pflags, d->sflags);
    if (RQI_UNLIKELY(d->pflags & RQI_PF_KEY))
        rqi_vni_pdq_sent(ctx, dst, d->qid);
    return 0;
}

/* Send what fits of dst's outbox, in order (dst's lane lock held). */
static void outbox_flush_held(rq_ctx_t *ctx, int dst)
{
    struct rqi_vfifo *f = &ctx->outbox[dst];
    struct rqi_vrec *r;
    while ((r = rqi_vfifo_head(f)) != NULL) {
        struct pkt_desc d = {r->kind, r->qid, r->tag, r->flags & (RQI_PF_SYSTEM | RQI_PF_KEY), r->nargs,
                             r->args, r->data, r->len,
                             {r->args[r->nargs], r->args[r->nargs + 1], r->args[r->nargs + 2]},
                             (r->flags & RQI_VR_INTR) ? RQ_INTERRUPT : 0u};
        if (try_write(ctx, dst, &d) != 0)
            return;
        rqi_vbuf_pop(&ctx->ob, f);
    }
    if (ctx->ob.records == 0 && rqi_load_relaxed(&ctx->vni.ob_pending) != 0)
        rqi_store_release(&ctx->vni.ob_pending, 0u);
}

static void outbox_flush(rq_ctx_t *ctx, int dst)
{
    int l = lane_lock(ctx, dst);
    outbox_flush_held(ctx, dst);
    lane_unlock(ctx, dst, l);
}

/* What the outbox holds goes first, then d if it fits: 0 sent, else not. */
static int flush_then_write(rq_ctx_t *ctx, int dst, const struct pkt_desc *d)
{
    int l = lane_lock(ctx, dst);
    outbox_flush_held(ctx, dst);
    int rc = rqi_vfifo_head(&ctx->outbox[dst]) == NULL ? try_write(ctx, dst, d) : RQ_EAGAIN;
    lane_unlock(ctx, dst, l);
    return rc;
}

void rqi_outbox_flush_all(rq_ctx_t *ctx)
{
    for (int r = 0; r < ctx->size && ctx->ob.records != 0; r++)
        if (rqi_vfifo_head(&ctx->outbox[r]) != NULL)
            outbox_flush(ctx, r);
}

/* Park d in dst's outbox: it is committed; a later librq call, or the
 * progress thread while the application computes, delivers it. */
static int park(rq_ctx_t *ctx, int dst, const struct pkt_desc *d)
{
    int l = lane_lock(ctx, dst);
    struct rqi_vrec *r = rqi_vbuf_push(&ctx->ob, &ctx->outbox[dst], d->nargs + 3, d->len);
    if (r == NULL) {
        lane_unlock(ctx, dst, l);
        return RQ_ENOMEM;
    }
    r->nargs = (uint8_t)d->nargs; /* the 3 words after the args hold ext */
    r->tag = d->tag;
    r->qid = (uint16_t)d->qid;
    r->flags = (uint8_t)(d->pflags | ((d->sflags & RQ_INTERRUPT) ? RQI_VR_INTR : 0u));
    r->kind = d->kind;
    for (unsigned i = 0; i < d->nargs; i++)
        r->args[i] = d->args[i];
    for (unsigned i = 0; i < 3; i++)
        r->args[d->nargs + i] = d->ext[i];
    if (d->len != 0)
        memcpy(r->data, d->data, d->len);
    lane_unlock(ctx, dst, l);
    ctx->parked++;
    if (rqi_load_relaxed(&ctx->vni.ob_pending) == 0) {
        rqi_store_release(&ctx->vni.ob_pending, 1u);
        if (ctx->vni.on && !rqi_vni_on_progress)
            rqi_vni_ring(ctx, ctx->rank, RQI_BELL_OUTBOX);
    }
    return 0;
}

int rqi_send_landed(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                    unsigned nargs, uint64_t off, uint64_t len, unsigned flags)
{
    if (ctx->fail.failed)
        return RQ_EPEER;
    /* No bytes to copy (data NULL, len 0): ext names the landed ones. */
    struct pkt_desc d = {RQI_PK_LONG, RQ_AM_QUEUE, handler, 0, nargs, args, NULL, 0,
                         {off, len, 0}, flags & RQ_INTERRUPT};
    if (flush_then_write(ctx, dst, &d) == 0)
        return 0;
    return park(ctx, dst, &d);
}

/* dst's ring is full or its outbox is not empty.  Outside a pinned state
 * the sender waits, draining its own ring (running no handler) so that
 * whoever it waits for can progress; that is the back-pressure a fast
 * sender feels.  While its own ring is pinned (a handler running in place,
 * a held view) draining cannot free ring space, and a cycle of such
 * senders would wait forever, so the packet is parked instead. */
static RQI_NOINLINE int send_slow(rq_ctx_t *ctx, int dst, const struct pkt_desc *d, int nonblock)
{
    unsigned spins = 0, kicks = 0;
    for (;;) {
        if (ctx->fail.failed)
            return RQ_EPEER;
        /* A rank that left rq_finalize reads no more: nothing is sent (only
         * a thread that outlives the finalize rules can get here). */
        if (RQI_UNLIKELY(!ctx->remote[dst] &&
                         rqi_load_acquire(&rqi_shm_area(&ctx->shm, (uint32_t)dst)->departed)))
            return RQ_EPEER;
        /* Overflow control: the job is stopped (src/vni/overflow.c).  Not
         * for the library's own packets (collectives, few and small): a
         * rank held in a barrier's send while the ranks that left it flood
         * the receiver would hold the barrier, and so the receiver, for
         * good. */
        if (RQI_UNLIKELY(rqi_overflow_stopped(&ctx->vni)) && !(d->pflags & RQI_PF_SYSTEM) &&
            !rqi_in_handler(ctx) && !rqi_vni_on_progress &&
            !rqi_load_relaxed(&ctx->vni.ovf_member)) {
            if (nonblock)
                return RQ_EAGAIN;
            int rc = rqi_overflow_wait(ctx);
            if (rc != 0)
                return rc;
        }
        if (flush_then_write(ctx, dst, d) == 0)
            return 0;
        if (nonblock)
            return RQ_EAGAIN;
        int rc = rqi_drain(ctx);
        if (rc != 0)
            return rc;
        if (flush_then_write(ctx, dst, d) == 0)
            return 0;
        if (rqi_rx_pinned(ctx))
            return park(ctx, dst, d);
        /* Start dst's atomicity timer, and again now and then while we
         * wait: its progress thread buffers what dst does not drain. */
        if ((kicks++ & 1023u) == 0 && !ctx->remote[dst])
            rqi_vni_full(ctx, dst);
        /* The rank we wait for may itself wait for our global-address
         * service (proc strategy): serving never runs a handler. */
        if (ctx->gas.strategy == RQI_GAS_PROC)
            ctx->hooks.gas_serve(ctx);
        if ((rc = rqi_wait_step(ctx, &spins)) != 0)
            return rc;
    }
}

static RQI_ALWAYS_INLINE int send_packet(rq_ctx_t *ctx, int dst, const struct pkt_desc *d,
                                         int nonblock)
{
    /* Overflow control's STOP (one load of our own, rarely written line):
     * the slow path honours it.  Not only on a full lane: a receiver that
     * buffers as fast as we send (polling without consuming, or its
     * progress thread revoking) never lets the lane fill. */
    if (RQI_UNLIKELY(rqi_overflow_stopped(&ctx->vni)))
        return send_slow(ctx, dst, d, nonblock);
    int l = lane_lock(ctx, dst);
    int rc = RQI_LIKELY(rqi_vfifo_head(&ctx->outbox[dst]) == NULL) ? try_write(ctx, dst, d)
                                                                     : RQ_EAGAIN;
    lane_unlock(ctx, dst, l);
    if (rc == 0)
        return 0;
    return send_slow(ctx, dst, d, nonblock);
}

/* A medium payload above rq_medium_max() that the staging area cannot
 * take (larger than it, or a full area while our lanes are pinned):
 * fragments of at most rq_medium_max(),
 * the first carrying the args; the receiver reassembles them. */
static RQI_NOINLINE int send_fragmented(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag,
                                        unsigned pflags, const uint64_t *args, unsigned nargs,
                                        const void *data, size_t len, unsigned flags)
{
    const int nonblock = (flags & RQ_NONBLOCK) != 0;
    uint64_t id = ctx->next_msg_id++;
    for (size_t off = 0; off < len;) {
        size_t chunk = len - off < ctx->medium_max ? len - off : ctx->medium_max;
        struct pkt_desc d = {RQI_PK_FRAG, qid, tag, pflags, off == 0 ? nargs : 0, args,
                             (const char *)data + off, chunk, {id, len, off}, flags};
        /* Only the first fragment may be refused: after it, the message is
         * committed and the rest must follow. */
        int rc = send_packet(ctx, dst, &d, nonblock && off == 0);
        if (rc != 0)
            return rc;
        off += chunk;
    }
    return 0;
}

/* A medium payload above rq_medium_max() to a rank of this node: one copy
 * into our staging area (net/shm_bulk.h), then a small RNDV packet in the
 * lane; the receiver reads the payload in place and releases the block.
 * While the area has no room the sender waits as on a full ring: it
 * drains its own lanes (which also releases other senders' blocks, so two
 * ranks waiting for each other's room both progress) and nudges the
 * receiver of the oldest block (its atomicity timer).  Inside a pinned
 * handler waiting could not help, so the payload is fragmented instead. */
static RQI_NOINLINE int send_staged(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag,
                                    unsigned pflags, const uint64_t *args, unsigned nargs,
                                    const void *data, size_t len, unsigned flags)
{
    const int nonblock = (flags & RQ_NONBLOCK) != 0;
    struct rqi_bulk_tx *b = &ctx->btx;
    uint64_t off, undo, cookie;
    unsigned spins = 0, kicks = 0;
    while ((cookie = rqi_bulk_alloc(b, len, (uint32_t)dst, &off, &undo)) == 0) {
        if (nonblock)
            return RQ_EAGAIN;
        if (rqi_rx_pinned(ctx))
            return send_fragmented(ctx, dst, qid, tag, pflags, args, nargs, data, len, flags);
        int rc = rqi_drain(ctx);
        if (rc != 0)
            return rc;
        int o = rqi_bulk_oldest_dst(b);
        if ((kicks++ & 1023u) == 0 && o >= 0 && !ctx->remote[o])
            rqi_vni_full(ctx, o);
        if (ctx->gas.strategy == RQI_GAS_PROC)
            ctx->hooks.gas_serve(ctx);
        if ((rc = rqi_wait_step(ctx, &spins)) != 0)
            return rc;
    }
    /* Past the shared cache's reach the copy streams to memory (copy.h). */
    rqi_copy_chosen(&ctx->stage[dst], ctx->bulk_stream, b->base + off + RQI_BULK_HDR, data, len);
    struct pkt_desc d = {RQI_PK_RNDV, qid, tag, pflags, nargs, args, NULL, 0,
                         {off, len, cookie}, flags};
    int rc = send_packet(ctx, dst, &d, nonblock);
    if (rc != 0)
        rqi_bulk_undo(b, undo); /* never announced: nobody will release it */
    return rc;
}

static RQI_ALWAYS_INLINE int send(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag,
                                  unsigned pflags, const uint64_t *args, unsigned nargs,
                                  const void *data, size_t len, unsigned flags)
{
    if (RQI_UNLIKELY(ctx->fail.failed))
        return RQ_EPEER;
    if (RQI_UNLIKELY(len > ctx->large_max))
        return RQ_EINVAL; /* more than this node's memory: never deliverable */
    int nonblock = (flags & RQ_NONBLOCK) != 0;
    /* Another node: one packet whatever its size (UCX moves large ones by
     * rendezvous). */
    if (RQI_LIKELY(rqi_medium_one_packet(ctx, dst, len))) {
        struct pkt_desc d = {RQI_PK_INLINE, qid, tag, pflags, nargs, args, data, len, {0, 0, 0},
                             flags};
        return send_packet(ctx, dst, &d, nonblock);
    }
    if (rqi_bulk_fits(&ctx->btx, len))
        return send_staged(ctx, dst, qid, tag, pflags, args, nargs, data, len, flags);
    return send_fragmented(ctx, dst, qid, tag, pflags, args, nargs, data, len, flags);
}

int rqi_send(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, unsigned pflags,
             const uint64_t *args, unsigned nargs, const void *data, size_t len,
             unsigned flags)
{
    return send(ctx, dst, qid, tag, pflags, args, nargs, data, len, flags);
}

static inline int send_check(const rq_ctx_t *ctx, int dst, const uint64_t *args, unsigned nargs,
                             const void *data, size_t len, unsigned flags)
{
    if (ctx == NULL || !rank_ok(ctx, dst) || nargs > RQ_MAX_ARGS ||
        (nargs != 0 && args == NULL) || (len != 0 && data == NULL) ||
        (flags & ~(RQ_NONBLOCK | RQ_INTERRUPT)) != 0)
        return RQ_EINVAL;
    return 0;
}

int rqi_send_check(const rq_ctx_t *ctx, int dst, const uint64_t *args, unsigned nargs,
                   const void *data, size_t len, unsigned flags)
{
    return send_check(ctx, dst, args, nargs, data, len, flags);
}

/* The hot path of rq_request and rq_pdq_enqueue: a short or in-place
 * medium packet to a destination with no parked packets, when its ring
 * has room; keyed, the key rides as one more word after the arguments
 * (RQI_PF_KEY).  1: not sent, take the general path (full ring, outbox,
 * fragments), which behaves the same.  `lane`: called in thread-safe mode
 * without the context's lock (rqi_lane_send), holding only dst's lane
 * lock; it leaves to the general path what would read the context's
 * state (a failure seen for the first time, interrupts on somewhere). */
static RQI_ALWAYS_INLINE int fast_send(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag,
                                       const uint64_t *args, unsigned nargs, int keyed,
                                       uint64_t key, const void *data, size_t len, unsigned flags,
                                       int lane)
{
    if (RQI_UNLIKELY(len > ctx->medium_max || ctx->remote[dst]))
        return 1;
    if (lane ? RQI_UNLIKELY(rqi_job_failed_any(ctx) ||
                            rqi_load_relaxed(&ctx->shm.hdr->intr_ranks) != 0)
             : RQI_UNLIKELY(ctx->fail.failed != 0))
        return 1;
    const unsigned nw = nargs + (keyed ? 1u : 0u), pflags = keyed ? RQI_PF_KEY : 0u;
    unsigned n = (unsigned)((sizeof(struct rqi_pkt) + 8u * nw + len + RQI_SLOT_BYTES - 1) /
                            RQI_SLOT_BYTES);
    int l = lane_lock(ctx, dst);
    uint64_t pos;
    struct rqi_pkt *p = RQI_LIKELY(rqi_vfifo_head(&ctx->outbox[dst]) == NULL)
                            ? rqi_ring_tx_reserve(&ctx->tx[dst], n, ctx->job32,
                                                  (uint32_t)ctx->rank, &pos)
                            : NULL;
    if (RQI_UNLIKELY(p == NULL)) {
        lane_unlock(ctx, dst, l);
        return 1;
    }
    uint64_t w[3] = {ctx->hdr_w0,
                     (uint64_t)tag | (uint64_t)qid << 32 | (uint64_t)nw << 48 |
                         (uint64_t)RQI_PK_INLINE << 56,
                     (uint64_t)len | (uint64_t)n << 32 | (uint64_t)(pflags | pf_intr(flags)) << 48};
    uint64_t *a = (uint64_t *)(p + 1);
    size_t first = len != 0 ? rqi_pkt_copy_tail(p, (char *)(a + nw) - (char *)p, data, len) : 0;
    memcpy((char *)p + 8, w, sizeof w);
    for (unsigned i = 0; i < nargs; i++)
        a[i] = args[i];
    if (keyed)
        a[nargs] = key;
    if (first != 0)
        memcpy(a + nw, data, first);
    rqi_ring_tx_publish(p, pos);
    if (lane) {
        RQI_TSAN_SENT();
        _Atomic uint64_t *c = &ctx->txl[dst].sent;
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    } else {
        ctx->stats.sent++;
    }
    lane_unlock(ctx, dst, l);
    if (!lane)
        note_sent(ctx, dst, qid, tag, pflags, flags);
    if (keyed)
        rqi_vni_pdq_sent(ctx, dst, qid);
    return 0;
}

int rqi_lane_send(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, const uint64_t *args,
                  unsigned nargs, int keyed, uint64_t key, const void *data, size_t len,
                  unsigned flags)
{
    if (keyed)
        return fast_send(ctx, dst, qid, tag, args, nargs, 1, key, data, len, flags, 1);
    return fast_send(ctx, dst, qid, tag, args, nargs, 0, 0, data, len, flags, 1);
}

static RQI_ALWAYS_INLINE int request(rq_ctx_t *ctx, int dst, unsigned handler,
                                     const uint64_t *args, unsigned nargs, const void *data,
                                     size_t len, unsigned flags)
{
    if (RQI_LIKELY(fast_send(ctx, dst, RQ_AM_QUEUE, handler, args, nargs, 0, 0, data, len,
                             flags, 0) == 0))
        return 0;
    return send(ctx, dst, RQ_AM_QUEUE, handler, 0, args, nargs, data, len, flags);
}

int rqi_send_keyed(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, const uint64_t *args,
                   unsigned nargs, uint64_t key, const void *data, size_t len, unsigned flags)
{
    if (RQI_LIKELY(fast_send(ctx, dst, qid, tag, args, nargs, 1, key, data, len, flags, 0) == 0))
        return 0;
    uint64_t a[RQ_MAX_ARGS + 1];
    for (unsigned i = 0; i < nargs; i++)
        a[i] = args[i];
    a[nargs] = key;
    return send(ctx, dst, qid, tag, RQI_PF_KEY, a, nargs + 1, data, len, flags);
}

int rq_request(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
               unsigned nargs, const void *data, size_t len, unsigned flags)
{
    if (RQI_UNLIKELY(send_check(ctx, dst, args, nargs, data, len, flags) != 0 ||
                     handler >= RQ_MAX_HANDLERS))
        return RQ_EINVAL;
    /* Thread-safe mode: dst's lane lock alone when the packet fits. */
    if (rqi_load_relaxed(&ctx->mt.on) != 0 &&
        fast_send(ctx, dst, RQ_AM_QUEUE, handler, args, nargs, 0, 0, data, len, flags, 1) == 0)
        return 0;
    RQI_GUARDED(ctx, request(ctx, dst, handler, args, nargs, data, len, flags));
}

int rq_reply(rq_ctx_t *ctx, const rq_msg_t *req, unsigned handler, const uint64_t *args,
             unsigned nargs, const void *data, size_t len, unsigned flags)
{
    if (req == NULL)
        return RQ_EINVAL;
    return rq_request(ctx, req->src, handler, args, nargs, data, len, flags);
}

/* The argument checks shared by the blocking and non-blocking long
 * requests: the bytes must land inside the target's segment. */
int rqi_long_check(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                      unsigned nargs, const void *src, size_t len, uint64_t dst_off,
                      unsigned flags)
{
    int rc = rqi_send_check(ctx, dst, args, nargs, src, len, flags);
    if (rc != 0)
        return rc;
    if (handler >= RQ_MAX_HANDLERS)
        return RQ_EINVAL;
    if (dst_off > ctx->seg_bytes || len > ctx->seg_bytes - dst_off)
        return RQ_ERANGE;
    return ctx->fail.failed ? RQ_EPEER : 0;
}

int rq_request_long(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                    unsigned nargs, const void *src, size_t len, uint64_t dst_off,
                    unsigned flags)
{
    int rc = rqi_long_check(ctx, dst, handler, args, nargs, src, len, dst_off, flags);
    if (rc != 0)
        return rc;
    struct pkt_desc d = {RQI_PK_LONG, RQ_AM_QUEUE, handler, 0, nargs, args, src, len,
                         {dst_off, len, 0}, flags};
    RQI_GUARDED(ctx, send_packet(ctx, dst, &d, (flags & RQ_NONBLOCK) != 0));
}


size_t rq_medium_max(const rq_ctx_t *ctx)
{
    return ctx == NULL ? 0 : (size_t)ctx->medium_max;
}
