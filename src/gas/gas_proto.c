/* gas_proto.c - the request/reply protocol of the np and proc strategies
 * over each rank's two global-address rings (see gas.h for the rings, the
 * deadlock argument and the memory-ordering table).  Every field of every
 * packet is checked by the rank that reads it before it steers a copy: the
 * target checks the region against its own segment, the initiator checks a
 * reply against the slot it filled. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/sys.h"
#include "net/net.h"
#include "am/am.h"
#include "ctx.h"
#include "deliver/deliver.h"
#include "gas/gas.h"
#include "gas/stored.h"
#include "gas/region.h"

/* Argument words each opcode carries. */
static const uint8_t op_nargs[RQI_GOP_COUNT] = {
    [RQI_GOP_PUT] = 6, [RQI_GOP_STORE] = 6, [RQI_GOP_GET] = 6, [RQI_GOP_AMO] = 6,
    [RQI_GOP_ACK] = 0, [RQI_GOP_DATA] = 3, [RQI_GOP_OLD] = 3,
};

static void gas_fail(rq_ctx_t *ctx, const char *why)
{
    /* Callable from the np thread: touches only the shared failure flag
     * (pairs with the load_acquire(failed) of every rank's wait step). */
    fprintf(stderr, "librq: rank %d: %s\n", ctx->rank, why);
    rqi_store_release(&ctx->shm.hdr->failed, 1u);
}

static int job_failed(const rq_ctx_t *ctx)
{
    return rqi_load_acquire(&ctx->shm.hdr->failed) != 0;
}

/* ---- the np thread's doorbell ---------------------------------------- */


/* After publishing to rank r: wake its np thread if it sleeps.  The
 * seq_cst fence orders our publish before the load of np_sleep; the np
 * thread orders its store of np_sleep before its last look at the rings. */
static void doorbell(rq_ctx_t *ctx, int r)
{
    if (ctx->gas.strategy != RQI_GAS_NP)
        return;
    struct rqi_gas_area *a = &rqi_shm_area(&ctx->shm, (uint32_t)r)->gas;
    atomic_thread_fence(memory_order_seq_cst);
    /* 1: asleep until woken; 2: a thread on a shared core, which wakes
     * on its tick (and whose rank serves meanwhile): left alone. */
    if (RQI_UNLIKELY(rqi_load_relaxed(&a->np_sleep) == 1u) &&
        atomic_exchange(&a->np_sleep, 0u) == 1u)
        rqi_futex(&a->np_sleep, FUTEX_WAKE, 1, NULL);
}

/* ---- packets ------------------------------------------------------------ */

/* Reserve a packet of nargs words and len payload bytes on tx, or NULL. */
static struct rqi_pkt *pkt_reserve(rq_ctx_t *ctx, struct rqi_ring_tx *tx, unsigned op,
                                   unsigned nargs, uint64_t len, uint64_t *pos)
{
    unsigned n = rqi_pkt_slots(RQI_PK_INLINE, nargs, len);
    struct rqi_pkt *p = rqi_ring_tx_reserve(tx, n, ctx->job32, (uint32_t)ctx->rank, pos);
    if (p != NULL)
        rqi_pkt_write_header(p, ctx->job32, (uint32_t)ctx->rank, op, 0, nargs, RQI_PK_INLINE,
                             (uint32_t)len, n, 0);
    return p;
}

/* The next well-formed packet on our ring of kind k for lane l, or NULL.
 * PAD and malformed packets are consumed on the way (malformed ones
 * counted); a broken framing fails the job. */
