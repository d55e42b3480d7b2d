/* radix / radixb - the Split-C radix sort (Split-C NP paper, Table 2) on
 * librq.  32-bit keys, n per rank, 4 passes of 8-bit digits (LSD).  Each
 * pass: a digit histogram, every rank's histogram to every rank
 * (rq_allreduce), which gives each key its global position g (rank g / n,
 * slot g % n); then the keys move (--variant, or RQAPP_VARIANT):
 *
 *   store  one signaling store (rq_store, 4 bytes) per key into the
 *          destination's array, then rq_all_store_sync: the Split-C radix
 *   bulk   the keys counting-sorted locally, then one rq_store per run of
 *          a bucket that lands on one rank: the Split-C radixb; the default
 *          (the fastest: 6-8x store at 2-3 ranks, docs/apps.md)
 *   am     one active message per key; the handler writes it in place and
 *          counts it (every rank receives exactly n keys)
 *
 * RQ_GAS_STRATEGY (direct, np, proc) decides who moves the stores'
 * data; the program is the same.  Arrays live in the segment.
 *
 * Usage: radix [--variant V] [--reps R] <keys per rank> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "keys.h"
#include "fail.h"
#include "placement.h"

#ifndef RX_DEFAULT_VARIANT
#define RX_DEFAULT_VARIANT "bulk"
#define RX_PROGRAM "radix"
#endif

enum { V_STORE, V_BULK, V_AM, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"store", "bulk", "am"};
enum { H_KEY = 1 };

static struct {
    rq_ctx_t      *ctx;
    int            me, np, variant;
    struct rx_args a;
    uint32_t      *arr[2];          /* the two key arrays (segment) */
    uint64_t       off[2];          /* their offsets in every segment */
    uint32_t      *tmp;             /* bulk: this pass's keys by digit */
    uint64_t      *hist, *all;      /* np x RX_BUCKETS: mine, everyone's */
    uint64_t      *sum, *sum_all;   /* the check (rx_summary) */
    int            dst;             /* am: the array keys land in this pass */
    volatile uint64_t got;          /* am: keys landed here this pass */
    uint64_t       bad;
} G;

static void on_key(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    if (m->nargs != 2 || m->args[0] >= G.a.n || m->args[1] > UINT32_MAX) {
        G.bad++;
        return;
    }
    G.arr[G.dst][m->args[0]] = (uint32_t)m->args[1];
    G.got = G.got + 1;
}

/* Put key at global position g of array `to`. */
static int place(uint64_t g, uint32_t key, int to)
{
    const int r = (int)(g / G.a.n);
    const uint64_t slot = g % G.a.n;
    if (r == G.me) {
        G.arr[to][slot] = key;
        if (G.variant == V_AM)
            G.got = G.got + 1;
        return 0;
    }
    if (G.variant == V_AM) {
        uint64_t args[2] = {slot, key};
        return rq_request(G.ctx, r, H_KEY, args, 2, NULL, 0, 0);
    }
    return rq_store(G.ctx, r, G.off[to] + slot * sizeof(uint32_t), &key, sizeof key, 0);
}

