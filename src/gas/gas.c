/* gas.c - the global-address operations of the API: argument checks, the
 * direct strategy (and every operation on one's own rank), and dispatch to
 * the request/reply protocol of the np and proc strategies (gas_proto.c).
 * The initiator checks bounds and alignment here; under np and proc the
 * target checks them again on every packet (gas_proto.c). */
#include <stdlib.h>
#include <string.h>

#include "am/am.h"
#include "net/net.h"
#include "ctx.h"
#include "deliver/deliver.h"
#include "gas/gas.h"
#include "gas/stored.h"
#include "gas/region.h"

int rq_segment(rq_ctx_t *ctx, void **base, size_t *size)
{
    if (ctx == NULL || base == NULL || size == NULL)
        return RQ_EINVAL;
    *base = ctx->seg[ctx->rank];
    *size = (size_t)ctx->seg_bytes;
    return 0;
}

void *rq_segment_peer(rq_ctx_t *ctx, int rank)
{
    if (ctx == NULL || rank < 0 || rank >= ctx->size)
        return NULL;
    return ctx->seg[rank];
}

/* A transfer described for both sides: the remote region (off, rstride)
 * and the local buffer (buf, lstride), count blocks of elem bytes. */
struct xfer {
    int      peer;
    uint64_t off, rstride;
    char    *buf;
    uint64_t lstride, elem, count;
};

/* Check a transfer; remote_written: the remote side is written (put,
 * store).  0, RQ_EINVAL (bad rank, pointer, flags, overlapping written
 * blocks) or RQ_ERANGE (outside the peer's segment). */
static int xfer_check(const rq_ctx_t *ctx, const struct xfer *x, unsigned flags,
                      int remote_written)
{
    if (ctx == NULL || x->peer < 0 || x->peer >= ctx->size || flags != 0)
        return RQ_EINVAL;
    if (x->elem == 0 || x->count == 0)
        return x->off > ctx->seg_bytes ? RQ_ERANGE : 0; /* nothing to move */
    int ovf;
    rqi_region_bytes(x->elem, x->count, &ovf);
    if (x->buf == NULL || ovf)
        return RQ_EINVAL;
    /* Written blocks must not overlap (the result would depend on order). */
    if (x->count > 1 && ((remote_written && x->rstride < x->elem) ||
                         (!remote_written && x->lstride < x->elem)))
        return RQ_EINVAL;
    if (!rqi_region_ok(x->off, x->rstride, x->elem, x->count, ctx->seg_bytes, 0))
        return RQ_ERANGE;
    return 0;
}

/* Once the job has failed (a rank died, a lane broke), every global-
 * address operation returns RQ_EPEER, whatever the strategy and the
 * transport: direct once returned 0 where np/proc (which wait on the dead
 * rank's service) and UCX returned RQ_EPEER.  Checked after the arguments
 * (rqi_job_failed), so RQ_EINVAL / RQ_ERANGE still come first. */

static int in_place(const rq_ctx_t *ctx, int peer)
{
    return (ctx->gas.strategy == RQI_GAS_DIRECT && !ctx->remote[peer]) || peer == ctx->rank;
}

/* An operation completed in place (our own segment; any same-node peer
 * under direct) still serves the peers that may need this rank, because a
 * program may spin on it: under proc (and np on a shared core) the request
 * rings (rank 0 spinning on
 * an AMO of its own lock word would otherwise never serve the read that
 * the holder needs before it releases), and across nodes, every 16th call,
 * the UCX worker (RMA over TCP needs the target's progress).  Operations
 * that wait serve while they wait (gas_proto.c). */
static inline void serve_in_place(rq_ctx_t *ctx)
{
    if (ctx->gas.main_serves)
        (void)(ctx->gas.strategy == RQI_GAS_PROC ? rqi_gas_serve(ctx) : rqi_gas_help(ctx));
    if (RQI_UNLIKELY(ctx->ucx != NULL) && (++ctx->gas.serve_tick & 15u) == 0)
        (void)ctx->net->progress(ctx);
}

/* Direct: copy block by block through the mapped segment. */
static void direct_copy(rq_ctx_t *ctx, const struct xfer *x, int to_remote)
{
    serve_in_place(ctx);
    char *r = ctx->seg[x->peer] + x->off;
    if (x->count == 1) {
        if (to_remote) /* stores chosen per target, as a long request's */
            rqi_copy_chosen(&ctx->seg_copy[x->peer], ctx->bulk_stream, r, x->buf, x->elem);
        else
            memcpy(x->buf, r, x->elem);
        return;
    }
    for (uint64_t i = 0; i < x->count; i++) {
        if (to_remote)
            memcpy(r + i * x->rstride, x->buf + i * x->lstride, x->elem);
        else
            memcpy(x->buf + i * x->lstride, r + i * x->rstride, x->elem);
    }
}

