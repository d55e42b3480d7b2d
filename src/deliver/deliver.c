/* deliver.c - validation, buffering, reassembly and blocking waits. */
#define _GNU_SOURCE
#include "core/sys.h"
#include "net/net.h"
#include "deliver/deliver.h"
#include "net/ucx.h"
#include "pdq/pdq.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rqi_pkt *rqi_rx_next(rq_ctx_t *ctx, struct rqi_ring_rx **rxo)
{
    for (unsigned k = 0; k < ctx->nlanes; k++) {
        unsigned l = ctx->lane_rr + k;
        struct rqi_ring_rx *rx = &ctx->rx[l >= ctx->nlanes ? l - ctx->nlanes : l];
        struct rqi_pkt *p = rqi_rx_next_lane(ctx, rx);
        if (p != NULL) {
            *rxo = rx;
            return p;
        }
        if (ctx->fail.failed)
            return NULL;
    }
    return NULL;
}

struct rqi_pkt *rqi_rx_next_lane(rq_ctx_t *ctx, struct rqi_ring_rx *rx)
{
    if (RQI_UNLIKELY(ctx->fail.failed))
        return NULL; /* a broken lane is not read (nor counted) again */
    for (;;) {
        struct rqi_pkt *p = rqi_ring_rx_peek(rx);
        if (p == NULL) {
            rqi_ring_rx_idle(rx);
            return NULL;
        }
        int v = rqi_pkt_check(ctx, rx, p);
        if (RQI_LIKELY(v == RQI_PKT_OK && p->kind != RQI_PK_PAD))
            return p;
        if (v == RQI_PKT_BROKEN) {
            ctx->stats.rejected++;
            rqi_fail(ctx, "inbound lane framing is corrupt (bad slot count); failing the job");
            return NULL;
        }
        if (v == RQI_PKT_REJECT)
            ctx->stats.rejected++;
        uint64_t pos = rqi_ring_rx_take(rx, p);
        rqi_ring_rx_release(rx, p, pos);
    }
}

void rqi_msg_from_vrec(struct rqi_vrec *r, rq_msg_t *m)
{
    m->src = (int)r->src;
    m->qid = r->qid;
    m->handler = r->tag;
    m->nargs = r->nargs;
    m->args = r->args;
    m->data = r->data;
    m->len = r->len;
    m->key = RQ_KEY_NOSYNC;
    if ((r->flags & RQI_PF_KEY) && r->nargs != 0)
        m->key = r->args[--m->nargs];
    m->rqi_flags = r->flags & RQI_PF_SYSTEM;
    m->rqi_pad = 0;
}

static struct rqi_reasm **reasm_find(rq_ctx_t *ctx, uint32_t src, uint64_t msg_id)
{
    struct rqi_reasm **pp = &ctx->reasm;
    while (*pp != NULL && ((*pp)->src != src || (*pp)->msg_id != msg_id))
        pp = &(*pp)->next;
    return pp;
}

/* Add fragment p; 0, RQ_ENOMEM, or RQI_PKT_REJECT for a stray fragment. */
static int reasm_add(rq_ctx_t *ctx, struct rqi_pkt *p)
{
    const struct rqi_pkt_frag *e = rqi_pkt_ext(p);
    struct rqi_reasm **pp = reasm_find(ctx, p->src, e->msg_id);
    struct rqi_reasm *r = *pp;
    if (e->offset == 0) {
        if (r != NULL)
            return RQI_PKT_REJECT; /* a second first fragment */
        if (!rqi_vbuf_room(&ctx->vb, e->total))
            return RQ_ENOMEM; /* RQ_VBUF_MAX: the fragment waits in the lane */
        r = calloc(1, sizeof *r);
        char *buf = malloc(e->total);
        if (r == NULL || buf == NULL) {
            free(r);
            free(buf);
            return RQ_ENOMEM;
        }
        r->msg_id = e->msg_id;
        r->total = e->total;
        r->src = p->src;
        r->tag = p->tag;
        r->qid = p->qid;
        r->nargs = p->nargs;
        r->flags = p->flags;
        r->buf = buf;
        memcpy(r->args, rqi_pkt_args(p), 8u * p->nargs);
        r->next = ctx->reasm;
        ctx->reasm = r;
        pp = &ctx->reasm;
    } else if (r == NULL || e->offset != r->got || e->total != r->total || p->tag != r->tag ||
               p->qid != r->qid) {
        /* Fragments of one message arrive in order and agree on its size
         * (the buffer holds the first fragment's total: a later fragment
         * claiming more would write past it). */
        return RQI_PKT_REJECT;
    }
    memcpy(r->buf + e->offset, rqi_pkt_payload(p), p->len);
    r->got += p->len;
    if (r->got < r->total)
        return 0;
    if (ctx->pdq[r->qid] != NULL) {
        if (ctx->hooks.pdq_push(ctx->pdq[r->qid], r->src, r->tag, r->flags, r->args, r->nargs, r->buf,
                         r->total, RQI_PDQ_OWN) != 0) {
            r->got -= p->len;
            return RQ_ENOMEM;
        }
        *pp = r->next;
        free(r);
        return 0;
    }
    struct rqi_vrec *v = rqi_vbuf_push(&ctx->vb, &ctx->fifo[r->qid], r->nargs, 0);
    if (v == NULL) {
        r->got -= p->len;
        return RQ_ENOMEM;
    }
    v->src = r->src;
    v->tag = r->tag;
    v->qid = r->qid;
    v->flags = r->flags;
    memcpy(v->args, r->args, 8u * r->nargs);
    rqi_vbuf_own(&ctx->vb, v, r->buf, r->total);
    rqi_held_rec(ctx, v);
    *pp = r->next;
    free(r);
    return 0;
}

