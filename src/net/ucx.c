/* ucx.c - the inter-node transport on UCP (see ucx.h). */
#define _GNU_SOURCE
#include "net/ucx.h"
#include "net/net.h"

#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "boot/pmix.h"
#include "core/sys.h"
#include "ctx.h"
#include "deliver/deliver.h"

#define RQI_UCX_AM_ID 0x5251u /* "RQ" */
#define RKEY_MAX      4096u   /* a packed remote key, as PMIx carries it */

/* A received packet: its header (copied), its payload (held in UCX's
 * buffer, owned, or landed in our segment). */
struct rqi_ucx_rx {
    struct rqi_ucx_rx *next;
    void              *desc;    /* UCX data to release, or NULL */
    char              *own;     /* malloc'd payload, or NULL */
    char              *data;
    size_t             len;
    _Atomic int        pending; /* rendezvous data still arriving */
    void              *rndv;    /* deferred rendezvous descriptor, or NULL */
    int                cls;     /* an active message: its interrupt class */
    struct rqi_ucx_hdr h;
};

struct rqi_ucx_peer {
    ucp_ep_h    ep;
    ucp_rkey_h  rkey;
    uint64_t    seg_addr;    /* its segment, in its address space */
    uint64_t    stored_addr; /* its store counters (ours: + rank x a cache line) */
    uint64_t    stop_addr;   /* its overflow STOP count (net/shm.h) */
    uint64_t    tx_seq;      /* last sequence number sent */
    uint64_t    rx_seq;      /* last sequence number received */
};

struct rqi_ucx {
    ucp_context_h        uctx;
    ucp_worker_h         worker;
    ucp_mem_h            memh;
    struct rqi_ucx_peer *peer;   /* size entries; ep NULL for local ranks */
    uint64_t             key;    /* the job key */
    uint64_t             eager_max, inflight_max, inflight;
    unsigned             sends_unprogressed; /* eager sends since the worker last progressed */
    int                  closing;
    /* arrivals in order; active messages ready for delivery */
    struct rqi_ucx_rx   *in_head, **in_tail;
    struct rqi_ucx_rx   *am_head, **am_tail;
    int                  am_count;
    int                  deferred;   /* entries holding a rendezvous descriptor */
    int                  efd;    /* the worker's event fd, or -1 */
    struct rqi_ucx_rx   *free_rx;
};

/* ---- helpers ----------------------------------------------------------- */

static void undefer_all(rq_ctx_t *ctx);

static struct rqi_ucx_rx *rx_alloc(struct rqi_ucx *u)
{
    struct rqi_ucx_rx *e = u->free_rx;
    if (e != NULL)
        u->free_rx = e->next;
    else if ((e = malloc(sizeof *e)) == NULL)
        return NULL;
    e->next = NULL;
    e->desc = NULL;
    e->rndv = NULL;
    e->own = NULL;
    e->data = NULL;
    e->len = 0;
    atomic_store_explicit(&e->pending, 0, memory_order_relaxed);
    return e;
}

void rqi_ucx_rx_free(rq_ctx_t *ctx, struct rqi_ucx_rx *e)
{
    struct rqi_ucx *u = ctx->ucx;
    if (e->desc != NULL)
        ucp_am_data_release(u->worker, e->desc);
    if (e->rndv != NULL) { /* never placed: discarded, the sender released */
        ucp_am_data_release(u->worker, e->rndv);
        e->rndv = NULL;
        u->deferred--;
    }
    free(e->own);
    e->next = u->free_rx;
    u->free_rx = e;
}

/* Wait for one request (NULL: already complete).  Returns the UCS
 * status; progresses the worker (taking in packets, running no handler). */
static ucs_status_t wait_req(rq_ctx_t *ctx, void *req)
{
    if (req == NULL)
        return UCS_OK;
    if (UCS_PTR_IS_ERR(req))
        return UCS_PTR_STATUS(req);
    ucs_status_t st;
    unsigned spins = 0;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        /* Our peer may itself be waiting for us to place its payload. */
        if (RQI_UNLIKELY(ctx->ucx->deferred != 0))
            undefer_all(ctx);
        if (rqi_ucx_progress(ctx) == 0 && rqi_wait_step(ctx, &spins) != 0) {
            ucp_request_cancel(ctx->ucx->worker, req);
            while (ucp_request_check_status(req) == UCS_INPROGRESS)
                ucp_worker_progress(ctx->ucx->worker);
            st = UCS_ERR_CANCELED;
            break;
        }
    }
    ucp_request_free(req);
    return st;
}

static int peer_failed(rq_ctx_t *ctx, int r, ucs_status_t st)
{
    char why[160];
    snprintf(why, sizeof why, "UCX operation with rank %d failed (%s); failing the job", r,
             ucs_status_string(st));
    rqi_fail(ctx, why);
    return RQ_EPEER;
}

/* Wait for an operation on rank r: 0, or the job fails (RQ_EPEER). */
static int op_wait(rq_ctx_t *ctx, int r, void *req)
{
    ucs_status_t st = wait_req(ctx, req);
    return st == UCS_OK ? 0 : peer_failed(ctx, r, st);
}

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t st)
{
    rq_ctx_t *ctx = arg;
    struct rqi_ucx *u = ctx->ucx;
    if (u == NULL || u->closing)
        return;
    int r = -1;
    for (int i = 0; i < ctx->size; i++)
        if (u->peer[i].ep == ep)
            r = i;
    char why[160];
    snprintf(why, sizeof why, "connection to rank %d lost (%s); failing the job", r,
             ucs_status_string(st));
    rqi_fail(ctx, why);
}

/* ---- receive ----------------------------------------------------------- */

