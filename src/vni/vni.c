/* vni.c - virtual network interface controls.  Atomicity sections keep
 * their nesting count now (in polling mode no handler runs asynchronously,
 * so a section is trivially atomic); interrupt delivery belongs to the VNI
 * issue. */
#include "ctx.h"

int rq_atomic_begin(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    ctx->atomic_depth++;
    return 0;
}

int rq_atomic_end(rq_ctx_t *ctx)
{
    if (ctx == NULL || ctx->atomic_depth == 0)
        return RQ_EINVAL;
    ctx->atomic_depth--;
    return 0;
}

int rq_interrupts(rq_ctx_t *ctx, int mode)
{
    if (ctx == NULL || (mode != RQ_INTR_OFF && mode != RQ_INTR_SELECTIVE && mode != RQ_INTR_ALL))
        return RQ_EINVAL;
    return mode == RQ_INTR_OFF ? 0 : RQ_ENOTSUP;
}

int rq_stats(rq_ctx_t *ctx, rq_stats_t *out)
{
    if (ctx == NULL || out == NULL)
        return RQ_EINVAL;
    *out = ctx->stats;
    out->buffer_bytes_now = ctx->vb.bytes_now;
    out->buffer_bytes_max = ctx->vb.bytes_max;
    out->parked = ctx->parked;
    out->rejected += atomic_load_explicit(&ctx->gas.rejected, memory_order_relaxed);
    return 0;
}