/* One pass: digit d from array `from` into array `to`. */
static int pass(int d, int from, int to)
{
    const uint64_t n = G.a.n;
    const uint32_t *src = G.arr[from];
    uint64_t *h = G.hist + (size_t)G.me * RX_BUCKETS, base[RX_BUCKETS];
    memset(G.hist, 0, (size_t)G.np * RX_BUCKETS * sizeof *G.hist);
    rx_histogram(src, n, d, h);
    int rc = rq_allreduce(G.ctx, G.hist, G.all, (size_t)G.np * RX_BUCKETS, RQ_UINT64, RQ_SUM);
    if (rc != 0)
        return rc;
    /* base[b]: keys of smaller digits anywhere, plus digit b on lower ranks. */
    uint64_t below = 0;
    for (unsigned b = 0; b < RX_BUCKETS; b++) {
        base[b] = below;
        for (int r = 0; r < G.np; r++) {
            if (r < G.me)
                base[b] += G.all[(size_t)r * RX_BUCKETS + b];
            below += G.all[(size_t)r * RX_BUCKETS + b];
        }
    }
    if (G.variant == V_AM) {
        G.dst = to;
        G.got = 0;
        rc = rq_barrier(G.ctx); /* everyone's `dst` is set before keys fly */
    }
    if (G.variant != V_BULK) {
        for (uint64_t i = 0; i < n && rc == 0; i++)
            rc = place(base[rx_digit(src[i], d)]++, src[i], to);
    } else {
        /* Stable local counting sort, then one store per run that stays
         * on one rank. */
        uint64_t at[RX_BUCKETS], s = 0;
        for (unsigned b = 0; b < RX_BUCKETS; b++) {
            at[b] = s;
            s += h[b];
        }
        for (uint64_t i = 0; i < n; i++)
            G.tmp[at[rx_digit(src[i], d)]++] = src[i];
        uint64_t k = 0;
        for (unsigned b = 0; b < RX_BUCKETS && rc == 0; b++) {
            uint64_t g = base[b], left = h[b];
            while (left > 0 && rc == 0) {
                const int r = (int)(g / n);
                const uint64_t slot = g % n, run = left < n - slot ? left : n - slot;
                if (r == G.me)
                    memcpy(&G.arr[to][slot], &G.tmp[k], run * sizeof(uint32_t));
                else
                    rc = rq_store(G.ctx, r, G.off[to] + slot * sizeof(uint32_t), &G.tmp[k],
                                  run * sizeof(uint32_t), 0);
                g += run, k += run, left -= run;
            }
        }
    }
    if (rc != 0)
        return rc;
    if (G.variant == V_AM) {
        rc = rq_wait_until(G.ctx, &G.got, n); /* every rank ends with n keys */
        return rc != 0 ? rc : rq_barrier(G.ctx);
    }
    return rq_all_store_sync(G.ctx);
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, RX_PROGRAM ": rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx);
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, RX_DEFAULT_VARIANT);
    char err[200];
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    if (rx_parse(argc, argv, &G.a, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    void *seg;
    size_t seg_bytes;
    rq_segment(G.ctx, &seg, &seg_bytes);
    const uint64_t bytes = (G.a.n * sizeof(uint32_t) + 63) / 64 * 64;
    if (2 * bytes > seg_bytes) {
        snprintf(err, sizeof err, "ERROR: the key arrays live in the segment: set "
                 "RQ_SEGMENT_SIZE >= %llu", (unsigned long long)(2 * bytes));
        return rqa_fail(G.ctx, err);
    }
    G.off[0] = 0;
    G.off[1] = bytes;
    G.arr[0] = seg;
    G.arr[1] = (uint32_t *)((char *)seg + bytes);
    G.tmp = malloc(G.a.n * sizeof(uint32_t));
    G.hist = malloc((size_t)G.np * RX_BUCKETS * sizeof *G.hist);
    G.all = malloc((size_t)G.np * RX_BUCKETS * sizeof *G.all);
    G.sum = malloc(2 * RX_SUMMARY_LEN(G.np) * sizeof *G.sum);
    G.sum_all = G.sum + RX_SUMMARY_LEN(G.np);
    double *times = malloc((size_t)G.a.reps * sizeof *times);
    if (G.tmp == NULL || G.hist == NULL || G.all == NULL || G.sum == NULL || times == NULL)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    rq_handler_register(G.ctx, H_KEY, on_key, NULL, 0);
    if (G.me == 0) {
        printf("Split-C radix sort (" RX_PROGRAM ")\n");
        printf("Number of ranks      = %d\n", G.np);
        printf("Keys per rank        = %llu\n", (unsigned long long)G.a.n);
        printf("Variant              = %s\n", variant_names[G.variant]);
        printf("Strategy             = %s\n", rqa_gas_strategy());
        rqa_placement_print(line_ns);
    }
    int rc = 0, ok = 1;
    for (int rep = 0; rep < G.a.reps && rc == 0; rep++) {
        rx_fill(G.arr[0], G.a.n, G.me);
        uint64_t fp_in[3], fp_in_all[3];
        rx_fingerprint(G.arr[0], G.a.n, fp_in);
        rc = rq_allreduce(G.ctx, fp_in, fp_in_all, 3, RQ_UINT64, RQ_SUM);
        if (rc == 0)
            rc = rq_barrier(G.ctx);
        double t0 = rqa_now();
        for (int d = 0; d < RX_PASSES && rc == 0; d++)
            rc = pass(d, d & 1, (d & 1) ^ 1);
        double mine = rqa_now() - t0;
        if (rc == 0)
            rc = rq_allreduce(G.ctx, &mine, &times[rep], 1, RQ_DOUBLE, RQ_MAX);
        /* Sorted here, the ranks in order, and the same multiset. */
        if (rc == 0) {
            rx_summary(G.arr[RX_PASSES & 1], G.a.n, G.me, G.np, G.sum);
            rc = rq_allreduce(G.ctx, G.sum, G.sum_all, RX_SUMMARY_LEN(G.np), RQ_UINT64, RQ_SUM);
        }
        ok &= rc == 0 && rx_summary_ok(G.sum_all, fp_in_all, G.np);
    }
    int failed = rqa_run_failed(G.ctx, rc, G.bad);
    if (G.me == 0 && !failed)
        failed = rx_result(RX_PROGRAM, ok, G.np, &G.a, rqa_median(times, G.a.reps));
    failed |= !ok;
    free(G.tmp);
    free(G.hist);
    free(G.all);
    free(G.sum);
    free(times);
    fflush(stdout);
    if (rq_finalize(G.ctx) != 0)
        failed = 1;
    return failed;
}
