/* wait.h - one step of a blocking wait, for every layer from the
 * transports up: the job's failure (core/fail.h), every RQ_PEER_CHECK_MS
 * the liveness of this node's peers (net/shm.h: their pids), and how the
 * CPU is used meanwhile: back to back for a short wait, a pause between
 * looks for a longer one (where thread-safe mode lets other threads take
 * the context), the CPU given away past RQ_SPIN_COUNT.  It runs no
 * handler and moves no packet: progress is the caller's business. */
#ifndef RQI_NET_WAIT_H
#define RQI_NET_WAIT_H

#include "ctx.h"

#define RQI_BUSY_POLLS 32u        /* empty polls of a wait before pausing */

/* One idle step of a blocking wait (nothing was done since the last one):
 * 0, or RQ_EPEER once the job has failed.  *spins counts the idle steps
 * in a row. */
int rqi_wait_step(rq_ctx_t *ctx, unsigned *spins);

/* In a wait that made progress (ran a handler, copied a piece): the
 * job's flag and, every RQ_PEER_CHECK_MS, peer liveness, so a wait that
 * never idles still learns of a death.  0 or RQ_EPEER. */
int rqi_peer_watch(rq_ctx_t *ctx);
static inline int rqi_fail_check(rq_ctx_t *ctx)
{
    if (rqi_job_failed(ctx))
        return RQ_EPEER;
    /* A clock read every 64 busy steps: noise beside a handler each. */
    if (RQI_UNLIKELY((++ctx->busy_steps & 63u) == 0))
        return rqi_peer_watch(ctx);
    return 0;
}

/* One step of a wait that made progress: the spin count starts over, then
 * rqi_fail_check.  0 or RQ_EPEER. */
static inline int rqi_busy_step(rq_ctx_t *ctx, unsigned *spins)
{
    *spins = 0;
    return rqi_fail_check(ctx);
}

#endif
