/* transpose - the Parallel Research Kernels' transpose on librq, and the
 * Remote Queues paper's transpose study (section 4, Figure 12): every
 * iteration each rank sends block q of its column block to rank q, as a
 * sequence of permutations (phase k: to rank me + k), in messages of a
 * fixed size (--msg BYTES, default 4096), and adds what it receives into
 * B transposed.  How messages are received and paced is the variant
 * (--variant NAME or RQAPP_VARIANT; the positional arguments stay PRK's):
 *
 *   am         a handler per message (rq_request, rq_poll after each send)
 *   rq         a named queue drained in the compute loop, no handler
 *              (rq_peek_n / rq_pop_n runs, after each send)
 *   rq-bw      rq plus bandwidth matching (flow.h: rqa_pace)
 *   rq-alt     rq plus one send per receive (flow.h: rqa_alt)
 *   rq-credit  rq plus credits per destination (flow.h: rqa_credits)
 *   direct     no messages: on one node every block moves once, read
 *              straight from its owner's segment into place (A lives in
 *              the segment; rq_get where a peer is on another node)
 *   auto       (the default) direct when the segment holds this rank's
 *              column block of A, else rq-alt: the fastest of the variants
 *              measured (`transpose 10 4096`, 2 ranks, 2026-11-26: direct
 *              2697-2748 MB/s, rq-alt 2337-2464, rq 1674-1901, MPI
 *              1709-1975; docs/apps.md)
 *
 * Usage: transpose [--variant V] [--msg BYTES] [--credits N]
 *                  <iterations> <matrix order> [tile size] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "flow.h"
#include "kernel.h"
#include "fail.h"
#include "placement.h"

enum { V_AM, V_RQ, V_RQ_BW, V_RQ_ALT, V_RQ_CREDIT, V_DIRECT, NVARIANTS };
static const char *const variant_names[NVARIANTS + 1] = {
    "am", "rq", "rq-bw", "rq-alt", "rq-credit", "direct", "auto"};
enum { H_BLOCK = 1, H_CREDIT = 2, QID = 1 };

static struct {
    rq_ctx_t          *ctx;
    int                me, np, variant;
    int                remote_peers;     /* ranks whose segment is not mapped */
    struct tp_args     a;
    double            *A, *B, *T;
    uint64_t           chunk;            /* doubles per message */
    uint64_t           received, bad;    /* messages taken in; malformed ones */
    double             consume_s;        /* time spent taking messages in */
    struct rqa_credits cr;
    struct rqa_pace    pace;
    struct rqa_alt     alt;
} G;

/* One received message: args {first element, count}, payload the doubles. */
static void take(int src, const uint64_t *args, unsigned nargs, const void *data, size_t len)
{
    const uint64_t blk = (uint64_t)G.a.bo * (uint64_t)G.a.bo;
    if (nargs != 2 || src < 0 || src >= G.np || src == G.me || args[0] > blk ||
        args[1] > blk - args[0] || len != args[1] * sizeof(double)) {
        G.bad++;
        return;
    }
    tp_scatter(G.B, data, &G.a, src, args[0], args[1]);
    G.received++;
    if (G.variant == V_RQ_CREDIT)
        rqa_credits_consumed(&G.cr, src);
}

static void on_block(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    take(m->src, m->args, m->nargs, m->data, m->len);
}

/* The receive step: every variant's drain. */
static int drain(void *arg)
{
    (void)arg;
    if (G.variant == V_AM) {
        uint64_t before = G.received;
        rq_poll(G.ctx);
        G.alt.received = G.received;
        return (int)(G.received - before);
    }
    rq_msg_t v[RQ_PEEK_MAX];
    int n = rq_peek_n(G.ctx, QID, v, RQ_PEEK_MAX);
    if (n <= 0) {
        if (G.variant == V_RQ_CREDIT)
            rq_poll(G.ctx); /* credit returns are active messages */
        return 0;
    }
    for (int i = 0; i < n; i++)
        take(v[i].src, v[i].args, v[i].nargs, v[i].data, v[i].len);
    rq_pop_n(G.ctx, QID, (unsigned)n);
    G.alt.received = G.received;
    return n;
}

/* Timed drain (iteration 0 calibrates bandwidth matching). */
static int drain_timed(void *arg)
{
    double t = rqa_now();
    int n = drain(arg);
    if (n > 0)
        G.consume_s += rqa_now() - t;
    return n;
}

static int send_block_part(int dst, const double *src, uint64_t e0, uint64_t n)
{
    uint64_t args[2] = {e0, n};
    if (G.variant == V_AM)
        return rq_request(G.ctx, dst, H_BLOCK, args, 2, src, n * sizeof(double), 0);
    return rq_enqueue(G.ctx, dst, QID, 0, args, 2, src, n * sizeof(double), 0);
}

/* One iteration of the message variants: the local block, then the
 * permutations, receiving as we go. */