int rqi_ucx_hdr_check(const rq_ctx_t *ctx, const struct rqi_ucx_hdr *h, size_t hlen, size_t len)
{
    const struct rqi_pkt *p = &h->pkt;
    if (hlen < RQI_UCX_HDR_MIN || h->key != ctx->ucx->key ||
        (p->kind != RQI_PK_INLINE && p->kind != RQI_PK_LONG) || p->nargs > RQ_MAX_ARGS + 1 ||
        hlen != RQI_UCX_HDR_MIN + rqi_pkt_ext_bytes(p->kind) + 8u * p->nargs ||
        (p->pad_ & ~RQI_UCX_F_INTR) != 0)
        return RQI_PKT_REJECT;
    if (rqi_pkt_fields_check(ctx, p, ctx->large_max) != RQI_PKT_OK)
        return RQI_PKT_REJECT;
    /* Only a rank of another node talks to us this way. */
    if ((int)p->src == ctx->rank || !ctx->remote[p->src])
        return RQI_PKT_REJECT;
    size_t want = p->kind == RQI_PK_LONG ? ((const struct rqi_pkt_long *)h->w)->len : p->len;
    return want == len ? RQI_PKT_OK : RQI_PKT_REJECT;
}

static void rndv_done(void *req, ucs_status_t st, size_t length, void *user_data)
{
    (void)length;
    struct rqi_ucx_rx *e = user_data;
    /* A failed receive leaves pending at -1: intake fails the job. */
    atomic_store_explicit(&e->pending, st == UCS_OK ? 0 : -1, memory_order_release);
    ucp_request_free(req);
}

/* A rendezvous active message whose handler places its payload itself. */
static int defer_for_placement(const rq_ctx_t *ctx, const struct rqi_pkt *p, size_t len)
{
    return p->kind == RQI_PK_INLINE && p->qid == RQ_AM_QUEUE &&
           !(p->flags & (RQI_PF_SYSTEM | RQI_PF_KEY)) && p->tag < RQ_MAX_HANDLERS &&
           (ctx->handlers[p->tag].flags & RQ_HF_PLACE) && len > ctx->medium_max;
}

/* Start pulling e's deferred payload into a buffer of its own (e stays
 * pending until it lands).  0 or RQ_ENOMEM. */
static int undefer(rq_ctx_t *ctx, struct rqi_ucx_rx *e)
{
    struct rqi_ucx *u = ctx->ucx;
    if ((e->own = malloc(e->len)) == NULL)
        return RQ_ENOMEM;
    e->data = e->own;
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                              UCP_OP_ATTR_FIELD_USER_DATA,
                              .cb.recv_am = rndv_done, .user_data = e};
    atomic_store_explicit(&e->pending, 1, memory_order_relaxed);
    void *req = ucp_am_recv_data_nbx(u->worker, e->rndv, e->own, e->len, &rp);
    e->rndv = NULL;
    u->deferred--;
    if (req == NULL)
        atomic_store_explicit(&e->pending, 0, memory_order_relaxed);
    else if (UCS_PTR_IS_ERR(req))
        atomic_store_explicit(&e->pending, -1, memory_order_relaxed);
    return 0;
}

/* Every deferred payload still queued: pull it now (see ucx.h). */
static void undefer_all(rq_ctx_t *ctx)
{
    struct rqi_ucx *u = ctx->ucx;
    struct rqi_ucx_rx *lists[2] = {u->am_head, u->in_head};
    for (int i = 0; i < 2 && u->deferred != 0; i++)
        for (struct rqi_ucx_rx *e = lists[i]; e != NULL; e = e->next)
            if (e->rndv != NULL && undefer(ctx, e) != 0)
                rqi_fail(ctx, "out of memory for a rendezvous payload");
}

static ucs_status_t am_recv(void *arg, const void *header, size_t hlen, void *data, size_t len,
                            const ucp_am_recv_param_t *param)
{
    rq_ctx_t *ctx = arg;
    struct rqi_ucx *u = ctx->ucx;
    const int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    struct rqi_ucx_rx *e = rx_alloc(u);
    int ok = e != NULL && hlen >= RQI_UCX_HDR_MIN && hlen <= sizeof e->h;
    if (ok) {
        memcpy(&e->h, header, hlen); /* the header does not outlive the callback */
        ok = rqi_ucx_hdr_check(ctx, &e->h, hlen, len) == RQI_PKT_OK;
    }
    if (ok) {
        /* Exactly once, in order: the next number from this sender. */
        struct rqi_ucx_peer *pr = &u->peer[e->h.pkt.src];
        uint64_t s = rqi_load_relaxed(&e->h.pkt.seq);
        if (s > pr->rx_seq + 1) {
            char why[128];
            snprintf(why, sizeof why, "packets from rank %u were lost (got #%llu, expected #%llu)",
                     e->h.pkt.src, (unsigned long long)s, (unsigned long long)pr->rx_seq + 1);
            rqi_fail(ctx, why);
        }
        ok = s == pr->rx_seq + 1;
        if (ok)
            pr->rx_seq = s;
    }
    if (!ok) {
        ctx->stats.rejected++; /* refused: a stray, forged or duplicate packet */
        if (e != NULL)
            rqi_ucx_rx_free(ctx, e);
        return UCS_OK; /* a rendezvous descriptor is dropped with it */
    }
    const struct rqi_pkt_long *lg = (const struct rqi_pkt_long *)e->h.w;
    char *land = e->h.pkt.kind == RQI_PK_LONG ? ctx->seg[ctx->rank] + lg->off : NULL;
    ucs_status_t ret = UCS_OK;
    e->len = len;
    if (rndv && defer_for_placement(ctx, &e->h.pkt, len)) {
        e->rndv = data; /* pulled by rq_place, straight into its destination */
        u->deferred++;
        *u->in_tail = e;
        u->in_tail = &e->next;
        return UCS_INPROGRESS;
    }
    if (rndv) {
        if (land == NULL && (land = e->own = malloc(len)) == NULL) {
            rqi_fail(ctx, "out of memory for a rendezvous payload");
            rqi_ucx_rx_free(ctx, e);
            return UCS_OK;
        }
        e->data = land;
        ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                  UCP_OP_ATTR_FIELD_USER_DATA,
                                  .cb.recv_am = rndv_done, .user_data = e};
        atomic_store_explicit(&e->pending, 1, memory_order_relaxed);
        void *req = ucp_am_recv_data_nbx(u->worker, data, land, len, &rp);
        if (req == NULL)
            atomic_store_explicit(&e->pending, 0, memory_order_relaxed);
        else if (UCS_PTR_IS_ERR(req))
            atomic_store_explicit(&e->pending, -1, memory_order_relaxed);
    } else if (land != NULL) {
        if (len != 0)
            memcpy(land, data, len);
        e->data = land;
    } else if (len != 0 && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA)) {
        e->desc = e->data = data; /* kept in place: delivered from UCX's buffer */
        ret = UCS_INPROGRESS;
    } else if (len != 0) {
        if ((e->own = e->data = malloc(len)) == NULL) {
            rqi_fail(ctx, "out of memory for a received payload");
            rqi_ucx_rx_free(ctx, e);
            return UCS_OK;
        }
        memcpy(e->own, data, len);
    }
    if (e->data == NULL)
        e->data = (char *)e->h.w; /* no payload: a valid pointer all the same */
    *u->in_tail = e;
    u->in_tail = &e->next;
    return ret;
}

