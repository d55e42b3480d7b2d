/* queue.c - named remote queues: enqueue, peek (zero-copy views, one or
 * a run), pop, dequeue.  A queue's packets are read in the order: the packet held by a
 * view, then the queue's buffer FIFO, then the ring (see deliver.h). */
#include <string.h>

#include "am/am.h"
#include "net/net.h"
#include "deliver/deliver.h"

static int qid_ok(unsigned qid) { return qid > RQ_AM_QUEUE && qid < RQ_MAX_QUEUES; }

static int queue_open_body(rq_ctx_t *ctx, unsigned qid)
{
    if (ctx == NULL || !qid_ok(qid) || ctx->pdq[qid] != NULL)
        return RQ_EINVAL; /* a PDQ's qid is the PDQ's */
    ctx->open[qid] = 1;
    return 0;
}

static int enqueue_body(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, const uint64_t *args,
               unsigned nargs, const void *data, size_t len, unsigned flags)
{
    int rc = rqi_send_check(ctx, dst, args, nargs, data, len, flags);
    if (RQI_UNLIKELY(rc != 0))
        return rc;
    if (RQI_UNLIKELY(!qid_ok(qid)))
        return RQ_EINVAL;
    return rqi_send(ctx, dst, qid, tag, 0, args, nargs, data, len, flags);
}

/* Take the next packet of queue qid from the ring into the held views
 * and describe it in *m.  Other queues' packets (and fragments) met on
 * the way move to their buffers; AM handlers run only in rq_poll.  Stops
 * (returns 0) at an empty ring, at a full view array, or once qid's own
 * FIFO is no longer empty (a reassembled payload landed there: what the
 * ring holds after it is newer).  *lane: the lane to try first. */
static int take_from_ring(rq_ctx_t *ctx, unsigned qid, rq_msg_t *m, struct rqi_ring_rx **lane)
{
    struct rqi_view *view = &ctx->view[qid];
    if (view->n == RQ_PEEK_MAX)
        return 0;
    if (view->first + view->n == RQ_PEEK_MAX) {
        memmove(view->h, view->h + view->first, view->n * sizeof view->h[0]);
        view->first = 0;
    }
    for (;;) {
        struct rqi_ring_rx *rx = *lane;
        struct rqi_pkt *p = rx != NULL ? rqi_rx_next_lane(ctx, rx) : NULL;
        if (p == NULL && (p = rqi_rx_next(ctx, &rx)) == NULL)
            return 0;
        *lane = rx;
        if (RQI_LIKELY(p->qid == qid && p->kind != RQI_PK_FRAG) &&
            RQI_LIKELY(!ctx->buffer_always)) {
            /* Direct case: hold the packet in its lane until the pop. */
            if (view->n == 0)
                view->first = 0;
            struct rqi_held *h = &view->h[view->first + view->n++];
            h->pos = rqi_ring_rx_take(rx, p);
            h->rx = rx;
            h->pkt = p;
            ctx->stats.received++;
            rqi_msg_from_pkt(ctx, p, m);
            return 1;
        }
        if (rqi_ingest(ctx, rx, p) != 0 || rqi_vfifo_head(&ctx->fifo[qid]) != NULL)
            return 0;
    }
}

/* The fast path of take_from_ring: consecutive packets of queue qid at
 * the scan of one lane, each validated as the poll loop does, held and
 * described in m[0..max).  Returns how many; stops at anything else. */
