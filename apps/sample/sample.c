/* sample / sampleb - the Split-C sample sort (Split-C NP paper, Table 2) on
 * librq.  32-bit keys, n per rank (the radix programs' keys, keys.h).
 * Each rank draws SX_OVERSAMPLE keys; every rank gets every sample
 * (rq_allreduce) and takes the same np-1 splitters; each key goes to the
 * rank of its splitter interval; every rank learns how many keys each rank
 * sends each rank (rq_allreduce of the count matrix), so a sender knows
 * where its keys land; the keys move (--variant, or RQAPP_VARIANT):
 *
 *   store  one signaling store (rq_store, 4 bytes) per key; the receiver
 *          waits for exactly its bytes (rq_store_sync): the Split-C sample
 *   bulk   keys grouped by destination, one rq_store per destination:
 *          the Split-C sampleb; the default (the fastest)
 *   am     one active message per key, appended by the handler at the
 *          receiver (the paper's "atomic remote push")
 *
 * then each rank sorts what it received (local radix sort).  The receive
 * array lives in the segment; RQ_GAS_STRATEGY (direct, np, proc) decides
 * who moves the stores' data.
 *
 * Usage: sample [--variant V] [--reps R] <keys per rank> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "fail.h"
#include "keys.h"
#include "placement.h"

#ifndef SX_DEFAULT_VARIANT
#define SX_DEFAULT_VARIANT "bulk"
#define SX_PROGRAM "sample"
#endif
#define SX_OVERSAMPLE 64u

enum { V_STORE, V_BULK, V_AM, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"store", "bulk", "am"};
enum { H_KEY = 1 };

static struct {
    rq_ctx_t      *ctx;
    int            me, np, variant;
    struct rx_args a;
    uint64_t       cap;             /* keys the receive array holds */
    uint32_t      *recv;            /* the receive array (segment) */
    uint32_t      *keys, *tmp;      /* my input; scratch (cap keys) */
    uint32_t      *split;           /* np-1 splitters */
    uint64_t      *samp, *samp_all; /* np x SX_OVERSAMPLE */
    uint64_t      *cnt, *cnt_all;   /* np x np: [from][to] */
    uint64_t      *at;              /* np: where my next key lands at each rank */
    uint64_t      *sum, *sum_all;   /* the check (rx_summary) */
    volatile uint64_t got;          /* am: keys appended here */
    uint64_t       bad;
} G;

static void on_key(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    if (m->nargs != 1 || m->args[0] > UINT32_MAX || G.got >= G.cap) {
        G.bad++;
        return;
    }
    G.recv[G.got] = (uint32_t)m->args[0];
    G.got = G.got + 1;
}

