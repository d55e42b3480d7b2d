/* proto.c - the bottom of rqdsm: how protocol messages travel under each
 * protocol organisation, how an application thread waits (it runs the
 * protocol meanwhile), the per-block locks of the spin-lock organisation,
 * and rqdsm_poll.  Calls only librq; every other file of rqdsm calls down
 * to it (layer order: proto, regions, cache, home, init). */
#define _GNU_SOURCE
#include <sched.h>

#include "dsm.h"

/* One protocol message.  PDQ: keyed by the block, so a block's handlers
 * run one at a time, in order per source, and distinct blocks in
 * parallel.  SPINLOCK: keyed by the source (order per source, which the
 * protocol needs; any block's handlers may meet, under the block's lock).
 * POLL: an active message, run by rq_poll on the main thread. */
int rqdsm_send(rqdsm_t *d, int dst, int h, uint64_t key, const uint64_t *args, unsigned nargs,
               const void *data, size_t len)
{
    STAT(d, messages);
    if (d->protocol == RQDSM_PROTO_POLL)
        return rq_request(d->ctx, dst, d->hbase + (unsigned)h, args, nargs, data, len, 0);
    if (d->protocol == RQDSM_PROTO_SPINLOCK && key != RQ_KEY_SEQUENTIAL && key != RQ_KEY_NOSYNC)
        key = (uint64_t)d->me;
    return rq_pdq_enqueue(d->ctx, dst, d->qid, key, d->hbase + (unsigned)h, args, nargs, data,
                          len, 0);
}

/* One step of an application-thread wait: run what this thread may run
 * (every protocol's AM handlers and replies, and the PDQ's handlers: a
 * thread that waits for a miss is idle, and on a machine with no spare
 * core the protocol threads would otherwise wait for the scheduler to
 * preempt it), then back off.  When the PDQ ran handlers (the awaited
 * grant among them, likely), return before polling, so that the caller
 * looks at once; every 8th such step in a row polls too, so active
 * messages are never starved. */
int rqdsm_wait_step(rqdsm_t *d, struct rqdsm_wait *w)
{
    int h = 0;
    if (d->pdq != NULL && (h = rq_pdq_help(d->pdq, 64)) < 0)
        return h;
    if (h > 0) {
        w->idle = 0;
        if (++w->ran % 8 != 0)
            return 0;
    }
    int rc = rq_poll(d->ctx);
    if (rc < 0)
        return rc;
    if (rc > 0 || h > 0) {
        w->idle = 0;
        return 0;
    }
    w->ran = 0;
    if (++w->idle > 64)
        sched_yield(); /* the protocol's threads may need this core */
    else
        __builtin_ia32_pause();
    return 0;
}

void rqdsm_lock(struct rqdsm_region *r, size_t b)
{
    if (r->lock == NULL)
        return;
    while (atomic_flag_test_and_set_explicit(&r->lock[b], memory_order_acquire))
        __builtin_ia32_pause();
}

void rqdsm_unlock(struct rqdsm_region *r, size_t b)
{
    if (r->lock != NULL)
        atomic_flag_clear_explicit(&r->lock[b], memory_order_release);
}

int rqdsm_poll(rqdsm_t *d)
{
    if (d == NULL)
        return RQ_EINVAL;
    /* The PDQ first: a helper that takes its packets in runs them
     * itself, where rq_poll's intake would wake a sleeping PDQ thread. */
    int h = d->pdq ? rq_pdq_help(d->pdq, 64) : 0;
    if (h < 0)
        return h;
    int rc = rq_poll(d->ctx);
    return rc < 0 ? rc : rc + h;
}