static RQI_ALWAYS_INLINE struct rqi_pkt *pkt_next(rq_ctx_t *ctx, unsigned k, unsigned l)
{
    struct rqi_ring_rx *rx = &ctx->gas.rx[k][l];
    for (;;) {
        struct rqi_pkt *p = rqi_ring_rx_peek(rx);
        if (p == NULL) {
            rqi_ring_rx_idle(rx);
            return NULL;
        }
        uint64_t off = rx->scan & (rx->nslots - 1);
        if (RQI_UNLIKELY(p->nslots == 0 || off + p->nslots > rx->nslots)) {
            gas_fail(ctx, "global-address ring framing is broken; failing the job");
            return NULL;
        }
        unsigned op = p->tag;
        int is_req = op >= RQI_GOP_PUT && op <= RQI_GOP_AMO;
        int ok = p->kind == RQI_PK_PAD ||
                 (p->job == ctx->job32 && p->src < (uint32_t)ctx->size &&
                  p->src != (uint32_t)ctx->rank && p->kind == RQI_PK_INLINE && p->flags == 0 &&
                  p->qid == 0 && op >= RQI_GOP_PUT && op < RQI_GOP_COUNT &&
                  is_req == (k == RQI_GAS_REQ) && p->nargs == op_nargs[op] &&
                  p->len <= ctx->gas.chunk_max &&
                  p->nslots == rqi_pkt_slots(RQI_PK_INLINE, p->nargs, p->len));
        if (ok && p->kind != RQI_PK_PAD)
            return p;
        if (!ok)
            atomic_fetch_add_explicit(&ctx->gas.rejected, 1, memory_order_relaxed);
        uint64_t pos = rqi_ring_rx_take(rx, p);
        rqi_ring_rx_release(rx, p, pos);
    }
}

/* ---- replies (our reply ring; never sends, so always drains) ---------- */

static void complete_one(struct rqi_gas *g)
{
    /* Single writer (the service-lock holder): releases the operation's
     * effects to the main thread's load_acquire in rqi_gas_quiet. */
    rqi_store_release(&g->completed, rqi_load_relaxed(&g->completed) + 1);
}

static struct rqi_gas_slot *reply_slot(rq_ctx_t *ctx, const struct rqi_pkt *p, const uint64_t *a,
                                       int amo)
{
    struct rqi_gas *g = &ctx->gas;
    if (a[0] >= RQI_GAS_SLOTS)
        return NULL;
    struct rqi_gas_slot *s = &g->slot[a[0]];
    /* Pairs with the main thread's store_release(busy, 1) after it filled
     * the slot. */
    if (rqi_load_acquire(&s->busy) == 0 || s->gen != (uint32_t)a[1] ||
        s->peer != (int)p->src || (s->dst == NULL) != amo)
        return NULL;
    return s;
}

static int handle_reply(rq_ctx_t *ctx, struct rqi_pkt *p)
{
    struct rqi_gas *g = &ctx->gas;
    const uint64_t *a = rqi_pkt_args(p);
    struct rqi_gas_slot *s;
    switch (p->tag) {
    case RQI_GOP_ACK:
        if (p->len != 0 || rqi_load_relaxed(&g->completed) >= rqi_load_relaxed(&g->issued))
            return -1;
        complete_one(g);
        return 0;
    case RQI_GOP_DATA:
        s = reply_slot(ctx, p, a, 0);
        if (s == NULL || a[2] != s->got || p->len == 0 || p->len > s->total - s->got)
            return -1;
        rqi_region_copy(s->dst, s->dst_stride, s->elem, s->total / s->elem, a[2],
                        rqi_pkt_payload(p), p->len, 1);
        s->got += p->len;
        if (s->got == s->total) {
            rqi_store_release(&s->busy, 0u); /* pairs with rqi_gas_wait_slot */
            complete_one(g);
        }
        return 0;
    case RQI_GOP_OLD:
        s = reply_slot(ctx, p, a, 1);
        if (s == NULL || p->len != 0)
            return -1;
        s->old = a[2];
        rqi_store_release(&s->busy, 0u);
        complete_one(g);
        return 0;
    }
    return -1;
}

/* The lane a server's pass over rings of kind k starts at; the next pass
 * starts at the next one, so a busy lane cannot starve the others. */
static unsigned pass_start(struct rqi_gas *g, unsigned k)
{
    unsigned i = g->rr[k];
    g->rr[k] = i + 1 == g->nscan ? 0 : i + 1;
    return i;
}