int rqi_ucx_arm(rq_ctx_t *ctx)
{
    struct rqi_ucx *u = ctx->ucx;
    if (u->efd < 0)
        return RQ_ENOTSUP;
    ucs_status_t st = ucp_worker_arm(u->worker);
    return st == UCS_OK ? 0 : st == UCS_ERR_BUSY ? RQ_EAGAIN : RQ_ENOTSUP;
}

int rqi_ucx_efd(const rq_ctx_t *ctx) { return ctx->ucx == NULL ? -1 : ctx->ucx->efd; }

static void msg_of(rq_ctx_t *ctx, struct rqi_ucx_rx *e, rq_msg_t *m)
{
    rqi_msg_from_pkt(ctx, &e->h.pkt, m);
    m->data = e->data;
    m->len = e->len;
}

/* Move arrivals, in order, to their queues: active messages wait for
 * delivery; the rest is copied into buffers.  Stops at a rendezvous still
 * landing (per-pair order). */
static int intake(rq_ctx_t *ctx)
{
    struct rqi_ucx *u = ctx->ucx;
    struct rqi_ucx_rx *e;
    int n = 0;
    while ((e = u->in_head) != NULL) {
        int pend = atomic_load_explicit(&e->pending, memory_order_acquire);
        if (pend > 0)
            break;
        if (pend < 0) {
            rqi_fail(ctx, "a rendezvous receive failed; failing the job");
            break;
        }
        struct rqi_pkt *p = &e->h.pkt;
        /* Wire-only flags: read, then gone; RQ_INTERRUPT stays with the
         * packet, as on the rings, should it move to the virtual buffer. */
        if (p->pad_ & RQI_UCX_F_INTR)
            p->flags |= RQI_PF_INTR;
        p->pad_ = 0;
        if (p->qid == RQ_AM_QUEUE) {
            e->cls = rqi_cls_of(ctx, p->qid, p->tag, p->flags);
            ctx->ucx_up.held_add(ctx, e->cls); /* the progress thread owes it an interrupt */
            u->in_head = e->next;
            e->next = NULL;
            *u->am_tail = e;
            u->am_tail = &e->next;
            u->am_count++;
        } else {
            if (ctx->ucx_up.ingest(ctx, p, e->data, e->len) != 0)
                break; /* out of memory: it waits here */
            u->in_head = e->next;
            rqi_ucx_rx_free(ctx, e);
        }
        if (u->in_head == NULL)
            u->in_tail = &u->in_head;
        n++;
    }
    return n;
}

int rqi_ucx_progress(rq_ctx_t *ctx)
{
    struct rqi_ucx *u = ctx->ucx;
    int n = (int)ucp_worker_progress(u->worker);
    if (u->in_head != NULL)
        n += intake(ctx);
    return n;
}

struct rqi_ucx_rx *rqi_ucx_am_next(rq_ctx_t *ctx, rq_msg_t *m)
{
    struct rqi_ucx *u = ctx->ucx;
    struct rqi_ucx_rx *e = u->am_head;
    if (e == NULL)
        return NULL;
    /* A payload pulled after a deferral is still landing: in order, so
     * nothing behind it is delivered either. */
    int pend = atomic_load_explicit(&e->pending, memory_order_acquire);
    if (pend != 0) {
        if (pend < 0)
            rqi_fail(ctx, "a rendezvous receive failed; failing the job");
        return NULL;
    }
    u->am_head = e->next;
    if (u->am_head == NULL)
        u->am_tail = &u->am_head;
    u->am_count--;
    rqi_held_sub(ctx, e->cls);
    msg_of(ctx, e, m);
    return e;
}

int rqi_ucx_am_waiting(const rq_ctx_t *ctx)
{
    return ctx->ucx->am_count;
}

