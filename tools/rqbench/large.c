/* large.c - rqbench large: what a large payload costs per byte, by the
 * path it takes, from 8 B to 64 MiB (sizes a factor sqrt(2) apart, plus
 * rq_medium_max() - 1, itself and + 1), rank 0 -> rank 1:
 *   medium  rq_request: in place in the lane up to rq_medium_max(), above
 *           it staged in the sender's staging area (one copy, read in
 *           place by the handler);
 *   long    rq_request_long into the target's segment (the sender names
 *           the offset: a burst's messages go to consecutive buffers,
 *           each from a cache-line boundary, as far as the segment holds
 *           them, as the staged path's blocks do; writing one buffer over
 *           and over would overwrite lines the handler is still reading
 *           and time that ping-pong);
 *   receiver-placed  rq_request to an RQ_HF_PLACE handler that places each
 *           payload above rq_medium_max() in a buffer of its own
 *           (rq_place), then reads it there.
 * Each figure streams a burst of messages (as many as fill 4 MiB, 4 to
 * 256) and times until the handler of the last one has acknowledged it:
 * ns per byte = time / (messages * size).  The handler reads one word of
 * every cache line of the payload: a payload nobody reads has not reached
 * the receiver (in place, its lines would never leave the sender's cache),
 * so every path is charged the same move of the data to the receiver.
 * The physical limit is measured at each size in the same run: one core's
 * memcpy of the same burst into the long path's buffers (memcpy): the
 * same working set, so it crosses each cache's capacity where they do.
 * Derived rows: medium / long at each size, and the largest rise of the
 * medium's cost per byte from one size to the next (the "cliff"), also
 * divided by memcpy's rise there (what the memory hierarchy explains).
 * First, before anything warms up: the first burst of staged mediums
 * (rq_medium_max() + 1 bytes, the staging area's first use in this
 * process: its pages are made resident then) and the first burst of long
 * requests of that size, one sample each: what a short program pays. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { H_DATA = 30, H_ACK = 31, H_PLACED = 32 };
enum { P_MEDIUM, P_LONG, P_PLACED, P_MEMCPY, NPATH };
static const char *const path_name[NPATH] = {"medium", "long", "receiver-placed", "memcpy"};

static volatile uint64_t acked;
static uint64_t acked_due;
static char *src_buf;
static volatile uint64_t sink;

/* Read one word per cache line of [p, p + len). */
static void touch(const void *p, size_t len)
{
    const volatile char *c = p;
    uint64_t x = 0;
    for (size_t i = 0; i < len; i += 64)
        x += (uint64_t)c[i];
    if (len != 0)
        x += (uint64_t)c[len - 1];
    sink += x;
}

static char *place_buf; /* where the receiver places payloads */

/* RQ_HF_PLACE: payloads above rq_medium_max() arrive unplaced; place them
 * in place_buf, then read them there as on_data does. */
static void on_placed(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    if (m->data == NULL) {
        rq_place(c, m, place_buf, NULL, NULL, NULL);
        touch(place_buf, m->len);
    } else {
        touch(m->data, m->len);
    }
    if (m->nargs > 0 && m->args[0] != 0)
        rq_reply(c, m, H_ACK, NULL, 0, NULL, 0, 0);
}

/* args[0] != 0: the last of a burst; acknowledge it. */
static void on_data(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    touch(m->data, m->len);
    if (m->nargs > 0 && m->args[0] != 0)
        rq_reply(c, m, H_ACK, NULL, 0, NULL, 0, 0);
}
static void on_ack(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; acked++; }

struct large_arg {
    int    path;
    size_t len;
    int    burst;
    int    bufs;   /* long: distinct buffers ... */
    size_t stride; /* ... this far apart (len rounded up to a cache line) */
};

static double burst_once(struct rqb *b, void *argp)
{
    const struct large_arg *a = argp;
    double t = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < a->burst; i++) {
            uint64_t last = i + 1 == a->burst;
            if (a->path == P_MEDIUM || a->path == P_PLACED)
                rq_request(b->ctx, 1, a->path == P_MEDIUM ? H_DATA : H_PLACED, &last, 1, src_buf,
                           a->len, 0);
            else
                rq_request_long(b->ctx, 1, H_DATA, &last, 1, src_buf, a->len,
                                RQB_DATA_OFF + (uint64_t)(i % a->bufs) * a->stride, 0);
        }
        rq_wait_until(b->ctx, &acked, ++acked_due);
        t = rqb_elapsed_ns(t0) / ((double)a->burst * (double)a->len);
    }
    rq_barrier(b->ctx);
    return t;
}

/* The physical limit at this size: one core's memcpy of the same burst
 * into the same buffers as the long path (bufs of them, stride apart,
 * private to rank 0), as many bursts as copy 16 MiB, ns per byte.  Same
 * working set as the messages, so the limit crosses each cache's capacity
 * where they do: a rise there is the memory hierarchy's, not a cliff. */