static int serve_replies(rq_ctx_t *ctx, int max)
{
    struct rqi_gas *g = &ctx->gas;
    int n = 0;
    for (unsigned i = 0, j = pass_start(g, RQI_GAS_REP); i < g->nscan && n < max;
         i++, j = j + 1 == g->nscan ? 0 : j + 1) {
        const unsigned l = g->scan[j];
        struct rqi_ring_rx *rx = &g->rx[RQI_GAS_REP][l];
        struct rqi_pkt *p = pkt_next(ctx, RQI_GAS_REP, l);
        while (p != NULL) {
            uint64_t pos = rqi_ring_rx_take(rx, p);
            if (handle_reply(ctx, p) != 0)
                atomic_fetch_add_explicit(&g->rejected, 1, memory_order_relaxed);
            rqi_ring_rx_release(rx, p, pos);
            if (++n == max)
                break;
            /* The next reply, looked for at a call site of its own (a
             * branch of its own): usually not there yet, and predicted
             * so, the waiter's return runs in the shadow of the miss
             * (see rqi_poll). */
            p = pkt_next(ctx, RQI_GAS_REP, l);
        }
    }
    return n;
}

/* ---- requests (our request ring; answered on the initiator's reply ring) */

/* Reserve a reply to rank r, draining our own reply ring while r's is
 * full.  NULL only when the job is failing. */
static struct rqi_pkt *reply_reserve(rq_ctx_t *ctx, int r, unsigned op, unsigned nargs,
                                     uint64_t len, uint64_t *pos, int on_main)
{
    unsigned spins = 0;
    struct rqi_pkt *p;
    while ((p = pkt_reserve(ctx, &ctx->gas.rep_tx[r], op, nargs, len, pos)) == NULL) {
        doorbell(ctx, r);
        if (serve_replies(ctx, 64) > 0)
            continue;
        if (on_main) {
            if (rqi_wait_step(ctx, &spins) != 0)
                return NULL;
        } else if (job_failed(ctx)) {
            return NULL;
        } else if (++spins > 64) {
            sched_yield();
        }
    }
    return p;
}

static void reply_small(rq_ctx_t *ctx, int r, unsigned op, uint64_t a0, uint64_t a1, uint64_t a2,
                        int on_main)
{
    uint64_t pos;
    struct rqi_pkt *p = reply_reserve(ctx, r, op, op_nargs[op], 0, &pos, on_main);
    if (p == NULL)
        return;
    uint64_t *a = rqi_pkt_args(p);
    if (op_nargs[op] == 3) {
        a[0] = a0;
        a[1] = a1;
        a[2] = a2;
    }
    rqi_ring_tx_publish(p, pos);
    doorbell(ctx, r);
}

uint64_t rqi_gas_amo_apply(_Atomic uint64_t *w, int op, uint64_t operand, uint64_t compare)
{
    switch (op) {
    case RQ_AMO_FADD: return atomic_fetch_add(w, operand);
    case RQ_AMO_SWAP: return atomic_exchange(w, operand);
    case RQ_AMO_CSWAP:
        atomic_compare_exchange_strong(w, &compare, operand);
        return compare; /* the value found, swapped or not */
    case RQ_AMO_FAND: return atomic_fetch_and(w, operand);
    case RQ_AMO_FOR:  return atomic_fetch_or(w, operand);
    default:          return atomic_fetch_xor(w, operand);
    }
}