int rqi_ucx_drain(rq_ctx_t *ctx)
{
    struct rqi_ucx *u = ctx->ucx;
    rqi_ucx_progress(ctx);
    /* The virtual buffer holds bytes: deferred payloads come here first. */
    if (u->deferred != 0)
        undefer_all(ctx);
    struct rqi_ucx_rx *e;
    while ((e = u->am_head) != NULL) {
        unsigned spins = 0;
        while (atomic_load_explicit(&e->pending, memory_order_acquire) > 0)
            if (ucp_worker_progress(u->worker) == 0 && rqi_wait_step(ctx, &spins) != 0)
                return RQ_EPEER;
        if (atomic_load_explicit(&e->pending, memory_order_acquire) < 0) {
            rqi_fail(ctx, "a rendezvous receive failed; failing the job");
            return RQ_EPEER;
        }
        if (ctx->ucx_up.ingest(ctx, &e->h.pkt, e->data, e->len) != 0)
            return RQ_ENOMEM;
        rq_msg_t m;
        rqi_ucx_rx_free(ctx, rqi_ucx_am_next(ctx, &m));
    }
    return 0;
}

int rqi_ucx_rx_deferred(const struct rqi_ucx_rx *e)
{
    return e->rndv != NULL;
}

struct place_rec {
    rq_ctx_t *ctx;
    void    (*fn)(rq_ctx_t *, void *, int);
    void     *arg;
};

static void place_landed(void *req, ucs_status_t st, size_t length, void *user_data)
{
    (void)length;
    struct place_rec *r = user_data;
    if (st != UCS_OK && !r->ctx->ucx->closing)
        rqi_fail(r->ctx, "a placed rendezvous payload failed; failing the job");
    ucp_request_free(req);
    r->fn(r->ctx, r->arg, st == UCS_OK);
    free(r);
}

int rqi_ucx_place(rq_ctx_t *ctx, struct rqi_ucx_rx *e, void *dst,
                  void (*fn)(rq_ctx_t *ctx, void *arg, int ok), void *arg)
{
    struct rqi_ucx *u = ctx->ucx;
    struct place_rec *r = malloc(sizeof *r);
    if (r == NULL)
        return RQ_ENOMEM;
    *r = (struct place_rec){ctx, fn, arg};
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                              UCP_OP_ATTR_FIELD_USER_DATA,
                              .cb.recv_am = place_landed, .user_data = r};
    void *req = ucp_am_recv_data_nbx(u->worker, e->rndv, dst, e->len, &rp);
    e->rndv = NULL;
    u->deferred--;
    if (UCS_PTR_IS_ERR(req)) {
        free(r);
        return peer_failed(ctx, (int)e->h.pkt.src, UCS_PTR_STATUS(req));
    }
    if (req == NULL) {
        fn(ctx, arg, 1);
        free(r);
    }
    return 0;
}

int rqi_ucx_rx_fetch(rq_ctx_t *ctx, struct rqi_ucx_rx *e, rq_msg_t *m)
{
    if (e->rndv == NULL)
        return 0;
    int rc = undefer(ctx, e);
    unsigned spins = 0;
    while (rc == 0 && atomic_load_explicit(&e->pending, memory_order_acquire) > 0)
        if (ucp_worker_progress(ctx->ucx->worker) == 0)
            rc = rqi_wait_step(ctx, &spins);
    if (rc == 0 && atomic_load_explicit(&e->pending, memory_order_acquire) < 0)
        rc = peer_failed(ctx, (int)e->h.pkt.src, UCS_ERR_IO_ERROR);
    if (rc == 0)
        m->data = e->data;
    return rc;
}

/* ---- send -------------------------------------------------------------- */

struct bounce {
    rq_ctx_t          *ctx;
    struct rqi_ucx_hdr h;
    char               data[];
};

static void bounce_done(void *req, ucs_status_t st, void *user_data)
{
    struct bounce *b = user_data;
    if (st != UCS_OK && !b->ctx->ucx->closing)
        rqi_fail(b->ctx, "a UCX send failed; failing the job");
    b->ctx->ucx->inflight--;
    free(b);
    ucp_request_free(req);
}

/* The UCP header of packet o to pr (its next sequence number): its length. */
static size_t ucx_header(const rq_ctx_t *ctx, const struct rqi_ucx_peer *pr,
                         const struct rqi_ucx_out *o, struct rqi_ucx_hdr *h)
{
    const size_t ext = rqi_pkt_ext_bytes(o->kind);
    const int long_ = o->kind == RQI_PK_LONG;
    h->key = ctx->ucx->key;
    rqi_store_relaxed(&h->pkt.seq, pr->tx_seq + 1);
    rqi_pkt_write_header(&h->pkt, ctx->job32, (uint32_t)ctx->rank, o->tag, o->qid, o->nargs,
                         o->kind, long_ ? 0u : (uint32_t)o->len, 0, o->pflags);
    h->pkt.pad_ = (o->sflags & RQ_INTERRUPT) ? RQI_UCX_F_INTR : 0u;
    if (long_) {
        h->w[0] = o->off;
        h->w[1] = o->len;
    }
    if (o->nargs != 0)
        memcpy((char *)h->w + ext, o->args, 8u * o->nargs);
    return RQI_UCX_HDR_MIN + ext + 8u * o->nargs;
}