static int do_put(rq_ctx_t *ctx, const struct xfer *x, unsigned flags, int store)
{
    int rc = xfer_check(ctx, x, flags, 1);
    if (rc != 0)
        return rc;
    if (rqi_job_failed(ctx))
        return RQ_EPEER;
    if (x->elem == 0 || x->count == 0)
        return 0;
    if (RQI_UNLIKELY(ctx->remote[x->peer]))
        return ctx->net->put(ctx, x->peer, x->off, x->rstride, x->buf, x->lstride, x->elem,
                           x->count, store);
    if (!in_place(ctx, x->peer))
        return rqi_gas_send_put(ctx, x->peer, store, x->off, x->rstride, x->buf, x->lstride,
                                x->elem, x->count);
    direct_copy(ctx, x, 1);
    if (store)
        rqi_gas_count_stored(ctx, x->peer, (uint32_t)ctx->rank, x->elem * x->count);
    return 0;
}

static int do_get(rq_ctx_t *ctx, const struct xfer *x, unsigned flags, uint32_t *slot)
{
    int rc = xfer_check(ctx, x, flags, 0);
    if (rc != 0)
        return rc;
    if (rqi_job_failed(ctx))
        return RQ_EPEER;
    if (x->elem == 0 || x->count == 0)
        return 0;
    if (RQI_UNLIKELY(ctx->remote[x->peer]))
        return ctx->net->get(ctx, x->buf, x->lstride, x->peer, x->off, x->rstride, x->elem,
                           x->count, slot != NULL);
    if (!in_place(ctx, x->peer))
        return rqi_gas_send_get(ctx, x->buf, x->lstride, x->peer, x->off, x->rstride, x->elem,
                                x->count, slot);
    direct_copy(ctx, x, 0);
    return 0;
}

static int put_body(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len, unsigned flags)
{
    struct xfer x = {dst, off, len, (char *)src, len, len, 1};
    return do_put(ctx, &x, flags, 0);
}

static int store_body(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len, unsigned flags)
{
    struct xfer x = {dst, off, len, (char *)src, len, len, 1};
    return do_put(ctx, &x, flags, 1);
}

static int get_body(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len, unsigned flags)
{
    struct xfer x = {src_rank, off, len, dst, len, len, 1};
    return do_get(ctx, &x, flags, NULL);
}

static int put_strided_body(rq_ctx_t *ctx, int dst, uint64_t off, size_t dst_stride, const void *src,
                   size_t src_stride, size_t elem, size_t count, unsigned flags)
{
    struct xfer x = {dst, off, dst_stride, (char *)src, src_stride, elem, count};
    return do_put(ctx, &x, flags, 0);
}

static int get_strided_body(rq_ctx_t *ctx, void *dst, size_t dst_stride, int src_rank, uint64_t off,
                   size_t src_stride, size_t elem, size_t count, unsigned flags)
{
    struct xfer x = {src_rank, off, src_stride, dst, dst_stride, elem, count};
    return do_get(ctx, &x, flags, NULL);
}

/* rq_put_nb / rq_get_nb: checked like rq_put / rq_get, then issued to
 * the copy engine or UCX (gas/async.h). */
static int nb_body(rq_ctx_t *ctx, const struct xfer *x, int put, volatile uint64_t *done,
                   unsigned flags)
{
    int rc = xfer_check(ctx, x, flags, put);
    if (rc != 0)
        return rc;
    if (rqi_job_failed(ctx))
        return RQ_EPEER;
    if (x->elem == 0) { /* nothing to move: complete now */
        if (done != NULL)
            __atomic_fetch_add(done, 1, __ATOMIC_RELEASE);
        return 0;
    }
    struct rqi_aop *op = calloc(1, sizeof *op);
    if (op == NULL)
        return RQ_ENOMEM;
    op->kind = put ? RQI_AOP_PUT : RQI_AOP_GET;
    op->peer = x->peer;
    op->off = x->off;
    op->len = x->elem;
    op->done = done;
    char *remote = ctx->remote[x->peer] ? NULL : ctx->seg[x->peer] + x->off;
    op->to = put ? remote : x->buf;
    op->from = put ? x->buf : remote;
    return rqi_async_issue(ctx, op);
}

static int sync_body(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    if (rqi_job_failed(ctx))
        return RQ_EPEER;
    int rc = rqi_gas_quiet(ctx);
    return rc != 0 ? rc : rqi_async_quiet(ctx);
}

static int read_body(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len)
{
    struct xfer x = {src_rank, off, len, dst, len, len, 1};
    uint32_t slot = UINT32_MAX;
    int rc = do_get(ctx, &x, 0, &slot);
    if (rc != 0 || slot == UINT32_MAX)
        return rc;
    return rqi_gas_wait_slot(ctx, slot, NULL);
}

