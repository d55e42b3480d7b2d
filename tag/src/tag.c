/* tag.c - tagged two-sided messages on librq's active messages (rqtag.h).
 *
 * Up to the eager limit (RQ_TAG_EAGER_MAX, at most rq_medium_max()) a
 * message is one active message to the
 * eager handler (args[0] the tag, the payload the message's).  Larger, a
 * rendezvous (below, "rendezvous"): an announcement matched on arrival,
 * the receiver's go-ahead, then the data placed by rq_place straight
 * into the receive buffer, or, when that buffer lies inside the receiving
 * rank's segment, written there by the sender with rq_request_long (one
 * copy instead of two).  The eager handler is registered with
 * RQ_HF_PLACE too, so an oversized eager message from a foreign sender
 * is still placed where it belongs (the receive's buffer, or an
 * unexpected buffer completed by rq_place's callback).
 *
 * STATE AND ORDERING
 *   posted      receives not yet matched, oldest first (a FIFO list).
 *   unexp       arrived messages not yet received, oldest first.
 *   ids         the requests that rendezvous packets name (a generation
 *               and a slot: a stale or forged id finds nothing).
 *   All of it, and the counters, are under `lk`, a spinlock taken by the
 *   calls and by the handlers (which may run on the progress thread, or on any
 *   thread that polls a thread-safe context).  Nothing that waits is
 *   called under it: rq_place does not wait, sends are made outside.
 * FENCE TABLE
 *   req->done    0 -> 1 once: by the layer (store_release, after status
 *                and the payload are written; for a rendezvous send after
 *                its data left), or by rq_place's atomic add with release
 *                when it places a rendezvous's data into the receive
 *                buffer.  Read with acquire: rq_ttest, rq_wait_until.
 *   req->state   under lk, except by the thread that owns the request
 *                before it is published (posted, or named by an id).
 *   u->placing   a large unexpected payload is still being placed: set in
 *                the handler, cleared under lk by rq_place's callback
 *                (`placed`, which runs after the payload is in u->data);
 *                a receive that takes u meanwhile is left to that callback.
 *   arrivals     counts unexpected arrivals (release add under lk);
 *                rq_tprobe waits on it with rq_wait_until.
 *   lk           test-and-test-and-set: acquire on take, release on give.
 */
#define _GNU_SOURCE
#include "rqtag.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum {
    REQ_FREE = 0,
    REQ_POSTED,    /* a receive waiting for a match */
    REQ_HELD,      /* a receive holding an unexpected payload still landing */
    REQ_RNDV,      /* a receive matched by a rendezvous, waiting for its data */
    REQ_DONE,
    REQ_SEND,      /* an eager send (complete) */
    REQ_SEND_RNDV, /* a rendezvous send waiting for its receiver's go-ahead */
};

/* Handler ids from the base: an eager message; a rendezvous request to
 * send (RTS: tag, length, the sender's id); the receiver's go-ahead (CTS:
 * the sender's id, the receive's id, bytes wanted); the data (the
 * receive's id), placed straight into the receive buffer. */
enum { H_EAGER, H_RTS, H_CTS, H_DATA };
enum { CTS_WORDS = 4 }; /* sender's id, receive's id, bytes, 1 + segment offset or 0 */

/* An arrived message nobody has received yet. */
struct unexp {
    struct unexp     *next;
    struct rq_tag    *t;
    rq_treq_t        *holder;  /* the receive that took it while it landed */
    int               src;
    int               failed;  /* the placement's error (RQ_EPEER) */
    uint64_t          tag;
    size_t            len;
    int               placing; /* its rq_place callback has not run yet */
    int               rts;     /* a rendezvous announcement: no data here */
    uint64_t          sid;     /* ... the sender's id for it */
    unsigned char     data[];
};