int rqi_ucx_send(rq_ctx_t *ctx, int dst, const struct rqi_ucx_out *o)
{
    struct rqi_ucx *u = ctx->ucx;
    struct rqi_ucx_peer *pr = &u->peer[dst];
    if (o->len <= u->eager_max && u->inflight >= u->inflight_max)
        return RQ_EAGAIN;
    struct rqi_ucx_hdr h;
    const size_t hlen = ucx_header(ctx, pr, o, &h);

    ucp_request_param_t rp;
    void *req;
    if (o->len <= u->eager_max) {
        /* Straight from the caller's buffers if UCX takes them now ... */
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
        rp.flags = UCP_AM_SEND_FLAG_EAGER;
        req = ucp_am_send_nbx(pr->ep, RQI_UCX_AM_ID, &h, hlen, o->data, o->len, &rp);
        if (req == NULL)
            goto sent;
        if (UCS_PTR_STATUS(req) != UCS_ERR_NO_RESOURCE)
            return peer_failed(ctx, dst, UCS_PTR_STATUS(req));
        /* ... else from a copy that lives until UCX is done with it. */
        struct bounce *b = malloc(sizeof *b + o->len);
        if (b == NULL)
            return RQ_ENOMEM;
        b->ctx = ctx;
        memcpy(&b->h, &h, hlen);
        if (o->len != 0)
            memcpy(b->data, o->data, o->len);
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA;
        rp.cb.send = bounce_done;
        rp.user_data = b;
        req = ucp_am_send_nbx(pr->ep, RQI_UCX_AM_ID, &b->h, hlen, b->data, o->len, &rp);
        if (req == NULL) {
            free(b);
        } else if (UCS_PTR_IS_ERR(req)) {
            free(b);
            return peer_failed(ctx, dst, UCS_PTR_STATUS(req));
        } else {
            u->inflight++;
        }
        goto sent;
    }
    /* Rendezvous: the receiver pulls the payload from the caller's buffer;
     * we return once it is no longer needed. */
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_AM_SEND_FLAG_RNDV;
    req = ucp_am_send_nbx(pr->ep, RQI_UCX_AM_ID, &h, hlen, o->data, o->len, &rp);
    pr->tx_seq++; /* committed: whatever happens next, this number is used */
    ctx->stats.sent++;
    return op_wait(ctx, dst, req);
sent:
    pr->tx_seq++;
    ctx->stats.sent++;
    /* A sender whose sends all complete at once would never progress the
     * worker, and over transports whose atomics the target's progress
     * applies (TCP) another node's overflow STOP would never reach it. */
    if (RQI_UNLIKELY(++u->sends_unprogressed >= RQI_UCX_SENDS_PER_PROGRESS)) {
        u->sends_unprogressed = 0;
        ucp_worker_progress(u->worker);
    }
    return 0;
}

int rqi_ucx_send_raw(rq_ctx_t *ctx, int dst, const void *hdr, size_t hlen, const void *data,
                     size_t len)
{
    ucp_request_param_t rp = {.op_attr_mask = 0};
    void *req = ucp_am_send_nbx(ctx->ucx->peer[dst].ep, RQI_UCX_AM_ID, hdr, hlen, data, len, &rp);
    return wait_req(ctx, req) == UCS_OK ? 0 : RQ_EPEER;
}

uint64_t rqi_ucx_next_seq(const rq_ctx_t *ctx, int dst)
{
    return ctx->ucx->peer[dst].tx_seq + 1;
}

uint64_t rqi_ucx_key(const rq_ctx_t *ctx)
{
    return ctx->ucx->key;
}

/* ---- global address ---------------------------------------------------- */

int rqi_ucx_put(rq_ctx_t *ctx, int dst, uint64_t off, uint64_t rstride, const char *src,
                uint64_t lstride, uint64_t elem, uint64_t count, int store)
{
    struct rqi_ucx_peer *pr = &ctx->ucx->peer[dst];
    ucp_request_param_t rp = {.op_attr_mask = 0};
    for (uint64_t i = 0; i < count; i++) {
        void *req = ucp_put_nbx(pr->ep, src + i * lstride, elem,
                                pr->seg_addr + off + i * rstride, pr->rkey, &rp);
        int rc = op_wait(ctx, dst, req); /* local completion: the source is free */
        if (rc != 0)
            return rc;
    }
    if (store) {
        /* The counter moves only after the data: a fence orders the add
         * behind the puts at the target. */
        uint64_t n = elem * count;
        ucp_worker_fence(ctx->ucx->worker);
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        rp.datatype = ucp_dt_make_contig(8);
        const uint64_t mine = pr->stored_addr + (uint64_t)ctx->rank * RQI_CACHELINE;
        return op_wait(ctx, dst, ucp_atomic_op_nbx(pr->ep, UCP_ATOMIC_OP_ADD, &n, 1, mine,
                                                   pr->rkey, &rp));
    }
    return 0;
}

int rqi_ucx_get(rq_ctx_t *ctx, char *dst, uint64_t lstride, int src_rank, uint64_t off,
                uint64_t rstride, uint64_t elem, uint64_t count, int wait)
{
    struct rqi_ucx_peer *pr = &ctx->ucx->peer[src_rank];
    ucp_request_param_t rp = {.op_attr_mask = 0};
    for (uint64_t i = 0; i < count; i++) {
        void *req = ucp_get_nbx(pr->ep, dst + i * lstride, elem,
                                pr->seg_addr + off + i * rstride, pr->rkey, &rp);
        if (UCS_PTR_IS_ERR(req))
            return peer_failed(ctx, src_rank, UCS_PTR_STATUS(req));
        if (req == NULL)
            continue;
        if (wait) {
            int rc = op_wait(ctx, src_rank, req);
            if (rc != 0)
                return rc;
        } else {
            ucp_request_free(req); /* completes by itself; rq_sync flushes */
        }
    }
    return 0;
}

