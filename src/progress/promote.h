/* promote.h - handlers that become threads (rq_handler_promote; FUGU's
 * user_active_global): the promotion pool of a context.  A handler hands
 * the rest of its work, with a copy of its message, to a pool thread that
 * runs it outside any handler, where every librq call may wait.
 *
 * Called by: rq_handler_promote (any thread running a handler);
 * rq_finalize (init/), which waits for the pool, stops its threads and
 * frees it; the quiescence waves (coll/), which run what is promoted
 * while they wait, once the threads are stopped. */
#ifndef RQI_PROGRESS_PROMOTE_H
#define RQI_PROGRESS_PROMOTE_H

#include <stdint.h>

struct rq_ctx;

/* Nonzero on a promotion pool thread (rq_finalize refuses it there). */
int rqi_promote_on_pool(void);

/* Wait, polling as a blocking call of the calling application thread
 * does, until no promoted part is queued or running.  0, or RQ_EPEER
 * (the job failed). */
int rqi_promote_quiet(struct rq_ctx *ctx);

/* Stop the pool's threads and wait for them (each finishes the part it
 * runs).  From here on, promoted parts are queued and run by
 * rqi_promote_run_queued on the finalizing thread. */
void rqi_promote_stop(struct rq_ctx *ctx);

/* After rqi_promote_stop: run the queued promoted parts on the calling
 * thread (the finalizer, outside any handler).  Returns how many ran. */
int rqi_promote_run_queued(struct rq_ctx *ctx);

/* rq_stats: parts promoted, threads started, since rq_init. */
void rqi_promote_counts(struct rq_ctx *ctx, uint64_t *promoted, uint64_t *threads);

/* Free the pool (after rqi_promote_stop); parts still queued (the job
 * failed) are dropped. */
void rqi_promote_free(struct rq_ctx *ctx);

#endif