static double memcpy_once(struct rqb *b, void *argp)
{
    const struct large_arg *a = argp;
    static char *dst;
    static size_t have;
    if (b->me != 0)
        return 0;
    size_t need = (size_t)(a->bufs - 1) * a->stride + a->len;
    if (have < need) {
        free(dst);
        dst = aligned_alloc(64, (need + 63) & ~(size_t)63);
        have = dst != NULL ? need : 0;
        if (dst == NULL)
            return NAN;
        memset(dst, 1, need);
    }
    size_t burst_bytes = (size_t)a->burst * a->len;
    int rounds = burst_bytes >= (16u << 20) ? 1 : (int)((16u << 20) / burst_bytes);
    uint64_t t0 = rqb_now_ns();
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < a->burst; i++) {
            char *d = dst + (size_t)(i % a->bufs) * a->stride;
            memcpy(d, src_buf, a->len);
            __asm__ volatile("" ::"r"(d) : "memory");
        }
    return rqb_elapsed_ns(t0) / ((double)rounds * (double)burst_bytes);
}

/* The arguments of path p at len: a burst of messages filling 4 MiB (4 to
 * 256 of them); the long path's (and memcpy's) buffers, as many distinct
 * ones as the segment holds, up to one per message. */
static struct large_arg large_arg_at(int p, size_t len, size_t seg_lim)
{
    size_t m = (4u << 20) / len;
    struct large_arg a = {p, len, m < 4 ? 4 : m > 256 ? 256 : (int)m, 1, (len + 63) & ~(size_t)63};
    if (a.stride <= seg_lim)
        a.bufs = seg_lim / a.stride < (size_t)a.burst ? (int)(seg_lim / a.stride) : a.burst;
    return a;
}

static double run_path(struct rqb *b, struct large_arg *a)
{
    return a->path == P_MEMCPY ? memcpy_once(b, a) : burst_once(b, a);
}

/* num's cost over den's, the two measured alternately reps times (after
 * one warm-up each): the median of the reps ratios, on rank 0.  A ratio of
 * neighbours taken this way sees the same state of a shared machine on
 * both sides; two medians taken seconds apart need not. */
static double paired_ratio(struct rqb *b, struct large_arg *num, struct large_arg *den, int reps)
{
    double r[16];
    if (reps > 16)
        reps = 16;
    run_path(b, num);
    run_path(b, den);
    for (int k = 0; k < reps; k++) {
        /* alternate which goes first: a drift within the pair cancels */
        double x, y;
        if (k & 1) {
            y = run_path(b, den);
            x = run_path(b, num);
        } else {
            x = run_path(b, num);
            y = run_path(b, den);
        }
        r[k] = y > 0 ? x / y : NAN;
    }
    if (b->me != 0)
        return NAN;
    struct rqb_summary s;
    rqb_summarize(r, reps, 0.9, &s);
    return s.median;
}

/* The sweep's sizes, ascending: 8 * sqrt(2)^k (multiples of 8) up to lim,
 * with rq_medium_max() - 1, + 0, + 1 in their place.  Returns how many. */
static int sweep_sizes(size_t mm, size_t lim, size_t *out, int max)
{
    int n = 0;
    size_t extra[3] = {mm - 1, mm, mm + 1};
    int e = 0;
    for (int k = 0; n < max; k++) {
        double x = 8.0 * pow(2.0, k / 2.0);
        size_t s = (size_t)x & ~(size_t)7;
        if (s > lim)
            break;
        while (e < 3 && extra[e] <= s && n < max) {
            if (extra[e] != s && extra[e] <= lim)
                out[n++] = extra[e];
            e++;
        }
        if (n < max && (n == 0 || out[n - 1] != s))
            out[n++] = s;
    }
    return n;
}

