/* am.h - the sending core shared by active messages, queues and
 * collectives. */
#ifndef RQI_AM_H
#define RQI_AM_H

#include "ctx.h"
#include "deliver/deliver.h"

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

/* Send a packet to queue qid of dst (arguments already validated):
 * in place up to rq_medium_max(), fragmented above it.  pflags: RQI_PF_*. */
int rqi_send(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, unsigned pflags,
             const uint64_t *args, unsigned nargs, const void *data, size_t len,
             unsigned flags);

/* The announcement of a long request whose bytes are already in dst's
 * segment at off (gas/async.h): sent, or parked in the outbox when the
 * lane is full; never blocks.  0, RQ_EPEER, RQ_ENOMEM. */
int rqi_send_landed(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                    unsigned nargs, uint64_t off, uint64_t len, unsigned flags);

/* Run m's handler (a user one unless m->rqi_flags has RQI_PF_SYSTEM) as
 * rq_poll does: RQ_HF_PLACE, depth, a missing handler counted rejected.
 * Returns 1 if one ran. */
int rqi_run_handler(rq_ctx_t *ctx, const rq_msg_t *m);

/* rq_poll without the call bracket (the caller owns the context). */
int rqi_poll(rq_ctx_t *ctx);

/* Poll until cond(ctx, arg) holds: run handlers while waiting, spin and
 * then yield (rqi_wait_step), fail with RQ_EPEER when a peer dies, also
 * while every step makes progress (rqi_busy_step). */
static inline int rqi_poll_until(rq_ctx_t *ctx, int (*cond)(rq_ctx_t *, const void *),
                                 const void *arg)
{
    unsigned spins = 0;
    int rc;
    while (!cond(ctx, arg)) {
        /* Idle: copy a piece of a queued non-blocking transfer rather than
         * spin beside a busy copy engine (gas/async.h). */
        if (rqi_poll(ctx) > 0 ||
            (RQI_UNLIKELY(rqi_async_has_work(&ctx->async)) && rqi_async_help(ctx)))
            rc = rqi_busy_step(ctx, &spins);
        else
            rc = rqi_wait_step(ctx, &spins);
        /* What the last step delivered may be what we waited for: that
         * wait succeeded, whatever happened after it. */
        if (rc != 0)
            return cond(ctx, arg) ? 0 : rc;
    }
    return 0;
}

/* Send what fits of every destination's outbox (see send_slow in am.c). */
void rqi_outbox_flush_all(rq_ctx_t *ctx);

#endif