struct rq_tag {
    rq_ctx_t         *ctx;
    unsigned          handler;
    int               size;
    _Atomic int       lk;
    rq_treq_t        *posted, *posted_tail;
    struct unexp     *unexp, *unexp_tail;
    uint64_t          unexp_bytes;
    volatile uint64_t arrivals;
    uint64_t          place_started;       /* unexpected payloads being placed */
    volatile uint64_t place_done;          /* ... and placed (callbacks run) */
    size_t            eager_max;           /* rq_medium_max(): larger goes by rendezvous */
    uintptr_t         seg_lo, seg_hi;      /* this rank's segment [lo, hi) */
    /* Requests named in rendezvous packets, by id = generation << 32 |
     * slot (a packet naming a stale or foreign id is dropped). */
    rq_treq_t       **ids;
    uint32_t         *gens, *freeids;
    unsigned          nids, capids, nfree;
    rq_tag_stats_t    st;
};

static void lock(struct rq_tag *t)
{
    unsigned spins = 0;
    while (atomic_exchange_explicit(&t->lk, 1, memory_order_acquire) != 0)
        while (atomic_load_explicit(&t->lk, memory_order_relaxed) != 0)
            if (++spins % 1024 == 0)
                sched_yield(); /* the holder may share our CPU */
}

static void unlock(struct rq_tag *t) { atomic_store_explicit(&t->lk, 0, memory_order_release); }

/* Under lk: name r by an id for the rendezvous packets; 0 when out of
 * memory (ids are never 0: generations start at 1). */
static uint64_t id_put(struct rq_tag *t, rq_treq_t *r)
{
    unsigned i;
    if (t->nfree != 0) {
        i = t->freeids[--t->nfree];
    } else {
        if (t->nids == t->capids) {
            unsigned cap = t->capids != 0 ? 2 * t->capids : 64;
            rq_treq_t **ids = realloc(t->ids, cap * sizeof *ids);
            if (ids != NULL)
                t->ids = ids;
            uint32_t *gens = realloc(t->gens, cap * sizeof *gens);
            if (gens != NULL)
                t->gens = gens;
            uint32_t *fr = realloc(t->freeids, cap * sizeof *fr);
            if (fr != NULL)
                t->freeids = fr;
            if (ids == NULL || gens == NULL || fr == NULL)
                return 0;
            t->capids = cap;
        }
        i = t->nids++;
        t->gens[i] = 1;
    }
    t->ids[i] = r;
    r->id = (uint64_t)t->gens[i] << 32 | i;
    return r->id;
}

/* Under lk: the request named id, taken out of the table, or NULL. */
static rq_treq_t *id_take(struct rq_tag *t, uint64_t id)
{
    const uint32_t i = (uint32_t)id;
    if (i >= t->nids || t->ids[i] == NULL || t->gens[i] != (uint32_t)(id >> 32))
        return NULL;
    rq_treq_t *r = t->ids[i];
    t->ids[i] = NULL;
    if (++t->gens[i] == 0)
        t->gens[i] = 1;
    t->freeids[t->nfree++] = i;
    return r;
}

static void set_done(rq_treq_t *r)
{
    atomic_store_explicit((_Atomic uint64_t *)&r->done, 1, memory_order_release);
}

static int accepts(int src, uint64_t tag, uint64_t mask, int msrc, uint64_t mtag)
{
    return (src == RQ_TAG_ANY_SOURCE || src == msrc) && ((mtag ^ tag) & mask) == 0;
}

/* Under lk: receive r takes message u (out of every list).  Placed
 * (its payload landed and its rq_place callback ran, or it was copied in
 * the handler): r is DONE now and the caller copies it (copy_out) once lk
 * is given back; returns 1.  Still placing: r holds u and the callback
 * completes it; returns 0. */
static int take(struct rq_tag *t, rq_treq_t *r, struct unexp *u)
{
    r->held = u;
    if (u->placing) {
        u->holder = r;
        r->state = REQ_HELD;
        return 0;
    }
    r->state = REQ_DONE;
    t->unexp_bytes -= u->len;
    if (u->len > r->cap)
        t->st.truncated++;
    return 1;
}

/* After take() returned 1, outside lk: copy, status, free, done. */
static void copy_out(rq_treq_t *r)
{
    struct unexp *u = r->held;
    size_t n = u->len <= r->cap ? u->len : r->cap;
    if (n != 0 && !u->failed)
        memcpy(r->buf, u->data, n);
    r->status = (rq_tstatus_t){u->src, u->tag, u->len,
                               u->failed ? u->failed : u->len > r->cap ? RQ_ERANGE : 0};
    r->held = NULL;
    free(u);
    set_done(r);
}