int rqi_ucx_amo(rq_ctx_t *ctx, int dst, uint64_t off, int op, uint64_t operand,
                uint64_t compare, uint64_t *old)
{
    static const ucp_atomic_op_t ops[] = {
        [RQ_AMO_FADD] = UCP_ATOMIC_OP_ADD, [RQ_AMO_SWAP] = UCP_ATOMIC_OP_SWAP,
        [RQ_AMO_CSWAP] = UCP_ATOMIC_OP_CSWAP, [RQ_AMO_FAND] = UCP_ATOMIC_OP_AND,
        [RQ_AMO_FOR] = UCP_ATOMIC_OP_OR, [RQ_AMO_FXOR] = UCP_ATOMIC_OP_XOR,
    };
    struct rqi_ucx_peer *pr = &ctx->ucx->peer[dst];
    /* CSWAP (UCP): if (*remote == *buffer) *remote = *reply_buffer; the
     * reply buffer then holds the value found. */
    const int cas = op == RQ_AMO_CSWAP;
    uint64_t result = cas ? operand : 0;
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
                                              UCP_OP_ATTR_FIELD_REPLY_BUFFER,
                              .datatype = ucp_dt_make_contig(8), .reply_buffer = &result};
    void *req = ucp_atomic_op_nbx(pr->ep, ops[op], cas ? &compare : &operand, 1,
                                  pr->seg_addr + off, pr->rkey, &rp);
    int rc = op_wait(ctx, dst, req);
    if (rc == 0)
        *old = result;
    return rc;
}

int rqi_ucx_stop_add(rq_ctx_t *ctx, int dst, uint64_t delta)
{
    struct rqi_ucx_peer *pr = &ctx->ucx->peer[dst];
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                              .datatype = ucp_dt_make_contig(8)};
    void *req = ucp_atomic_op_nbx(pr->ep, UCP_ATOMIC_OP_ADD, &delta, 1, pr->stop_addr,
                                  pr->rkey, &rp);
    if (UCS_PTR_IS_ERR(req))
        return peer_failed(ctx, dst, UCS_PTR_STATUS(req));
    if (req != NULL)
        ucp_request_free(req); /* completes by itself; rq_sync and rq_finalize flush */
    return 0;
}

int rqi_ucx_flush(rq_ctx_t *ctx)
{
    ucp_request_param_t rp = {.op_attr_mask = 0};
    ucs_status_t st = wait_req(ctx, ucp_worker_flush_nbx(ctx->ucx->worker, &rp));
    if (st != UCS_OK && !ctx->fail.failed)
        return peer_failed(ctx, -1, st);
    /* Eager copies still queued count too: nothing of ours is in flight. */
    unsigned spins = 0;
    while (ctx->ucx->inflight != 0) {
        if (rqi_ucx_progress(ctx) == 0 && rqi_wait_step(ctx, &spins) != 0)
            return RQ_EPEER;
    }
    return ctx->fail.failed ? RQ_EPEER : 0;
}

/* ---- non-blocking transfers (gas/async.h) ------------------------------ */

static void nb_done(void *req, ucs_status_t st, void *user_data)
{
    struct rqi_ucx_done *d = user_data;
    rq_ctx_t *ctx = d->ctx;
    if (st != UCS_OK && !ctx->ucx->closing)
        rqi_fail(ctx, "a non-blocking UCX transfer failed; failing the job");
    ucp_request_free(req);
    d->fn(ctx, d, st == UCS_OK);
}

/* req is the request that completes d (NULL: done already). */
static int nb_track(rq_ctx_t *ctx, int peer, void *req, struct rqi_ucx_done *d)
{
    if (UCS_PTR_IS_ERR(req))
        return peer_failed(ctx, peer, UCS_PTR_STATUS(req));
    if (req == NULL)
        d->fn(ctx, d, 1);
    return 0;
}

static ucp_request_param_t nb_param(struct rqi_ucx_done *d)
{
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                              UCP_OP_ATTR_FIELD_USER_DATA,
                              .cb.send = nb_done, .user_data = d};
    return rp;
}

int rqi_ucx_put_nb(rq_ctx_t *ctx, int dst, uint64_t off, const char *src, uint64_t len,
                   struct rqi_ucx_done *d)
{
    struct rqi_ucx_peer *pr = &ctx->ucx->peer[dst];
    d->ctx = ctx;
    ucp_request_param_t rp0 = {.op_attr_mask = 0};
    void *req = ucp_put_nbx(pr->ep, src, len, pr->seg_addr + off, pr->rkey, &rp0);
    if (UCS_PTR_IS_ERR(req))
        return peer_failed(ctx, dst, UCS_PTR_STATUS(req));
    if (req != NULL)
        ucp_request_free(req); /* completes by itself; the flush below covers it */
    /* Remote completion: an endpoint flush completes after every operation
     * issued on the endpoint before it. */
    ucp_request_param_t rp = nb_param(d);
    return nb_track(ctx, dst, ucp_ep_flush_nbx(pr->ep, &rp), d);
}

int rqi_ucx_get_nb(rq_ctx_t *ctx, char *dst, int src_rank, uint64_t off, uint64_t len,
                   struct rqi_ucx_done *d)
{
    struct rqi_ucx_peer *pr = &ctx->ucx->peer[src_rank];
    d->ctx = ctx;
    ucp_request_param_t rp = nb_param(d);
    return nb_track(ctx, src_rank,
                    ucp_get_nbx(pr->ep, dst, len, pr->seg_addr + off, pr->rkey, &rp), d);
}

int rqi_ucx_send_nb(rq_ctx_t *ctx, int dst, const struct rqi_ucx_out *o, struct rqi_ucx_done *d)
{
    struct rqi_ucx *u = ctx->ucx;
    d->ctx = ctx;
    if (o->len <= u->eager_max) {
        /* Eager: the source is free once rqi_ucx_send returns. */
        int rc = rqi_ucx_send(ctx, dst, o);
        if (rc == 0)
            d->fn(ctx, d, 1);
        return rc;
    }
    struct rqi_ucx_peer *pr = &u->peer[dst];
    const size_t hlen = ucx_header(ctx, pr, o, &d->hdr);
    ucp_request_param_t rp = nb_param(d);
    rp.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_AM_SEND_FLAG_RNDV;
    /* Header and payload stay ours until the callback: the receiver pulls
     * the payload from o->data. */
    void *req = ucp_am_send_nbx(pr->ep, RQI_UCX_AM_ID, &d->hdr, hlen, o->data, o->len, &rp);
    pr->tx_seq++; /* committed: whatever happens next, this number is used */
    ctx->stats.sent++;
    return nb_track(ctx, dst, req, d);
}

