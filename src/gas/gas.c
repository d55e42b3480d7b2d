/* gas.c - global-address operations.  Segments exist (rq_segment,
 * rq_segment_peer, long active messages); the Split-C operations belong to
 * the global-address issue and return RQ_ENOTSUP until it lands.  Their
 * arguments are validated first, so callers get RQ_EINVAL/RQ_ERANGE for bad
 * input already. */
#include "ctx.h"

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

static int range_check(const rq_ctx_t *ctx, int rank, uint64_t off, size_t len,
                       const void *buf)
{
    if (ctx == NULL || rank < 0 || rank >= ctx->size || (len != 0 && buf == NULL))
        return RQ_EINVAL;
    if (off > ctx->seg_bytes || len > ctx->seg_bytes - off)
        return RQ_ERANGE;
    return RQ_ENOTSUP;
}

int rq_put(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len, unsigned flags)
{
    (void)flags;
    return range_check(ctx, dst, off, len, src);
}
int rq_get(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len, unsigned flags)
{
    (void)flags;
    return range_check(ctx, src_rank, off, len, dst);
}
int rq_store(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len, unsigned flags)
{
    (void)flags;
    return range_check(ctx, dst, off, len, src);
}
int rq_read(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len)
{
    return range_check(ctx, src_rank, off, len, dst);
}
int rq_write(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len)
{
    return range_check(ctx, dst, off, len, src);
}
int rq_sync(rq_ctx_t *ctx) { return ctx == NULL ? RQ_EINVAL : RQ_ENOTSUP; }
int rq_store_sync(rq_ctx_t *ctx, uint64_t nbytes)
{
    (void)nbytes;
    return ctx == NULL ? RQ_EINVAL : RQ_ENOTSUP;
}
int rq_all_store_sync(rq_ctx_t *ctx) { return ctx == NULL ? RQ_EINVAL : RQ_ENOTSUP; }

int rq_put_strided(rq_ctx_t *ctx, int dst, uint64_t off, size_t dst_stride, const void *src,
                   size_t src_stride, size_t elem, size_t count, unsigned flags)
{
    (void)dst_stride; (void)src_stride; (void)elem; (void)count; (void)flags;
    return range_check(ctx, dst, off, 0, src);
}
int rq_get_strided(rq_ctx_t *ctx, void *dst, size_t dst_stride, int src_rank, uint64_t off,
                   size_t src_stride, size_t elem, size_t count, unsigned flags)
{
    (void)dst_stride; (void)src_stride; (void)elem; (void)count; (void)flags;
    return range_check(ctx, src_rank, off, 0, dst);
}
int rq_amo(rq_ctx_t *ctx, int dst, uint64_t off, int op, uint64_t operand, uint64_t compare,
           uint64_t *old)
{
    (void)operand; (void)compare; (void)old;
    if (op < RQ_AMO_FADD || op > RQ_AMO_FXOR)
        return RQ_EINVAL;
    if (ctx != NULL && (off & 7) != 0)
        return RQ_EINVAL;
    return range_check(ctx, dst, off, 8, &op);
}
