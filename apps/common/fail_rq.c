/* fail_rq.c - rqa_fail (see fail.h). */
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
