/* home.c - the home side of the protocol: one directory entry per block,
 * full map of sharers or one owner; a request that needs invalidations or
 * a recall makes the block busy, and requests that arrive meanwhile wait
 * in the entry's queue, served in arrival order once it is free.  Only
 * handlers of the block's key touch its entry (docs/dsm.md). */
#include <stdlib.h>

#include "dsm.h"

_Thread_local uint64_t rqdsm_grant_send_ticks __attribute__((tls_model("initial-exec")));

static uint64_t *bits_of(struct rqdsm_region *r, size_t b)
{
    return &r->sharers[b * r->dsm->words];
}

static int has(const uint64_t *s, int x)
{
    return (int)(s[x / 64] >> (x % 64) & 1);
}

static void grant(rqdsm_t *d, struct rqdsm_region *r, size_t b, int dst, unsigned kind,
                  int with_data)
{
    uint64_t a[2] = {KEY(r->rid, b), kind};
    /* the home's own copy is the master: no bytes to itself */
    int bytes = with_data && dst != d->me, timed = bytes && kind == E_S; /* Table 1 */
    uint64_t t0 = timed ? rqdsm_ticks() : 0;
    rqdsm_send(d, dst, H_DATA, a[0], a, 2, bytes ? r->mem + (b << d->block_shift) : NULL,
               bytes ? d->block : 0);
    if (timed)
        rqdsm_grant_send_ticks += rqdsm_ticks() - t0;
}

static void ask(rqdsm_t *d, struct rqdsm_region *r, size_t b, int dst, int h, unsigned kind)
{
    uint64_t a[2] = {KEY(r->rid, b), kind};
    rqdsm_send(d, dst, h, a[0], a, 2, NULL, 0);
}

static void finish(rqdsm_t *d, struct rqdsm_region *r, size_t b);

/* Whether the home's own copy may be changed in place: not while a grant
 * to itself is on its way (its entry still shows the request pending):
 * the grant must land first, which the message to itself guarantees
 * (FIFO from one source) and an in-place change would not. */
static int in_place(struct rqdsm_region *r, size_t b)
{
    return !(atomic_load_explicit(&r->entry[b], memory_order_relaxed) & E_PEND);
}

/* Recall the owner's copy to kind; the home's own copy is recalled in
 * place (no message), and finishes the request at once unless a holder
 * defers it. */
static void recall(rqdsm_t *d, struct rqdsm_region *r, size_t b, int owner, unsigned kind)
{
    if (owner != d->me || !in_place(r, b))
        ask(d, r, b, owner, H_RECALL, kind);
    else if (rqdsm_local_recall(d, r, b, kind))
        finish(d, r, b);
}

/* Serve one request on a free block; it may leave the block busy. */
static void serve(rqdsm_t *d, struct rqdsm_region *r, size_t b, int src, int type)
{
    struct dir *e = &r->dir[b];
    uint64_t *s = bits_of(r, b);
    if (type != H_DROP)
        STAT(d, home_requests);
    switch (type) {
    case H_RD_REQ:
        if (!e->excl) {
            s[src / 64] |= 1ull << (src % 64);
            grant(d, r, b, src, E_S, 1);
        } else if (e->owner == src) {
            /* Its copy is exclusive (its requests are FIFO behind any
             * flush or drop): a request it did not need.  The home's
             * bytes are older than its copy: grant without them. */
            grant(d, r, b, src, E_E, 0);
        } else {
            e->busy = 1;
            e->serving = H_RD_REQ;
            e->src = src;
            recall(d, r, b, e->owner, E_S);
        }
        break;
    case H_WR_REQ:
        if (!e->excl) {
            int had = has(s, src);
            uint32_t others = 0;
            for (int x = 0; x < d->np; x++)
                if (x != src && has(s, x)) {
                    if (x != d->me || !in_place(r, b))
                        ask(d, r, b, x, H_INV, 0);
                    else if (rqdsm_local_inv(d, r, b))
                        continue; /* the home's own copy went in place */
                    others++;
                }
            if (others == 0) {
                for (unsigned w = 0; w < d->words; w++)
                    s[w] = 0;
                e->excl = 1;
                e->owner = src;
                grant(d, r, b, src, E_E, !had);
            } else {
                e->busy = 1;
                e->serving = H_WR_REQ;
                e->src = src;
                e->acks = others;
                e->need_data = (uint8_t)!had;
            }
        } else if (e->owner == src) { /* as above: no bytes */
            grant(d, r, b, src, E_E, 0);
        } else {
            e->busy = 1;
            e->serving = H_WR_REQ;
            e->src = src;
            e->need_data = 1;
            recall(d, r, b, e->owner, E_I);
        }
        break;
    case H_FLUSH_REQ: /* only the current owner's; a stale one is moot */
        if (e->excl && e->owner == src) {
            e->busy = 1;
            e->serving = H_FLUSH_REQ;
            e->src = src;
            recall(d, r, b, src, E_I);
        }
        break;
    case H_DROP:
        if (!e->excl)
            s[src / 64] &= ~(1ull << (src % 64));
        break;
    }
}

