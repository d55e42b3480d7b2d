/* storm - every handler sends two more requests to random ranks until a
 * depth is reached (run with the smallest ring): no deadlock, every handler
 * runs exactly once per message.  argv[1]: roots per rank, argv[2]: depth.
 * How many sends were parked depends on timing, so it is reported, not
 * required; backpressure.c forces the parking case deterministically. */
#include <rq.h>

#include "check.h"

enum { H_STORM = 1 };
static uint64_t handled, rnd;

static void on_storm(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)arg;
    handled++;
    uint64_t depth = m->args[0];
    if (depth == 0)
        return;
    for (int k = 0; k < 2; k++) {
        rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
        int dst = (int)((rnd >> 33) % (uint64_t)rq_size(ctx));
        uint64_t a[2] = {depth - 1, m->args[1]};
        CHECK_EQ(rq_request(ctx, dst, H_STORM, a, 2, NULL, 0, 0), 0);
    }
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    long roots = argc > 1 ? atol(argv[1]) : 20;
    uint64_t depth = argc > 2 ? (uint64_t)atol(argv[2]) : 10;
    int me = rq_rank(ctx), n = rq_size(ctx);
    rnd = (uint64_t)me * 7919u + 1;
    rq_handler_register(ctx, H_STORM, on_storm, NULL, 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    for (long i = 0; i < roots; i++) {
        uint64_t a[2] = {depth, (uint64_t)i};
        CHECK_EQ(rq_request(ctx, (me + (int)i) % n, H_STORM, a, 2, NULL, 0, 0), 0);
    }
    uint64_t expect = (uint64_t)n * (uint64_t)roots * ((2ull << depth) - 1), total = 0;
    /* Every rank sees the same sums, so all leave the loop together. */
    while (total < expect) {
        for (int k = 0; k < 1000; k++)
            rq_poll(ctx);
        CHECK_EQ(rq_allreduce(ctx, &handled, &total, 1, RQ_UINT64, RQ_SUM), 0);
    }
    CHECK_EQ(total, expect);
    rq_stats_t st;
    rq_stats(ctx, &st);
    uint64_t mine[2] = {st.buffered, st.parked}, all[2];
    CHECK_EQ(rq_allreduce(ctx, mine, all, 2, RQ_UINT64, RQ_SUM), 0);
    uint64_t allbuf = all[0];
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("storm: %d ranks, %llu handlers ran, %llu delivered from the virtual buffer, "
               "%llu sends parked: ok\n",
               n, (unsigned long long)total, (unsigned long long)allbuf,
               (unsigned long long)all[1]);
    return 0;
}
