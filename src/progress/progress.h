/* progress.h - the one place that runs handlers (DESIGN.md: src/progress/).
 * A poll takes in what arrived and runs its handlers (progress/poll.c);
 * every wait of the layers above is a "done yet?" predicate that
 * rqi_poll_until loops on; the progress thread (progress/thread.c) runs
 * interrupting handlers and moves packets while the application computes.
 * Draining (moving packets into the virtual buffer, running nothing) is
 * delivery's (deliver/).  Work a poll does for the layers above (the
 * global-address service, announcing landed transfers, the outbox) goes
 * through their hooks (progress/hooks.h).
 *
 * Layer order, lowest first (docs/architecture.md; tests/tools/layers.sh checks it):
 *   core, net, boot, vni, deliver, progress, am, rq, coll, gas, pdq, init */
#ifndef RQI_PROGRESS_H
#define RQI_PROGRESS_H

#include "ctx.h"
#include "gas/async.h"
#include "net/wait.h"

/* Run m's handler (a user one unless m->rqi_flags has RQI_PF_SYSTEM) as
 * rq_poll does: RQ_HF_PLACE, depth, a missing handler counted rejected.
 * Returns 1 if one ran. */
int rqi_run_handler(rq_ctx_t *ctx, const rq_msg_t *m);

/* rq_poll without the call bracket (the caller owns the context). */
int rqi_poll(rq_ctx_t *ctx);

/* The calling thread's polls that reached the lanes, counted (a PDQ's
 * helper notes the count as it helps: rqi_pdq_defer). */
extern _Thread_local uint32_t rqi_poll_seq __attribute__((tls_model("initial-exec")));

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
            (RQI_UNLIKELY(rqi_async_has_work(&ctx->async)) && ctx->hooks.async_help(ctx)))
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

#endif