/* Serve the request p (taken at pos on rx); releases it before replying. */
static int handle_request(rq_ctx_t *ctx, struct rqi_ring_rx *rx, struct rqi_pkt *p, uint64_t pos,
                          int on_main)
{
    uint64_t a[6];
    memcpy(a, rqi_pkt_args(p), sizeof a);
    const int src = (int)p->src;
    const unsigned op = p->tag;
    const uint64_t len = p->len;
    char *seg = ctx->seg[ctx->rank];
    int ovf;
    if (op == RQI_GOP_AMO) {
        rqi_ring_rx_release(rx, p, pos);
        if ((a[0] & 7) != 0 || a[0] > ctx->seg_bytes - 8 || a[1] < RQ_AMO_FADD ||
            a[1] > RQ_AMO_FXOR || len != 0)
            return -1;
        RQI_TSAN_IGNORE_BEGIN();
        uint64_t old = rqi_gas_amo_apply((_Atomic uint64_t *)(void *)(seg + a[0]), (int)a[1],
                                         a[2], a[3]);
        RQI_TSAN_IGNORE_END();
        reply_small(ctx, src, RQI_GOP_OLD, a[4], a[5], old, on_main);
        return 0;
    }
    const int written = op != RQI_GOP_GET;
    uint64_t total = rqi_region_bytes(a[2], a[3], &ovf);
    if (ovf || !rqi_region_ok(a[0], a[1], a[2], a[3], ctx->seg_bytes, written)) {
        rqi_ring_rx_release(rx, p, pos);
        return -1;
    }
    if (written) {
        if (a[4] > total || len > total - a[4] || a[5] > 1) {
            rqi_ring_rx_release(rx, p, pos);
            return -1;
        }
        RQI_TSAN_IGNORE_BEGIN();
        rqi_region_copy(seg + a[0], a[1], a[2], a[3], a[4], rqi_pkt_payload(p), len, 1);
        RQI_TSAN_IGNORE_END();
        rqi_ring_rx_release(rx, p, pos);
        if (op == RQI_GOP_STORE)
            rqi_gas_count_stored(ctx, ctx->rank, (uint32_t)src, len);
        if (a[5])
            reply_small(ctx, src, RQI_GOP_ACK, 0, 0, 0, on_main);
        return 0;
    }
    /* GET: stream the region back in chunks of at most chunk_max. */
    rqi_ring_rx_release(rx, p, pos);
    if (len != 0 || a[4] >= RQI_GAS_SLOTS)
        return -1;
    for (uint64_t at = 0; at < total;) {
        uint64_t n = total - at < ctx->gas.chunk_max ? total - at : ctx->gas.chunk_max, rpos;
        struct rqi_pkt *r = reply_reserve(ctx, src, RQI_GOP_DATA, 3, n, &rpos, on_main);
        if (r == NULL)
            return 0;
        uint64_t *ra = rqi_pkt_args(r);
        ra[0] = a[4];
        ra[1] = a[5];
        ra[2] = at;
        RQI_TSAN_IGNORE_BEGIN();
        rqi_region_copy(seg + a[0], a[1], a[2], a[3], at, rqi_pkt_payload(r), n, 0);
        RQI_TSAN_IGNORE_END();
        rqi_ring_tx_publish(r, rpos);
        at += n;
    }
    doorbell(ctx, src);
    return 0;
}

static int serve_requests(rq_ctx_t *ctx, int max, int on_main)
{
    struct rqi_gas *g = &ctx->gas;
    int n = 0;
    for (unsigned i = 0, j = pass_start(g, RQI_GAS_REQ); i < g->nscan && n < max;
         i++, j = j + 1 == g->nscan ? 0 : j + 1) {
        const unsigned l = g->scan[j];
        struct rqi_ring_rx *rx = &g->rx[RQI_GAS_REQ][l];
        struct rqi_pkt *p;
        while (n < max && (p = pkt_next(ctx, RQI_GAS_REQ, l)) != NULL) {
            uint64_t pos = rqi_ring_rx_take(rx, p);
            if (handle_request(ctx, rx, p, pos, on_main) != 0)
                atomic_fetch_add_explicit(&g->rejected, 1, memory_order_relaxed);
            n++;
        }
    }
    return n;
}

/* One pass over both rings by the current server. */
static int serve(rq_ctx_t *ctx, int on_main)
{
    int n = serve_replies(ctx, 64);
    return n + serve_requests(ctx, 64, on_main);
}

int rqi_gas_serve(rq_ctx_t *ctx)
{
    return serve(ctx, 1);
}

/* np strategy: serve if nobody else is (try-lock); the holder is the
 * rings' consumer and the replies' producer. */
static int serve_locked(rq_ctx_t *ctx, int on_main)
{
    struct rqi_gas *g = &ctx->gas;
    if (rqi_load_relaxed(&g->service_lock) != 0 ||
        atomic_exchange_explicit(&g->service_lock, 1, memory_order_acquire) != 0)
        return 0;
    int n = serve(ctx, on_main);
    rqi_store_release(&g->service_lock, 0);
    return n;
}

int rqi_gas_help(rq_ctx_t *ctx)
{
    return serve_locked(ctx, 1);
}