int rqb_fam_large(struct rqb *b)
{
    rq_handler_register(b->ctx, H_DATA, on_data, NULL, 0);
    rq_handler_register(b->ctx, H_ACK, on_ack, NULL, 0);
    rq_handler_register(b->ctx, H_PLACED, on_placed, NULL, RQ_HF_PLACE);
    void *base;
    size_t seg = 0;
    rq_segment(b->ctx, &base, &seg);
    size_t lim = b->o.max_size;
    size_t seg_lim = seg > RQB_DATA_OFF ? seg - RQB_DATA_OFF : 0;
    src_buf = malloc(lim);
    place_buf = malloc(lim);
    if (src_buf == NULL || place_buf == NULL)
        return 1;
    memset(place_buf, 0, lim);
    memset(src_buf, 0x3c, lim);
    if (b->me == 0 && seg_lim < lim)
        fprintf(stderr, "rqbench large: long sizes above %zu bytes need a larger "
                        "RQ_SEGMENT_SIZE\n", seg_lim);
    const size_t first_len = rq_medium_max(b->ctx) + 1;
    if (first_len <= lim && first_len <= seg_lim) {
        struct large_arg fm = large_arg_at(P_MEDIUM, first_len, seg_lim);
        struct large_arg fl = large_arg_at(P_LONG, first_len, seg_lim);
        double tm = burst_once(b, &fm), tl = burst_once(b, &fl);
        rqb_row_derived(b, "medium, first burst", (double)first_len, "ns/B", tm,
                        "staged: the area's first use in this process, one sample");
        rqb_row_derived(b, "long, first burst", (double)first_len, "ns/B", tl,
                        "its buffers' first use, one sample");
        rqb_row_derived(b, "first bursts, medium / long", (double)first_len, "x",
                        tl > 0 ? tm / tl : NAN, "one sample each");
    }
    size_t sizes[80];
    int nsz = sweep_sizes(rq_medium_max(b->ctx), lim, sizes, 80);
    int step = b->o.smoke ? 8 : b->o.quick ? 2 : 1;
    double cost[NPATH][80];
    for (int i = 0; i < nsz; i++) {
        size_t len = sizes[i];
        int limit_pt = len + 1 >= rq_medium_max(b->ctx) && len <= rq_medium_max(b->ctx) + 1;
        if (i % step != 0 && !limit_pt && i + 1 != nsz) {
            for (int p = 0; p < NPATH; p++)
                cost[p][i] = NAN;
            continue;
        }
        for (int p = 0; p < NPATH; p++) {
            char name[32];
            snprintf(name, sizeof name, "%s", path_name[p]);
            cost[p][i] = NAN;
            if (p == P_LONG && len > seg_lim) {
                rqb_row_na(b, name, (double)len, "ns/B", "larger than the segment");
                continue;
            }
            struct large_arg a = large_arg_at(p, len, seg_lim);
            struct rqb_summary s;
            rqb_measure(b, name, p == P_MEMCPY ? memcpy_once : burst_once, &a, &s);
            rqb_row(b, name, (double)len, "ns/B", &s,
                    p == P_LONG     ? "rq_request_long burst, ack of the last"
                    : p == P_MEMCPY ? "limit: one core's memcpy of the burst, long's buffers"
                    : p == P_PLACED && len > rq_medium_max(b->ctx)
                        ? "RQ_HF_PLACE handler: rq_place into its buffer"
                    : len <= rq_medium_max(b->ctx) ? "rq_request burst, in place in the lane"
                                                   : "rq_request burst, staged (one copy)");
            cost[p][i] = s.median;
        }
    }
    /* The targets are ratios: medium / long at each size, and the rise of
     * the medium's cost from one size to the next (the "cliff"), also net
     * of the physical limit's rise there (the memory hierarchy's part).
     * Each is measured paired (paired_ratio), not divided out of the
     * independent medians above: one disturbed median would otherwise
     * make a step that is not there. */
    int reps = b->o.smoke ? 2 : b->o.quick ? 5 : 9;
    double worst_ratio = 0, worst_step = 0, worst_net = 0;
    size_t worst_ratio_at = 0, worst_step_at = 0, worst_net_at = 0;
    int prev = -1;
    for (int i = 0; i < nsz; i++) {
        if (isnan(cost[P_MEDIUM][i]))
            continue;
        size_t len = sizes[i];
        struct large_arg med = large_arg_at(P_MEDIUM, len, seg_lim);
        if (!isnan(cost[P_LONG][i])) {
            struct large_arg lng = large_arg_at(P_LONG, len, seg_lim);
            double r = paired_ratio(b, &med, &lng, reps);
            rqb_row_derived(b, "medium / long", (double)len, "x", r,
                            "cost per byte, paired (alternated)");
            if (len > rq_medium_max(b->ctx) && r > worst_ratio) {
                worst_ratio = r;
                worst_ratio_at = len;
            }
        }
        if (prev >= 0) {
            struct large_arg was = large_arg_at(P_MEDIUM, sizes[prev], seg_lim);
            struct large_arg cpy = large_arg_at(P_MEMCPY, len, seg_lim);
            struct large_arg cpy_was = large_arg_at(P_MEMCPY, sizes[prev], seg_lim);
            double r = paired_ratio(b, &med, &was, reps);
            double phys = paired_ratio(b, &cpy, &cpy_was, reps);
            rqb_row_derived(b, "medium rise", (double)len, "x", r,
                            "ns/B over the previous size's, paired");
            if (r > worst_step) {
                worst_step = r;
                worst_step_at = len;
            }
            /* only a rise of the limit's own cost explains one of ours */
            phys = isnan(phys) || phys < 1 ? 1 : phys;
            if (r / phys > worst_net) {
                worst_net = r / phys;
                worst_net_at = len;
            }
        }
        prev = i;
    }
    char note[96];
    snprintf(note, sizeof note, "above rq_medium_max; worst at %zu B (target <= 1.3)",
             worst_ratio_at);
    rqb_row_derived(b, "medium / long, worst", NAN, "x", worst_ratio, note);
    snprintf(note, sizeof note, "largest rise of ns/B to the next size, at %zu B (target <= 1.3)",
             worst_step_at);
    rqb_row_derived(b, "medium cliff", NAN, "x", worst_step, note);
    snprintf(note, sizeof note, "the same divided by memcpy's rise there, at %zu B", worst_net_at);
    rqb_row_derived(b, "medium cliff beyond memcpy", NAN, "x", worst_net, note);
    free(src_buf);
    free(place_buf);
    src_buf = place_buf = NULL;
    return 0;
}
