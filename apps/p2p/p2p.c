/* p2p - the Parallel Research Kernels' pipeline (point-to-point
 * synchronisation) on librq, with the PRK interface (pipeline.h).  How a
 * rank hands its row's last value to its right neighbour is the variant
 * (--variant NAME or RQAPP_VARIANT; the positional arguments stay PRK's):
 *
 *   store  the Split-C way: a signaling store (rq_store) of the value
 *          straight into the neighbour's ghost cell, which the neighbour
 *          waits for with rq_store_sync; the grid lives in the segment
 *   am     one active message per value; the handler writes the ghost
 *          cell and counts it, the neighbour waits with rq_wait_until
 *   tag    two-sided, as the MPI version: rq_tsend of the value with the
 *          row as its tag, rq_trecv straight into the ghost cell (rqtag,
 *          docs/tag.md)
 *
 * The corner -A[m-1][n-1] goes back to rank 0 the same way.  Stores are
 * not ordered by librq, so a sender completes its previous store
 * (rq_sync, free under the direct strategy) before the next one: the
 * neighbour's byte count then says which rows are in.
 *
 * Usage: p2p [--variant store|am|tag] <iterations> <m> <n> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>
#include <rqtag.h>

#include "app.h"
#include "pipeline.h"
#include "fail.h"
#include "placement.h"

enum { V_STORE, V_AM, V_TAG, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"store", "am", "tag"};
enum { H_ROW = 1, H_CORNER = 2 };
#define TAG_CORNER (1ull << 62) /* tag: rows are tagged by their index */

static struct {
    rq_ctx_t        *ctx;
    rq_tag_t        *tg;                  /* tag: the two-sided layer */
    int              me, np, variant;
    struct pl_args   a;
    struct pl_local  L;
    uint64_t         corner_off;          /* store: the corner's cell in rank 0's segment */
    uint64_t         right_ld;            /* store: row length of the right neighbour's grid */
    volatile uint64_t rows, corners;      /* am: values that arrived */
    double           corner;              /* am: the last corner value */
    uint64_t         bad;
} G;

static void on_row(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    if (m->nargs != 2 || m->src != G.me - 1 || m->args[0] < 1 || m->args[0] >= (uint64_t)G.a.m) {
        G.bad++;
        return;
    }
    memcpy(&PL(&G.L, (long)m->args[0], 0), &m->args[1], sizeof(double));
    G.rows = G.rows + 1;
}

static void on_corner(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    if (m->nargs != 1 || m->src != G.np - 1 || G.me != 0) {
        G.bad++;
        return;
    }
    memcpy(&G.corner, &m->args[0], sizeof(double));
    G.corners = G.corners + 1;
}

/* Send v to rank dst: into its ghost cell of row i (off), or its corner. */
static int send_value(int dst, int h, long i, uint64_t off, double v)
{
    if (G.variant == V_STORE) {
        int rc = rq_sync(G.ctx); /* the previous store landed: they arrive in order */
        return rc != 0 ? rc : rq_store(G.ctx, dst, off, &v, sizeof v, 0);
    }
    if (G.variant == V_TAG)
        return rq_tsend(G.tg, dst, h == H_CORNER ? TAG_CORNER : (uint64_t)i, &v, sizeof v);
    uint64_t a[2] = {(uint64_t)i, 0};
    if (h == H_CORNER) {
        memcpy(&a[0], &v, sizeof v);
        return rq_request(G.ctx, dst, H_CORNER, a, 1, NULL, 0, 0);
    }
    memcpy(&a[1], &v, sizeof v);
    return rq_request(G.ctx, dst, H_ROW, a, 2, NULL, 0, 0);
}

/* Wait for the value the n-th arrival (count of this kind, from 1) brings. */
static int wait_value(volatile uint64_t *count, uint64_t n)
{
    if (G.variant == V_STORE)
        return rq_store_sync(G.ctx, sizeof(double));
    return rq_wait_until(G.ctx, count, n);
}