/* ---- the main thread's side ----------------------------------------- */

/* One step of a main-thread wait for global-address progress: run
 * handlers (outside handlers), serve (proc; np helps once the wait is no
 * longer short), detect failures. */
static int main_wait_step(rq_ctx_t *ctx, unsigned *spins)
{
    struct rqi_gas *g = &ctx->gas;
    if (g->strategy == RQI_GAS_PROC) {
        if (serve(ctx, 1) > 0)
            return rqi_busy_step(ctx, spins);
    } else if (g->strategy == RQI_GAS_NP && (g->np_shared || *spins > RQI_BUSY_POLLS)) {
        if (serve_locked(ctx, 1) > 0)
            return rqi_fail_check(ctx); /* spins stay: np keeps helping */
    }
    if (!rqi_in_handler(ctx) && rqi_poll(ctx) > 0)
        return rqi_busy_step(ctx, spins);
    return rqi_wait_step(ctx, spins);
}

/* Reserve a request to rank r; while r's ring is full keep the job moving
 * without running handlers (serve ours, drain AM lanes into the virtual
 * buffer).  NULL and *rc set when the job fails. */
static struct rqi_pkt *request_reserve(rq_ctx_t *ctx, int r, unsigned op, uint64_t len,
                                       uint64_t *pos, int *rc)
{
    unsigned spins = 0;
    struct rqi_pkt *p;
    while ((p = pkt_reserve(ctx, &ctx->gas.req_tx[r], op, op_nargs[op], len, pos)) == NULL) {
        doorbell(ctx, r);
        if (ctx->gas.strategy == RQI_GAS_PROC)
            serve(ctx, 1);
        else if (ctx->gas.np_shared || spins > RQI_BUSY_POLLS)
            serve_locked(ctx, 1);
        if (rqi_drain(ctx) != 0 || (*rc = rqi_wait_step(ctx, &spins)) != 0) {
            if (*rc == 0)
                *rc = RQ_ENOMEM;
            return NULL;
        }
    }
    return p;
}

static void issue_one(struct rqi_gas *g)
{
    /* Only the main thread writes issued; servers read it to bound acks. */
    rqi_store_relaxed(&g->issued, rqi_load_relaxed(&g->issued) + 1);
}

int rqi_gas_send_put(rq_ctx_t *ctx, int dst, int store, uint64_t off, uint64_t dst_stride,
                     const char *src, uint64_t src_stride, uint64_t elem, uint64_t count)
{
    const unsigned op = store ? RQI_GOP_STORE : RQI_GOP_PUT;
    const uint64_t total = elem * count; /* validated by the caller */
    int rc = 0;
    issue_one(&ctx->gas);
    for (uint64_t at = 0; at < total;) {
        uint64_t n = total - at < ctx->gas.chunk_max ? total - at : ctx->gas.chunk_max, pos;
        struct rqi_pkt *p = request_reserve(ctx, dst, op, n, &pos, &rc);
        if (p == NULL)
            return rc;
        uint64_t *a = rqi_pkt_args(p);
        a[0] = off;
        a[1] = dst_stride;
        a[2] = elem;
        a[3] = count;
        a[4] = at;
        a[5] = at + n == total; /* the last chunk asks for the ack */
        rqi_region_copy((char *)src, src_stride, elem, count, at, rqi_pkt_payload(p), n, 0);
        rqi_ring_tx_publish(p, pos);
        at += n;
    }
    doorbell(ctx, dst);
    return 0;
}

/* Take the next slot (waiting for it to be free) and fill the common part. */
static struct rqi_gas_slot *slot_take(rq_ctx_t *ctx, int peer, uint32_t *idx, int *rc)
{
    struct rqi_gas *g = &ctx->gas;
    uint32_t i = g->next_slot++ & (RQI_GAS_SLOTS - 1);
    struct rqi_gas_slot *s = &g->slot[i];
    unsigned spins = 0;
    while (rqi_load_acquire(&s->busy) != 0)
        if ((*rc = main_wait_step(ctx, &spins)) != 0)
            return NULL;
    s->gen++;
    s->peer = peer;
    s->got = 0;
    *idx = i;
    return s;
}