/* ---- setup ------------------------------------------------------------- */

/* What a rank publishes for the others to reach its area. */
struct pub_area {
    uint64_t seg_addr, stored_addr, stop_addr;
    uint32_t rkey_len;
    char     rkey[RKEY_MAX];
};

static int setup_worker(rq_ctx_t *ctx, struct rqi_ucx *u, char *err, size_t errlen)
{
    ucp_config_t *cfg;
    if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK) {
        snprintf(err, errlen, "ucp_config_read failed");
        return RQ_ENOTSUP;
    }
    ucp_params_t pp = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                       .features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_AMO64 |
                                   UCP_FEATURE_WAKEUP,
                       .mt_workers_shared = 0};
    ucs_status_t st = ucp_init(&pp, cfg, &u->uctx);
    ucp_config_release(cfg);
    if (st != UCS_OK) {
        snprintf(err, errlen, "ucp_init: %s", ucs_status_string(st));
        return RQ_ENOTSUP;
    }
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    if ((st = ucp_worker_create(u->uctx, &wp, &u->worker)) != UCS_OK) {
        snprintf(err, errlen, "ucp_worker_create: %s", ucs_status_string(st));
        return RQ_ENOTSUP;
    }
    /* The progress thread sleeps on this fd for interrupts (netwake.c). */
    if (ucp_worker_get_efd(u->worker, &u->efd) != UCS_OK)
        u->efd = -1;
    ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                               UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                                               UCP_AM_HANDLER_PARAM_FIELD_CB |
                                               UCP_AM_HANDLER_PARAM_FIELD_ARG,
                                 .id = RQI_UCX_AM_ID,
                                 .flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA,
                                 .cb = am_recv, .arg = ctx};
    if ((st = ucp_worker_set_am_recv_handler(u->worker, &hp)) != UCS_OK) {
        snprintf(err, errlen, "ucp_worker_set_am_recv_handler: %s", ucs_status_string(st));
        return RQ_ENOTSUP;
    }
    /* Our area of the job segment: control page (store counter) through
     * the end of the segment, one registration. */
    char *lo = (char *)rqi_shm_area(&ctx->shm, (uint32_t)ctx->rank);
    char *hi = ctx->seg[ctx->rank] + ctx->seg_bytes;
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                             UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                               .address = lo, .length = (size_t)(hi - lo)};
    if ((st = ucp_mem_map(u->uctx, &mp, &u->memh)) != UCS_OK) {
        snprintf(err, errlen, "ucp_mem_map: %s", ucs_status_string(st));
        return RQ_ENOMEM;
    }
    return 0;
}

static int publish(rq_ctx_t *ctx, struct rqi_ucx *u, char *err, size_t errlen)
{
    ucp_address_t *addr;
    size_t alen;
    void *rk;
    size_t rklen;
    if (ucp_worker_get_address(u->worker, &addr, &alen) != UCS_OK ||
        ucp_rkey_pack(u->uctx, u->memh, &rk, &rklen) != UCS_OK) {
        snprintf(err, errlen, "UCX: cannot pack our address or remote key");
        return RQ_ENOTSUP;
    }
    struct pub_area *pa = calloc(1, sizeof *pa);
    int rc = RQ_ENOMEM;
    if (pa != NULL && rklen <= RKEY_MAX) {
        pa->seg_addr = (uint64_t)(uintptr_t)ctx->seg[ctx->rank];
        /* Our store counters: a source adds to its own line (net/shm.h). */
        pa->stored_addr = (uint64_t)(uintptr_t)rqi_shm_stored(&ctx->shm, (uint32_t)ctx->rank, 0);
        pa->stop_addr = (uint64_t)(uintptr_t)&rqi_shm_area(&ctx->shm, (uint32_t)ctx->rank)->vni.stop;
        pa->rkey_len = (uint32_t)rklen;
        memcpy(pa->rkey, rk, rklen);
        rc = rqi_pmix_put("rq.ucx.addr", addr, alen) != 0 ||
                     rqi_pmix_put("rq.ucx.area", pa, sizeof *pa) != 0 || rqi_pmix_fence() != 0
                 ? RQ_EPEER
                 : 0;
        if (rc != 0)
            snprintf(err, errlen, "PMIx exchange of UCX addresses failed");
    }
    free(pa);
    ucp_rkey_buffer_release(rk);
    ucp_worker_release_address(u->worker, addr);
    return rc;
}

static int connect_peer(rq_ctx_t *ctx, struct rqi_ucx *u, int r, char *err, size_t errlen)
{
    struct rqi_ucx_peer *pr = &u->peer[r];
    size_t cap = 64 * 1024, len;
    char *addr = malloc(cap);
    struct pub_area *pa = malloc(sizeof *pa);
    int rc = RQ_ENOMEM;
    if (addr == NULL || pa == NULL)
        goto out;
    rc = RQ_EPEER;
    if (rqi_pmix_get(r, "rq.ucx.addr", addr, cap, &len) != 0 ||
        rqi_pmix_get(r, "rq.ucx.area", pa, sizeof *pa, &len) != 0 || len != sizeof *pa ||
        pa->rkey_len > RKEY_MAX) {
        snprintf(err, errlen, "PMIx: rank %d published no UCX address", r);
        goto out;
    }
    ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                        UCP_EP_PARAM_FIELD_ERR_HANDLER,
                          .address = (ucp_address_t *)addr,
                          .err_mode = UCP_ERR_HANDLING_MODE_PEER,
                          .err_handler = {.cb = ep_error, .arg = ctx}};
    ucs_status_t st = ucp_ep_create(u->worker, &ep, &pr->ep);
    if (st == UCS_OK)
        st = ucp_ep_rkey_unpack(pr->ep, pa->rkey, &pr->rkey);
    if (st != UCS_OK) {
        snprintf(err, errlen, "UCX: cannot reach rank %d: %s", r, ucs_status_string(st));
        goto out;
    }
    pr->seg_addr = pa->seg_addr;
    pr->stored_addr = pa->stored_addr;
    pr->stop_addr = pa->stop_addr;
    rc = 0;
