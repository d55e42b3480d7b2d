/* placement_rq.c - rqa_placement_rq: the bounce through rank 0's segment. */
#include "placement.h"

double rqa_placement_rq(rq_ctx_t *ctx)
{
    const int me = rq_rank(ctx);
    volatile uint64_t *line = rq_segment_peer(ctx, 0);
    /* Both ranks 0 and 1 must see rank 0's segment (the same node). */
    int64_t mapped = me <= 1 && line != NULL && rqa_placement_wanted(rq_size(ctx)), both = 0;
    rq_allreduce(ctx, &mapped, &both, 1, RQ_INT64, RQ_SUM);
    double ns = 0;
    if (both == 2 && me <= 1)
        ns = rqa_line_bounce(line, me); /* the allreduce started both together */
    rq_barrier(ctx);
    if (both == 2 && me == 0)
        *line = 0;
    rq_barrier(ctx);
    return ns;
}