int rqi_ingest_pkt(rq_ctx_t *ctx, struct rqi_pkt *p, void *data, size_t len)
{
    if (RQI_UNLIKELY(ctx->buffer_delay_ns != 0)) { /* RQ_BUFFER_DELAY_NS: a measurement aid */
        uint64_t end = rqi_mono_ns() + ctx->buffer_delay_ns;
        while (rqi_mono_ns() < end)
            rqi_cpu_relax();
    }
    if (RQI_UNLIKELY(ctx->pdq[p->qid] != NULL)) {
        int rc = ctx->hooks.pdq_push(ctx->pdq[p->qid], p->src, p->tag, p->flags, rqi_pkt_args(p),
                              p->nargs, data, len,
                              p->kind == RQI_PK_LONG ? RQI_PDQ_BORROW : RQI_PDQ_COPY);
        if (rc != 0)
            return rc;
    } else {
        size_t inl = p->kind == RQI_PK_INLINE ? len : 0;
        /* A staged payload leaves the sender's staging area now, so that
         * buffering never holds another rank's room (send_staged). */
        char *own = NULL;
        if (p->kind == RQI_PK_RNDV) {
            if (!rqi_vbuf_room(&ctx->vb, len) || (own = malloc(len)) == NULL)
                return RQ_ENOMEM;
        }
        struct rqi_vrec *v = rqi_vbuf_push(&ctx->vb, &ctx->fifo[p->qid], p->nargs, inl);
        if (v == NULL) {
            free(own);
            return RQ_ENOMEM;
        }
        v->src = p->src;
        v->tag = p->tag;
        v->qid = p->qid;
        v->flags = p->flags;
        memcpy(v->args, rqi_pkt_args(p), 8u * p->nargs);
        if (inl != 0) {
            memcpy(v->data, data, inl);
        } else if (p->kind == RQI_PK_LONG) {
            v->data = data;
            v->len = len;
        } else if (own != NULL) {
            memcpy(own, data, len);
            rqi_vbuf_own(&ctx->vb, v, own, len);
        }
        rqi_held_rec(ctx, v);
    }
    ctx->stats.received++;
    rqi_mode_update(ctx);
    return 0;
}

int rqi_ingest(rq_ctx_t *ctx, struct rqi_ring_rx *rx, struct rqi_pkt *p)
{
    uint64_t pos = rqi_ring_rx_take(rx, p);
    if (p->kind == RQI_PK_FRAG) {
        int rc = reasm_add(ctx, p);
        if (rc == RQ_ENOMEM) {
            rx->scan = pos; /* untake: the packet stays in the ring */
            return rc;
        }
        if (rc == RQI_PKT_REJECT)
            ctx->stats.rejected++;
        else
            ctx->stats.received++;
        rqi_mode_update(ctx);
    } else {
        rq_msg_t m;
        rqi_msg_from_pkt(ctx, p, &m); /* where the payload is, whatever the kind */
        int rc = rqi_ingest_pkt(ctx, p, m.data, m.len);
        if (rc != 0) {
            rx->scan = pos; /* untake: the packet stays in the ring */
            return rc;
        }
        rqi_pkt_done(ctx, p);
    }
    rqi_ring_rx_release(rx, p, pos);
    return 0;
}

int rqi_drain(rq_ctx_t *ctx)
{
    if (RQI_UNLIKELY(ctx->ucx != NULL)) {
        int rc = ctx->net->drain(ctx);
        if (rc != 0)
            return rc;
    }
    for (unsigned l = 0; l < ctx->nlanes; l++) {
        struct rqi_ring_rx *rx = &ctx->rx[l];
        struct rqi_pkt *p;
        while ((p = rqi_rx_next_lane(ctx, rx)) != NULL) {
            int rc = rqi_ingest(ctx, rx, p);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}