/* Sweep k (0-based) of the grid. */
static int sweep(uint64_t k)
{
    struct pl_local *L = &G.L;
    const long m = G.a.m;
    int rc = 0;
    if (G.me == 0 && k > 0) { /* A[0][0] = -A[m-1][n-1] of the last sweep */
        if (G.np == 1) {
            PL(L, 0, 1) = -PL(L, m - 1, L->w);
        } else if (G.variant == V_TAG) {
            double c = 0;
            rc = rq_trecv(G.tg, G.np - 1, TAG_CORNER, RQ_TAG_ALL, &c, sizeof c, NULL);
            PL(L, 0, 1) = c;
        } else if ((rc = wait_value(&G.corners, k)) == 0) {
            if (G.variant == V_STORE)
                memcpy(&PL(L, 0, 1), (const char *)L->a + G.corner_off, sizeof(double));
            else
                PL(L, 0, 1) = G.corner;
        }
    }
    for (long i = 1; i < m && rc == 0; i++) {
        if (G.me > 0 && G.variant == V_TAG) /* straight into the ghost cell */
            rc = rq_trecv(G.tg, G.me - 1, (uint64_t)i, RQ_TAG_ALL, &PL(L, i, 0), sizeof(double),
                          NULL);
        else if (G.me > 0)
            rc = wait_value(&G.rows, k * (uint64_t)(m - 1) + (uint64_t)i);
        if (rc != 0)
            break;
        pl_row(L, i);
        if (G.me < G.np - 1)
            rc = send_value(G.me + 1, H_ROW, i, (uint64_t)i * G.right_ld * sizeof(double),
                            PL(L, i, L->w));
    }
    if (rc == 0 && G.me == G.np - 1 && G.np > 1)
        rc = send_value(0, H_CORNER, 0, G.corner_off, -PL(L, m - 1, L->w));
    return rc;
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, "p2p: rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx); /* before the grid takes the segment */
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, "store");
    char err[200];
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    if (pl_parse(argc, argv, G.np, &G.a, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    void *seg = NULL;
    if (G.variant == V_STORE) {
        /* The grid and, after it, rank 0's corner cell live in the segment:
         * the left neighbour stores straight into our ghost column. */
        size_t seg_bytes, need = 0;
        rq_segment(G.ctx, &seg, &seg_bytes);
        for (int r = 0; r < G.np; r++) {
            size_t b = pl_local_bytes(&G.a, r, G.np) + sizeof(double);
            need = b > need ? b : need;
        }
        if (need > seg_bytes) {
            snprintf(err, sizeof err,
                     "ERROR: variant store keeps the grid in the segment: "
                     "set RQ_SEGMENT_SIZE >= %zu",
                     need);
            return rqa_fail(G.ctx, err);
        }
        G.corner_off = pl_local_bytes(&G.a, 0, G.np);
        if (G.me + 1 < G.np)
            G.right_ld = pl_local_bytes(&G.a, G.me + 1, G.np) / sizeof(double) / (size_t)G.a.m;
    }
    if (pl_local_init(&G.L, &G.a, G.me, G.np, seg) != 0)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    rq_handler_register(G.ctx, H_ROW, on_row, NULL, 0);
    rq_handler_register(G.ctx, H_CORNER, on_corner, NULL, 0);
    if (G.variant == V_TAG && rq_tag_open(G.ctx, 0, &G.tg) != 0)
        return rqa_fail(G.ctx, "ERROR: rq_tag_open failed");
    if (G.me == 0) {
        pl_header("librq pipeline execution on 2D grid", G.np, &G.a, variant_names[G.variant]);
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
            rc = sweep((uint64_t)k);
    }
    if (rc == 0)
        rc = rq_sync(G.ctx);
    if (rc == 0)
        rc = rq_barrier(G.ctx); /* the time until every rank is done */
    double local = rqa_now() - t0, total = 0;
    if (rc == 0)
        rc = rq_allreduce(G.ctx, &local, &total, 1, RQ_DOUBLE, RQ_MAX);
    double corner = G.me == G.np - 1 ? PL(&G.L, G.a.m - 1, G.L.w) : 0;
    if (rc == 0)
        rc = rq_broadcast(G.ctx, G.np - 1, &corner, sizeof corner);
    int failed = rqa_run_failed(G.ctx, rc, G.bad);
    if (G.me == 0 && !failed)
        failed = pl_result(corner, total, &G.a);
    pl_local_free(&G.L);
    if (G.tg != NULL && rq_tag_close(G.tg) != 0)
        failed = 1;
    fflush(stdout);
    if (rq_finalize(G.ctx) != 0)
        failed = 1;
    return failed;
}