/* rq_place's callback for a payload landing in an unexpected buffer (a
 * handler, from a later poll): complete the receive that took it
 * meanwhile, if any. */
static void placed(rq_ctx_t *ctx, void *arg, int status)
{
    (void)ctx;
    struct unexp *u = arg;
    struct rq_tag *t = u->t;
    lock(t);
    u->failed = status;
    u->placing = 0;
    atomic_fetch_add_explicit((_Atomic uint64_t *)&t->place_done, 1, memory_order_release);
    rq_treq_t *r = u->holder;
    int now = r != NULL && take(t, r, u);
    unlock(t);
    if (now)
        copy_out(r);
}

/* Take r off the posted list (under lk). */
static void posted_remove(struct rq_tag *t, rq_treq_t *r, rq_treq_t *prev)
{
    if (prev != NULL)
        prev->next = r->next;
    else
        t->posted = r->next;
    if (t->posted_tail == r)
        t->posted_tail = prev;
    r->next = NULL;
}

/* Under lk: the oldest posted receive that accepts (src, tag), taken off
 * the list, or NULL. */
static rq_treq_t *match_posted(struct rq_tag *t, int src, uint64_t tag)
{
    rq_treq_t *r = t->posted, *prev = NULL;
    while (r != NULL && !accepts(r->src, r->tag, r->mask, src, tag)) {
        prev = r;
        r = r->next;
    }
    if (r != NULL)
        posted_remove(t, r, prev);
    return r;
}

/* Under lk: u joins the unexpected queue (oldest first); a probe waiting
 * for an arrival is told. */
static void unexp_append(struct rq_tag *t, struct unexp *u)
{
    if (t->unexp_tail != NULL)
        t->unexp_tail->next = u;
    else
        t->unexp = u;
    t->unexp_tail = u;
    t->st.unexpected++;
    t->st.unexpected_now++;
    atomic_fetch_add_explicit((_Atomic uint64_t *)&t->arrivals, 1, memory_order_release);
}

/* ---- the handler --------------------------------------------------------- */

static void count_dropped(struct rq_tag *t)
{
    lock(t);
    t->st.dropped++;
    unlock(t);
}

/* Place an unplaced payload into u (its callback completes it). */
static void place_aside(rq_ctx_t *ctx, const rq_msg_t *m, struct unexp *u)
{
    if (rq_place(ctx, m, u->data, NULL, placed, u) != 0)
        placed(ctx, u, RQ_EINVAL); /* only a misuse of rq_place fails */
}

static void on_msg(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    struct rq_tag *t = arg;
    if (m->nargs != 1) { /* not ours: a foreign sender on our id */
        count_dropped(t);
        return;
    }
    const uint64_t tag = m->args[0];
    const int unplaced = m->data == NULL && m->len != 0;
    /* An unplaced payload may need a buffer of its own (no receive, or a
     * receive too small): made before the lock, freed if not needed. */
    struct unexp *u = NULL;
    if (unplaced && (u = malloc(sizeof *u + m->len)) == NULL) {
        count_dropped(t);
        return;
    }
    lock(t);
    t->st.received++;
    if (unplaced)
        t->st.rendezvous++;
    rq_treq_t *r = match_posted(t, m->src, tag);
    if (r != NULL && !(unplaced && m->len > r->cap)) {
        /* The oldest posted receive that accepts it, and it fits. */
        r->state = REQ_DONE;
        const int trunc = m->len > r->cap;
        if (trunc)
            t->st.truncated++;
        unlock(t);
        free(u);
        r->status = (rq_tstatus_t){m->src, tag, m->len, trunc ? RQ_ERANGE : 0};
        if (!unplaced) {
            if (m->len != 0)
                memcpy(r->buf, m->data, trunc ? r->cap : m->len);
            set_done(r);
        } else if (rq_place(ctx, m, r->buf, &r->done, NULL, NULL) != 0) {
            /* straight into the buffer: done moves once it is there */
            r->status.error = RQ_ENOMEM;
            set_done(r);
        }
        return;
    }
    if (r == NULL && !unplaced) {
        /* Nobody waits for it: copy it aside (below). */
        unlock(t);
        if ((u = malloc(sizeof *u + m->len)) == NULL) {
            count_dropped(t);
            return;
        }
        lock(t);
        /* A receive posted by another thread meanwhile takes it now. */
        r = match_posted(t, m->src, tag);
    }
    *u = (struct unexp){.next = NULL, .t = t, .holder = NULL, .src = m->src, .tag = tag,
                        .len = m->len, .placing = unplaced};
    t->place_started += (uint64_t)unplaced;
    if (!unplaced && m->len != 0)
        memcpy(u->data, m->data, m->len);
    t->unexp_bytes += u->len;
    if (t->unexp_bytes > t->st.unexpected_bytes_max)
        t->st.unexpected_bytes_max = t->unexp_bytes;
    if (r != NULL) {
        /* A receive holds it: a small message copied (the buffer's head),
         * or a large one for a receive too small, landing aside first. */
        int now = take(t, r, u);
        unlock(t);
        if (unplaced)
            place_aside(ctx, m, u);
        if (now)
            copy_out(r);
        return;
    }
    unexp_append(t, u);
    unlock(t);
    /* Placed after it is queued: a receive that takes it meanwhile is
     * completed by the callback. */
    if (unplaced)
        place_aside(ctx, m, u);
}