static int iterate_messages(rqa_drain_fn step)
{
    const uint64_t blk = (uint64_t)G.a.bo * (uint64_t)G.a.bo;
    tp_add_block_inc(G.B, G.A + blk * (uint64_t)G.me, &G.a, G.me);
    for (int k = 1; k < G.np; k++) {
        int dst = (G.me + k) % G.np;
        const double *src = G.A + blk * (uint64_t)dst;
        for (uint64_t e0 = 0; e0 < blk; e0 += G.chunk) {
            uint64_t n = blk - e0 < G.chunk ? blk - e0 : G.chunk;
            switch (G.variant) {
            case V_RQ_BW:
                rqa_pace_wait(&G.pace, step, NULL);
                break;
            case V_RQ_ALT:
                rqa_alt_turn(&G.alt, step, NULL);
                break;
            case V_RQ_CREDIT: {
                int rc = rqa_credits_acquire(&G.cr, dst, step, NULL);
                if (rc != 0)
                    return rc;
                break;
            }
            default:
                break;
            }
            int rc = send_block_part(dst, src + e0, e0, n);
            if (rc != 0)
                return rc;
            step(NULL);
        }
        tp_inc_block(G.A, &G.a, dst); /* sent: the ring holds its copy */
    }
    return 0;
}

/* One iteration of the direct variant.  On one node block me of every
 * rank's A has one reader, this rank, which adds it transposed into B
 * where it lies and applies its A += 1 in the same pass: each element of
 * A is read and written once, and no rank waits for another.  A block of
 * another node's rank (not mapped) comes by rq_get between two barriers,
 * and its owner increments it after the second. */