/* One sort; *out: how many keys this rank ends with (sorted in recv). */
static int sort_once(uint64_t rep, uint64_t *out)
{
    const uint64_t n = G.a.n;
    const int np = G.np, me = G.me;
    /* Samples and splitters. */
    uint64_t s = 0x5a3b1e00ull + rep * 0x10000ull + (uint64_t)me;
    memset(G.samp, 0, (size_t)np * SX_OVERSAMPLE * sizeof *G.samp);
    for (unsigned i = 0; i < SX_OVERSAMPLE; i++)
        G.samp[(size_t)me * SX_OVERSAMPLE + i] = G.keys[rqa_splitmix(&s) % n];
    int rc = rq_allreduce(G.ctx, G.samp, G.samp_all, (size_t)np * SX_OVERSAMPLE, RQ_UINT64, RQ_SUM);
    if (rc != 0)
        return rc;
    uint32_t *sv = G.tmp; /* np * SX_OVERSAMPLE <= cap: see main */
    for (size_t i = 0; i < (size_t)np * SX_OVERSAMPLE; i++)
        sv[i] = (uint32_t)G.samp_all[i];
    rx_splitters(sv, np, SX_OVERSAMPLE, G.split);
    /* Counts: mine in my row; everyone's by the sum. */
    uint64_t *mine = G.cnt + (size_t)me * np;
    memset(G.cnt, 0, (size_t)np * np * sizeof *G.cnt);
    for (uint64_t i = 0; i < n; i++)
        mine[rx_bucket(G.keys[i], G.split, np)]++;
    rc = rq_allreduce(G.ctx, G.cnt, G.cnt_all, (size_t)np * np, RQ_UINT64, RQ_SUM);
    if (rc != 0)
        return rc;
    uint64_t total = 0, most = 0;
    for (int d = 0; d < np; d++) {
        uint64_t t = 0;
        for (int r = 0; r < np; r++) {
            if (r == me)
                G.at[d] = t;
            t += G.cnt_all[(size_t)r * np + d];
        }
        most = t > most ? t : most;
        if (d == me)
            total = t;
    }
    if (most > G.cap)
        return RQ_ERANGE; /* every rank sees it: reported by rank 0 */
    const uint64_t from_others = total - G.cnt_all[(size_t)me * np + me];
    if (G.variant == V_STORE || G.variant == V_AM) {
        for (uint64_t i = 0; i < n && rc == 0; i++) {
            const uint32_t key = G.keys[i];
            const int d = rx_bucket(key, G.split, np);
            if (d == me && G.variant == V_AM) {
                G.recv[G.got] = key; /* appended like the others' (handlers run here) */
                G.got = G.got + 1;
                continue;
            }
            if (d == me) {
                G.recv[G.at[d]++] = key;
                continue;
            }
            if (G.variant == V_STORE) {
                rc = rq_store(G.ctx, d, G.at[d]++ * sizeof(uint32_t), &key, sizeof key, 0);
            } else {
                const uint64_t arg = key;
                rc = rq_request(G.ctx, d, H_KEY, &arg, 1, NULL, 0, 0);
            }
        }
    } else {
        /* Group by destination (stable), then one store per destination. */
        uint64_t *pos = G.cnt; /* my row is no longer needed */
        uint64_t p = 0;
        for (int d = 0; d < np; d++) {
            const uint64_t c = mine[d];
            pos[d] = p;
            p += c;
        }
        for (uint64_t i = 0; i < n; i++) {
            const int d = rx_bucket(G.keys[i], G.split, np);
            G.tmp[pos[d]++] = G.keys[i];
        }
        for (int i = 0; i < np && rc == 0; i++) {
            const int d = (me + i) % np;
            const uint64_t c = G.cnt_all[(size_t)me * np + d], first = pos[d] - c;
            if (d == me)
                memcpy(&G.recv[G.at[d]], &G.tmp[first], c * sizeof(uint32_t));
            else
                rc = rq_store(G.ctx, d, G.at[d] * sizeof(uint32_t), &G.tmp[first],
                              c * sizeof(uint32_t), 0);
        }
    }
    if (rc != 0)
        return rc;
    if (G.variant == V_AM) {
        rc = rq_wait_until(G.ctx, &G.got, total);
    } else {
        rc = rq_store_sync(G.ctx, from_others * sizeof(uint32_t));
    }
    if (rc != 0)
        return rc;
    rx_local_sort(G.recv, G.tmp, total);
    *out = total;
    return 0;
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, SX_PROGRAM ": rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx);
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, SX_DEFAULT_VARIANT);
    char err[200];
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    if (rx_parse(argc, argv, &G.a, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    const uint64_t n = G.a.n, np = (uint64_t)G.np;
    /* Room for an unlucky split: 3n + 4096, never more than all keys;
     * at least the samples (they pass through tmp). */
    G.cap = 3 * n + 4096 < np * n ? 3 * n + 4096 : np * n;
    if (G.cap < np * SX_OVERSAMPLE)
        G.cap = np * SX_OVERSAMPLE;
    void *seg;
    size_t seg_bytes;
    rq_segment(G.ctx, &seg, &seg_bytes);
    if (G.cap * sizeof(uint32_t) > seg_bytes) {
        snprintf(err, sizeof err, "ERROR: the receive array lives in the segment: set "
                 "RQ_SEGMENT_SIZE >= %llu", (unsigned long long)(G.cap * sizeof(uint32_t)));
        return rqa_fail(G.ctx, err);
    }
    G.recv = seg;
    G.keys = malloc(n * sizeof *G.keys);
    G.tmp = malloc(G.cap * sizeof *G.tmp);
    G.split = malloc(np * sizeof *G.split);
    G.samp = malloc(2 * np * SX_OVERSAMPLE * sizeof *G.samp);
    G.cnt = malloc((2 * np * np + np) * sizeof *G.cnt);
    G.sum = malloc(2 * RX_SUMMARY_LEN(G.np) * sizeof *G.sum);
    double *times = malloc((size_t)G.a.reps * sizeof *times);
    if (!G.keys || !G.tmp || !G.split || !G.samp || !G.cnt || !G.sum || !times)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    G.samp_all = G.samp + np * SX_OVERSAMPLE;
    G.cnt_all = G.cnt + np * np;
    G.at = G.cnt_all + np * np;
    G.sum_all = G.sum + RX_SUMMARY_LEN(G.np);
    rq_handler_register(G.ctx, H_KEY, on_key, NULL, 0);
    if (G.me == 0) {
        printf("Split-C sample sort (" SX_PROGRAM ")\n");
        printf("Number of ranks      = %d\n", G.np);
        printf("Keys per rank        = %llu\n", (unsigned long long)n);
        printf("Samples per rank     = %u\n", SX_OVERSAMPLE);
        printf("Variant              = %s\n", variant_names[G.variant]);
        printf("Strategy             = %s\n", rqa_gas_strategy());
        rqa_placement_print(line_ns);
    }
    int rc = 0, ok = 1;
    for (int rep = 0; rep < G.a.reps && rc == 0; rep++) {
        rx_fill(G.keys, n, G.me);
        uint64_t fp_in[3], fp_in_all[3], total = 0;
        rx_fingerprint(G.keys, n, fp_in);
        rc = rq_allreduce(G.ctx, fp_in, fp_in_all, 3, RQ_UINT64, RQ_SUM);
        /* The previous sort is checked everywhere before new keys land. */
        G.got = 0;
        if (rc == 0)
            rc = rq_barrier(G.ctx);
        const double t0 = rqa_now();
        if (rc == 0)
            rc = sort_once((uint64_t)rep, &total);
        double mine = rqa_now() - t0;
        if (rc == 0)
            rc = rq_allreduce(G.ctx, &mine, &times[rep], 1, RQ_DOUBLE, RQ_MAX);
        if (rc == 0) {
            rx_summary(G.recv, total, G.me, G.np, G.sum);
            rc = rq_allreduce(G.ctx, G.sum, G.sum_all, RX_SUMMARY_LEN(G.np), RQ_UINT64, RQ_SUM);
        }
        ok &= rc == 0 && rx_summary_ok(G.sum_all, fp_in_all, G.np);
    }
    if (rc == RQ_ERANGE && G.me == 0)
        printf("ERROR: a rank would receive more than %llu keys (unlucky splitters)\n",
               (unsigned long long)G.cap);
    int failed = rc == RQ_ERANGE || rqa_run_failed(G.ctx, rc, G.bad);
    if (G.me == 0 && !failed)
        failed = rx_result(SX_PROGRAM, ok, G.np, &G.a, rqa_median(times, G.a.reps));
    failed |= !ok;
    free(G.keys);
    free(G.tmp);
    free(G.split);
    free(G.samp);
    free(G.cnt);
    free(G.sum);
    free(times);
    fflush(stdout);
    if (rq_finalize(G.ctx) != 0)
        failed = 1;
    return failed;
}
