/* stencil - the Parallel Research Kernels' star stencil on librq, with
 * the PRK interface (grid.h).  How a tile's halo strips reach its
 * neighbours is the variant (--variant NAME or RQAPP_VARIANT):
 *
 *   put   rq_put of each strip into the neighbour's receive slot, rq_sync,
 *         then one short active message announcing them (the ordering
 *         rule of rq.h: sync before the message that says "data is
 *         ready")
 *   long  rq_request_long: each strip lands in the neighbour's slot and
 *         its handler runs there, one message per strip
 *
 * Receive slots are double-buffered by iteration parity: a neighbour can
 * run at most one iteration ahead (its next strips wait on ours).  The
 * receiver waits on the count of its parity's arrivals (rq_wait_until)
 * and copies the strips into its halo.
 *
 * Usage: stencil [--variant V] <iterations> <grid size> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "grid.h"
#include "fail.h"
#include "placement.h"

enum { V_PUT, V_LONG, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"put", "long"};
enum { H_READY = 1, H_STRIP = 2 };

static struct {
    rq_ctx_t         *ctx;
    int               me, np, variant, nnbr;
    struct st_args    a;
    struct st_tile    t;
    size_t            slot;            /* doubles per receive slot (same on every rank) */
    double           *seg, *send;      /* receive slots (segment); packed strips */
    volatile uint64_t arrived[2];      /* arrivals per iteration parity, cumulative */
    uint64_t          bad;
} G;

/* Offset of the receive slot for strips coming from direction d. */
static uint64_t slot_off(int parity, int d)
{
    return ((uint64_t)parity * ST_DIRS + (uint64_t)d) * G.slot * sizeof(double);
}

/* A strip that landed (long): args {iteration, the side it came from at
 * this rank}; it must come from our neighbour on that side. */
static void on_strip(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    if (m->nargs != 2 || m->args[1] >= ST_DIRS || G.t.nbr[m->args[1]] != m->src ||
        m->len != G.t.strip[m->args[1]] * sizeof(double)) {
        G.bad++;
        return;
    }
    G.arrived[m->args[0] & 1] = G.arrived[m->args[0] & 1] + 1;
}

static void on_ready(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    /* put: the announcement of one strip, which rq_sync completed before. */
    if (m->nargs != 2 || m->args[1] >= ST_DIRS || G.t.nbr[m->args[1]] != m->src) {
        G.bad++;
        return;
    }
    G.arrived[m->args[0] & 1] = G.arrived[m->args[0] & 1] + 1;
}

/* Iteration k's halo exchange. */
static int exchange(uint64_t k)
{
    const int p = (int)(k & 1);
    int rc = 0;
    for (int d = 0; d < ST_DIRS && rc == 0; d++) {
        const int q = G.t.nbr[d];
        if (q < 0)
            continue;
        double *buf = G.send + (size_t)d * G.slot;
        st_pack(&G.t, d, buf);
        const size_t bytes = G.t.strip[d] * sizeof(double);
        /* At q our strip comes from the opposite side. */
        const uint64_t off = slot_off(p, d ^ 1);
        uint64_t args[2] = {k, (uint64_t)(d ^ 1)};
        if (G.variant == V_LONG)
            rc = rq_request_long(G.ctx, q, H_STRIP, args, 2, buf, bytes, off, 0);
        else if ((rc = rq_put(G.ctx, q, off, buf, bytes, 0)) == 0 &&
                 (rc = rq_sync(G.ctx)) == 0)
            rc = rq_request(G.ctx, q, H_READY, args, 2, NULL, 0, 0);
    }
    if (rc != 0)
        return rc;
    /* Ours of iteration k: the (k / 2 + 1)-th round of this parity. */
    rc = rq_wait_until(G.ctx, &G.arrived[p], (uint64_t)G.nnbr * (k / 2 + 1));
    for (int d = 0; d < ST_DIRS && rc == 0; d++)
        if (G.t.nbr[d] >= 0)
            st_unpack(&G.t, d, G.seg + slot_off(p, d) / sizeof(double));
    return rc;
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, "stencil: rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx); /* before the slots take the segment */
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, "put");
    char err[200];
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    if (st_parse(argc, argv, G.np, &G.a, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    G.slot = (size_t)ST_R * (size_t)(G.a.n / G.a.npx + 1); /* npx <= npy: the widest strip */
    void *seg;
    size_t seg_bytes;
    rq_segment(G.ctx, &seg, &seg_bytes);
    if (slot_off(2, 0) > seg_bytes) {
        snprintf(err, sizeof err,
                 "ERROR: the halo slots live in the segment: set RQ_SEGMENT_SIZE >= %llu",
                 (unsigned long long)slot_off(2, 0));
        return rqa_fail(G.ctx, err);
    }
    G.seg = seg;
    if (st_tile_init(&G.t, &G.a, G.me, G.np) != 0)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    G.send = malloc((size_t)ST_DIRS * G.slot * sizeof(double));
    if (G.send == NULL)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    for (int d = 0; d < ST_DIRS; d++)
        G.nnbr += G.t.nbr[d] >= 0;
    rq_handler_register(G.ctx, H_READY, on_ready, NULL, 0);
    rq_handler_register(G.ctx, H_STRIP, on_strip, NULL, 0);
    if (G.me == 0) {
        st_header("librq stencil execution on 2D grid", G.np, &G.t, &G.a,
                  variant_names[G.variant]);
        rqa_placement_print(line_ns);
    }
    rq_barrier(G.ctx);
    double t0 = 0;
    int rc = 0;
    for (int k = 0; k <= G.a.iterations && rc == 0; k++) {
        if (k == 1) {
            rc = rq_barrier(G.ctx);
            t0 = rqa_now();
        }
        if (rc == 0)
            rc = exchange((uint64_t)k);
        if (rc == 0)
            st_compute(&G.t, &G.a);
    }
    if (rc == 0)
        rc = rq_barrier(G.ctx); /* the time until every rank is done */
    double local = rqa_now() - t0, total = 0;
    double norm = st_local_norm(&G.t, &G.a), norm_sum = 0;
    if (rc == 0)
        rc = rq_allreduce(G.ctx, &local, &total, 1, RQ_DOUBLE, RQ_MAX);
    if (rc == 0)
        rc = rq_allreduce(G.ctx, &norm, &norm_sum, 1, RQ_DOUBLE, RQ_SUM);
    int failed = rqa_run_failed(G.ctx, rc, G.bad);
    if (G.me == 0 && !failed)
        failed = st_result(norm_sum, total, &G.a);
    st_tile_free(&G.t);
    free(G.send);
    fflush(stdout);
    if (rq_finalize(G.ctx) != 0)
        failed = 1;
    return failed;
}
