/* am.h - the sending core shared by active messages, queues and
 * collectives. */
#ifndef RQI_AM_H
#define RQI_AM_H

#include "ctx.h"
#include "deliver/deliver.h"
#include "progress/progress.h"

/* Validate the arguments common to every send: 0 or RQ_EINVAL. */
int rqi_send_check(const rq_ctx_t *ctx, int dst, const uint64_t *args, unsigned nargs,
                   const void *data, size_t len, unsigned flags);

/* Whether a medium payload of len bytes to dst travels as one packet with
 * its payload inside: up to rq_medium_max(), and to another node any size
 * (UCX moves large ones by rendezvous).  Else, on this node, it is staged
 * (net/shm_bulk.h) or, larger than the staging area, fragmented. */
static inline int rqi_medium_one_packet(const rq_ctx_t *ctx, int dst, size_t len)
{
    return len <= ctx->medium_max || ctx->remote[dst];
}

/* Validate the arguments of a long request (rq_request_long and the
 * non-blocking one, gas/async.c): 0, RQ_EINVAL or RQ_ERANGE. */
int rqi_long_check(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                   unsigned nargs, const void *src, size_t len, uint64_t dst_off,
                   unsigned flags);

/* Send a packet to queue qid of dst (arguments already validated):
 * in place up to rq_medium_max(), fragmented above it.  pflags: RQI_PF_*. */
int rqi_send(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, unsigned pflags,
             const uint64_t *args, unsigned nargs, const void *data, size_t len,
             unsigned flags);

/* A PDQ message (rq_pdq_enqueue; arguments already validated, qid a
 * valid queue id): args, then the key as one more word (RQI_PF_KEY).
 * A short or in-place medium message to a destination with no parked
 * packets and room in its ring is written as rq_request writes its
 * packets; anything else goes through rqi_send. */
int rqi_send_keyed(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, const uint64_t *args,
                   unsigned nargs, uint64_t key, const void *data, size_t len, unsigned flags);

/* Thread-safe mode, without the context's lock: the same short or
 * in-place medium packet (keyed: the key as one more word) written under
 * dst's lane lock alone (ctx.h, "THE LANE LOCK").  0 sent; 1 not (a full
 * ring, parked packets, another node, a failure, interrupts on): take the
 * guarded general path. */
int rqi_lane_send(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, const uint64_t *args,
                  unsigned nargs, int keyed, uint64_t key, const void *data, size_t len,
                  unsigned flags);

/* The announcement of a long request whose bytes are already in dst's
 * segment at off (gas/async.h): sent, or parked in the outbox when the
 * lane is full; never blocks.  0, RQ_EPEER, RQ_ENOMEM. */
int rqi_send_landed(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                    unsigned nargs, uint64_t off, uint64_t len, unsigned flags);

/* Send what fits of every destination's outbox (see send_slow in am.c). */
void rqi_outbox_flush_all(rq_ctx_t *ctx);

#endif
