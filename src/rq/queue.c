/* queue.c - named remote queues: enqueue, peek (zero-copy view), pop,
 * dequeue.  A queue's packets are read in the order: the packet held by a
 * view, then the queue's buffer FIFO, then the ring (see deliver.h). */
#include <string.h>

#include "am/am.h"
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

/* Find the head of queue qid; fills *m.  1 found, 0 empty. */
static int queue_head(rq_ctx_t *ctx, unsigned qid, rq_msg_t *m)
{
    struct rqi_view *view = &ctx->view[qid];
    if (view->pkt != NULL) {
        rqi_msg_from_pkt(ctx, view->pkt, m);
        return 1;
    }
    /* Other nodes' packets for this queue join its buffer.  A consumer
     * spinning on an empty queue serves the global-address requests that
     * its producers may wait on (proc strategy). */
    if (RQI_UNLIKELY(ctx->ucx != NULL))
        rqi_ucx_progress(ctx);
    if (ctx->gas.strategy == RQI_GAS_PROC)
        (void)rqi_gas_serve(ctx);
    for (;;) {
        struct rqi_vrec *v = rqi_vfifo_head(&ctx->fifo[qid]);
        if (v != NULL) {
            rqi_msg_from_vrec(v, m);
            return 1;
        }
        struct rqi_ring_rx *rx;
        struct rqi_pkt *p = rqi_rx_next(ctx, &rx);
        if (p == NULL)
            return 0;
        if (p->qid == qid && p->kind != RQI_PK_FRAG) {
            /* Direct case: hold the packet in its lane until the pop. */
            view->pos = rqi_ring_rx_take(rx, p);
            view->rx = rx;
            view->pkt = p;
            ctx->stats.received++;
            rqi_msg_from_pkt(ctx, p, m);
            return 1;
        }
        /* Another queue's packet (or a fragment): move it to the buffer;
         * AM handlers run only in rq_poll. */
        if (rqi_ingest(ctx, rx, p) != 0)
            return 0;
    }
}

static int peek_body(rq_ctx_t *ctx, unsigned qid, rq_msg_t *view)
{
    if (ctx == NULL || view == NULL || !qid_ok(qid) || !ctx->open[qid])
        return RQ_EINVAL;
    return queue_head(ctx, qid, view);
}

/* Remove the head found by queue_head. */
static void queue_remove(rq_ctx_t *ctx, unsigned qid)
{
    struct rqi_view *view = &ctx->view[qid];
    if (view->pkt != NULL) {
        rqi_ring_rx_release(view->rx, view->pkt, view->pos);
        view->pkt = NULL;
        ctx->stats.direct++;
    } else {
        rqi_vbuf_pop(&ctx->vb, &ctx->fifo[qid]);
        ctx->stats.buffered++;
        rqi_mode_update(ctx);
    }
}

static int pop_body(rq_ctx_t *ctx, unsigned qid)
{
    if (ctx == NULL || !qid_ok(qid) || !ctx->open[qid])
        return RQ_EINVAL;
    rq_msg_t m;
    if (!queue_head(ctx, qid, &m))
        return 0;
    queue_remove(ctx, qid);
    return 1;
}

static int dequeue_body(rq_ctx_t *ctx, unsigned qid, uint64_t *args, unsigned nargs, void *buf,
               size_t nbytes)
{
    if (ctx == NULL || !qid_ok(qid) || !ctx->open[qid] || nargs > RQ_MAX_ARGS ||
        (nargs != 0 && args == NULL) || (nbytes != 0 && buf == NULL))
        return RQ_EINVAL;
    rq_msg_t m;
    if (!queue_head(ctx, qid, &m))
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
    RQI_GUARDED(ctx, peek_body(ctx, qid, view));
}

int rq_pop(rq_ctx_t *ctx, unsigned qid)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, pop_body(ctx, qid));
}

int rq_dequeue(rq_ctx_t *ctx, unsigned qid, uint64_t *args, unsigned nargs, void *buf,
               size_t nbytes)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, dequeue_body(ctx, qid, args, nargs, buf, nbytes));
}
