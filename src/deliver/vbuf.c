/* vbuf.c - chunked FIFOs of buffered packets (see vbuf.h). */
#include "deliver/vbuf.h"

#include <stdlib.h>
#include <string.h>

static size_t rec_size(unsigned nargs, size_t inline_len)
{
    size_t s = sizeof(struct rqi_vrec) + 8u * nargs + inline_len;
    return (s + 7) & ~(size_t)7;
}

void rqi_vbuf_init(struct rqi_vbuf *vb, size_t chunk_bytes)
{
    memset(vb, 0, sizeof *vb);
    vb->chunk_bytes = chunk_bytes;
}

static void chunk_release(struct rqi_vbuf *vb, struct rqi_vchunk *c)
{
    if (c->cap == vb->chunk_bytes && vb->ncache < RQI_VBUF_CACHE) {
        c->next = vb->cache;
        vb->cache = c;
        vb->ncache++;
    } else {
        free(c);
    }
}

static struct rqi_vchunk *chunk_get(struct rqi_vbuf *vb, size_t need)
{
    struct rqi_vchunk *c;
    if (need <= vb->chunk_bytes && vb->cache != NULL) {
        c = vb->cache;
        vb->cache = c->next;
        vb->ncache--;
    } else {
        size_t cap = need > vb->chunk_bytes ? need : vb->chunk_bytes;
        c = malloc(sizeof *c + cap);
        if (c == NULL)
            return NULL;
        c->cap = cap;
    }
    c->next = NULL;
    c->rd = c->wr = 0;
    return c;
}

struct rqi_vrec *rqi_vbuf_push(struct rqi_vbuf *vb, struct rqi_vfifo *f, unsigned nargs,
                               size_t inline_len)
{
    size_t need = rec_size(nargs, inline_len);
    if (need > UINT32_MAX || !rqi_vbuf_room(vb, need))
        return NULL;
    struct rqi_vchunk *c = f->last;
    if (c == NULL || c->cap - c->wr < need) {
        struct rqi_vchunk *n = chunk_get(vb, need);
        if (n == NULL)
            return NULL;
        if (c == NULL)
            f->first = n;
        else
            c->next = n;
        f->last = c = n;
    }
    struct rqi_vrec *r = (struct rqi_vrec *)(c->buf + c->wr);
    c->wr += need;
    r->bytes = (uint32_t)need;
    r->nargs = (uint8_t)nargs;
    r->flags = 0;
    r->len = inline_len;
    r->data = r->args + nargs;
    vb->records++;
    vb->bytes_now += need;
    if (vb->bytes_now > vb->bytes_max)
        vb->bytes_max = vb->bytes_now;
    return r;
}

void rqi_vbuf_own(struct rqi_vbuf *vb, struct rqi_vrec *r, void *data, size_t len)
{
    r->data = data;
    r->len = len;
    r->flags |= RQI_VR_OWNED;
    vb->bytes_now += len;
    if (vb->bytes_now > vb->bytes_max)
        vb->bytes_max = vb->bytes_now;
}

void rqi_vbuf_pop(struct rqi_vbuf *vb, struct rqi_vfifo *f)
{
    struct rqi_vchunk *c = f->first;
    struct rqi_vrec *r = rqi_vfifo_head(f);
    if (r == NULL)
        return;
    if (r->flags & RQI_VR_OWNED) {
        vb->bytes_now -= r->len;
        free(r->data);
    }
    vb->bytes_now -= r->bytes;
    vb->records--;
    c->rd += r->bytes;
    if (c->rd == c->wr) {
        f->first = c->next;
        if (f->first == NULL)
            f->last = NULL;
        chunk_release(vb, c);
    }
}

void rqi_vbuf_destroy(struct rqi_vbuf *vb, struct rqi_vfifo *fifos, unsigned nfifos)
{
    for (unsigned i = 0; i < nfifos; i++) {
        while (rqi_vfifo_head(&fifos[i]) != NULL)
            rqi_vbuf_pop(vb, &fifos[i]);
        struct rqi_vchunk *c = fifos[i].first;
        while (c != NULL) {
            struct rqi_vchunk *n = c->next;
            free(c);
            c = n;
        }
        fifos[i].first = fifos[i].last = NULL;
    }
    while (vb->cache != NULL) {
        struct rqi_vchunk *n = vb->cache->next;
        free(vb->cache);
        vb->cache = n;
    }
    vb->ncache = 0;
}
