/* regions.c - regions: create at the home, map anywhere (size from the
 * home), the region table handlers look regions up in, destroy. */
#include <stdlib.h>
#include <string.h>

#include "dsm.h"

/* ---- the table ---------------------------------------------------- */

struct rqdsm_region *rqdsm_lookup(rqdsm_t *d, rqdsm_rid_t rid)
{
    int h = RID_HOME(rid);
    if (h < 0 || h >= d->np)
        return NULL;
    struct home_table *t = atomic_load_explicit(&d->homes[h], memory_order_acquire);
    if (t == NULL)
        return NULL;
    uint32_t s = RID_SERIAL(rid);
    region_slot *c = atomic_load_explicit(&t->chunk[s / CHUNK], memory_order_acquire);
    return c ? atomic_load_explicit(&c[s % CHUNK], memory_order_acquire) : NULL;
}

/* Application thread only (handlers read concurrently). */
static int table_put(rqdsm_t *d, rqdsm_rid_t rid, struct rqdsm_region *r)
{
    int h = RID_HOME(rid);
    struct home_table *t = atomic_load_explicit(&d->homes[h], memory_order_relaxed);
    if (t == NULL) {
        t = calloc(1, sizeof *t);
        if (t == NULL)
            return RQ_ENOMEM;
        atomic_store_explicit(&d->homes[h], t, memory_order_release);
    }
    uint32_t s = RID_SERIAL(rid);
    region_slot *c = atomic_load_explicit(&t->chunk[s / CHUNK], memory_order_relaxed);
    if (c == NULL) {
        c = calloc(CHUNK, sizeof *c);
        if (c == NULL)
            return RQ_ENOMEM;
        atomic_store_explicit(&t->chunk[s / CHUNK], c, memory_order_release);
    }
    atomic_store_explicit(&c[s % CHUNK], r, memory_order_release);
    return 0;
}

static void table_clear(rqdsm_t *d, rqdsm_rid_t rid)
{
    struct home_table *t = atomic_load_explicit(&d->homes[RID_HOME(rid)], memory_order_relaxed);
    uint32_t s = RID_SERIAL(rid);
    region_slot *c = t ? atomic_load_explicit(&t->chunk[s / CHUNK], memory_order_relaxed) : NULL;
    if (c)
        atomic_store_explicit(&c[s % CHUNK], NULL, memory_order_release);
}

struct rqdsm_region *rqdsm_msg_region(rqdsm_t *d, const rq_msg_t *m, unsigned nargs, size_t *b)
{
    if (m->nargs < nargs || m->args == NULL || (m->len != 0 && m->len != d->block)) {
        STAT(d, dropped);
        return NULL;
    }
    struct rqdsm_region *r = rqdsm_lookup(d, KEY_RID(m->args[0]));
    *b = KEY_BLOCK(m->args[0]);
    if (r == NULL || *b >= r->nblocks) {
        STAT(d, dropped);
        return NULL;
    }
    return r;
}

/* ---- allocation ---------------------------------------------------- */

void rqdsm_region_free(struct rqdsm_region *r)
{
    if (r == NULL)
        return;
    if (r->dir)
        for (size_t b = 0; b < r->nblocks; b++)
            for (struct pend *p = r->dir[b].head, *n; p; p = n) {
                n = p->next;
                free(p);
            }
    free(r->mem);
    free((void *)r->entry);
    free((void *)r->rd);
    free(r->lock);
    free(r->dir);
    free(r->sharers);
    free((void *)r->mappers);
    free(r);
}

static struct rqdsm_region *region_alloc(rqdsm_t *d, rqdsm_rid_t rid, size_t size)
{
    struct rqdsm_region *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->dsm = d;
    r->rid = rid;
    r->home = RID_HOME(rid);
    r->size = size;
    r->nblocks = (size + d->block - 1) >> d->block_shift;
    size_t bytes = r->nblocks << d->block_shift;
    r->mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    r->entry = calloc(r->nblocks, sizeof *r->entry);
    int ok = r->mem && r->entry;
    if (ok && d->app_mt) {
        r->rowstride = (r->nblocks + 15) & ~(size_t)15; /* 16 counters a line */
        const size_t rdbytes = r->rowstride * d->app_threads * sizeof *r->rd;
        if ((r->rd = aligned_alloc(64, rdbytes)) != NULL)
            memset((void *)r->rd, 0, rdbytes);
        ok = r->rd != NULL;
    }
    if (ok && d->protocol == RQDSM_PROTO_SPINLOCK)
        ok = (r->lock = calloc(r->nblocks, sizeof *r->lock)) != NULL;
    if (ok && r->home == d->me) {
        r->dir = calloc(r->nblocks, sizeof *r->dir);
        r->sharers = calloc(r->nblocks * d->words, sizeof *r->sharers);
        r->mappers = calloc(d->words, sizeof *r->mappers);
        ok = r->dir && r->sharers && r->mappers;
    }
    if (!ok) {
        rqdsm_region_free(r);
        return NULL;
    }
    memset(r->mem, 0, bytes);
    if (r->lock)
        for (size_t b = 0; b < r->nblocks; b++)
            atomic_flag_clear(&r->lock[b]);
    return r;
}