static int iterate_direct(void)
{
    const uint64_t blk = (uint64_t)G.a.bo * (uint64_t)G.a.bo;
    int rc = G.remote_peers != 0 ? rq_barrier(G.ctx) : 0; /* remote A current */
    for (int k = 0; k < G.np && rc == 0; k++) {
        int src = (G.me + k) % G.np;
        double *p = src == G.me ? G.A : rq_segment_peer(G.ctx, src);
        if (p != NULL) {
            tp_add_block_inc(G.B, p + blk * (uint64_t)G.me, &G.a, src);
            continue;
        }
        rc = rq_get(G.ctx, G.T, src, blk * (uint64_t)G.me * sizeof(double),
                    blk * sizeof(double), 0);
        if (rc == 0)
            rc = rq_sync(G.ctx);
        if (rc == 0)
            tp_add_block(G.B, G.T, &G.a, src);
    }
    if (G.remote_peers != 0 && rc == 0) {
        rc = rq_barrier(G.ctx); /* every remote read of A is done */
        for (int q = 0; q < G.np && rc == 0; q++)
            if (q != G.me && rq_segment_peer(G.ctx, q) == NULL)
                tp_inc_block(G.A, &G.a, q);
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, "transpose: rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx); /* before A takes the segment */
    char err[200];
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS + 1, "auto");
    const char *msg_opt = rqa_take_opt(&argc, argv, "msg");
    const char *cr_opt = rqa_take_opt(&argc, argv, "credits");
    uint64_t msg_bytes = 4096, credits = 16;
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    if ((msg_opt != NULL && (rqa_parse_u64(msg_opt, &msg_bytes) != 0 || msg_bytes < 8 ||
                             msg_bytes % 8 != 0 || msg_bytes > (1u << 30))) ||
        (cr_opt != NULL && (rqa_parse_u64(cr_opt, &credits) != 0 || credits < 2 ||
                            credits > (1u << 20))))
        return rqa_fail(G.ctx,
                        "ERROR: --msg must be a multiple of 8 in 8..2^30, --credits in 2..2^20");
    if (tp_parse(argc, argv, G.np, &G.a, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    G.chunk = msg_bytes / sizeof(double);
    const size_t colblock = (size_t)G.a.order * (size_t)G.a.bo;
    const uint64_t blk = (uint64_t)G.a.bo * (uint64_t)G.a.bo;
    if (G.variant == NVARIANTS) { /* auto: direct if A fits the segment */
        void *seg;
        size_t seg_bytes = 0;
        rq_segment(G.ctx, &seg, &seg_bytes);
        G.variant = seg_bytes >= colblock * sizeof(double) ? V_DIRECT : V_RQ_ALT;
    }

    if (G.variant == V_DIRECT) {
        void *seg;
        size_t seg_bytes;
        rq_segment(G.ctx, &seg, &seg_bytes);
        if (seg_bytes < colblock * sizeof(double)) {
            snprintf(err, sizeof err,
                     "ERROR: variant direct keeps A in the segment: set RQ_SEGMENT_SIZE >= %zu",
                     colblock * sizeof(double));
            return rqa_fail(G.ctx, err);
        }
        G.A = seg;
    } else {
        G.A = malloc(colblock * sizeof(double));
    }
    G.B = malloc(colblock * sizeof(double));
    G.T = malloc(blk * sizeof(double));
    if (G.A == NULL || G.B == NULL || G.T == NULL)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    tp_init(G.A, G.B, &G.a, G.me);
    for (int r = 0; r < G.np; r++)
        G.remote_peers += r != G.me && rq_segment_peer(G.ctx, r) == NULL;
    rq_handler_register(G.ctx, H_BLOCK, on_block, NULL, 0);
    rq_queue_open(G.ctx, QID);
    if (G.variant == V_RQ_CREDIT && rqa_credits_init(&G.cr, G.ctx, H_CREDIT, (uint32_t)credits))
        return rqa_fail(G.ctx, "ERROR: credits");
    const uint64_t per_iter = (uint64_t)(G.np - 1) * ((blk + G.chunk - 1) / G.chunk);
    G.alt.expected = per_iter * (uint64_t)(G.a.iterations + 1);
    if (G.me == 0) {
        char what[96];
        snprintf(what, sizeof what, "%s (%llu-byte messages)", variant_names[G.variant],
                 (unsigned long long)msg_bytes);
        tp_header("librq matrix transpose", G.np, &G.a, G.variant == V_DIRECT ? "direct" : what);
        rqa_placement_print(line_ns);
    }
    rq_barrier(G.ctx);

    double t0 = 0;
    int rc = 0;
    for (int iter = 0; iter <= G.a.iterations && rc == 0; iter++) {
        if (iter == 1) {
            /* Iteration 0 warms up and calibrates; everything it sent is in. */
            while (G.received < per_iter && G.variant != V_DIRECT)
                drain(NULL);
            double per_msg = G.received ? G.consume_s * 1e9 / (double)G.received : 0;
            rqa_pace_match(&G.pace, G.ctx, G.variant == V_RQ_BW ? per_msg : 0);
            rq_barrier(G.ctx);
            t0 = rqa_now();
        }
        if (G.variant == V_DIRECT)
            rc = iterate_direct();
        else
            rc = iterate_messages(iter == 0 ? drain_timed : drain);
    }
    while (rc == 0 && G.variant != V_DIRECT && G.received < G.alt.expected && G.bad == 0)
        drain(NULL);
    /* PRK reduces each rank's own time with MAX; the barrier first makes
     * that the time until every rank is done, also where ranks share
     * cores (a rank descheduled after the start barrier reads a late t0). */
    if (rc == 0)
        rc = rq_barrier(G.ctx);
    double local = rqa_now() - t0, total;
    rq_allreduce(G.ctx, &local, &total, 1, RQ_DOUBLE, RQ_MAX);

    double abserr = tp_abserr(G.B, &G.a, G.me), abserr_total;
    rq_allreduce(G.ctx, &abserr, &abserr_total, 1, RQ_DOUBLE, RQ_SUM);
    rq_stats_t st;
    rq_stats(G.ctx, &st);
    uint64_t mine[3] = {G.received, st.buffered, G.bad}, sum[3];
    rq_allreduce(G.ctx, mine, sum, 3, RQ_UINT64, RQ_SUM);

    /* The ideal in the same run: each rank's local work alone, as a 1-rank
     * transpose does it (every block moved once, fused with A += 1; no
     * communication), ranks in parallel as far as the cores allow: from a
     * barrier to a barrier, so oversubscribed ranks count in turn.  B is
     * scratch now. */
    double reps[3];
    for (int r = 0; r < 3; r++) {
        rq_barrier(G.ctx);
        double t = rqa_now();
        for (int q = 0; q < G.np; q++)
            tp_add_block_inc(G.B, G.A + blk * (uint64_t)q, &G.a, q);
        rq_barrier(G.ctx);
        reps[r] = rqa_now() - t;
    }
    double ideal = rqa_median(reps, 3), ideal_max;
    rq_allreduce(G.ctx, &ideal, &ideal_max, 1, RQ_DOUBLE, RQ_MAX);

    int bad = rc != 0 || sum[2] != 0;
    if (G.me == 0) {
        if (rc != 0)
            printf("ERROR: communication failed: %s\n", rq_strerror(rc));
        if (sum[2] != 0)
            printf("ERROR: %llu malformed messages\n", (unsigned long long)sum[2]);
        bad |= tp_result(abserr_total, total, &G.a);
        const double bytes = 2.0 * sizeof(double) * (double)G.a.order * (double)G.a.order;
        printf("Ideal rate (MB/s): %lf Avg time (s): %lf (local work alone, no communication)\n",
               1e-6 * bytes / ideal_max, ideal_max);
        printf("Messages per rank    = %.0f (%.1f%% buffered)\n", (double)sum[0] / G.np,
               sum[0] ? 100.0 * (double)sum[1] / (double)sum[0] : 0.0);
        if (G.variant == V_RQ_BW)
            printf("Injection interval   = %llu ns per message\n",
                   (unsigned long long)G.pace.interval_ns);
    }
    if (G.variant == V_RQ_CREDIT)
        rqa_credits_fini(&G.cr);
    if (G.variant != V_DIRECT)
        free(G.A);
    free(G.B);
    free(G.T);
    fflush(stdout); /* before any rank's exit status can stop the job */
    if (rq_finalize(G.ctx) != 0)
        bad = 1;
    return bad;
}
