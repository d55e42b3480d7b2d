/* waits.c - waits of the lower layers that run handlers while they wait,
 * so they belong to progress: a send held by overflow control's STOP
 * (vni/overflow.c, FUGU section 5.2). */
#include "progress/progress.h"

#include "deliver/deliver.h"

int rqi_overflow_wait(rq_ctx_t *ctx)
{
    unsigned spins = 0;
    while (rqi_overflow_stopped(&ctx->vni) && !rqi_load_relaxed(&ctx->vni.ovf_member)) {
        int n = 0;
        if (rqi_load_relaxed(&ctx->vni.atomic) == 0) {
            n = rqi_poll(ctx);
        } else {
            int rc = rqi_drain(ctx);
            if (rc != 0)
                return rc;
        }
        int rc = n > 0 ? rqi_busy_step(ctx, &spins) : rqi_wait_step(ctx, &spins);
        if (rc != 0)
            return rc;
    }
    return 0;
}