void rqdsm_free_all(rqdsm_t *d)
{
    for (int h = 0; h < d->np; h++) {
        struct home_table *t = atomic_load(&d->homes[h]);
        if (t == NULL)
            continue;
        for (unsigned c = 0; c < CHUNK; c++) {
            region_slot *s = atomic_load(&t->chunk[c]);
            if (s == NULL)
                continue;
            for (unsigned i = 0; i < CHUNK; i++)
                rqdsm_region_free(atomic_load(&s[i]));
            free(s);
        }
        free(t);
    }
}

/* ---- cookies: the application thread's waits for answers ------------ */

static struct cookie *cookie_take(rqdsm_t *d, int answers, uint64_t *name)
{
    for (unsigned i = 0; i < COOKIES; i++) {
        struct cookie *c = &d->cookies[i];
        if (atomic_load_explicit(&c->left, memory_order_acquire) != 0)
            continue;
        uint32_t g = atomic_load_explicit(&c->gen, memory_order_relaxed) + 1;
        atomic_store_explicit(&c->value, 0, memory_order_relaxed);
        atomic_store_explicit(&c->left, answers, memory_order_relaxed);
        atomic_store_explicit(&c->gen, g, memory_order_release);
        *name = ((uint64_t)g << 8) | i;
        return c;
    }
    return NULL; /* one application thread: at most one wait at a time */
}