static RQI_ALWAYS_INLINE unsigned take_run(rq_ctx_t *ctx, unsigned qid, struct rqi_ring_rx *rx,
                                           rq_msg_t *m, unsigned max)
{
    struct rqi_view *view = &ctx->view[qid];
    unsigned room = RQ_PEEK_MAX - view->first - view->n, n = 0;
    if (max > room)
        max = room;
    struct rqi_held *h = &view->h[view->first + view->n];
    for (; n < max; n++, h++) {
        /* A run reads ahead: start the next lines' transfer from the
         * producer's cache now (the hardware prefetcher stops at pages). */
        __builtin_prefetch(rqi_ring_slot(rx->slots, rx->nslots, rx->scan + 4));
        struct rqi_pkt *p = rqi_ring_rx_peek(rx);
        if (p == NULL || p->qid != qid || p->kind == RQI_PK_FRAG || p->kind == RQI_PK_PAD ||
            rqi_pkt_check(ctx, rx, p) != RQI_PKT_OK)
            break;
        h->pos = rqi_ring_rx_take(rx, p);
        h->rx = rx;
        h->pkt = p;
        rqi_msg_from_pkt(ctx, p, &m[n]);
    }
    view->n += n;
    ctx->stats.received += n;
    return n;
}

/* Progress that a consumer owes while it looks at a queue: other nodes'
 * packets for this queue join its buffer, and a consumer spinning on an
 * empty queue serves the global-address requests that its producers may
 * wait on (proc strategy). */
static void queue_progress(rq_ctx_t *ctx)
{
    if (RQI_UNLIKELY(ctx->ucx != NULL))
        ctx->net->progress(ctx);
    if (ctx->gas.strategy == RQI_GAS_PROC)
        (void)ctx->hooks.gas_serve(ctx);
}

/* Describe up to max packets at the head of queue qid, oldest first, in
 * m[0..): the held views, else the buffer FIFO's records, else packets
 * taken from the ring (held).  Returns how many (0: empty). */
static unsigned queue_run(rq_ctx_t *ctx, unsigned qid, rq_msg_t *m, unsigned max)
{
    struct rqi_view *view = &ctx->view[qid];
    unsigned n = 0;
    for (; n < view->n && n < max; n++)
        rqi_msg_from_pkt(ctx, view->h[view->first + n].pkt, &m[n]);
    if (n == max)
        return n;
    queue_progress(ctx);
    struct rqi_vfifo *f = &ctx->fifo[qid];
    if (n == 0 && f->first != NULL) {
        /* Buffered records never move until popped: walk the chunks. */
        for (struct rqi_vchunk *c = f->first; c != NULL && n < max; c = c->next)
            for (size_t rd = c->rd; rd < c->wr && n < max; n++) {
                struct rqi_vrec *r = (struct rqi_vrec *)(c->buf + rd);
                rqi_msg_from_vrec(r, &m[n]);
                rd += r->bytes;
            }
        if (n != 0)
            return n;
    }
    if (rqi_vfifo_head(f) != NULL)
        return n; /* buffered records come after the held views */
    struct rqi_ring_rx *lane = n != 0 ? view->h[view->first + n - 1].rx : NULL;
    if (lane == NULL && rqi_rx_all_empty(ctx))
        return n; /* the empty queue, as rq_poll's empty poll */
    while (n < max && take_from_ring(ctx, qid, &m[n], &lane)) {
        n++;
        n += take_run(ctx, qid, lane, m + n, max - n);
    }
    /* The ring's packets went to the buffer (RQ_BUFFER_ALWAYS, or a
     * reassembled payload landed): show them from there. */
    if (n == 0 && view->n == 0 && f->first != NULL)
        return queue_run(ctx, qid, m, max);
    return n;
}

static int peek_body(rq_ctx_t *ctx, unsigned qid, rq_msg_t *view)
{
    if (ctx == NULL || view == NULL || !qid_ok(qid) || !ctx->open[qid])
        return RQ_EINVAL;
    return (int)queue_run(ctx, qid, view, 1);
}

static int peek_n_body(rq_ctx_t *ctx, unsigned qid, rq_msg_t *views, unsigned max)
{
    if (ctx == NULL || views == NULL || !qid_ok(qid) || !ctx->open[qid] || max == 0 ||
        max > RQ_PEEK_MAX)
        return RQ_EINVAL;
    return (int)queue_run(ctx, qid, views, max);
}

/* Remove the head of queue qid, which queue_run has shown (held view or
 * buffered record). */
