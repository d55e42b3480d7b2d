/* stored.h - the count of bytes stored into a rank, one cache line per
 * source (net/shm.h: rqi_shm_stored; the ordering is in gas.h). */
#ifndef RQI_GAS_STORED_H
#define RQI_GAS_STORED_H

#include "ctx.h"

/* Count n bytes landed from src in rank dst; by the one writer of that
 * count (src under direct, dst's server otherwise).  Releases the data to
 * rq_store_sync's acquire loads. */
static inline void rqi_gas_count_stored(rq_ctx_t *ctx, int dst, uint32_t src, uint64_t n)
{
    _Atomic uint64_t *c = rqi_shm_stored(&ctx->shm, (uint32_t)dst, src);
    rqi_store_release(c, rqi_load_relaxed(c) + n);
}

/* The bytes stored into this rank so far, over every source: one acquire
 * load per source (a wait's cost, never a store's). */
static inline uint64_t rqi_gas_stored_total(rq_ctx_t *ctx)
{
    uint64_t sum = 0;
    for (int s = 0; s < ctx->size; s++)
        sum += rqi_load_acquire(rqi_shm_stored(&ctx->shm, (uint32_t)ctx->rank, (uint32_t)s));
    return sum;
}

#endif
