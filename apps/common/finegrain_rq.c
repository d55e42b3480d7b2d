/* finegrain_rq.c - the librq sum of the fine-grain programs' counts. */
#include "finegrain.h"

int rqa_fg_sum_rq(rq_ctx_t *ctx, const struct rqa_fg *c, struct rqa_fg *tot)
{
    rq_stats_t st;
    int rc = rq_stats(ctx, &st);
    if (rc != 0)
        return rc;
    uint64_t in[6] = {c->sent, c->received, c->handlers, c->handler_ticks, st.direct, st.buffered};
    uint64_t out[6];
    if ((rc = rq_allreduce(ctx, in, out, 6, RQ_UINT64, RQ_SUM)) != 0)
        return rc;
    uint64_t peak = 0;
    if ((rc = rq_allreduce(ctx, &st.buffer_bytes_max, &peak, 1, RQ_UINT64, RQ_MAX)) != 0)
        return rc;
    *tot = (struct rqa_fg){out[0], out[1], out[2], out[3], out[4], out[5], peak};
    return 0;
}