/* The busy block's request is complete: record it, answer, and serve the
 * queued requests until one makes the block busy again. */
static void finish(rqdsm_t *d, struct rqdsm_region *r, size_t b)
{
    struct dir *e = &r->dir[b];
    uint64_t *s = bits_of(r, b);
    int src = e->src;
    e->busy = 0;
    switch (e->serving) {
    case H_RD_REQ: /* the owner kept a shared copy */
        s[e->owner / 64] |= 1ull << (e->owner % 64);
        s[src / 64] |= 1ull << (src % 64);
        e->excl = 0;
        grant(d, r, b, src, E_S, 1);
        break;
    case H_WR_REQ:
        for (unsigned w = 0; w < d->words; w++)
            s[w] = 0;
        e->excl = 1;
        e->owner = src;
        grant(d, r, b, src, E_E, e->need_data);
        break;
    case H_FLUSH_REQ: /* back home: no copy anywhere */
        for (unsigned w = 0; w < d->words; w++)
            s[w] = 0;
        e->excl = 0;
        break;
    }
    while (!e->busy && e->head) {
        struct pend *p = e->head;
        e->head = p->next;
        if (e->head == NULL)
            e->tail = NULL;
        serve(d, r, b, p->src, p->type);
        free(p);
    }
}

static struct rqdsm_region *home_region(rqdsm_t *d, const rq_msg_t *m, size_t *b)
{
    struct rqdsm_region *r = rqdsm_msg_region(d, m, 1, b);
    if (r != NULL && (r->home != d->me || m->src < 0 || m->src >= d->np)) {
        STAT(d, dropped);
        return NULL;
    }
    return r;
}

void rqdsm_h_request(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    rqdsm_t *d = arg;
    size_t b;
    struct rqdsm_region *r = home_region(d, m, &b);
    if (r == NULL)
        return;
    int type = (int)(m->handler - d->hbase);
    uint64_t t0 = type == H_RD_REQ ? rqdsm_ticks() : 0;
    rqdsm_lock(r, b);
    struct dir *e = &r->dir[b];
    if (!e->busy) {
        rqdsm_grant_send_ticks = 0;
        serve(d, r, b, m->src, type);
        if (type == H_RD_REQ && rqdsm_grant_send_ticks != 0) { /* Table 1's reply */
            STAT(d, replies);
            STAT_ADD(d, reply_ticks, rqdsm_ticks() - t0);
            STAT_ADD(d, reply_send_ticks, rqdsm_grant_send_ticks);
        }
    } else {
        struct pend *p = malloc(sizeof *p);
        if (p == NULL) { /* cannot queue it: nothing sane but to stop */
            rqdsm_unlock(r, b);
            abort();
        }
        *p = (struct pend){NULL, m->src, type};
        if (e->tail)
            e->tail->next = p;
        else
            e->head = p;
        e->tail = p;
    }
    rqdsm_unlock(r, b);
}

void rqdsm_h_inv_ack(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    rqdsm_t *d = arg;
    size_t b;
    struct rqdsm_region *r = home_region(d, m, &b);
    if (r == NULL)
        return;
    rqdsm_lock(r, b);
    struct dir *e = &r->dir[b];
    if (!e->busy || e->serving != H_WR_REQ || e->acks == 0)
        STAT(d, dropped); /* not one we wait for: a forged or stray ack */
    else if (--e->acks == 0)
        finish(d, r, b);
    rqdsm_unlock(r, b);
}

void rqdsm_h_recall_data(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    rqdsm_t *d = arg;
    size_t b;
    struct rqdsm_region *r = home_region(d, m, &b);
    if (r == NULL)
        return;
    rqdsm_lock(r, b);
    struct dir *e = &r->dir[b];
    if (!e->busy || !e->excl || e->owner != m->src) {
        STAT(d, dropped); /* no recall of this owner's is outstanding */
    } else {
        if (m->src != d->me) {
            if (m->len != d->block) {
                STAT(d, dropped);
                rqdsm_unlock(r, b);
                return;
            }
            __builtin_memcpy(r->mem + (b << d->block_shift), m->data, d->block);
        }
        finish(d, r, b);
    }
    rqdsm_unlock(r, b);
}
