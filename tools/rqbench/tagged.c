/* tagged.c - rqbench compare: the tagged two-sided layer (rqtag,
 * docs/tag.md) in the shapes the peers measure with their own two-sided
 * calls (rqbench-mpi: MPI_Send/MPI_Recv, MPI_Isend/MPI_Irecv):
 *   tagged latency 8B one-way  rq_tsend / rq_trecv ping-pong / 2;
 *   tagged message rate 8B     16384 messages one way in windows of 64
 *                              rq_tisend / rq_tirecv (MPI's);
 *   tagged bandwidth           arrays of 4 KiB .. 16 MiB, windows of 64
 *                              receives (16 from 1 MiB), into a buffer
 *                              in the receiver's segment, where
 *                              rq_request_long writes (above the eager
 *                              limit the sender writes it there: one
 *                              copy);
 *   ... private buffer         the same into malloc'd memory (above the
 *                              eager limit placed by rq_place from the
 *                              sender's staging area: two copies).
 *   ... / rq_request_long, paired
 *                              into the segment, each repetition a
 *                              tagged stream and compare.c's
 *                              rq_request_long stream of the same size
 *                              (in turn first): the median of the
 *                              per-pair ratios.
 * Beside them, from the same run: the ratio to the active-message
 * figures of compare.c (short AM round trip / 2; rq_request_long). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "rqtag.h"

enum { TAG_DATA = 1, TAG_ACK = 2, TAG_WINDOW = 64 };
static rq_tag_t *tg;
static char *tx, *rx, *rx_private;

static double tagged_latency(struct rqb *b, void *arg)
{
    (void)arg;
    const int n = 1024;
    uint64_t x = 1;
    double r = 0;
    rq_barrier(b->ctx);
    uint64_t t0 = rqb_now_ns();
    if (b->me <= 1) {
        int peer = 1 - b->me;
        for (int i = 0; i < n; i++) {
            if (b->me == 0)
                rq_tsend(tg, peer, TAG_DATA, &x, 8);
            rq_trecv(tg, peer, TAG_DATA, RQ_TAG_ALL, &x, 8, NULL);
            if (b->me == 1)
                rq_tsend(tg, peer, TAG_DATA, &x, 8);
        }
    }
    if (b->me == 0)
        r = rqb_elapsed_ns(t0) / n / 2;
    return r;
}

/* arg: payload size; 0 = 8 bytes, rate in M/s; else MB/s.  Windows of
 * rq_tisend and rq_tirecv as rqbench-mpi's of MPI_Isend and MPI_Irecv (64,
 * 16 from 1 MiB), each waited for in full. */
static double tagged_stream(struct rqb *b, void *arg)
{
    const size_t len = *(const size_t *)arg;
    const long n = len == 0 ? 16384 : len >= (1u << 20) ? 16 : 256;
    const size_t sz = len == 0 ? 8 : len;
    const int window = len >= (1u << 20) ? 16 : TAG_WINDOW;
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns(), ack;
        rq_treq_t req[TAG_WINDOW];
        for (long i = 0; i < n; i += window) {
            for (int w = 0; w < window; w++)
                rq_tisend(tg, 1, TAG_DATA, tx, sz, &req[w]);
            for (int w = 0; w < window; w++)
                rq_twait(tg, &req[w]);
        }
        rq_trecv(tg, 1, TAG_ACK, RQ_TAG_ALL, &ack, 8, NULL);
        double t = rqb_elapsed_ns(t0);
        r = len == 0 ? n / t * 1e3 : (double)n * (double)len / t * 1e3;
    } else if (b->me == 1) {
        rq_treq_t req[TAG_WINDOW];
        for (long i = 0; i < n; i += window) {
            for (int w = 0; w < window; w++)
                rq_tirecv(tg, 0, TAG_DATA, RQ_TAG_ALL, rx, sz, &req[w]);
            for (int w = 0; w < window; w++)
                rq_twait(tg, &req[w]);
        }
        uint64_t ack = 1;
        rq_tsend(tg, 0, TAG_ACK, &ack, 8);
    }
    return r;
}