static void queue_remove(rq_ctx_t *ctx, unsigned qid)
{
    struct rqi_view *view = &ctx->view[qid];
    if (view->n != 0) {
        struct rqi_held *h = &view->h[view->first++];
        rqi_pkt_done(ctx, h->pkt);
        rqi_ring_rx_release(h->rx, h->pkt, h->pos);
        view->n--;
        ctx->stats.direct++;
    } else {
        rqi_vbuf_pop(&ctx->vb, &ctx->fifo[qid]);
        ctx->stats.buffered++;
        rqi_mode_update(ctx);
    }
}

/* Remove up to n packets from the head of queue qid.  Returns how many. */
static unsigned queue_remove_n(rq_ctx_t *ctx, unsigned qid, unsigned n)
{
    struct rqi_view *view = &ctx->view[qid];
    unsigned done = 0;
    /* Held views first, released in order (one lane each, cheap). */
    for (; done < n && view->n != 0; done++) {
        struct rqi_held *h = &view->h[view->first++];
        rqi_pkt_done(ctx, h->pkt);
        rqi_ring_rx_release(h->rx, h->pkt, h->pos);
        view->n--;
    }
    ctx->stats.direct += done;
    rq_msg_t m;
    for (; done < n && queue_run(ctx, qid, &m, 1) == 1; done++)
        queue_remove(ctx, qid);
    return done;
}

static int pop_body(rq_ctx_t *ctx, unsigned qid)
{
    if (ctx == NULL || !qid_ok(qid) || !ctx->open[qid])
        return RQ_EINVAL;
    return (int)queue_remove_n(ctx, qid, 1);
}

static int pop_n_body(rq_ctx_t *ctx, unsigned qid, unsigned n)
{
    if (ctx == NULL || !qid_ok(qid) || !ctx->open[qid] || n > INT32_MAX)
        return RQ_EINVAL;
    return (int)queue_remove_n(ctx, qid, n);
}

static int dequeue_body(rq_ctx_t *ctx, unsigned qid, uint64_t *args, unsigned nargs, void *buf,
               size_t nbytes)
{
    if (ctx == NULL || !qid_ok(qid) || !ctx->open[qid] || nargs > RQ_MAX_ARGS ||
        (nargs != 0 && args == NULL) || (nbytes != 0 && buf == NULL))
        return RQ_EINVAL;
    rq_msg_t m;
    if (queue_run(ctx, qid, &m, 1) == 0)
        return 0;
    if (m.nargs < nargs || m.len < nbytes)
        return RQ_ERANGE;
    for (unsigned i = 0; i < nargs; i++)
        args[i] = m.args[i];
    if (nbytes != 0)
        memcpy(buf, m.data, nbytes);
    queue_remove(ctx, qid);
    return 1;
}

/* Public entry points: each bracketed against the progress thread
 * (src/vni/vni.h). */

int rq_queue_open(rq_ctx_t *ctx, unsigned qid)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, queue_open_body(ctx, qid));
}

int rq_enqueue(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, const uint64_t *args,
               unsigned nargs, const void *data, size_t len, unsigned flags)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, enqueue_body(ctx, dst, qid, tag, args, nargs, data, len, flags));
}

int rq_peek(rq_ctx_t *ctx, unsigned qid, rq_msg_t *view)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED_RECV(ctx, peek_body(ctx, qid, view));
}

int rq_pop(rq_ctx_t *ctx, unsigned qid)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, pop_body(ctx, qid));
}

int rq_peek_n(rq_ctx_t *ctx, unsigned qid, rq_msg_t *views, unsigned max)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED_RECV(ctx, peek_n_body(ctx, qid, views, max));
}

int rq_pop_n(rq_ctx_t *ctx, unsigned qid, unsigned n)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, pop_n_body(ctx, qid, n));
}

int rq_dequeue(rq_ctx_t *ctx, unsigned qid, uint64_t *args, unsigned nargs, void *buf,
               size_t nbytes)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED_RECV(ctx, dequeue_body(ctx, qid, args, nargs, buf, nbytes));
}