/* Send a payload-less request of six words to rank r (GET, AMO), after
 * marking its slot busy and counting it issued. */
static int slot_request(rq_ctx_t *ctx, int r, unsigned op, struct rqi_gas_slot *s,
                        const uint64_t w[6])
{
    int rc = 0;
    /* Releases the slot's contents to the server's load_acquire(busy). */
    rqi_store_release(&s->busy, 1u);
    issue_one(&ctx->gas);
    uint64_t pos;
    struct rqi_pkt *p = request_reserve(ctx, r, op, 0, &pos, &rc);
    if (p == NULL)
        return rc;
    memcpy(rqi_pkt_args(p), w, 6 * sizeof *w);
    rqi_ring_tx_publish(p, pos);
    doorbell(ctx, r);
    return 0;
}

int rqi_gas_send_get(rq_ctx_t *ctx, char *dst, uint64_t dst_stride, int src_rank, uint64_t off,
                     uint64_t src_stride, uint64_t elem, uint64_t count, uint32_t *slot_out)
{
    uint32_t i;
    int rc = 0;
    struct rqi_gas_slot *s = slot_take(ctx, src_rank, &i, &rc);
    if (s == NULL)
        return rc;
    s->dst = dst;
    s->dst_stride = dst_stride;
    s->elem = elem;
    s->total = elem * count;
    const uint64_t w[6] = {off, src_stride, elem, count, i, s->gen};
    if ((rc = slot_request(ctx, src_rank, RQI_GOP_GET, s, w)) != 0)
        return rc;
    if (slot_out != NULL)
        *slot_out = i;
    return 0;
}

int rqi_gas_send_amo(rq_ctx_t *ctx, int dst, uint64_t off, int op, uint64_t operand,
                     uint64_t compare, uint32_t *slot_out)
{
    uint32_t i;
    int rc = 0;
    struct rqi_gas_slot *s = slot_take(ctx, dst, &i, &rc);
    if (s == NULL)
        return rc;
    s->dst = NULL; /* marks an AMO slot */
    s->total = 8;
    const uint64_t w[6] = {off, (uint64_t)op, operand, compare, i, s->gen};
    if ((rc = slot_request(ctx, dst, RQI_GOP_AMO, s, w)) != 0)
        return rc;
    *slot_out = i;
    return 0;
}

int rqi_gas_wait_slot(rq_ctx_t *ctx, uint32_t i, uint64_t *old)
{
    struct rqi_gas_slot *s = &ctx->gas.slot[i];
    unsigned spins = 0;
    /* Pairs with the server's store_release(busy, 0): the data it copied
     * and the old value it stored are visible from here on. */
    while (rqi_load_acquire(&s->busy) != 0) {
        int rc = main_wait_step(ctx, &spins);
        if (rc != 0)
            return rc;
    }
    if (old != NULL)
        *old = s->old;
    return 0;
}

int rqi_gas_quiet(rq_ctx_t *ctx)
{
    struct rqi_gas *g = &ctx->gas;
    unsigned spins = 0;
    /* Pairs with complete_one's store_release. */
    while (rqi_load_acquire(&g->completed) != rqi_load_relaxed(&g->issued)) {
        int rc = main_wait_step(ctx, &spins);
        if (rc != 0)
            return rc;
    }
    /* Other nodes: every RMA, AMO and eager send of ours completed. */
    return ctx->ucx != NULL ? ctx->net->flush(ctx) : 0;
}

/* ---- the network processor -------------------------------------------- */


/* Under the service lock: nothing published on any of our rings. */
static int rings_empty(rq_ctx_t *ctx)
{
    for (unsigned k = 0; k < RQI_GAS_KINDS; k++)
        for (unsigned j = 0; j < ctx->gas.nscan; j++)
            if (rqi_ring_rx_peek(&ctx->gas.rx[k][ctx->gas.scan[j]]) != NULL)
                return 0;
    return 1;
}

