/* gas_histogram - Split-C style global-address programming: every rank
 * counts values into a histogram distributed over all ranks (bin b lives
 * on rank b % n) with remote fetch-adds, then stores its share of a
 * result vector into rank 0, which waits for exactly those bytes with
 * rq_store_sync.  Works under every RQ_GAS_STRATEGY:
 *   rqrun -n 4 ./gas_histogram
 *   RQ_GAS_STRATEGY=proc rqrun -n 4 ./gas_histogram */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rq.h>

enum { BINS = 64, SAMPLES = 10000 };

#define BIN_OFF(b, n) (8ull * (uint64_t)((b) / (n)))  /* bin b on rank b % n */
#define RESULT_OFF    4096ull                          /* rank 0: one word per rank */

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    int rc = rq_init(&argc, &argv, &ctx);
    if (rc != 0) {
        fprintf(stderr, "rq_init: %s\n", rq_strerror(rc));
        return 1;
    }
    const int me = rq_rank(ctx), n = rq_size(ctx);
    uint64_t *seg;
    size_t seg_len;
    rq_segment(ctx, (void **)&seg, &seg_len);
    rq_barrier(ctx);

    /* Count: one remote atomic per sample (its own rank's bins included). */
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1), local_sum = 0;
    for (int i = 0; i < SAMPLES; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int b = (int)(x % BINS);
        rc = rq_amo(ctx, b % n, BIN_OFF(b, n), RQ_AMO_FADD, 1, 0, NULL);
        if (rc != 0) {
            fprintf(stderr, "rank %d: rq_amo: %s\n", me, rq_strerror(rc));
            return 1;
        }
    }
    rq_barrier(ctx); /* every count landed (AMOs complete at return) */

    /* Each rank sums the bins it holds and stores the sum into rank 0. */
    for (int b = me; b < BINS; b += n)
        local_sum += seg[BIN_OFF(b, n) / 8];
    rq_store(ctx, 0, RESULT_OFF + 8u * (uint64_t)me, &local_sum, 8, 0);
    if (me == 0) {
        rq_store_sync(ctx, 8u * (uint64_t)n); /* one word from every rank */
        uint64_t total = 0;
        for (int r = 0; r < n; r++)
            total += seg[RESULT_OFF / 8 + (uint64_t)r];
        printf("gas_histogram: %d ranks counted %llu samples (expected %llu): %s\n", n,
               (unsigned long long)total, (unsigned long long)n * SAMPLES,
               total == (uint64_t)n * SAMPLES ? "ok" : "WRONG");
        if (total != (uint64_t)n * SAMPLES)
            return 1;
    }
    rq_sync(ctx);
    return rq_finalize(ctx) == 0 ? 0 : 1;
}
