/* gas_ops - every global-address operation against every rank (itself
 * included), at the boundary sizes, checked byte for byte; run under each
 * RQ_GAS_STRATEGY by CTest.
 *   get/read   of a pattern every rank writes into its own segment;
 *   put/write  into a per-sender area of each peer, checked by the target;
 *   store      concurrent stores from every rank, rq_store_sync(exact
 *              byte count) must see all of them (an undercount hangs, an
 *              overcount returns before the data is there);
 *   strided    put/get shapes (tiny blocks, blocks spanning packets)
 *              against a reference computed locally;
 *   errors     RQ_ERANGE and RQ_EINVAL for every kind of bad argument. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "rq.h"

#define PATTERN_OFF 0ull            /* each rank's readable pattern */
#define PATTERN_LEN (2ull << 20)
#define AREA_OFF    (4ull << 20)    /* per-sender areas for puts and stores */
#define AREA_LEN    (2ull << 20)

static rq_ctx_t *ctx;
static int me, np;
static char *seg;
static size_t seg_len;

static unsigned char pat(int rank, uint64_t i) { return pattern_byte(rank, 99, (size_t)i); }

static void check_bytes(const unsigned char *got, int rank, uint64_t seq, uint64_t start, size_t n,
                        const char *what, size_t size)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != pattern_byte(rank, seq, (size_t)(start + i))) {
            fprintf(stderr, "rank %d: %s size %zu from/to %d: byte %zu is %u, want %u\n", me,
                    what, size, rank, i, got[i], pattern_byte(rank, seq, (size_t)(start + i)));
            exit(1);
        }
}

static void sizes_list(size_t *s, int *n)
{
    size_t m = rq_medium_max(ctx);
    size_t v[] = {0, 1, 7, 8, 9, 63, 64, 65, m - 1, m, m + 1, 3 * m + 5, 1u << 20};
    *n = (int)(sizeof v / sizeof v[0]);
    memcpy(s, v, sizeof v);
}

static void test_get(unsigned char *buf)
{
    size_t sz[16];
    int ns;
    sizes_list(sz, &ns);
    for (int k = 0; k < ns; k++) {
        for (int d = 0; d < np; d++) {
            int p = (me + d) % np;
            uint64_t off = (uint64_t)(k * 13 + 3); /* unaligned */
            memset(buf, 0xee, sz[k] + 1);
            CHECK_EQ(rq_get(ctx, buf, p, PATTERN_OFF + off, sz[k], 0), 0);
            CHECK_EQ(rq_sync(ctx), 0);
            for (size_t i = 0; i < sz[k]; i++)
                if (buf[i] != pat(p, off + i)) {
                    fprintf(stderr, "rank %d: get size %zu from %d: byte %zu wrong\n", me, sz[k], p, i);
                    exit(1);
                }
            CHECK(buf[sz[k]] == 0xee); /* nothing past the end */
            memset(buf, 0, sz[k]);
            CHECK_EQ(rq_read(ctx, buf, p, PATTERN_OFF + off, sz[k]), 0);
            for (size_t i = 0; i < sz[k]; i++)
                CHECK(buf[i] == pat(p, off + i));
        }
    }
    /* Many gets in flight at once, to every rank, then one sync. */
    enum { MANY = 3000 };
    for (int i = 0; i < MANY; i++)
        CHECK_EQ(rq_get(ctx, buf + 8 * (size_t)i, i % np, PATTERN_OFF + 8 * (uint64_t)i, 8, 0), 0);
    CHECK_EQ(rq_sync(ctx), 0);
    for (int i = 0; i < MANY; i++)
        for (int j = 0; j < 8; j++)
            CHECK(buf[8 * i + j] == pat(i % np, 8 * (uint64_t)i + (uint64_t)j));
}

static void test_put(unsigned char *buf)
{
    size_t sz[16];
    int ns;
    sizes_list(sz, &ns);
    for (int k = 0; k < ns; k++) {
        uint64_t seq = 1000 + (uint64_t)k;
        for (size_t i = 0; i < sz[k]; i++)
            buf[i] = pattern_byte(me, seq, i);
        uint64_t off = AREA_OFF + (uint64_t)me * AREA_LEN + 5;
        for (int d = 0; d < np; d++)
            CHECK_EQ(rq_put(ctx, (me + d) % np, off, buf, sz[k], 0), 0);
        memset(buf, 0, sz[k]); /* the source is reusable once rq_put returns */
        CHECK_EQ(rq_sync(ctx), 0);
        CHECK_EQ(rq_barrier(ctx), 0);
        for (int s = 0; s < np; s++)
            check_bytes((unsigned char *)seg + AREA_OFF + (uint64_t)s * AREA_LEN + 5, s, seq, 0,
                        sz[k], "put", sz[k]);
        CHECK_EQ(rq_barrier(ctx), 0);
    }
    /* rq_write is complete at return: a read right after it sees it. */
    for (int d = 0; d < np; d++) {
        int p = (me + d) % np;
        uint64_t off = AREA_OFF + (uint64_t)me * AREA_LEN + 64;
        for (int i = 0; i < 200; i++) {
            uint64_t v = ((uint64_t)me << 32) | (uint64_t)i, r = 0;
            CHECK_EQ(rq_write(ctx, p, off, &v, 8), 0);
            CHECK_EQ(rq_read(ctx, &r, p, off, 8), 0);
            CHECK(r == v);
        }
    }
    CHECK_EQ(rq_barrier(ctx), 0);
}

