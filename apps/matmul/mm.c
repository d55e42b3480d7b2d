/* cannon / mm - the Split-C matrix multiplies (Split-C NP paper, Table 2)
 * on librq (the schedules: mat.h).  A rank's blocks of A and B live in its
 * segment; at each step every rank fetches the two blocks each of its C
 * blocks needs, by global address, and multiplies.  --variant (or
 * RQAPP_VARIANT):
 *
 *   get   split-phase: the next block pair is requested (rq_get) before
 *         this pair's multiply and waited for (rq_sync) after it, so the
 *         data moves while the rank computes (default)
 *   read  blocking rq_read of each block when it is needed: no overlap
 *
 * RQ_GAS_STRATEGY (direct, np, proc) decides who moves the data: under np
 * the network processor copies the next pair during the multiply; under
 * direct the initiator copies it at the request.  One pair ahead, not a
 * whole step: the pair is still in cache when it is multiplied.
 *
 * Usage: cannon [--variant V] [--reps R] <matrix order>
 *        mm     [--variant V] [--reps R] [--block B] <matrix order> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "fail.h"
#include "mat.h"
#include "placement.h"

#ifdef MM_CANNON
#define MM_PROGRAM "cannon"
#define MM_SKEW 1
#else
#define MM_PROGRAM "mm"
#define MM_SKEW 0
#endif

enum { V_GET, V_READ, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"get", "read"};

static struct {
    rq_ctx_t      *ctx;
    int            me, np, variant;
    struct mm_plan p;
    size_t         bs;           /* doubles per block */
    double        *buf[2][2];    /* [parity][A or B]: one block each */
    double        *c;            /* my C blocks */
} G;

/* Segment offset of block v of A (which 0) or B (1) at its owner. */
static uint64_t block_off(int which, uint64_t v)
{
    return ((uint64_t)which * G.p.nslots + mm_slot(&G.p, v)) * G.bs * sizeof(double);
}

/* The work items, in order: (step, slot) for each step, each of my
 * blocks.  Request (get) or read (read) the two blocks of item t into
 * buf[par]. */
static int fetch(uint64_t t, unsigned mine, int par)
{
    const uint64_t v = mm_block(&G.p, G.me, (unsigned)(t % mine));
    const unsigned s = (unsigned)(t / mine);
    const uint64_t k = mm_k(&G.p, v, s), i = v / G.p.nb, j = v % G.p.nb;
    const uint64_t src[2] = {i * G.p.nb + k, k * G.p.nb + j};
    int rc = 0;
    for (int w = 0; w < 2 && rc == 0; w++) {
        const int owner = mm_owner(&G.p, src[w]);
        const uint64_t off = block_off(w, src[w]);
        rc = G.variant == V_GET ? rq_get(G.ctx, G.buf[par][w], owner, off, G.bs * sizeof(double), 0)
                                : rq_read(G.ctx, G.buf[par][w], owner, off, G.bs * sizeof(double));
    }
    return rc;
}

/* The product, one block pair at a time: under get the next pair moves
 * while this one is multiplied (and stays in cache until it is used). */
static int product(void)
{
    memset(G.c, 0, G.p.nslots * G.bs * sizeof *G.c);
    unsigned mine = 0;
    while (mine < G.p.nslots && mm_block(&G.p, G.me, mine) != UINT64_MAX)
        mine++;
    const uint64_t items = (uint64_t)G.p.nb * mine;
    int rc = 0, par = 0;
    if (items > 0 && G.variant == V_GET) {
        rc = fetch(0, mine, 0);
        if (rc == 0)
            rc = rq_sync(G.ctx);
    }
    for (uint64_t t = 0; t < items && rc == 0; t++) {
        if (G.variant == V_READ)
            rc = fetch(t, mine, par);
        else if (t + 1 < items)
            rc = fetch(t + 1, mine, par ^ 1);
        if (rc != 0)
            break;
        mm_block_fma(G.p.b, G.buf[par][0], G.buf[par][1], G.c + (size_t)(t % mine) * G.bs);
        if (G.variant == V_GET) {
            rc = rq_sync(G.ctx);
            par ^= 1;
        }
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, MM_PROGRAM ": rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx);
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, "get");
    char err[200];
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    if (mm_parse(argc, argv, G.np, MM_SKEW, &G.p, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    G.bs = (size_t)G.p.b * G.p.b;
    const uint64_t need = 2ull * G.p.nslots * G.bs * sizeof(double);
    void *seg;
    size_t seg_bytes;
    rq_segment(G.ctx, &seg, &seg_bytes);
    if (need > seg_bytes) {
        snprintf(err, sizeof err, "ERROR: the blocks of A and B live in the segment: set "
                 "RQ_SEGMENT_SIZE >= %llu", (unsigned long long)need);
        return rqa_fail(G.ctx, err);
    }
    const size_t mine = G.p.nslots * G.bs;
    double *all = malloc((mine + 4 * G.bs) * sizeof *all);
    double *times = malloc((size_t)G.p.reps * sizeof *times);
    if (all == NULL || times == NULL)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    for (int k = 0; k < 4; k++)
        G.buf[k / 2][k % 2] = all + mine + (size_t)k * G.bs;
    G.c = all;
    for (unsigned slot = 0; slot < G.p.nslots; slot++) {
        const uint64_t v = mm_block(&G.p, G.me, slot);
        if (v == UINT64_MAX)
            break;
        for (int w = 0; w < 2; w++)
            mm_fill(&G.p, w, v, (double *)((char *)seg + block_off(w, v)));
    }
    if (G.me == 0) {
        printf("Split-C %s matrix multiply\n", MM_SKEW ? "Cannon" : "blocked");
        printf("Number of ranks      = %d\n", G.np);
        printf("Matrix order         = %llu\n", (unsigned long long)G.p.N);
        printf("Blocks               = %ux%u of order %u\n", G.p.nb, G.p.nb, G.p.b);
        printf("Variant              = %s\n", variant_names[G.variant]);
        printf("Strategy             = %s\n", rqa_gas_strategy());
        rqa_placement_print(line_ns);
    }
    int rc = rq_barrier(G.ctx); /* every A and B block written */
    for (int rep = 0; rep < G.p.reps && rc == 0; rep++) {
        rc = rq_barrier(G.ctx);
        const double t0 = rqa_now();
        if (rc == 0)
            rc = product();
        double t = rqa_now() - t0;
        if (rc == 0)
            rc = rq_allreduce(G.ctx, &t, &times[rep], 1, RQ_DOUBLE, RQ_MAX);
    }
    int64_t ok = 1, all_ok = 0;
    for (unsigned slot = 0; slot < G.p.nslots && rc == 0; slot++) {
        const uint64_t v = mm_block(&G.p, G.me, slot);
        if (v != UINT64_MAX)
            ok &= mm_check_block(&G.p, v, G.c + (size_t)slot * G.bs);
    }
    if (rc == 0)
        rc = rq_allreduce(G.ctx, &ok, &all_ok, 1, RQ_INT64, RQ_MIN);
    int failed = rc != 0 || all_ok != 1;
    if (G.me == 0) {
        if (rc != 0)
            printf("ERROR: communication failed: %s\n", rq_strerror(rc));
        else
            failed = mm_result(MM_PROGRAM, all_ok == 1, &G.p, rqa_median(times, G.p.reps));
    }
    free(all);
    free(times);
    fflush(stdout);
    if (rq_finalize(G.ctx) != 0)
        failed = 1;
    return failed;
}