static void np_sleep(rq_ctx_t *ctx)
{
    struct rqi_gas *g = &ctx->gas;
    struct rqi_gas_area *a = g->area;
    if (atomic_exchange_explicit(&g->service_lock, 1, memory_order_acquire) != 0)
        return; /* the main thread is serving: not idle */
    /* seq_cst store, then the last look (see doorbell()). */
    atomic_store(&a->np_sleep, 1u);
    atomic_thread_fence(memory_order_seq_cst);
    int empty = rings_empty(ctx);
    if (empty)
        rqi_store_relaxed(&g->np_active, 0);
    rqi_store_release(&g->service_lock, 0);
    if (empty && !rqi_load_acquire(&g->np_stop) && !job_failed(ctx)) {
        /* The timeout bounds the cost of any wake-up we could miss. */
        struct timespec ts = {0, 20 * 1000 * 1000};
        rqi_futex(&a->np_sleep, FUTEX_WAIT, 1u, &ts);
    }
    atomic_store(&a->np_sleep, 0u);
    rqi_store_relaxed(&g->np_active, 1);
}

/* A network processor with no core of its own: taking its rank's core
 * from it per request (a futex wake, a context switch each way) cost far
 * more than serving in the rank's own librq calls (issue 36: 0.9 us per
 * 8-byte store at 2 ranks on 2 cores, 2.6 us at 16 on 16).  It wakes on a
 * tick only, to serve what a rank computing outside librq left waiting. */
static void np_tick_loop(rq_ctx_t *ctx)
{
    struct rqi_gas *g = &ctx->gas;
    struct rqi_gas_area *a = g->area;
    const uint64_t tick_ns = ctx->cfg.v[RQI_CFG_NP_TICK_US] * 1000u;
    atomic_store(&a->np_sleep, 2u);
    while (!rqi_load_acquire(&g->np_stop) && !job_failed(ctx)) {
        struct timespec ts = {(time_t)(tick_ns / 1000000000u), (long)(tick_ns % 1000000000u)};
        rqi_futex(&a->np_sleep, FUTEX_WAIT, 2u, &ts);
        while (serve_locked(ctx, 0) > 0)
            ;
    }
}