static void test_store(unsigned char *buf)
{
    /* Every rank stores ROUNDS chunks of varying size into every other
     * rank, concurrently. */
    enum { ROUNDS = 40 };
    const size_t m = rq_medium_max(ctx);
    uint64_t mine = 0;
    for (int r = 0; r < ROUNDS; r++)
        mine += (uint64_t)(r * 977 % (int)(2 * m + 3)) + 1;
    for (int i = 0; (uint64_t)i < mine; i++)
        buf[i] = pattern_byte(me, 7, (size_t)i);
    for (int d = 1; d < np; d++) {
        int p = (me + d) % np;
        uint64_t at = 0;
        for (int r = 0; r < ROUNDS; r++) {
            uint64_t n = (uint64_t)(r * 977 % (int)(2 * m + 3)) + 1;
            CHECK_EQ(rq_store(ctx, p, AREA_OFF + (uint64_t)me * AREA_LEN + at, buf + at, n, 0), 0);
            at += n;
        }
    }
    CHECK_EQ(rq_store_sync(ctx, mine * (uint64_t)(np - 1)), 0);
    for (int s = 0; s < np; s++)
        if (s != me)
            check_bytes((unsigned char *)seg + AREA_OFF + (uint64_t)s * AREA_LEN, s, 7, 0,
                        (size_t)mine, "store", (size_t)mine);
    CHECK_EQ(rq_store_sync(ctx, 0), 0);
    CHECK_EQ(rq_barrier(ctx), 0); /* nobody stores again before all checked */
    /* all_store_sync: a store to the right neighbour, visible after it. */
    uint64_t v = 0xabc000u + (uint64_t)me;
    CHECK_EQ(rq_store(ctx, (me + 1) % np, AREA_OFF + (uint64_t)me * AREA_LEN, &v, 8, 0), 0);
    CHECK_EQ(rq_all_store_sync(ctx), 0);
    int left = (me + np - 1) % np;
    uint64_t got;
    memcpy(&got, seg + AREA_OFF + (uint64_t)left * AREA_LEN, 8);
    CHECK(got == 0xabc000u + (uint64_t)left);
    CHECK_EQ(rq_store_sync(ctx, 8), 0); /* that store is counted too */
    CHECK_EQ(rq_barrier(ctx), 0);
}

struct shape { size_t elem, count, rstride, lstride; };