static int cookie_wait(rqdsm_t *d, struct cookie *c)
{
    struct rqdsm_wait wait = {0, 0};
    while (atomic_load_explicit(&c->left, memory_order_acquire) > 0) {
        int rc = rqdsm_wait_step(d, &wait);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static void reply(rqdsm_t *d, int dst, uint64_t cookie, int64_t value)
{
    uint64_t a[2] = {cookie, (uint64_t)value};
    rqdsm_send(d, dst, H_REPLY, RQ_KEY_NOSYNC, a, 2, NULL, 0);
}

void rqdsm_h_reply(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    rqdsm_t *d = arg;
    if (m->nargs < 2 || m->args == NULL || m->src < 0 || m->src >= d->np) {
        STAT(d, dropped);
        return;
    }
    uint64_t name = m->args[0];
    struct cookie *c = &d->cookies[(name & 0xff) % COOKIES];
    if ((name & 0xff) >= COOKIES ||
        atomic_load_explicit(&c->gen, memory_order_acquire) != (uint32_t)(name >> 8) ||
        atomic_load_explicit(&c->left, memory_order_relaxed) <= 0) {
        STAT(d, dropped);
        return;
    }
    int64_t v = (int64_t)m->args[1];
    if (v < 0)
        atomic_store_explicit(&c->value, v, memory_order_relaxed);
    else if (atomic_load_explicit(&c->value, memory_order_relaxed) >= 0)
        atomic_store_explicit(&c->value, v, memory_order_relaxed);
    atomic_fetch_sub_explicit(&c->left, 1, memory_order_release);
}

/* ---- create, map, unmap ------------------------------------------- */

int rqdsm_create(rqdsm_t *d, size_t size, rqdsm_rid_t *rid)
{
    if (d == NULL || rid == NULL || size == 0 || size > ((size_t)1 << 40))
        return RQ_EINVAL;
    if ((size + d->block - 1) >> d->block_shift >= ((size_t)1 << BLOCK_BITS))
        return RQ_EINVAL;
    if (d->next_serial >= (1u << SERIAL_BITS))
        return RQ_ENOMEM;
    rqdsm_rid_t id = ((uint64_t)d->me << SERIAL_BITS) | d->next_serial;
    struct rqdsm_region *r = region_alloc(d, id, size);
    if (r == NULL)
        return RQ_ENOMEM;
    /* The home starts as the owner: its own first writes need no message. */
    for (size_t b = 0; b < r->nblocks; b++) {
        r->dir[b].excl = 1;
        r->dir[b].owner = d->me;
        atomic_init(&r->entry[b], E_E);
    }
    int rc = table_put(d, id, r);
    if (rc != 0) {
        rqdsm_region_free(r);
        return rc;
    }
    d->next_serial++;
    *rid = id;
    return 0;
}

void rqdsm_h_map_req(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    rqdsm_t *d = arg;
    if (m->nargs < 2 || m->args == NULL || m->src < 0 || m->src >= d->np) {
        STAT(d, dropped);
        return;
    }
    struct rqdsm_region *r = rqdsm_lookup(d, m->args[0]);
    if (r == NULL || r->home != d->me) {
        reply(d, m->src, m->args[1], RQ_ERANGE);
        return;
    }
    atomic_fetch_or_explicit(&r->mappers[m->src / 64], 1ull << (m->src % 64),
                             memory_order_relaxed);
    reply(d, m->src, m->args[1], (int64_t)r->size);
}

int rqdsm_map(rqdsm_t *d, rqdsm_rid_t rid, rqdsm_region_t **out)
{
    if (d == NULL || out == NULL)
        return RQ_EINVAL;
    *out = NULL;
    int h = RID_HOME(rid);
    if ((rid >> (SERIAL_BITS + 16)) != 0 || h >= d->np)
        return RQ_EINVAL;
    struct rqdsm_region *r = rqdsm_lookup(d, rid);
    if (r == NULL && h == d->me)
        return RQ_ERANGE;
    if (r == NULL) {
        uint64_t name;
        struct cookie *c = cookie_take(d, 1, &name);
        if (c == NULL)
            return RQ_EINVAL;
        uint64_t a[2] = {rid, name};
        int rc = rqdsm_send(d, h, H_MAP_REQ, RQ_KEY_NOSYNC, a, 2, NULL, 0);
        if (rc == 0)
            rc = cookie_wait(d, c);
        if (rc != 0)
            return rc;
        int64_t size = atomic_load_explicit(&c->value, memory_order_relaxed);
        if (size <= 0)
            return size < 0 ? (int)size : RQ_ERANGE;
        r = region_alloc(d, rid, (size_t)size);
        if (r == NULL)
            return RQ_ENOMEM;
        rc = table_put(d, rid, r);
        if (rc != 0) {
            rqdsm_region_free(r);
            return rc;
        }
    }
    r->maps++;
    *out = r;
    return 0;
}

/* Seq_cst loads: a checker's CAS of E_NOFAST precedes them (dsm.h). */
uint32_t rqdsm_fast_readers(const struct rqdsm_region *r, size_t b)
{
    uint32_t n = 0;
    if (r->rd != NULL)
        for (unsigned t = 0; t < r->dsm->app_threads; t++)
            n += atomic_load_explicit(&r->rd[(size_t)t * r->rowstride + b], memory_order_seq_cst);
    return n;
}

int rqdsm_unmap(rqdsm_region_t *r)
{
    if (r == NULL || r->maps <= 0)
        return RQ_EINVAL;
    for (size_t b = 0; b < r->nblocks; b++) {
        uint32_t w = atomic_load_explicit(&r->entry[b], memory_order_relaxed);
        if (E_READERS(w) != 0 || (w & E_WRITER) || rqdsm_fast_readers(r, b) != 0)
            return RQ_EINVAL;
    }
    r->maps--;
    return 0;
}

void *rqdsm_ptr(const rqdsm_region_t *r)
{
    return r ? r->mem : NULL;
}

size_t rqdsm_size(const rqdsm_region_t *r)
{
    return r ? r->size : 0;
}

rqdsm_rid_t rqdsm_rid(const rqdsm_region_t *r)
{
    return r ? r->rid : 0;
}

/* ---- destroy -------------------------------------------------------- */

/* RQ_KEY_SEQUENTIAL: no other handler of this rank runs meanwhile, so the
 * region can be unlinked and freed under nobody's feet. */
void rqdsm_h_destroy(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    rqdsm_t *d = arg;
    if (m->nargs < 2 || m->args == NULL || m->src < 0 || m->src >= d->np ||
        RID_HOME(m->args[0]) != m->src) {
        STAT(d, dropped);
        return;
    }
    struct rqdsm_region *r = rqdsm_lookup(d, m->args[0]);
    if (r != NULL) {
        table_clear(d, r->rid);
        rqdsm_region_free(r);
    }
    reply(d, m->src, m->args[1], 0);
}

int rqdsm_destroy(rqdsm_t *d, rqdsm_rid_t rid)
{
    if (d == NULL || RID_HOME(rid) != d->me || (rid >> (SERIAL_BITS + 16)) != 0)
        return RQ_EINVAL;
    struct rqdsm_region *r = rqdsm_lookup(d, rid);
    if (r == NULL)
        return RQ_ERANGE;
    int n = 1;
    for (int x = 0; x < d->np; x++)
        n += x != d->me && (atomic_load(&r->mappers[x / 64]) >> (x % 64) & 1);
    uint64_t name;
    struct cookie *c = cookie_take(d, n, &name);
    if (c == NULL)
        return RQ_EINVAL;
    uint64_t a[2] = {rid, name};
    int rc = 0;
    for (int x = 0; x < d->np && rc == 0; x++)
        if (x != d->me && (atomic_load(&r->mappers[x / 64]) >> (x % 64) & 1))
            rc = rqdsm_send(d, x, H_DESTROY, RQ_KEY_SEQUENTIAL, a, 2, NULL, 0);
    /* our own copy last: r is not touched after this send */
    if (rc == 0)
        rc = rqdsm_send(d, d->me, H_DESTROY, RQ_KEY_SEQUENTIAL, a, 2, NULL, 0);
    if (rc == 0)
        rc = cookie_wait(d, c);
    return rc;
}
