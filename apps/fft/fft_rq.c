/* fft / fftb - the Split-C FFT (Split-C NP paper, Table 2) on librq: the
 * four-step transform of fft.h, whose remap (step 3) moves every point to
 * the rank that owns its row of the transpose.  The receive area lives in
 * the segment, grouped by source; --variant (or RQAPP_VARIANT):
 *
 *   store  one 16-byte signaling store (rq_store) per point: "FFT using
 *          small transfers"
 *   bulk   the points for one rank packed, one rq_store per rank: "FFT
 *          using bulk transfers"; the default (the fastest)
 *
 * and the receiver waits for exactly its bytes (rq_store_sync).
 * RQ_GAS_STRATEGY (direct, np, proc) decides who moves the data.
 *
 * Usage: fft [--variant V] [--reps R] <log2 points> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "fail.h"
#include "fft.h"
#include "placement.h"

#ifndef FFT_DEFAULT_VARIANT
#define FFT_DEFAULT_VARIANT "bulk"
#define FFT_PROGRAM "fft"
#endif

enum { V_STORE, V_BULK, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"store", "bulk"};

static struct {
    rq_ctx_t       *ctx;
    int             variant;
    struct fft_plan p;
    double complex *rows, *out, *recv, *pack;
    double complex *roots1, *roots2, *tw;
} G;

/* Step 3: my twiddled rows to their owners' receive areas. */
static int remap(void)
{
    const struct fft_plan *p = &G.p;
    const uint64_t lo2 = fft_lo(p, p->N2, p->me), rows2 = fft_lo(p, p->N2, p->me + 1) - lo2;
    int rc = 0;
    for (int i = 0; i < p->np && rc == 0; i++) {
        const int d = (p->me + i) % p->np; /* mine first, then spread */
        const uint64_t lo1 = fft_lo(p, p->N1, d), hi1 = fft_lo(p, p->N1, d + 1);
        const uint64_t first = fft_recv_index(p, p->me, d, lo2, lo1);
        if (d == p->me || G.variant == V_BULK) {
            double complex *to = d == p->me ? G.recv + first : G.pack;
            for (uint64_t k1 = lo1; k1 < hi1; k1++)
                for (uint64_t r = 0; r < rows2; r++)
                    *to++ = G.rows[r * p->N1 + k1];
            if (d != p->me)
                rc = rq_store(G.ctx, d, first * sizeof *G.pack, G.pack,
                              (hi1 - lo1) * rows2 * sizeof *G.pack, 0);
            continue;
        }
        uint64_t at = first * sizeof(double complex);
        for (uint64_t k1 = lo1; k1 < hi1 && rc == 0; k1++)
            for (uint64_t r = 0; r < rows2 && rc == 0; r++, at += sizeof(double complex))
                rc = rq_store(G.ctx, d, at, &G.rows[r * p->N1 + k1], sizeof(double complex), 0);
    }
    if (rc != 0)
        return rc;
    const uint64_t rows1 = fft_lo(p, p->N1, p->me + 1) - fft_lo(p, p->N1, p->me);
    return rq_store_sync(G.ctx, rows1 * (p->N2 - rows2) * sizeof(double complex));
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, FFT_PROGRAM ": rq_init failed\n");
        return 1;
    }
    const int me = rq_rank(G.ctx), np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx);
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, FFT_DEFAULT_VARIANT);
    char err[200];
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    if (fft_parse(argc, argv, np, me, &G.p, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    const struct fft_plan *p = &G.p;
    const uint64_t rows1_max = (p->N1 + (uint64_t)np - 1) / (uint64_t)np;
    const uint64_t need = rows1_max * p->N2 * sizeof(double complex);
    void *seg;
    size_t seg_bytes;
    rq_segment(G.ctx, &seg, &seg_bytes);
    if (need > seg_bytes) {
        snprintf(err, sizeof err, "ERROR: the receive area lives in the segment: set "
                 "RQ_SEGMENT_SIZE >= %llu", (unsigned long long)need);
        return rqa_fail(G.ctx, err);
    }
    const uint64_t rows2_max = (p->N2 + (uint64_t)np - 1) / (uint64_t)np;
    G.recv = seg;
    G.rows = malloc(rows2_max * p->N1 * sizeof *G.rows);
    G.pack = malloc(rows2_max * rows1_max * sizeof *G.pack);
    G.out = malloc(rows1_max * p->N2 * sizeof *G.out);
    G.roots1 = fft_roots(p->N1);
    G.roots2 = fft_roots(p->N2);
    G.tw = fft_twiddles(p);
    double *times = malloc((size_t)p->reps * sizeof *times);
    if (!G.rows || !G.pack || !G.out || !G.roots1 || !G.roots2 || !G.tw || !times)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    if (me == 0) {
        printf("Split-C FFT (" FFT_PROGRAM ")\n");
        printf("Number of ranks      = %d\n", np);
        printf("Points               = %llu (2^%u = %llu x %llu)\n", (unsigned long long)p->N,
               p->m, (unsigned long long)p->N1, (unsigned long long)p->N2);
        printf("Variant              = %s\n", variant_names[G.variant]);
        printf("Strategy             = %s\n", rqa_gas_strategy());
        rqa_placement_print(line_ns);
    }
    int rc = 0;
    for (int rep = 0; rep < p->reps && rc == 0; rep++) {
        fft_load(p, G.rows);
        rc = rq_barrier(G.ctx); /* the last transform's receive area is read */
        const double t0 = rqa_now();
        if (rc == 0) {
            fft_first_half(p, G.rows, G.roots1, G.tw);
            rc = remap();
        }
        if (rc == 0)
            fft_second_half(p, G.recv, G.out, G.roots2);
        double t = rqa_now() - t0;
        if (rc == 0)
            rc = rq_allreduce(G.ctx, &t, &times[rep], 1, RQ_DOUBLE, RQ_MAX);
    }
    double e = rc == 0 ? fft_error(p, G.out) : 0, emax = 0;
    if (e < 0)
        e = 1e300; /* out of memory for the check: fails */
    if (rc == 0)
        rc = rq_allreduce(G.ctx, &e, &emax, 1, RQ_DOUBLE, RQ_MAX);
    int failed = 1;
    if (me == 0) {
        if (rc != 0)
            printf("ERROR: communication failed: %s\n", rq_strerror(rc));
        else
            failed = fft_result(FFT_PROGRAM, emax, p, rqa_median(times, p->reps));
    }
    if (rc == 0 && rq_broadcast(G.ctx, 0, &failed, sizeof failed) != 0)
        failed = 1;
    free(G.rows);
    free(G.pack);
    free(G.out);
    free(G.roots1);
    free(G.roots2);
    free(G.tw);
    free(times);
    fflush(stdout);
    if (rq_finalize(G.ctx) != 0)
        failed = 1;
    return failed;
}