static void test_strided(unsigned char *buf, unsigned char *ref)
{
    const size_t m = rq_medium_max(ctx);
    const struct shape shapes[] = {
        {8, 1000, 16, 8}, {8, 1000, 8, 24}, {3, 5000, 7, 3}, {1, 1, 1, 1},
        {m + 100, 3, m + 300, m + 100}, {64, 700, 200, 64}, {5, 4000, 5, 9},
    };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const struct shape *s = &shapes[k];
        size_t lspan = (s->count - 1) * s->lstride + s->elem;
        size_t rspan = (s->count - 1) * s->rstride + s->elem;
        CHECK(rspan <= AREA_LEN && lspan <= AREA_LEN);
        int p = (me + 1) % np;
        uint64_t off = AREA_OFF + (uint64_t)me * AREA_LEN;
        for (size_t i = 0; i < lspan; i++)
            buf[i] = pattern_byte(me, 50 + k, i);
        /* Clear the target area with a put, then scatter. */
        memset(ref, 0, rspan);
        CHECK_EQ(rq_put(ctx, p, off, ref, rspan, 0), 0);
        CHECK_EQ(rq_sync(ctx), 0);
        CHECK_EQ(rq_put_strided(ctx, p, off, s->rstride, buf, s->lstride, s->elem, s->count, 0), 0);
        CHECK_EQ(rq_sync(ctx), 0);
        for (size_t b = 0; b < s->count; b++)
            memcpy(ref + b * s->rstride, buf + b * s->lstride, s->elem);
        unsigned char *back = buf + AREA_LEN;
        CHECK_EQ(rq_get(ctx, back, p, off, rspan, 0), 0);
        CHECK_EQ(rq_sync(ctx), 0);
        for (size_t i = 0; i < rspan; i++)
            if (back[i] != ref[i]) {
                fprintf(stderr, "rank %d: put_strided shape %zu: byte %zu wrong\n", me, k, i);
                exit(1);
            }
        /* Gather it back with the strides swapped: buf's layout again. */
        memset(back, 0, lspan);
        CHECK_EQ(rq_get_strided(ctx, back, s->lstride, p, off, s->rstride, s->elem, s->count, 0), 0);
        CHECK_EQ(rq_sync(ctx), 0);
        for (size_t b = 0; b < s->count; b++)
            CHECK(memcmp(back + b * s->lstride, buf + b * s->lstride, s->elem) == 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
}

static void test_errors(void)
{
    char b[16] = {0};
    uint64_t old;
    const uint64_t S = seg_len;
    CHECK_EQ(rq_put(ctx, np, 0, b, 8, 0), RQ_EINVAL);
    CHECK_EQ(rq_put(ctx, -1, 0, b, 8, 0), RQ_EINVAL);
    CHECK_EQ(rq_put(ctx, 0, 0, NULL, 8, 0), RQ_EINVAL);
    CHECK_EQ(rq_put(ctx, 0, 0, b, 8, 0x80), RQ_EINVAL);
    CHECK_EQ(rq_put(ctx, 0, S - 7, b, 8, 0), RQ_ERANGE);
    CHECK_EQ(rq_put(ctx, 0, S - 8, b, 8, 0), 0);
    CHECK_EQ(rq_put(ctx, 0, UINT64_MAX - 3, b, 8, 0), RQ_ERANGE);
    CHECK_EQ(rq_put(ctx, 0, S + 1, b, 0, 0), RQ_ERANGE);
    CHECK_EQ(rq_put(ctx, 0, S, NULL, 0, 0), 0);
    CHECK_EQ(rq_get(ctx, b, (me + 1) % np, S, 1, 0), RQ_ERANGE);
    CHECK_EQ(rq_get(ctx, NULL, 0, 0, 1, 0), RQ_EINVAL);
    CHECK_EQ(rq_store(ctx, 0, S, b, 1, 0), RQ_ERANGE);
    CHECK_EQ(rq_read(ctx, b, 0, S - 4, 8), RQ_ERANGE);
    CHECK_EQ(rq_write(ctx, 0, S - 4, b, 8), RQ_ERANGE);
    CHECK_EQ(rq_write(ctx, 5000, 0, b, 8), RQ_EINVAL);
    /* strided: overlapping written blocks, out-of-range last block,
     * overflowing spans */
    CHECK_EQ(rq_put_strided(ctx, 0, 0, 4, b, 8, 8, 2, 0), RQ_EINVAL);
    CHECK_EQ(rq_get_strided(ctx, b, 4, 0, 0, 8, 8, 2, 0), RQ_EINVAL);
    CHECK_EQ(rq_put_strided(ctx, 0, 0, S / 2, b, 1, 1, 3, 0), RQ_ERANGE);
    CHECK_EQ(rq_put_strided(ctx, 0, 0, SIZE_MAX / 2, b, 1, 1, 3, 0), RQ_ERANGE);
    CHECK_EQ(rq_get_strided(ctx, b, 1, 0, 0, 1, SIZE_MAX / 2, 3, 0), RQ_EINVAL);
    CHECK_EQ(rq_put_strided(ctx, 0, 0, 8, b, 8, 8, 0, 0), 0);
    /* reading the same source block repeatedly is allowed */
    CHECK_EQ(rq_get_strided(ctx, b, 4, (me + 1) % np, 0, 0, 4, 2, 0), 0);
    /* AMOs: alignment, range, op */
    CHECK_EQ(rq_amo(ctx, 0, 4, RQ_AMO_FADD, 1, 0, &old), RQ_EINVAL);
    CHECK_EQ(rq_amo(ctx, 0, S, RQ_AMO_FADD, 1, 0, &old), RQ_ERANGE);
    CHECK_EQ(rq_amo(ctx, 0, 0, 0, 1, 0, &old), RQ_EINVAL);
    CHECK_EQ(rq_amo(ctx, 0, 0, RQ_AMO_FXOR + 1, 1, 0, &old), RQ_EINVAL);
    CHECK_EQ(rq_amo(ctx, np, 0, RQ_AMO_FADD, 1, 0, &old), RQ_EINVAL);
    CHECK_EQ(rq_store_sync(ctx, UINT64_MAX), RQ_EINVAL);
    CHECK_EQ(rq_sync(NULL), RQ_EINVAL);
    CHECK_EQ(rq_store_sync(NULL, 0), RQ_EINVAL);
    CHECK_EQ(rq_all_store_sync(NULL), RQ_EINVAL);
    CHECK_EQ(rq_sync(ctx), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
}

int main(int argc, char **argv)
{
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    me = rq_rank(ctx);
    np = rq_size(ctx);
    void *base;
    CHECK_EQ(rq_segment(ctx, &base, &seg_len), 0);
    seg = base;
    CHECK(seg_len >= AREA_OFF + (uint64_t)np * AREA_LEN);
    for (uint64_t i = 0; i < PATTERN_LEN; i++)
        seg[PATTERN_OFF + i] = (char)pat(me, i);
    unsigned char *buf = malloc(2 * AREA_LEN), *ref = malloc(AREA_LEN);
    CHECK(buf != NULL && ref != NULL);
    CHECK_EQ(rq_barrier(ctx), 0);
    test_get(buf);
    test_put(buf);
    test_store(buf);
    test_strided(buf, ref);
    test_errors();
    rq_stats_t st;
    CHECK_EQ(rq_stats(ctx, &st), 0);
    CHECK_EQ(st.rejected, 0);
    free(buf);
    free(ref);
    if (me == 0)
        printf("gas_ops: %d ranks ok\n", np);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
