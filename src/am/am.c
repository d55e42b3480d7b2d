/* am.c - active messages: send (short, medium, fragmented, long), poll,
 * wait.  With shm_ring.h this file is the whole hot path:
 *   send: validate -> reserve slots in dst's ring -> copy -> publish;
 *   poll: peek own ring -> validate -> run the handler in place -> release.
 * The only indirect call is the user's handler. */
#include "am/am.h"

#include <string.h>

#include "deliver/deliver.h"

static inline int rank_ok(const rq_ctx_t *ctx, int r) { return r >= 0 && r < ctx->size; }

/* Reserve n slots in dst's ring; when full, drain our own ring (running no
 * handler) and retry until committed, or return RQ_EAGAIN if nonblock. */
static inline struct rqi_pkt *reserve(rq_ctx_t *ctx, int dst, unsigned n, int nonblock,
                                      uint64_t *pos, int *rc)
{
    struct rqi_ring_tx *tx = &ctx->tx[dst];
    struct rqi_pkt *p = rqi_ring_tx_reserve(tx, n, ctx->job32, (uint32_t)ctx->rank, pos);
    if (RQI_LIKELY(p != NULL))
        return p;
    if (ctx->failed) {
        *rc = RQ_EPEER;
        return NULL;
    }
    if (nonblock) {
        *rc = RQ_EAGAIN;
        return NULL;
    }
    unsigned spins = 0;
    for (;;) {
        if ((*rc = rqi_drain(ctx)) != 0)
            return NULL;
        p = rqi_ring_tx_reserve(tx, n, ctx->job32, (uint32_t)ctx->rank, pos);
        if (p != NULL)
            return p;
        if ((*rc = rqi_wait_step(ctx, &spins)) != 0)
            return NULL;
    }
}

static inline void fill_header(rq_ctx_t *ctx, struct rqi_pkt *p, unsigned kind, unsigned qid,
                               unsigned tag, unsigned pflags, unsigned nargs, size_t len,
                               unsigned nslots)
{
    rqi_pkt_write_header(p, ctx->job32, (uint32_t)ctx->rank, tag, qid, nargs, kind,
                         (uint32_t)len, nslots, pflags);
}

static inline __attribute__((always_inline)) int send_inline(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, unsigned pflags,
                       const uint64_t *args, unsigned nargs, const void *data, size_t len,
                       int nonblock)
{
    unsigned n = rqi_pkt_slots(RQI_PK_INLINE, nargs, len);
    uint64_t pos;
    int rc = 0;
    struct rqi_pkt *p = reserve(ctx, dst, n, nonblock, &pos, &rc);
    if (RQI_UNLIKELY(p == NULL))
        return rc;
    fill_header(ctx, p, RQI_PK_INLINE, qid, tag, pflags, nargs, len, n);
    uint64_t *a = rqi_pkt_args(p);
    for (unsigned i = 0; i < nargs; i++)
        a[i] = args[i];
    if (len != 0)
        memcpy(a + nargs, data, len);
    rqi_ring_tx_publish(p, pos);
    ctx->stats.sent++;
    return 0;
}

/* A medium payload above rq_medium_max(): fragments of at most that size,
 * the first carrying the args; the receiver reassembles them. */
static __attribute__((noinline)) int send_fragmented(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, unsigned pflags,
                           const uint64_t *args, unsigned nargs, const void *data, size_t len,
                           int nonblock)
{
    if (len > RQI_FRAG_MAX)
        return RQ_EINVAL;
    uint64_t id = ctx->next_msg_id++;
    size_t off = 0;
    while (off < len) {
        unsigned na = off == 0 ? nargs : 0;
        size_t chunk = len - off < ctx->medium_max ? len - off : ctx->medium_max;
        unsigned n = rqi_pkt_slots(RQI_PK_FRAG, na, chunk);
        uint64_t pos;
        int rc = 0;
        /* Only the first fragment may be refused: after it, the message is
         * committed and the rest must follow. */
        struct rqi_pkt *p = reserve(ctx, dst, n, nonblock && off == 0, &pos, &rc);
        if (p == NULL)
            return rc;
        fill_header(ctx, p, RQI_PK_FRAG, qid, tag, pflags, na, chunk, n);
        struct rqi_pkt_frag *e = rqi_pkt_ext(p);
        e->msg_id = id;
        e->total = len;
        e->offset = off;
        uint64_t *a = rqi_pkt_args(p);
        for (unsigned i = 0; i < na; i++)
            a[i] = args[i];
        memcpy(a + na, (const char *)data + off, chunk);
        rqi_ring_tx_publish(p, pos);
        ctx->stats.sent++;
        off += chunk;
    }
    return 0;
}

