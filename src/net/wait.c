/* wait.c - one step of a blocking wait (see wait.h). */
#define _GNU_SOURCE
#include "net/wait.h"

#include <sched.h>
#include <stdio.h>

#include "core/sys.h"

/* Every RQ_PEER_CHECK_MS: whether a peer died (then the job fails).  0 or
 * RQ_EPEER. */
int rqi_peer_watch(rq_ctx_t *ctx)
{
    uint64_t t = rqi_mono_ns();
    if (t < ctx->next_peer_check_ns)
        return 0;
    ctx->next_peer_check_ns = t + ctx->cfg.v[RQI_CFG_PEER_CHECK_MS] * 1000000ull;
    int dead = rqi_peers_check(&ctx->peers, &ctx->shm);
    if (dead == 0)
        return 0;
    char why[96];
    snprintf(why, sizeof why, "rank %d died; failing the job", dead - 1);
    rqi_shm_note_dead(ctx->shm.hdr, (uint32_t)(dead - 1));
    rqi_fail(ctx, why);
    return RQ_EPEER;
}

int rqi_wait_step(rq_ctx_t *ctx, unsigned *spins)
{
    if (rqi_job_failed(ctx))
        return RQ_EPEER;
    unsigned s = ++*spins;
    if ((s & 63u) == 0 && rqi_peer_watch(ctx) != 0)
        return RQ_EPEER;
    /* Short waits (a ping-pong's) poll back to back: a pause here costs
     * ~10 ns of one-way latency between cores that share a cache.  Longer
     * waits pause between polls (kinder to an SMT sibling), and past
     * RQ_SPIN_COUNT give the CPU away (oversubscription). */
    /* Thread-safe mode: the pause is where other threads get the context
     * (their sends, a PDQ's intake) while an outermost call waits. */
    int released = rqi_mt_release_outer(&ctx->mt);
    if (s > ctx->cfg.v[RQI_CFG_SPIN_COUNT])
        sched_yield();
    else if (s > RQI_BUSY_POLLS || released)
        rqi_cpu_relax();
    if (released)
        rqi_mt_retake(&ctx->mt);
    return 0;
}
