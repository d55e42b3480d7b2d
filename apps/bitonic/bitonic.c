/* bitonic - the Split-C bitonic sort (Split-C NP paper, Table 2) on librq.
 * 32-bit keys, n per rank (keys.h), a power-of-two number of ranks.  Each
 * rank sorts its block (local radix sort), then the blocks are merged
 * along the bitonic network: at stage k (blocks of 2^k ranks) and step j
 * the rank pairs with me ^ 2^j, both see both blocks and one keeps the n
 * smallest keys, the other the n largest (merge-split).  How a rank sees
 * its partner's block (--variant, or RQAPP_VARIANT):
 *
 *   get    one bulk split-phase rq_get of the partner's block, rq_sync:
 *          the Split-C bitonic (default)
 *   store  each rank stores its block into the partner's inbox (one
 *          rq_store) and waits for the partner's n keys (rq_store_sync)
 *
 * A barrier ends every step: the block a partner reads (or the inbox it
 * fills) is not rewritten until it is done.  The blocks live in the
 * segment; RQ_GAS_STRATEGY (direct, np, proc) decides who moves the data.
 *
 * Usage: bitonic [--variant V] [--reps R] <keys per rank> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "fail.h"
#include "keys.h"
#include "placement.h"

enum { V_GET, V_STORE, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"get", "store"};

static struct {
    rq_ctx_t      *ctx;
    int            me, np, variant;
    struct rx_args a;
    uint32_t      *blk[2], *inbox;  /* segment: the block, double-buffered; the inbox */
    uint64_t       off[2], inbox_off;
    uint32_t      *theirs;          /* get: the partner's block */
    uint64_t      *sum, *sum_all;
} G;

/* The whole sort of blk[0]; returns which buffer holds the result. */
static int sort_once(int *cur_out)
{
    const uint64_t n = G.a.n, bytes = n * sizeof(uint32_t);
    int cur = 0, rc = 0;
    rx_local_sort(G.blk[0], G.blk[1], n);
    if (G.variant == V_GET && G.np > 1)
        rc = rq_barrier(G.ctx); /* the partner reads a sorted block */
    for (int k = 1; (1 << k) <= G.np && rc == 0; k++)
        for (int j = k - 1; j >= 0 && rc == 0; j--) {
            const int partner = G.me ^ (1 << j);
            const int up = ((G.me >> k) & 1) == 0, keep_low = (G.me < partner) == up;
            const uint32_t *other = G.theirs;
            if (G.variant == V_GET) {
                rc = rq_get(G.ctx, G.theirs, partner, G.off[cur], bytes, 0);
                if (rc == 0)
                    rc = rq_sync(G.ctx);
            } else {
                rc = rq_store(G.ctx, partner, G.inbox_off, G.blk[cur], bytes, 0);
                if (rc == 0)
                    rc = rq_store_sync(G.ctx, bytes);
                other = G.inbox;
            }
            if (rc != 0)
                break;
            rx_merge_split(G.blk[cur], other, n, keep_low, G.blk[cur ^ 1]);
            cur ^= 1;
            rc = rq_barrier(G.ctx);
        }
    *cur_out = cur;
    return rc;
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, "bitonic: rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx);
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, "get");
    char err[200];
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    if (rx_parse(argc, argv, &G.a, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    const uint64_t n = G.a.n, bytes = (n * sizeof(uint32_t) + 63) / 64 * 64;
    void *seg;
    size_t seg_bytes;
    rq_segment(G.ctx, &seg, &seg_bytes);
    if (3 * bytes > seg_bytes) {
        snprintf(err, sizeof err, "ERROR: the blocks live in the segment: set "
                 "RQ_SEGMENT_SIZE >= %llu", (unsigned long long)(3 * bytes));
        return rqa_fail(G.ctx, err);
    }
    if ((G.np & (G.np - 1)) != 0) {
        snprintf(err, sizeof err, "ERROR: the number of ranks must be a power of two: %d", G.np);
        return rqa_fail(G.ctx, err);
    }
    for (int b = 0; b < 2; b++) {
        G.off[b] = (uint64_t)b * bytes;
        G.blk[b] = (uint32_t *)((char *)seg + G.off[b]);
    }
    G.inbox_off = 2 * bytes;
    G.inbox = (uint32_t *)((char *)seg + G.inbox_off);
    G.theirs = malloc(n * sizeof *G.theirs);
    G.sum = malloc(2 * RX_SUMMARY_LEN(G.np) * sizeof *G.sum);
    double *times = malloc((size_t)G.a.reps * sizeof *times);
    if (G.theirs == NULL || G.sum == NULL || times == NULL)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    G.sum_all = G.sum + RX_SUMMARY_LEN(G.np);
    if (G.me == 0) {
        printf("Split-C bitonic sort\n");
        printf("Number of ranks      = %d\n", G.np);
        printf("Keys per rank        = %llu\n", (unsigned long long)n);
        printf("Variant              = %s\n", variant_names[G.variant]);
        printf("Strategy             = %s\n", rqa_gas_strategy());
        rqa_placement_print(line_ns);
    }
    int rc = 0, ok = 1;
    for (int rep = 0; rep < G.a.reps && rc == 0; rep++) {
        rx_fill(G.blk[0], n, G.me);
        uint64_t fp_in[3], fp_in_all[3];
        rx_fingerprint(G.blk[0], n, fp_in);
        rc = rq_allreduce(G.ctx, fp_in, fp_in_all, 3, RQ_UINT64, RQ_SUM);
        if (rc == 0)
            rc = rq_barrier(G.ctx);
        const double t0 = rqa_now();
        int cur = 0;
        if (rc == 0)
            rc = sort_once(&cur);
        double mine = rqa_now() - t0;
        if (rc == 0)
            rc = rq_allreduce(G.ctx, &mine, &times[rep], 1, RQ_DOUBLE, RQ_MAX);
        if (rc == 0) {
            rx_summary(G.blk[cur], n, G.me, G.np, G.sum);
            rc = rq_allreduce(G.ctx, G.sum, G.sum_all, RX_SUMMARY_LEN(G.np), RQ_UINT64, RQ_SUM);
        }
        ok &= rc == 0 && rx_summary_ok(G.sum_all, fp_in_all, G.np);
    }
    int failed = rc != 0 || !ok;
    if (G.me == 0) {
        if (rc != 0)
            printf("ERROR: communication failed: %s\n", rq_strerror(rc));
        else
            failed = rx_result("bitonic", ok, G.np, &G.a, rqa_median(times, G.a.reps));
    }
    free(G.theirs);
    free(G.sum);
    free(times);
    fflush(stdout);
    if (rq_finalize(G.ctx) != 0)
        failed = 1;
    return failed;
}
