/* flow_errors - the flow-control helpers (common/flow.h) refuse bad
 * arguments with RQ_EINVAL and change nothing: ranks out of range for
 * rqa_credits_acquire / rqa_credits_consumed, an uninitialized or NULL
 * object, and rqa_pace_match with a consume time that is NaN, infinite or
 * beyond RQA_PACE_MAX_NS on one rank (every rank then gets RQ_EINVAL and
 * keeps its pacing); then the good paths still work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "flow.h"

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

enum { H_CREDITS = 7 };

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK(rq_init(&argc, &argv, &ctx) == 0);
    const int me = rq_rank(ctx), n = rq_size(ctx);

    struct rqa_credits c;
    memset(&c, 0, sizeof c);
    CHECK(rqa_credits_acquire(&c, 0, NULL, NULL) == RQ_EINVAL); /* not initialized */
    CHECK(rqa_credits_consumed(&c, 0) == RQ_EINVAL);
    CHECK(rqa_credits_acquire(NULL, 0, NULL, NULL) == RQ_EINVAL);
    CHECK(rqa_credits_consumed(NULL, 0) == RQ_EINVAL);
    CHECK(rqa_credits_init(&c, ctx, H_CREDITS, 4) == 0);
    const int bad_ranks[] = {-1, n, n + 1, 1 << 30, -(1 << 30)};
    for (size_t i = 0; i < sizeof bad_ranks / sizeof bad_ranks[0]; i++) {
        CHECK(rqa_credits_acquire(&c, bad_ranks[i], NULL, NULL) == RQ_EINVAL);
        CHECK(rqa_credits_consumed(&c, bad_ranks[i]) == RQ_EINVAL);
    }
    for (int r = 0; r < n; r++) /* nothing was spent or owed by the refusals */
        CHECK(c.avail[r] == 4 && c.owed[r] == 0);
    CHECK(rqa_credits_acquire(&c, (me + 1) % n, NULL, NULL) == 0);
    CHECK(c.avail[(me + 1) % n] == 3);
    CHECK(rq_barrier(ctx) == 0);
    rqa_credits_fini(&c);
    rqa_credits_fini(NULL);

    struct rqa_pace p = {0, 0};
    CHECK(rqa_pace_match(NULL, ctx, 10) == RQ_EINVAL);
    CHECK(rqa_pace_match(&p, NULL, 10) == RQ_EINVAL);
    CHECK(rqa_pace_match(&p, ctx, 100 + me) == 0);
    CHECK(p.interval_ns == (uint64_t)(100 + n - 1));
    /* One rank's bad value: every rank refuses, nobody's pacing changes. */
    const double bad[] = {NAN, INFINITY, -INFINITY, 1e300, RQA_PACE_MAX_NS * 2};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double mine = me == n - 1 ? bad[i] : 50;
        CHECK(rqa_pace_match(&p, ctx, mine) == RQ_EINVAL);
        CHECK(p.interval_ns == (uint64_t)(100 + n - 1));
    }
    CHECK(rqa_pace_match(&p, ctx, -5) == 0); /* a negative time counts as 0 */
    CHECK(p.interval_ns == 0);
    CHECK(rqa_pace_match(&p, ctx, RQA_PACE_MAX_NS) == 0);
    CHECK(p.interval_ns == (uint64_t)RQA_PACE_MAX_NS);
    printf("flow_errors: rank %d: ok\n", me);
    CHECK(rq_finalize(ctx) == 0);
    return 0;
}