/* ---- rendezvous ------------------------------------------------------------
 * A message above eager_max travels as RTS (tag, length, the sender's id)
 * and is matched like any message on arrival; once a receive has it, the
 * receiver answers CTS (the sender's id, the receive's id, the bytes it
 * takes) and the sender's CTS handler sends the data to the receive's id,
 * where it is placed straight into the receive buffer (rq_place).  An
 * unexpected large message therefore costs a small record, not a copy;
 * the sender's buffer is read once, when the receiver is ready. */

/* Under lk: receive r takes rendezvous announcement u (out of every
 * list): r waits for the data under an id.  Returns the CTS to send
 * (cts[CTS_WORDS]) after lk is given back, or 0 when out of memory (r is
 * done with RQ_ENOMEM by the caller).  cts[3] is 1 + the buffer's offset
 * in this rank's segment when it lies there (the sender then writes it
 * with rq_request_long), else 0. */
static int take_rts(struct rq_tag *t, rq_treq_t *r, int src, uint64_t tag, size_t len,
                    uint64_t sid, uint64_t cts[CTS_WORDS])
{
    const int trunc = len > r->cap;
    r->status = (rq_tstatus_t){src, tag, len, trunc ? RQ_ERANGE : 0};
    if (trunc)
        t->st.truncated++;
    uint64_t rid = id_put(t, r);
    if (rid == 0)
        return 0;
    r->state = REQ_RNDV;
    cts[0] = sid;
    cts[1] = rid;
    cts[2] = trunc ? r->cap : len;
    uintptr_t b = (uintptr_t)r->buf;
    cts[3] = b >= t->seg_lo && b < t->seg_hi && cts[2] <= t->seg_hi - b ? 1 + (b - t->seg_lo) : 0;
    return 1;
}

static void fail_now(rq_treq_t *r, int why)
{
    r->status.error = why;
    r->state = REQ_DONE;
    set_done(r);
}

static void on_rts(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    struct rq_tag *t = arg;
    if (m->nargs != 3) {
        count_dropped(t);
        return;
    }
    const uint64_t tag = m->args[0], len = m->args[1], sid = m->args[2];
    struct unexp *u = NULL; /* allocated only when nobody waits for it */
    lock(t);
    rq_treq_t *r = match_posted(t, m->src, tag);
    if (r == NULL) {
        /* Allocate outside the lock, then look again: a receive posted
         * meanwhile takes the announcement, else it is appended now. */
        unlock(t);
        u = malloc(sizeof *u);
        lock(t);
        r = match_posted(t, m->src, tag);
    }
    t->st.received++;
    t->st.rendezvous++;
    if (r != NULL) {
        uint64_t cts[CTS_WORDS];
        int ok = take_rts(t, r, m->src, tag, (size_t)len, sid, cts);
        unlock(t);
        free(u);
        if (!ok)
            fail_now(r, RQ_ENOMEM);
        else if (rq_reply(ctx, m, t->handler + H_CTS, cts, CTS_WORDS, NULL, 0, 0) != 0)
            fail_now(r, RQ_EPEER); /* its data cannot come */
        return;
    }
    if (u == NULL) {
        t->st.dropped++;
        unlock(t);
        return;
    }
    *u = (struct unexp){.next = NULL, .t = t, .src = m->src, .tag = tag, .len = (size_t)len,
                        .rts = 1, .sid = sid};
    unexp_append(t, u);
    unlock(t);
}