static int write_body(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len)
{
    struct xfer x = {dst, off, len, (char *)src, len, len, 1};
    int rc = do_put(ctx, &x, 0, 0);
    if (rc != 0 || in_place(ctx, dst))
        return rc;
    return rqi_gas_quiet(ctx);
}

static int amo_body(rq_ctx_t *ctx, int dst, uint64_t off, int op, uint64_t operand, uint64_t compare,
           uint64_t *old)
{
    if (ctx == NULL || dst < 0 || dst >= ctx->size || op < RQ_AMO_FADD || op > RQ_AMO_FXOR ||
        (off & 7) != 0)
        return RQ_EINVAL;
    if (ctx->seg_bytes < 8 || off > ctx->seg_bytes - 8)
        return RQ_ERANGE;
    if (rqi_job_failed(ctx))
        return RQ_EPEER;
    uint64_t v;
    if (RQI_UNLIKELY(ctx->remote[dst])) {
        int rc = ctx->net->amo(ctx, dst, off, op, operand, compare, &v);
        if (rc != 0)
            return rc;
    } else if (in_place(ctx, dst)) {
        serve_in_place(ctx);
        v = rqi_gas_amo_apply((_Atomic uint64_t *)(void *)(ctx->seg[dst] + off), op, operand,
                              compare);
    } else {
        uint32_t slot;
        int rc = rqi_gas_send_amo(ctx, dst, off, op, operand, compare, &slot);
        if (rc == 0)
            rc = rqi_gas_wait_slot(ctx, slot, &v);
        if (rc != 0)
            return rc;
    }
    if (old != NULL)
        *old = v;
    return 0;
}

/* rq_store_sync's "done yet?": every byte counted has landed. */
static int stored_reached(rq_ctx_t *ctx, const void *arg)
{
    return rqi_gas_stored_total(ctx) >= *(const uint64_t *)arg;
}

static int store_sync_body(rq_ctx_t *ctx, uint64_t nbytes)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    struct rqi_gas *g = &ctx->gas;
    if (nbytes > UINT64_MAX - g->consumed)
        return RQ_EINVAL;
    /* It waits for other ranks' stores: a handler may not (thread rules). */
    if (rqi_in_handler(ctx))
        return RQ_EPERM;
    if (rqi_job_failed(ctx))
        return RQ_EPEER;
    const uint64_t want = g->consumed + nbytes;
    /* Polling serves this rank's global-address requests too (proc). */
    int rc = rqi_poll_until(ctx, stored_reached, &want);
    if (rc != 0)
        return rc;
    g->consumed = want;
    return 0;
}

static int all_store_sync_body(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    if (rqi_in_handler(ctx))
        return RQ_EPERM;
    int rc = rqi_gas_quiet(ctx);
    return rc != 0 ? rc : rq_barrier(ctx);
}

/* Public entry points: each bracketed against the progress thread
 * (src/vni/vni.h). */

int rq_put(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len, unsigned flags)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, put_body(ctx, dst, off, src, len, flags));
}

int rq_store(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len, unsigned flags)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, store_body(ctx, dst, off, src, len, flags));
}

int rq_get(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len, unsigned flags)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, get_body(ctx, dst, src_rank, off, len, flags));
}

int rq_put_strided(rq_ctx_t *ctx, int dst, uint64_t off, size_t dst_stride, const void *src,
                   size_t src_stride, size_t elem, size_t count, unsigned flags)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, put_strided_body(ctx, dst, off, dst_stride, src, src_stride, elem, count, flags));
}

int rq_get_strided(rq_ctx_t *ctx, void *dst, size_t dst_stride, int src_rank, uint64_t off,
                   size_t src_stride, size_t elem, size_t count, unsigned flags)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, get_strided_body(ctx, dst, dst_stride, src_rank, off, src_stride, elem, count, flags));
}

int rq_put_nb(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len,
              volatile uint64_t *done, unsigned flags)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    struct xfer x = {dst, off, len, (char *)src, len, len, 1};
    RQI_GUARDED(ctx, nb_body(ctx, &x, 1, done, flags));
}

int rq_get_nb(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len,
              volatile uint64_t *done, unsigned flags)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    struct xfer x = {src_rank, off, len, dst, len, len, 1};
    RQI_GUARDED(ctx, nb_body(ctx, &x, 0, done, flags));
}

int rq_sync(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, sync_body(ctx));
}

int rq_read(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, read_body(ctx, dst, src_rank, off, len));
}

int rq_write(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, write_body(ctx, dst, off, src, len));
}

int rq_amo(rq_ctx_t *ctx, int dst, uint64_t off, int op, uint64_t operand, uint64_t compare,
           uint64_t *old)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, amo_body(ctx, dst, off, op, operand, compare, old));
}

int rq_store_sync(rq_ctx_t *ctx, uint64_t nbytes)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, store_sync_body(ctx, nbytes));
}

int rq_all_store_sync(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, all_store_sync_body(ctx));
}