static inline __attribute__((always_inline)) int send(rq_ctx_t *ctx, int dst, unsigned qid,
                                                       unsigned tag, unsigned pflags,
                                                       const uint64_t *args, unsigned nargs,
                                                       const void *data, size_t len,
                                                       unsigned flags)
{
    if (RQI_UNLIKELY(ctx->failed))
        return RQ_EPEER;
    int nonblock = (flags & RQ_NONBLOCK) != 0;
    if (RQI_LIKELY(len <= ctx->medium_max))
        return send_inline(ctx, dst, qid, tag, pflags, args, nargs, data, len, nonblock);
    return send_fragmented(ctx, dst, qid, tag, pflags, args, nargs, data, len, nonblock);
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

int rq_request(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
               unsigned nargs, const void *data, size_t len, unsigned flags)
{
    int rc = send_check(ctx, dst, args, nargs, data, len, flags);
    if (RQI_UNLIKELY(rc != 0))
        return rc;
    if (RQI_UNLIKELY(handler >= RQ_MAX_HANDLERS))
        return RQ_EINVAL;
    return send(ctx, dst, RQ_AM_QUEUE, handler, 0, args, nargs, data, len, flags);
}

int rq_reply(rq_ctx_t *ctx, const rq_msg_t *req, unsigned handler, const uint64_t *args,
             unsigned nargs, const void *data, size_t len, unsigned flags)
{
    if (req == NULL)
        return RQ_EINVAL;
    return rq_request(ctx, req->src, handler, args, nargs, data, len, flags);
}

int rq_request_long(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
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
    if (ctx->failed)
        return RQ_EPEER;
    unsigned n = rqi_pkt_slots(RQI_PK_LONG, nargs, 0);
    uint64_t pos;
    struct rqi_pkt *p = reserve(ctx, dst, n, (flags & RQ_NONBLOCK) != 0, &pos, &rc);
    if (p == NULL)
        return rc;
    /* Reserved first, so RQ_EAGAIN leaves the target segment untouched.
     * The copy is ordered before the packet by the publishing release. */
    if (len != 0)
        memcpy(ctx->seg[dst] + dst_off, src, len);
    fill_header(ctx, p, RQI_PK_LONG, RQ_AM_QUEUE, handler, 0, nargs, 0, n);
    struct rqi_pkt_long *e = rqi_pkt_ext(p);
    e->off = dst_off;
    e->len = len;
    uint64_t *a = rqi_pkt_args(p);
    for (unsigned i = 0; i < nargs; i++)
        a[i] = args[i];
    rqi_ring_tx_publish(p, pos);
    ctx->stats.sent++;
    return 0;
}

int rq_handler_register(rq_ctx_t *ctx, unsigned id, rq_handler_fn fn, void *arg,
                        unsigned flags)
{
    if (ctx == NULL || id >= RQ_MAX_HANDLERS || (flags & ~RQ_HF_INTERRUPT) != 0)
        return RQ_EINVAL;
    ctx->handlers[id].fn = fn;
    ctx->handlers[id].arg = arg;
    ctx->handlers[id].flags = flags;
    return 0;
}

static inline int run_handler(rq_ctx_t *ctx, const rq_msg_t *m)
{
    const struct rqi_handler *h =
        (m->rqi_flags & RQI_PF_SYSTEM) ? &ctx->sys[m->handler] : &ctx->handlers[m->handler];
    if (RQI_UNLIKELY(h->fn == NULL)) {
        ctx->stats.rejected++; /* no handler installed for this id */
        return 0;
    }
    ctx->in_handler++;
    h->fn(ctx, m, h->arg);
    ctx->in_handler--;
    return 1;
}

int rq_poll(rq_ctx_t *ctx)
{
    if (RQI_UNLIKELY(ctx == NULL))
        return RQ_EINVAL;
    if (RQI_UNLIKELY(ctx->in_handler))
        return 0; /* handlers are atomic: none runs inside another */
    struct rqi_ring_rx *rx = &ctx->rx;
    struct rqi_vfifo *am = &ctx->fifo[RQ_AM_QUEUE];
    const int batch = (int)ctx->cfg.v[RQI_CFG_POLL_BATCH];
    int n = 0;
    rq_msg_t m;
    while (n < batch) {
        /* Buffered packets are older than anything still in the ring. */
        struct rqi_vrec *v = rqi_vfifo_head(am);
        if (RQI_UNLIKELY(v != NULL)) {
            rqi_msg_from_vrec(v, &m);
            n += run_handler(ctx, &m);
            rqi_vbuf_pop(&ctx->vb, am);
            ctx->stats.buffered++;
            rqi_mode_update(ctx);
            continue;
        }
        struct rqi_pkt *p = rqi_ring_rx_peek(rx);
        if (p == NULL) {
            rqi_ring_rx_idle(rx);
            break;
        }
        if (RQI_UNLIKELY(p->qid != RQ_AM_QUEUE || p->kind == RQI_PK_FRAG ||
                         p->kind == RQI_PK_PAD || rqi_pkt_check(ctx, p) != RQI_PKT_OK)) {
            /* Slow cases: PAD, rejects, fragments, other queues. */
            p = rqi_rx_next(ctx);
            if (p == NULL)
                break;
            if (p->qid != RQ_AM_QUEUE || p->kind == RQI_PK_FRAG) {
                if (rqi_ingest(ctx, p) != 0)
                    break; /* out of memory: leave it in the ring */
                continue;
            }
        }
        /* Direct delivery: the handler reads the packet in place. */
        uint64_t pos = rqi_ring_rx_take(rx, p);
        rqi_msg_from_pkt(ctx, p, &m);
        ctx->stats.received++;
        ctx->stats.direct++;
        n += run_handler(ctx, &m);
        rqi_ring_rx_release(rx, p, pos);
    }
    return n;
}

int rq_wait_until(rq_ctx_t *ctx, const volatile uint64_t *word, uint64_t at_least)
{
    if (ctx == NULL || word == NULL)
        return RQ_EINVAL;
    if (ctx->in_handler)
        return RQ_EPERM;
    unsigned spins = 0;
    while (*word < at_least) {
        if (rq_poll(ctx) > 0) {
            spins = 0;
            continue;
        }
        int rc = rqi_wait_step(ctx, &spins);
        if (rc != 0)
            return rc;
    }
    return 0;
}

size_t rq_medium_max(const rq_ctx_t *ctx)
{
    return ctx == NULL ? 0 : (size_t)ctx->medium_max;
}