out:
    free(addr);
    free(pa);
    return rc;
}

/* Complete the connection to rank r now, while every rank is alive and in
 * rq_init: UCX 1.13's TCP transport can abort the process (an assertion in
 * its wire-up code) when a peer vanishes while a connection is still being
 * set up, whereas the failure of an established one reaches ep_error.  The
 * cost is one connection per remote rank at start-up (UCX's own lazy mode
 * would open them on first use). */
static int wire_up(rq_ctx_t *ctx, struct rqi_ucx *u, int r, char *err, size_t errlen)
{
    ucp_request_param_t rp = {.op_attr_mask = 0};
    ucs_status_t st = wait_req(ctx, ucp_ep_flush_nbx(u->peer[r].ep, &rp));
    if (st == UCS_OK && !ctx->fail.failed)
        return 0;
    snprintf(err, errlen, "UCX: cannot connect to rank %d: %s", r,
             ctx->fail.failed ? "the job failed" : ucs_status_string(st));
    return RQ_EPEER;
}

int rqi_ucx_init(rq_ctx_t *ctx, char *err, size_t errlen)
{
    struct rqi_ucx *u = calloc(1, sizeof *u);
    if (u == NULL)
        return RQ_ENOMEM;
    u->peer = calloc((size_t)ctx->size, sizeof *u->peer);
    if (u->peer == NULL) {
        free(u);
        return RQ_ENOMEM;
    }
    u->in_tail = &u->in_head;
    u->am_tail = &u->am_head;
    u->efd = -1;
    u->key = ctx->shm.hdr->job_id;
    u->eager_max = ctx->cfg.v[RQI_CFG_UCX_EAGER_MAX];
    u->inflight_max = ctx->cfg.v[RQI_CFG_UCX_INFLIGHT];
    ctx->ucx = u;
    int rc = setup_worker(ctx, u, err, errlen);
    if (rc == 0)
        rc = publish(ctx, u, err, errlen);
    for (int r = 0; rc == 0 && r < ctx->size; r++)
        if (ctx->remote[r])
            rc = connect_peer(ctx, u, r, err, errlen);
    for (int r = 0; rc == 0 && r < ctx->size; r++)
        if (ctx->remote[r])
            rc = wire_up(ctx, u, r, err, errlen);
    return rc; /* on failure rq_init calls rqi_ucx_fini */
}

void rqi_ucx_closing(rq_ctx_t *ctx)
{
    if (ctx->ucx != NULL)
        ctx->ucx->closing = 1;
}

void rqi_ucx_fini(rq_ctx_t *ctx)
{
    struct rqi_ucx *u = ctx->ucx;
    if (u == NULL)
        return;
    u->closing = 1;
    for (int r = 0; r < ctx->size; r++) {
        struct rqi_ucx_peer *pr = &u->peer[r];
        if (pr->rkey != NULL)
            ucp_rkey_destroy(pr->rkey);
        if (pr->ep != NULL) {
            ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                      .flags = UCP_EP_CLOSE_FLAG_FORCE};
            void *req = ucp_ep_close_nbx(pr->ep, &rp);
            if (req != NULL && !UCS_PTR_IS_ERR(req)) {
                while (ucp_request_check_status(req) == UCS_INPROGRESS)
                    ucp_worker_progress(u->worker);
                ucp_request_free(req);
            }
        }
    }
    struct rqi_ucx_rx *e;
    for (struct rqi_ucx_rx **l[] = {&u->in_head, &u->am_head}, ***pl = l; pl < l + 2; pl++)
        while ((e = **pl) != NULL) {
            while (atomic_load(&e->pending) > 0)
                ucp_worker_progress(u->worker);
            **pl = e->next;
            rqi_ucx_rx_free(ctx, e);
        }
    while ((e = u->free_rx) != NULL) {
        u->free_rx = e->next;
        free(e);
    }
    if (u->memh != NULL)
        ucp_mem_unmap(u->uctx, u->memh);
    if (u->worker != NULL)
        ucp_worker_destroy(u->worker);
    if (u->uctx != NULL)
        ucp_cleanup(u->uctx);
    free(u->peer);
    free(u);
    ctx->ucx = NULL;
}

const struct rqi_net_ops rqi_net_ucx = {
    .name = "ucx",
    .init = rqi_ucx_init,
    .fini = rqi_ucx_fini,
    .closing = rqi_ucx_closing,
    .send = rqi_ucx_send,
    .progress = rqi_ucx_progress,
    .am_waiting = rqi_ucx_am_waiting,
    .am_next = rqi_ucx_am_next,
    .rx_free = rqi_ucx_rx_free,
    .drain = rqi_ucx_drain,
    .rx_deferred = rqi_ucx_rx_deferred,
    .place = rqi_ucx_place,
    .rx_fetch = rqi_ucx_rx_fetch,
    .efd = rqi_ucx_efd,
    .arm = rqi_ucx_arm,
    .put = rqi_ucx_put,
    .get = rqi_ucx_get,
    .amo = rqi_ucx_amo,
    .flush = rqi_ucx_flush,
    .put_nb = rqi_ucx_put_nb,
    .get_nb = rqi_ucx_get_nb,
    .send_nb = rqi_ucx_send_nb,
    .stop_add = rqi_ucx_stop_add,
};
