/* xfer.c - rqbench xfer: array transfer (Liu & Culler, section 5.2) with
 * rq_request_long, the CMAM_xfer analog: the initiator copies the array
 * into the target's segment and a handler runs there.  Sizes 2 B up to
 * 64 MiB (clipped to the segment), destination aligned to a byte (offset
 * 1 mod 8), a word (4 mod 8) or a double word (0 mod 8).
 *   one-to-one blocking      rank 0 -> 1, timed until the handler's ack.
 *   one-to-one non-blocking  timed until rq_request_long returns; the ack
 *                            is awaited outside the timed part.
 *   two-to-one, one segment  ranks 1 and 2 each write half of one buffer
 *                            on rank 0; rank 0 times go .. both arrived.
 *   two-to-one, two segments the same into two separate buffers.
 *   swap                     ranks 0 and 1 exchange arrays at once; rank 0
 *                            times until it has the peer's array and the
 *                            ack for its own.
 * Each curve is fitted with T = c + B*x (least squares over all sizes):
 * start-up cost c and bandwidth 1/B, as the paper's Table 5. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { H_ARRIVE = 20, H_ACK = 21, H_GO = 22 };
enum { ONE_BLOCK, ONE_NONBLOCK, TWO_ONE_SEG, TWO_TWO_SEG, SWAP, NBENCH };
static const char *const bench_name[NBENCH] = {
    "one-to-one blocking", "one-to-one non-blocking", "two-to-one, one segment",
    "two-to-one, two segments", "swap"};
static const char *const align_name[3] = {"byte", "word", "double-word"};
static const unsigned align_off[3] = {1, 4, 0};

static volatile uint64_t arrived, acked, gone;
static uint64_t arrived_due, acked_due, gone_due;
static char *src_buf;

/* args[0] != 0: acknowledge the transfer to its sender. */
static void on_arrive(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    arrived++;
    if (m->nargs > 0 && m->args[0] != 0)
        rq_reply(c, m, H_ACK, NULL, 0, NULL, 0, 0);
}
static void on_ack(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; acked++; }
static void on_go(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; gone++; }

struct xfer_arg { int bench, align; size_t len; int m; };

static int send_long(struct rqb *b, int dst, uint64_t ack, size_t len, uint64_t off)
{
    return rq_request_long(b->ctx, dst, H_ARRIVE, &ack, 1, src_buf, len, off, 0);
}

static double xfer_once(struct rqb *b, void *argp)
{
    const struct xfer_arg *a = argp;
    const uint64_t base = RQB_DATA_OFF + align_off[a->align];
    const size_t half = a->len / 2;
    double total = 0;
    rq_barrier(b->ctx);
    for (int i = 0; i < a->m; i++) {
        uint64_t t0 = 0;
        switch (a->bench) {
        case ONE_BLOCK:
        case ONE_NONBLOCK:
            if (b->me == 0) {
                t0 = rqb_now_ns();
                send_long(b, 1, 1, a->len, base);
                if (a->bench == ONE_NONBLOCK)
                    total += rqb_elapsed_ns(t0);
                rq_wait_until(b->ctx, &acked, ++acked_due);
                if (a->bench == ONE_BLOCK)
                    total += rqb_elapsed_ns(t0);
            }
            break;
        case TWO_ONE_SEG:
        case TWO_TWO_SEG:
            if (b->me == 0) {
                t0 = rqb_now_ns();
                rq_request(b->ctx, 1, H_GO, NULL, 0, NULL, 0, 0);
                rq_request(b->ctx, 2, H_GO, NULL, 0, NULL, 0, 0);
                rq_wait_until(b->ctx, &arrived, arrived_due += 2);
                total += rqb_elapsed_ns(t0);
            } else if (b->me <= 2) {
                /* one segment: the two halves of one buffer; two: two
                 * buffers a cache-line-rounded half apart */
                uint64_t gap = a->bench == TWO_ONE_SEG ? half : ((half + 127) & ~(uint64_t)63);
                rq_wait_until(b->ctx, &gone, ++gone_due);
                send_long(b, 0, 0, half, base + (b->me == 2 ? gap : 0));
            }
            break;
        case SWAP:
            if (b->me == 0) {
                t0 = rqb_now_ns();
                rq_request(b->ctx, 1, H_GO, NULL, 0, NULL, 0, 0);
                send_long(b, 1, 1, a->len, base);
                rq_wait_until(b->ctx, &arrived, ++arrived_due);
                rq_wait_until(b->ctx, &acked, ++acked_due);
                total += rqb_elapsed_ns(t0);
            } else if (b->me == 1) {
                rq_wait_until(b->ctx, &gone, ++gone_due);
                send_long(b, 0, 1, a->len, base);
                rq_wait_until(b->ctx, &arrived, ++arrived_due);
                rq_wait_until(b->ctx, &acked, ++acked_due);
            }
            break;
        }
    }
    if (b->me == 1 && (a->bench == ONE_BLOCK || a->bench == ONE_NONBLOCK))
        arrived_due += (uint64_t)a->m; /* served by the handler while waiting */
    return total / a->m;
}