static void *np_main(void *arg)
{
    rq_ctx_t *ctx = arg;
    struct rqi_gas *g = &ctx->gas;
    if (g->np_shared) {
        np_tick_loop(ctx);
        return NULL;
    }
    if (g->np_cpu >= 0) {
        /* A core of its own, as the paper's network processor has: beyond
         * the rank's own binding, so set on this thread only.  Best effort
         * (a cpuset may forbid it). */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(g->np_cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    const uint64_t spin_ns = ctx->cfg.v[RQI_CFG_NP_SPIN_US] * 1000u;
    uint64_t idle_since = rqi_mono_ns();
    unsigned idle = 0;
    while (!rqi_load_acquire(&g->np_stop)) {
        if (serve_locked(ctx, 0) > 0) {
            idle = 0;
            continue;
        }
        if (++idle < 64) {
            rqi_cpu_relax();
            continue;
        }
        if (idle == 64) {
            idle_since = rqi_mono_ns();
            continue;
        }
        if ((idle & 63u) == 0 && rqi_mono_ns() - idle_since >= spin_ns) {
            np_sleep(ctx);
            idle = 0;
        } else {
            rqi_cpu_relax();
        }
    }
    return NULL;
}

/* ---- setup -------------------------------------------------------------- */

/* RQ_NP_CORE=auto: the np thread has a core of its own when moved off its
 * rank's CPU (RQ_NP_CPU_OFFSET), or when the rank may run on a subset of
 * the machine's CPUs (a binding) holding two or more, or, unbound, when
 * the machine has a CPU for each of the job's ranks here and each one's
 * thread. */
static int np_shares_core(const rq_ctx_t *ctx, int moved)
{
    switch (ctx->cfg.v[RQI_CFG_NP_CORE]) {
    case RQI_NP_CORE_OWN:
        return 0;
    case RQI_NP_CORE_SHARED:
        return 1;
    default:
        break;
    }
    if (moved)
        return 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    long allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : online;
    if (online > 0 && allowed < online)
        return allowed < 2;
    long here = ctx->host_ranks > (int)ctx->shm.hdr->nlocal ? ctx->host_ranks
                                                             : (long)ctx->shm.hdr->nlocal;
    return online <= 0 || 2 * here > online;
}

int rqi_gas_init(rq_ctx_t *ctx)
{
    struct rqi_gas *g = &ctx->gas;
    const struct rqi_job_hdr *h = ctx->shm.hdr;
    const uint64_t nslots = h->gas_ring_bytes / RQI_SLOT_BYTES;
    g->strategy = (int)ctx->cfg.v[RQI_CFG_GAS_STRATEGY];
    g->main_serves = g->strategy == RQI_GAS_PROC;
    g->area = &rqi_shm_area(&ctx->shm, (uint32_t)ctx->rank)->gas;
    g->req_tx = calloc((size_t)ctx->size, sizeof *g->req_tx);
    g->rep_tx = calloc((size_t)ctx->size, sizeof *g->rep_tx);
    g->slot = calloc(RQI_GAS_SLOTS, sizeof *g->slot);
    if (g->req_tx == NULL || g->rep_tx == NULL || g->slot == NULL)
        return RQ_ENOMEM;
    /* We produce into the rings of our lane at every rank of the node,
     * alone there as in its active-message lane (ctx->lane_exclusive). */
    g->nlanes = h->nlanes;
    g->nscan = 0;
    for (unsigned l = 0; l < g->nlanes; l++)
        if (l != ctx->my_lane || !ctx->lane_exclusive)
            g->scan[g->nscan++] = l;
    g->chunk_max = rqi_shm_medium_max(h->gas_ring_bytes, ctx->medium_max);
    for (int r = 0; r < ctx->size; r++) {
        struct rqi_rank_area *a = rqi_shm_area(&ctx->shm, (uint32_t)r);
        struct rqi_ring_tx *t[RQI_GAS_KINDS] = {&g->req_tx[r], &g->rep_tx[r]};
        for (unsigned k = 0; k < RQI_GAS_KINDS; k++) {
            t[k]->slots = rqi_shm_gas_ring(&ctx->shm, (uint32_t)r, k, ctx->my_lane);
            t[k]->ctrl = &a->gas_ring[k][ctx->my_lane];
            t[k]->nslots = nslots;
            t[k]->exclusive = ctx->lane_exclusive;
        }
    }
    for (unsigned k = 0; k < RQI_GAS_KINDS; k++) {
        for (unsigned l = 0; l < g->nlanes; l++) {
            struct rqi_ring_rx *rx = &g->rx[k][l];
            rx->slots = rqi_shm_gas_ring(&ctx->shm, (uint32_t)ctx->rank, k, l);
            rx->ctrl = &rqi_shm_area(&ctx->shm, (uint32_t)ctx->rank)->gas_ring[k][l];
            rx->nslots = nslots;
            rx->batch = nslots / 8;
        }
    }
    if (g->strategy == RQI_GAS_NP && ctx->size > 1) {
        const uint64_t k = ctx->cfg.v[RQI_CFG_NP_CPU_OFFSET];
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        int cpu = sched_getcpu();
        g->np_cpu = k != 0 && ncpu > 0 && cpu >= 0 ? (int)(((uint64_t)cpu + k) % (uint64_t)ncpu) : -1;
        g->np_shared = np_shares_core(ctx, g->np_cpu >= 0);
        g->main_serves = g->np_shared;
        /* Shared: never "active", so every rq_poll serves. */
        rqi_store_relaxed(&g->np_active, !g->np_shared);
        if (pthread_create(&g->np_thread, NULL, np_main, ctx) != 0)
            return RQ_ENOMEM;
        g->np_running = 1;
    }
    return 0;
}

void rqi_gas_fini(rq_ctx_t *ctx)
{
    struct rqi_gas *g = &ctx->gas;
    if (g->np_running) {
        rqi_store_release(&g->np_stop, 1);
        if (g->area != NULL && atomic_exchange(&g->area->np_sleep, 0u) != 0)
            rqi_futex(&g->area->np_sleep, FUTEX_WAKE, 1, NULL);
        pthread_join(g->np_thread, NULL);
        g->np_running = 0;
    }
    free(g->req_tx);
    free(g->rep_tx);
    free(g->slot);
    g->req_tx = g->rep_tx = NULL;
    g->slot = NULL;
}