/* On the sender: the receiver is ready; send it the data (from the
 * handler: a send may be made there), written straight into the receive
 * buffer when that lies in the receiver's segment (rq_request_long: one
 * copy), else to be placed there (two: through the staging area).  The
 * send is then complete.  (process_vm_writev straight into a private
 * receive buffer was tried: 8-13 GB/s against 15-40 for the staging
 * path, 256 KiB to 16 MiB on one machine.) */
static void on_cts(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    struct rq_tag *t = arg;
    lock(t);
    rq_treq_t *s = m->nargs == CTS_WORDS ? id_take(t, m->args[0]) : NULL;
    unlock(t);
    if (s == NULL || m->args[2] > s->cap) {
        count_dropped(t);
        return;
    }
    const uint64_t rid = m->args[1], at = m->args[3];
    int rc = at != 0 ? rq_request_long(ctx, m->src, t->handler + H_DATA, &rid, 1, s->buf,
                                       (size_t)m->args[2], at - 1, 0)
                     : rq_reply(ctx, m, t->handler + H_DATA, &rid, 1, s->buf,
                                (size_t)m->args[2], 0);
    s->state = REQ_DONE;
    s->status.error = rc;
    set_done(s);
}

/* On the receiver: the data of a rendezvous, for the receive rid. */
static void on_data(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    struct rq_tag *t = arg;
    lock(t);
    rq_treq_t *r = m->nargs == 1 ? id_take(t, m->args[0]) : NULL;
    if (r != NULL)
        r->state = REQ_DONE;
    unlock(t);
    if (r == NULL || m->len > r->cap) {
        count_dropped(t); /* a stale id: the payload is discarded */
        return;
    }
    if (m->data == NULL && m->len != 0) {
        /* Straight into the receive buffer; done moves once it is there. */
        if (rq_place(ctx, m, r->buf, &r->done, NULL, NULL) != 0)
            fail_now(r, RQ_ENOMEM);
        return;
    }
    if (m->len != 0 && m->data != r->buf) /* written in place by rq_request_long */
        memcpy(r->buf, m->data, m->len);
    set_done(r);
}

/* ---- open / close -------------------------------------------------------- */

/* Whether the caller may wait for other ranks (not inside a handler):
 * rq_wait_until on a counter already reached answers RQ_EPERM there. */
static int may_wait(rq_ctx_t *ctx)
{
    static volatile uint64_t one = 1;
    return rq_wait_until(ctx, &one, 1) != RQ_EPERM;
}

/* The eager limit: RQ_TAG_EAGER_MAX (bytes), default RQTAG_EAGER_MAX,
 * never above rq_medium_max(); SIZE_MAX for a malformed value. */
static size_t eager_max(rq_ctx_t *ctx)
{
    size_t limit = RQTAG_EAGER_MAX, medium = rq_medium_max(ctx);
    const char *v = getenv("RQ_TAG_EAGER_MAX");
    if (v != NULL && *v != '\0') {
        char *end;
        unsigned long long x = strtoull(v, &end, 10);
        if (*end != '\0' || v[0] == '-')
            return SIZE_MAX;
        limit = (size_t)x;
    }
    return limit < medium ? limit : medium;
}

