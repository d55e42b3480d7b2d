/* loaded.c - rqbench loaded: active messages with every rank sending and
 * receiving at once (Liu & Culler, section 5.1.2).  K = 1024 per rank.
 *   ring      rank i sends K requests to i+1 while receiving K from i-1.
 *   traverse  P-1 steps; in step s rank j exchanges K requests with rank
 *             j XOR s (ranks whose partner is >= P sit the step out).
 * Both report the time per message averaged over the ranks: g + o_r in
 * LogP, since every rank both sends and receives.
 *   traverse, extra poll   the same with an rq_poll after every send
 *             (Liu & Culler Figure 4: the paper added it to see whether
 *             receiving sooner relieves a congested network).
 *   ring / traverse of arrays   each rank sends m arrays of 2 B .. 64 KiB
 *             (rq_request_long into the partner's segment, m filling
 *             1 MiB, 4 to 256) while receiving as many; T = c + B*x
 *             fitted over the sizes gives the effective bandwidth per
 *             rank (Table 8 for the ring, Figure 5 per traverse step). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { H_COUNT = 10, H_ARRAY = 11 };
enum { K = 1024 };

static volatile uint64_t counted;
static uint64_t counted_due;

static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; counted++; }

static volatile uint64_t arrays;
static uint64_t arrays_due;
static void on_array(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; arrays++; }

/* What one exchange sends: K null messages (len 0), or m arrays of len
 * bytes; extra_poll: rq_poll after every send. */
struct xchg {
    size_t len;
    int    m, extra_poll, step;
};
static char *src_buf;

/* Exchange with dst (send) and src (receive); returns ns per message or
 * array on this rank, NAN if this rank sat out. */
static double exchange(struct rqb *b, int dst, int src, const struct xchg *x)
{
    uint64_t one = 1;
    rq_barrier(b->ctx);
    if (dst < 0 || dst >= b->np || src < 0 || src >= b->np)
        return NAN;
    int n = x->len == 0 ? K : x->m;
    uint64_t t0 = rqb_now_ns();
    for (int i = 0; i < n; i++) {
        if (x->len == 0)
            rq_request(b->ctx, dst, H_COUNT, &one, 1, NULL, 0, 0);
        else /* consecutive line-aligned buffers of the partner's segment */
            rq_request_long(b->ctx, dst, H_ARRAY, NULL, 0, src_buf, x->len,
                            RQB_DATA_OFF + (uint64_t)i * ((x->len + 63) & ~(size_t)63), 0);
        if (x->extra_poll)
            rq_poll(b->ctx);
    }
    if (x->len == 0)
        rq_wait_until(b->ctx, &counted, counted_due += K);
    else
        rq_wait_until(b->ctx, &arrays, arrays_due += (uint64_t)n);
    return rqb_elapsed_ns(t0) / n;
}

/* Mean over the ranks that took part. */
static double mean_of_active(struct rqb *b, double v)
{
    double in[2] = {isnan(v) ? 0 : v, isnan(v) ? 0 : 1}, out[2];
    rq_allreduce(b->ctx, in, out, 2, RQ_DOUBLE, RQ_SUM);
    return out[1] > 0 ? out[0] / out[1] : NAN;
}

static double ring(struct rqb *b, void *arg)
{
    double v = exchange(b, (b->me + 1) % b->np, (b->me + b->np - 1) % b->np, arg);
    return mean_of_active(b, v);
}

static double traverse(struct rqb *b, void *arg)
{
    const struct xchg *x = arg;
    int peer = b->me ^ x->step;
    double v = exchange(b, peer, peer, x);
    return mean_of_active(b, v);
}

/* Arrays of 2 B .. 64 KiB (x4 apart, and 64 KiB) exchanged on the ring
 * (step 0) or at a traverse step; rows per size, then the fit. */
static void arrays_sweep(struct rqb *b, int step, size_t seg_lim)
{
    double xs[16], ts[16];
    int n = 0;
    char name[48];
    if (step == 0)
        snprintf(name, sizeof name, "ring of arrays");
    else
        snprintf(name, sizeof name, "traverse of arrays, step %d", step);
    for (size_t len = 2; len <= 65536; len = len == 32768 ? 65536 : len * 4) {
        size_t stride = (len + 63) & ~(size_t)63, m = (1u << 20) / len;
        m = m < 4 ? 4 : m > 256 ? 256 : m;
        if (m * stride > seg_lim)
            m = seg_lim / stride;
        if (m == 0)
            break;
        struct xchg x = {len, (int)m, 0, step};
        struct rqb_summary s;
        rqb_measure(b, name, step == 0 ? ring : traverse, &x, &s);
        rqb_row(b, name, (double)len, "ns", &s, "per array, mean over ranks");
        xs[n] = (double)len;
        ts[n++] = s.median;
        if (len == 65536)
            break;
    }
    double c, B, r2;
    if (b->me == 0 && n >= 2 && rqb_linfit(xs, ts, n, &c, &B, &r2) == 0) {
        char row[64], note[112];
        snprintf(row, sizeof row, "%s: bandwidth", name);
        snprintf(note, sizeof note,
                 "1/B of T = c + B*x over %d sizes (r^2 %.3f); L&C ring: CMAM_xfer 5.02 MB/s", n,
                 r2);
        rqb_row_derived(b, row, step == 0 ? NAN : step, "MB/s", B > 0 ? 1e3 / B : NAN, note);
    }
}

int rqb_fam_loaded(struct rqb *b)
{
    rq_handler_register(b->ctx, H_COUNT, on_count, NULL, 0);
    rq_handler_register(b->ctx, H_ARRAY, on_array, NULL, 0);
    struct rqb_summary s;
    char note[112];
    struct xchg nul = {0, 0, 0, 0};
    rqb_measure(b, "ring", ring, &nul, &s);
    snprintf(note, sizeof note, "%d ranks, mean over ranks", b->np);
    rqb_row(b, "ring (per message)", NAN, "ns", &s, note);
    int steps = 1;
    while (steps < b->np)
        steps <<= 1;
    for (int step = 1; step < steps; step++) {
        char what[32];
        snprintf(what, sizeof what, "traverse step %d", step);
        struct xchg x = {0, 0, 0, step};
        rqb_measure(b, what, traverse, &x, &s);
        rqb_row(b, "traverse (per message)", step, "ns", &s, "partner = rank XOR step");
        x.extra_poll = 1;
        rqb_measure(b, what, traverse, &x, &s);
        rqb_row(b, "traverse, extra poll (per message)", step, "ns", &s,
                "rq_poll after every send (L&C Figure 4)");
    }
    /* arrays (Table 8, Figure 5) */
    void *base;
    size_t seg = 0;
    rq_segment(b->ctx, &base, &seg);
    size_t seg_lim = seg > RQB_DATA_OFF ? seg - RQB_DATA_OFF : 0;
    src_buf = malloc(65536);
    if (src_buf == NULL)
        return 1;
    memset(src_buf, 0x5a, 65536);
    arrays_sweep(b, 0, seg_lim);
    for (int step = 1; step < steps; step++)
        arrays_sweep(b, step, seg_lim);
    free(src_buf);
    src_buf = NULL;
    return 0;
}
