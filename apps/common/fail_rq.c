/* fail_rq.c - rqa_fail and rqa_run_failed (see fail.h). */
#include "fail.h"

#include <stdio.h>

int rqa_fail(rq_ctx_t *ctx, const char *msg)
{
    if (rq_rank(ctx) == 0 && msg != NULL)
        printf("%s\n", msg);
    fflush(stdout);
    rq_finalize(ctx);
    return 1;
}

int rqa_run_failed(rq_ctx_t *ctx, int rc, uint64_t bad)
{
    uint64_t tot_bad = 0;
    if (rc == 0)
        rc = rq_allreduce(ctx, &bad, &tot_bad, 1, RQ_UINT64, RQ_SUM);
    if (rq_rank(ctx) == 0) {
        if (rc != 0)
            printf("ERROR: communication failed: %s\n", rq_strerror(rc));
        else if (tot_bad != 0)
            printf("ERROR: %llu malformed messages\n", (unsigned long long)tot_bad);
    }
    return rc != 0 || tot_bad != 0;
}