/* Largest power of two that fits the segment above RQB_DATA_OFF. */
static size_t size_limit(struct rqb *b)
{
    void *base;
    size_t seg = 0, lim = 2;
    rq_segment(b->ctx, &base, &seg);
    while (lim * 2 + RQB_DATA_OFF + 256 <= seg && lim * 2 <= b->o.max_size)
        lim *= 2;
    return lim;
}

int rqb_fam_xfer(struct rqb *b)
{
    rq_handler_register(b->ctx, H_ARRIVE, on_arrive, NULL, 0);
    rq_handler_register(b->ctx, H_ACK, on_ack, NULL, 0);
    rq_handler_register(b->ctx, H_GO, on_go, NULL, 0);
    size_t lim = size_limit(b);
    src_buf = malloc(lim);
    if (src_buf == NULL)
        return 1;
    memset(src_buf, 0x5a, lim);
    if (b->me == 0 && lim < b->o.max_size)
        fprintf(stderr, "rqbench xfer: sizes above %zu bytes need a larger RQ_SEGMENT_SIZE\n",
                lim);
    int step = b->o.smoke ? 6 : b->o.quick ? 3 : 1, naligns = b->o.smoke ? 1 : 3;
    for (int bench = 0; bench < NBENCH; bench++) {
        for (int al = 3 - naligns; al < 3; al++) {
            char name[48];
            snprintf(name, sizeof name, "%s, %s", bench_name[bench], align_name[al]);
            if ((bench == TWO_ONE_SEG || bench == TWO_TWO_SEG) && b->np < 3) {
                rqb_row_na(b, name, NAN, "ns", "needs 3 ranks");
                continue;
            }
            double xs[32], ts[32];
            int n = 0;
            for (size_t len = 2; len <= lim; len <<= step) {
                size_t m = (16u << 20) / len;
                struct xfer_arg a = {bench, al, len, m < 1 ? 1 : m > 256 ? 256 : (int)m};
                struct rqb_summary s;
                rqb_measure(b, name, xfer_once, &a, &s);
                rqb_row(b, name, (double)len, "ns", &s, "time per transfer");
                xs[n] = (double)len;
                ts[n++] = s.median;
            }
            double c, B, r2;
            if (b->me == 0 && rqb_linfit(xs, ts, n, &c, &B, &r2) == 0) {
                char note[112], fit[64];
                snprintf(note, sizeof note, "T = c + B*x fitted over %d sizes, r^2 = %.4f", n,
                         r2);
                snprintf(fit, sizeof fit, "%s: start-up", name);
                rqb_row_derived(b, fit, NAN, "ns", c, note);
                snprintf(fit, sizeof fit, "%s: bandwidth", name);
                rqb_row_derived(b, fit, NAN, "MB/s", B > 0 ? 1e3 / B : NAN, "1/B of the fit");
            }
        }
    }
    free(src_buf);
    src_buf = NULL;
    return 0;
}
