/* gas_amo - linearizability of rq_amo under contention from every rank
 * (rank 0's words are the targets, rank 0 hammers them too).
 *   fetch-add  K increments per rank: the returned values are exactly
 *              {0 .. n*K-1}, each once, and the final value is n*K;
 *   cswap      an increment built from a read and a compare-swap retried
 *              until it succeeds: the values each successful swap found
 *              are again exactly {0 .. n*K-1};
 *   swap       every value swapped in comes out exactly once (as a
 *              returned old value or as the final value);
 *   or/and/xor per-rank bits set, toggled and cleared.
 * Returned values are gathered into rank 0's segment with rq_put. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rq.h"

#define W_FADD  0ull
#define W_CSWAP 8ull
#define W_SWAP  16ull
#define W_BITS  24ull
#define W_XOR   32ull
#define GATHER  (1ull << 20)

static rq_ctx_t *ctx;
static int me, np;
static char *seg;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Gather every rank's k values into rank 0; returns the sorted n*k there. */
static uint64_t *gather(const uint64_t *mine, int k)
{
    CHECK_EQ(rq_put(ctx, 0, GATHER + (uint64_t)me * (uint64_t)k * 8, mine, (size_t)k * 8, 0), 0);
    CHECK_EQ(rq_sync(ctx), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me != 0)
        return NULL;
    size_t n = (size_t)np * (size_t)k;
    uint64_t *all = malloc(n * 8);
    CHECK(all != NULL);
    memcpy(all, seg + GATHER, n * 8);
    qsort(all, n, 8, cmp_u64);
    return all;
}

static uint64_t word0(uint64_t off)
{
    uint64_t v;
    CHECK_EQ(rq_read(ctx, &v, 0, off, 8), 0);
    return v;
}

int main(int argc, char **argv)
{
    int k = argc > 1 ? atoi(argv[1]) : 2000;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    me = rq_rank(ctx);
    np = rq_size(ctx);
    size_t seg_len;
    void *base;
    CHECK_EQ(rq_segment(ctx, &base, &seg_len), 0);
    seg = base;
    CHECK(GATHER + (uint64_t)np * (uint64_t)k * 8 <= seg_len);
    uint64_t *got = malloc((size_t)k * 8);
    CHECK(got != NULL);
    CHECK_EQ(rq_barrier(ctx), 0);

    /* fetch-add */
    for (int i = 0; i < k; i++)
        CHECK_EQ(rq_amo(ctx, 0, W_FADD, RQ_AMO_FADD, 1, 0, &got[i]), 0);
    uint64_t *all = gather(got, k);
    if (me == 0) {
        for (size_t i = 0; i < (size_t)np * (size_t)k; i++)
            CHECK_EQ(all[i], i);
        CHECK_EQ(word0(W_FADD), (uint64_t)np * (uint64_t)k);
        free(all);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    /* compare-swap increments */
    for (int i = 0; i < k; i++) {
        uint64_t seen = 0, old;
        CHECK_EQ(rq_amo(ctx, 0, W_CSWAP, RQ_AMO_FADD, 0, 0, &seen), 0); /* atomic read */
        for (;;) {
            CHECK_EQ(rq_amo(ctx, 0, W_CSWAP, RQ_AMO_CSWAP, seen + 1, seen, &old), 0);
            if (old == seen)
                break;
            seen = old; /* somebody else won; try from what we found */
        }
        got[i] = seen;
    }
    all = gather(got, k);
    if (me == 0) {
        for (size_t i = 0; i < (size_t)np * (size_t)k; i++)
            CHECK_EQ(all[i], i);
        CHECK_EQ(word0(W_CSWAP), (uint64_t)np * (uint64_t)k);
        free(all);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    /* swap: values 1 + rank*k + i go in; the initial 0 and every value
     * but the final one come out. */
    for (int i = 0; i < k; i++)
        CHECK_EQ(rq_amo(ctx, 0, W_SWAP, RQ_AMO_SWAP, 1 + (uint64_t)me * (uint64_t)k + (uint64_t)i,
                        0, &got[i]), 0);
    all = gather(got, k);
    if (me == 0) {
        size_t n = (size_t)np * (size_t)k;
        uint64_t fin = word0(W_SWAP);
        CHECK_EQ(all[0], 0);
        /* all = {0} + every value except fin: check by merging */
        size_t j = 1;
        for (uint64_t v = 1; v <= n; v++) {
            if (v == fin)
                continue;
            CHECK(j < n && all[j] == v);
            j++;
        }
        CHECK_EQ(j, n);
        free(all);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    /* or / xor / and: bit me of W_BITS set k times (idempotent), bit me of
     * W_XOR toggled k times, then bit me of W_BITS cleared by rank me if
     * me is odd. */
    for (int i = 0; i < k && me < 64; i++) {
        uint64_t o;
        CHECK_EQ(rq_amo(ctx, 0, W_BITS, RQ_AMO_FOR, 1ull << me, 0, &o), 0);
        CHECK(i == 0 || (o & (1ull << me)) != 0);
        CHECK_EQ(rq_amo(ctx, 0, W_XOR, RQ_AMO_FXOR, 1ull << me, 0, NULL), 0);
    }
    if (me < 64 && (me & 1))
        CHECK_EQ(rq_amo(ctx, 0, W_BITS, RQ_AMO_FAND, ~(1ull << me), 0, NULL), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 0) {
        uint64_t bits = 0, x = 0;
        for (int r = 0; r < np && r < 64; r++) {
            if (!(r & 1))
                bits |= 1ull << r;
            if (k & 1)
                x |= 1ull << r;
        }
        CHECK_EQ(word0(W_BITS), bits);
        CHECK_EQ(word0(W_XOR), x);
        printf("gas_amo: %d ranks x %d ok\n", np, k);
    }
    free(got);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
