/* coll - barrier, broadcast (every root, sizes up to fragmented) and
 * allreduce (every type and op) against computed expectations. */
#include <string.h>

#include <rq.h>

#include "check.h"

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    int me = rq_rank(ctx), n = rq_size(ctx);
    for (int i = 0; i < 200; i++)
        CHECK_EQ(rq_barrier(ctx), 0);
    size_t sizes[] = {0, 8, 1000, 1u << 20};
    unsigned char *buf = malloc(1u << 20);
    for (int root = 0; root < n; root++) {
        for (size_t s = 0; s < 4; s++) {
            for (size_t i = 0; i < sizes[s]; i++)
                buf[i] = me == root ? pattern_byte(root, s, i) : 0;
            CHECK_EQ(rq_broadcast(ctx, root, buf, sizes[s]), 0);
            for (size_t i = 0; i < sizes[s]; i++)
                CHECK(buf[i] == pattern_byte(root, s, i));
        }
    }
    enum { C = 1000 };
    int64_t si[C], so[C];
    uint64_t ui[C], uo[C];
    double di[C], dout[C];
    for (int i = 0; i < C; i++) {
        si[i] = (int64_t)(me - n / 2) * (i + 1);
        ui[i] = (uint64_t)me * 1000u + (uint64_t)i;
        di[i] = 0.5 * me + i;
    }
    for (int op = RQ_SUM; op <= RQ_MAX; op++) {
        CHECK_EQ(rq_allreduce(ctx, si, so, C, RQ_INT64, op), 0);
        CHECK_EQ(rq_allreduce(ctx, ui, uo, C, RQ_UINT64, op), 0);
        CHECK_EQ(rq_allreduce(ctx, di, dout, C, RQ_DOUBLE, op), 0);
        for (int i = 0; i < C; i++) {
            int64_t ssum = 0, smin = INT64_MAX, smax = INT64_MIN;
            uint64_t usum = 0;
            double dsum = 0;
            for (int r = 0; r < n; r++) {
                int64_t v = (int64_t)(r - n / 2) * (i + 1);
                ssum += v;
                smin = v < smin ? v : smin;
                smax = v > smax ? v : smax;
                usum += (uint64_t)r * 1000u + (uint64_t)i;
                dsum += 0.5 * r + i;
            }
            int64_t se = op == RQ_SUM ? ssum : op == RQ_MIN ? smin : smax;
            uint64_t ue = op == RQ_SUM ? usum : op == RQ_MIN ? (uint64_t)i : (uint64_t)(n - 1) * 1000u + (uint64_t)i;
            double de = op == RQ_SUM ? dsum : op == RQ_MIN ? (double)i : 0.5 * (n - 1) + i;
            CHECK_EQ(so[i], se);
            CHECK_EQ(uo[i], ue);
            CHECK(dout[i] == de);
        }
    }
    /* in place */
    uint64_t x = 1;
    CHECK_EQ(rq_allreduce(ctx, &x, &x, 1, RQ_UINT64, RQ_SUM), 0);
    CHECK_EQ(x, n);
    /* NULL with length 0 is allowed (UBSan once saw memcpy(NULL, ...)) */
    for (int root = 0; root < n; root++)
        CHECK_EQ(rq_broadcast(ctx, root, NULL, 0), 0);
    for (int op = RQ_SUM; op <= RQ_MAX; op++)
        CHECK_EQ(rq_allreduce(ctx, NULL, NULL, 0, RQ_DOUBLE, op), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    free(buf);
    if (me == 0)
        printf("coll: %d ranks: ok\n", n);
    return 0;
}