int rq_tag_open(rq_ctx_t *ctx, unsigned handler_base, rq_tag_t **out)
{
    if (ctx == NULL || out == NULL)
        return RQ_EINVAL;
    unsigned base = handler_base != 0 ? handler_base : RQTAG_HANDLER_BASE;
    if (base + RQTAG_HANDLERS > RQ_MAX_HANDLERS)
        return RQ_EINVAL;
    if (!may_wait(ctx))
        return RQ_EPERM;
    struct rq_tag *t = calloc(1, sizeof *t);
    if (t == NULL)
        return RQ_ENOMEM;
    t->ctx = ctx;
    t->handler = base;
    t->size = rq_size(ctx);
    t->eager_max = eager_max(ctx);
    if (t->eager_max == SIZE_MAX) {
        free(t);
        return RQ_EINVAL;
    }
    atomic_init(&t->lk, 0);
    void *seg = NULL;
    size_t seg_size = 0;
    if (rq_segment(ctx, &seg, &seg_size) == 0 && seg != NULL) {
        t->seg_lo = (uintptr_t)seg;
        t->seg_hi = t->seg_lo + seg_size;
    }
    int rc = rq_handler_register(ctx, base + H_EAGER, on_msg, t, RQ_HF_PLACE);
    if (rc == 0)
        rc = rq_handler_register(ctx, base + H_RTS, on_rts, t, 0);
    if (rc == 0)
        rc = rq_handler_register(ctx, base + H_CTS, on_cts, t, 0);
    if (rc == 0)
        rc = rq_handler_register(ctx, base + H_DATA, on_data, t, RQ_HF_PLACE);
    if (rc == 0)
        rc = rq_barrier(ctx);
    if (rc != 0) {
        for (unsigned h = 0; h < RQTAG_HANDLERS; h++)
            rq_handler_register(ctx, base + h, NULL, NULL, 0);
        free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int rq_tag_close(rq_tag_t *t)
{
    if (t == NULL)
        return RQ_EINVAL;
    if (!may_wait(t->ctx))
        return RQ_EPERM;
    int rc = rq_barrier(t->ctx);
    for (unsigned h = 0; h < RQTAG_HANDLERS; h++)
        rq_handler_register(t->ctx, t->handler + h, NULL, NULL, 0);
    /* Payloads still landing complete first (their callbacks hold u). */
    lock(t);
    uint64_t started = t->place_started;
    unlock(t);
    int prc = rq_wait_until(t->ctx, &t->place_done, started);
    if (rc == 0)
        rc = prc;
    while (t->posted != NULL) {
        rq_treq_t *r = t->posted;
        t->posted = r->next;
        r->next = NULL;
        r->status = (rq_tstatus_t){RQ_TAG_ANY_SOURCE, 0, 0, RQ_EAGAIN};
        r->state = REQ_DONE;
        set_done(r);
    }
    while (t->unexp != NULL) {
        struct unexp *u = t->unexp;
        t->unexp = u->next;
        free(u);
    }
    /* Rendezvous still open (a peer that never answered): cancelled. */
    for (unsigned i = 0; i < t->nids; i++)
        if (t->ids[i] != NULL) {
            rq_treq_t *r = t->ids[i];
            r->status.error = RQ_EAGAIN;
            r->state = REQ_DONE;
            set_done(r);
        }
    free(t->ids);
    free(t->gens);
    free(t->freeids);
    free(t);
    return rc;
}

/* ---- send ---------------------------------------------------------------- */

static int send_args_ok(const rq_tag_t *t, int dst, const void *buf, size_t len)
{
    return t != NULL && dst >= 0 && dst < t->size && (buf != NULL || len == 0);
}

static int send_eager(rq_tag_t *t, int dst, uint64_t tag, const void *buf, size_t len)
{
    int rc = rq_request(t->ctx, dst, t->handler + H_EAGER, &tag, 1, buf, len, 0);
    if (rc == 0) {
        lock(t);
        t->st.sent++;
        unlock(t);
    }
    return rc;
}

int rq_tisend(rq_tag_t *t, int dst, uint64_t tag, const void *buf, size_t len, rq_treq_t *req)
{
    if (!send_args_ok(t, dst, buf, len) || req == NULL)
        return RQ_EINVAL;
    req->next = NULL;
    req->held = NULL;
    req->status = (rq_tstatus_t){dst, tag, len, 0};
    if (len <= t->eager_max) {
        int rc = send_eager(t, dst, tag, buf, len);
        if (rc != 0)
            return rc;
        req->state = REQ_SEND;
        set_done(req);
        return 0;
    }
    /* Rendezvous: announce it; the data goes when the receiver says so. */
    req->done = 0;
    req->buf = (void *)buf;
    req->cap = len;
    req->src = dst;
    req->tag = tag;
    req->state = REQ_SEND_RNDV;
    lock(t);
    uint64_t sid = id_put(t, req);
    if (sid != 0)
        t->st.sent++;
    unlock(t);
    if (sid == 0)
        return RQ_ENOMEM;
    uint64_t rts[3] = {tag, len, sid};
    int rc = rq_request(t->ctx, dst, t->handler + H_RTS, rts, 3, NULL, 0, 0);
    if (rc != 0) {
        lock(t);
        id_take(t, sid);
        t->st.sent--;
        unlock(t);
        req->state = REQ_FREE;
    }
    return rc;
}

int rq_tsend(rq_tag_t *t, int dst, uint64_t tag, const void *buf, size_t len)
{
    if (!send_args_ok(t, dst, buf, len))
        return RQ_EINVAL;
    if (len <= t->eager_max)
        return send_eager(t, dst, tag, buf, len);
    if (!may_wait(t->ctx))
        return RQ_EPERM; /* a rendezvous waits for the receiver */
    rq_treq_t req;
    int rc = rq_tisend(t, dst, tag, buf, len, &req);
    return rc != 0 ? rc : rq_twait(t, &req);
}

/* ---- receive ------------------------------------------------------------- */

static int withdraw(rq_tag_t *t, rq_treq_t *req, int why);

/* A receive's or probe's source: a rank of the job or any. */
static int src_ok(const rq_tag_t *t, int src)
{
    return t != NULL && (src == RQ_TAG_ANY_SOURCE || (src >= 0 && src < t->size));
}

int rq_tirecv(rq_tag_t *t, int src, uint64_t tag, uint64_t mask, void *buf, size_t cap,
              rq_treq_t *req)
{
    if (!src_ok(t, src) || req == NULL || (buf == NULL && cap != 0))
        return RQ_EINVAL;
    req->done = 0;
    req->next = NULL;
    req->buf = buf;
    req->cap = cap;
    req->held = NULL;
    req->tag = tag;
    req->mask = mask;
    req->src = src;
    req->status = (rq_tstatus_t){RQ_TAG_ANY_SOURCE, 0, 0, 0};
    lock(t);
    struct unexp *u = t->unexp, *prev = NULL;
    while (u != NULL && !accepts(src, tag, mask, u->src, u->tag)) {
        prev = u;
        u = u->next;
    }
    if (u == NULL) { /* wait for an arrival */
        req->state = REQ_POSTED;
        if (t->posted_tail != NULL)
            t->posted_tail->next = req;
        else
            t->posted = req;
        t->posted_tail = req;
        unlock(t);
        return 0;
    }
    if (prev != NULL)
        prev->next = u->next;
    else
        t->unexp = u->next;
    if (t->unexp_tail == u)
        t->unexp_tail = prev;
    t->st.unexpected_now--;
    if (u->rts) { /* a rendezvous: tell its sender to send */
        uint64_t cts[CTS_WORDS];
        int ok = take_rts(t, req, u->src, u->tag, u->len, u->sid, cts);
        unlock(t);
        int from = u->src;
        free(u);
        if (!ok)
            fail_now(req, RQ_ENOMEM);
        else if (rq_request(t->ctx, from, t->handler + H_CTS, cts, CTS_WORDS, NULL, 0, 0) != 0)
            withdraw(t, req, RQ_EPEER);
        return 0;
    }
    int now = take(t, req, u);
    unlock(t);
    if (now)
        copy_out(req);
    return 0;
}

/* 1 if req has completed. */
static int settle(rq_treq_t *req)
{
    return atomic_load_explicit((_Atomic uint64_t *)&req->done, memory_order_acquire) != 0;
}

static int req_ok(const rq_treq_t *req)
{
    return req != NULL && req->state != REQ_FREE;
}

int rq_ttest(rq_tag_t *t, rq_treq_t *req)
{
    if (t == NULL || !req_ok(req))
        return RQ_EINVAL;
    if (settle(req))
        return 1;
    rq_poll(t->ctx);
    return settle(req);
}

/* Take req off the posted list if it is still there: 1 taken, and it is
 * completed with error `why`. */
static int withdraw(rq_tag_t *t, rq_treq_t *req, int why)
{
    lock(t);
    int posted = req->state == REQ_POSTED;
    if (posted) {
        rq_treq_t *r = t->posted, *prev = NULL;
        while (r != req) {
            prev = r;
            r = r->next;
        }
        posted_remove(t, req, prev);
        req->state = REQ_DONE;
        t->st.cancelled++;
    } else if ((req->state == REQ_RNDV || req->state == REQ_SEND_RNDV) &&
               id_take(t, req->id) == req) {
        /* A rendezvous whose peer will not answer (the job failed): no
         * packet may name it any more. */
        req->state = REQ_DONE;
        posted = 1;
    }
    unlock(t);
    if (posted) {
        req->status = (rq_tstatus_t){RQ_TAG_ANY_SOURCE, 0, 0, why};
        set_done(req);
    }
    return posted;
}

int rq_twait(rq_tag_t *t, rq_treq_t *req)
{
    if (t == NULL || !req_ok(req))
        return RQ_EINVAL;
    if (!may_wait(t->ctx))
        return RQ_EPERM;
    int rc = rq_wait_until(t->ctx, &req->done, 1);
    if (rc != 0 && !settle(req)) {
        withdraw(t, req, rc); /* the job failed: a posted receive is taken back */
        return rc;
    }
    return req->status.error;
}

int rq_trecv(rq_tag_t *t, int src, uint64_t tag, uint64_t mask, void *buf, size_t cap,
             rq_tstatus_t *st)
{
    if (t == NULL)
        return RQ_EINVAL;
    if (!may_wait(t->ctx))
        return RQ_EPERM;
    rq_treq_t req;
    int rc = rq_tirecv(t, src, tag, mask, buf, cap, &req);
    if (rc != 0)
        return rc;
    rc = rq_twait(t, &req);
    if (st != NULL)
        *st = req.status;
    return rc;
}

int rq_tcancel(rq_tag_t *t, rq_treq_t *req)
{
    if (t == NULL || !req_ok(req) || req->state == REQ_SEND || req->state == REQ_SEND_RNDV)
        return RQ_EINVAL;
    if (req->state == REQ_RNDV)
        return RQ_EAGAIN; /* matched: its data is on its way */
    if (withdraw(t, req, RQ_EAGAIN))
        return 0;
    return settle(req) ? RQ_EINVAL : RQ_EAGAIN; /* completed / matched */
}

/* ---- probe --------------------------------------------------------------- */

static int look(rq_tag_t *t, int src, uint64_t tag, uint64_t mask, rq_tstatus_t *st)
{
    lock(t);
    struct unexp *u = t->unexp;
    while (u != NULL && !accepts(src, tag, mask, u->src, u->tag))
        u = u->next;
    if (u != NULL && st != NULL)
        *st = (rq_tstatus_t){u->src, u->tag, u->len, 0};
    unlock(t);
    return u != NULL;
}


int rq_tiprobe(rq_tag_t *t, int src, uint64_t tag, uint64_t mask, rq_tstatus_t *st)
{
    if (!src_ok(t, src))
        return RQ_EINVAL;
    rq_poll(t->ctx);
    return look(t, src, tag, mask, st);
}

int rq_tprobe(rq_tag_t *t, int src, uint64_t tag, uint64_t mask, rq_tstatus_t *st)
{
    if (!src_ok(t, src))
        return RQ_EINVAL;
    if (!may_wait(t->ctx))
        return RQ_EPERM;
    for (;;) {
        uint64_t seen = atomic_load_explicit((_Atomic uint64_t *)&t->arrivals,
                                             memory_order_acquire);
        if (look(t, src, tag, mask, st))
            return 0;
        int rc = rq_wait_until(t->ctx, &t->arrivals, seen + 1);
        if (rc != 0)
            return rc;
    }
}

int rq_tag_stats(rq_tag_t *t, rq_tag_stats_t *s)
{
    if (t == NULL || s == NULL)
        return RQ_EINVAL;
    lock(t);
    *s = t->st;
    unlock(t);
    return 0;
}