/* A tagged stream and an rq_request_long stream of the same size, in
 * turn first (what runs first leaves the caches and lanes to the other):
 * the ratio of their rates.  Two rows measured one after the other differ
 * also by the host's drift between them (0.88, 1.03 and 0.88 at 64 KiB in
 * three runs of one placement, 2026-11-28); within a pair it cancels. */
static double tagged_over_long(struct rqb *b, void *arg)
{
    static unsigned pairs; /* every rank counts alike: the order agrees */
    double tagged, plain;
    if (pairs++ % 2 == 0) {
        tagged = tagged_stream(b, arg);
        plain = rqb_compare_stream(b, arg);
    } else {
        plain = rqb_compare_stream(b, arg);
        tagged = tagged_stream(b, arg);
    }
    return b->me == 0 && plain > 0 ? tagged / plain : 0;
}

void rqb_compare_tagged(struct rqb *b, double am_latency, const double *bw, const size_t *bw_len,
                        int nbw)
{
    if (rq_tag_open(b->ctx, 0, &tg) != 0) {
        rqb_row_na(b, "tagged latency 8B one-way", NAN, "ns", "rq_tag_open failed");
        return;
    }
    size_t most = bw_len[nbw - 1];
    tx = malloc(most);
    rx_private = malloc(most);
    void *seg = NULL;
    size_t seg_size = 0;
    if (rq_segment(b->ctx, &seg, &seg_size) != 0 || seg_size < RQB_DATA_OFF + most)
        seg = NULL;
    if (tx == NULL || rx_private == NULL || seg == NULL) {
        free(tx);
        free(rx_private);
        rq_tag_close(tg);
        rqb_row_na(b, "tagged latency 8B one-way", NAN, "ns", "out of memory or segment");
        return;
    }
    memset(tx, 1, most);
    rx = (char *)seg + RQB_DATA_OFF; /* where rq_request_long's bandwidth row writes */
    memset(rx, 0, most);
    memset(rx_private, 0, most);
    struct rqb_summary s;
    rqb_measure(b, "tagged latency 8B", tagged_latency, NULL, &s);
    rqb_row(b, "tagged latency 8B one-way", NAN, "ns", &s, "rq_tsend/rq_trecv ping-pong / 2");
    rqb_row_derived(b, "tagged latency / AM latency", NAN, "x", s.median / am_latency,
                    "same run: over the short AM round trip / 2 above");
    size_t len = 0;
    rqb_measure(b, "tagged message rate 8B", tagged_stream, &len, &s);
    rqb_row(b, "tagged message rate 8B", NAN, "M/s", &s, "windows of 64 rq_tisend/rq_tirecv");
    for (int i = 0; i < nbw; i++) {
        len = bw_len[i];
        rqb_measure(b, "tagged bandwidth", tagged_stream, &len, &s);
        rqb_row(b, "tagged bandwidth", (double)len, "MB/s", &s,
                "windows of rq_tisend/rq_tirecv, receive buffer in the segment");
        rqb_row_derived(b, "tagged bandwidth / rq_request_long", (double)len, "x", s.median / bw[i],
                        "same run: over the bandwidth row above");
        rqb_measure(b, "tagged / rq_request_long, paired", tagged_over_long, &len, &s);
        rqb_row(b, "tagged bandwidth / rq_request_long, paired", (double)len, "x", &s,
                "each rep: a tagged stream over an rq_request_long stream run next to it");
    }
    char *in_segment = rx;
    rx = rx_private;
    for (int i = 0; i < nbw; i++) {
        len = bw_len[i];
        rqb_measure(b, "tagged bandwidth, private buffer", tagged_stream, &len, &s);
        rqb_row(b, "tagged bandwidth, private buffer", (double)len, "MB/s", &s,
                "the same into malloc'd memory (staged: two copies)");
        rqb_row_derived(b, "tagged bandwidth, private / rq_request_long", (double)len, "x",
                        s.median / bw[i], "same run: over the bandwidth row above");
    }
    rx = in_segment;
    free(tx);
    free(rx_private);
    rq_tag_close(tg);
}
