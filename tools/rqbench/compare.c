/* compare.c - rqbench compare: librq's side of the shapes that the peer
 * programs (rqbench-mpi, rqbench-ucx) measure the same way, so that
 * "rqbench --compare" can print each figure beside its peer:
 *   latency 8B one-way   ping-pong of 8-byte messages, round trip / 2
 *                        (librq: a 1-word short AM each way).
 *   message rate 8B      8-byte messages streamed one way, one ack at the
 *                        end (librq's ring is its window; MPI's window 64).
 *   bandwidth            arrays of 4 KiB .. 16 MiB streamed one way
 *                        (librq: rq_request_long), one ack at the end.
 *   put 8B + flush       one 8-byte put completed remotely, back to back
 *                        (librq: rq_put + rq_sync).
 *   large AM placed      ns per byte of messages of 16 KiB + 1 .. 16 MiB
 *                        that land in a buffer the receiver names
 *                        (librq: rq_request to an RQ_HF_PLACE handler that
 *                        calls rq_place; UCX: ucp_am_send_nbx rendezvous +
 *                        ucp_am_recv_data_nbx; MPI: MPI_Isend/MPI_Irecv).
 *   overlap message      fraction of one message's transfer hidden behind
 *                        computation at the sender (overlap.h; librq:
 *                        rq_request_long_nb; UCX: ucp_am_send_nbx
 *                        rendezvous; MPI: MPI_Isend / MPI_Irecv).
 *   overlap put          the same for rq_put_nb (librq only).
 *   tagged ...           latency, rate and bandwidth of rqtag's send /
 *                        receive (tagged.c; MPI: the same calls again).
 *   cache-line one-way latency L, start / end: the run's placement, first
 *                        and last (each peer measures its own likewise:
 *                        --compare sets the speedups of runs placed
 *                        differently apart).
 * Ranks 0 and 1 only; the names and units here are the join keys. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "overlap.h"

enum { H_COUNT = 60, H_ACK = 61, H_PLACED = 62 };
static volatile uint64_t counted, acked;
static uint64_t counted_due, acked_due;
static char *src_buf;

static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; counted++; }
static void on_ack(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; acked++; }

static double latency(struct rqb *b, void *arg)
{
    (void)arg;
    const int n = 1024;
    uint64_t x = 1;
    double r = 0;
    rq_barrier(b->ctx);
    uint64_t t0 = rqb_now_ns();
    if (b->me <= 1) {
        for (int i = 0; i < n; i++) {
            if (b->me == 0)
                rq_request(b->ctx, 1, H_COUNT, &x, 1, NULL, 0, 0);
            rq_wait_until(b->ctx, &counted, ++counted_due);
            if (b->me == 1)
                rq_request(b->ctx, 0, H_COUNT, &x, 1, NULL, 0, 0);
        }
    }
    if (b->me == 0)
        r = rqb_elapsed_ns(t0) / n / 2;
    return r;
}

/* arg: payload size; 0 = 8-byte short AM (rate in M/s), else MB/s. */
static double stream(struct rqb *b, void *arg)
{
    size_t len = *(const size_t *)arg;
    long n = len == 0 ? 16384 : len >= (1u << 20) ? 16 : 256;
    uint64_t x = 1;
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (long i = 0; i < n; i++) {
            if (len == 0)
                rq_request(b->ctx, 1, H_COUNT, &x, 1, NULL, 0, 0);
            else
                rq_request_long(b->ctx, 1, H_COUNT, &x, 1, src_buf, len, RQB_DATA_OFF, 0);
        }
        rq_wait_until(b->ctx, &acked, ++acked_due);
        double t = rqb_elapsed_ns(t0);
        r = len == 0 ? n / t * 1e3 : (double)n * (double)len / t * 1e3;
    } else if (b->me == 1) {
        rq_wait_until(b->ctx, &counted, counted_due += (uint64_t)n);
        rq_request(b->ctx, 0, H_ACK, NULL, 0, NULL, 0, 0);
    }
    return r;
}

double rqb_compare_stream(struct rqb *b, void *arg)
{
    return stream(b, arg);
}

static char *place_buf;
static volatile uint64_t placed;
static uint64_t placed_due, nb_done, nb_due;

static void on_placed(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    if (m->data == NULL) { /* above rq_medium_max: the receiver names the spot */
        if (rq_place(c, m, place_buf, &placed, NULL, NULL) != 0)
            abort();
        return;
    }
    memcpy(place_buf, m->data, m->len);
    placed++;
}

/* arg: message size; ns per byte of a stream of placed messages. */
static double large_placed(struct rqb *b, void *arg)
{
    size_t len = *(const size_t *)arg;
    long n = len >= (1u << 20) ? 16 : 64;
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (long i = 0; i < n; i++)
            rq_request(b->ctx, 1, H_PLACED, NULL, 0, src_buf, len, 0);
        rq_wait_until(b->ctx, &acked, ++acked_due);
        r = rqb_elapsed_ns(t0) / ((double)n * (double)len);
    } else if (b->me == 1) {
        rq_wait_until(b->ctx, &placed, placed_due += (uint64_t)n);
        rq_request(b->ctx, 0, H_ACK, NULL, 0, NULL, 0, 0);
    }
    return r;
}

/* arg: {size, put}; the overlap fraction of rq_request_long_nb (or
 * rq_put_nb) at the sender. */
struct ov_arg { size_t len; int put; };
static double overlap(struct rqb *b, void *arg)
{
    const struct ov_arg *o = arg;
    const int k = RQB_OVERLAP_REPS;
    uint64_t x = 1;
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        double comm[RQB_OVERLAP_REPS], comp[RQB_OVERLAP_REPS], tot[RQB_OVERLAP_REPS];
        for (int pass = 0; pass < 2; pass++) {
            double tc = pass ? rqb_ov_median(comm, k) : 0;
            for (int i = 0; i < k; i++) {
                uint64_t t0 = rqb_now_ns();
                if (o->put)
                    rq_put_nb(b->ctx, 1, RQB_DATA_OFF, src_buf, o->len, &nb_done, 0);
                else
                    rq_request_long_nb(b->ctx, 1, H_COUNT, &x, 1, src_buf, o->len, RQB_DATA_OFF,
                                       &nb_done, 0);
                if (pass)
                    comp[i] = rqb_ov_compute(tc);
                rq_wait_until(b->ctx, &nb_done, ++nb_due);
                (pass ? tot : comm)[i] = rqb_elapsed_ns(t0);
            }
        }
        r = rqb_ov_fraction(rqb_ov_median(comm, k), rqb_ov_median(comp, k),
                            rqb_ov_median(tot, k));
        rq_request(b->ctx, 1, H_ACK, NULL, 0, NULL, 0, 0);
    } else if (b->me == 1) {
        rq_wait_until(b->ctx, &acked, ++acked_due);
        if (!o->put)
            counted_due += 2u * (uint64_t)k;
    }
    return r;
}

static int put_err;

static double put_flush(struct rqb *b, void *arg)
{
    (void)arg;
    const int n = 1024;
    uint64_t v = 1;
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < n && put_err == 0; i++) {
            int rc = rq_put(b->ctx, 1, RQB_DATA_OFF, &v, 8, 0);
            if (rc == 0)
                rc = rq_sync(b->ctx);
            put_err = rc;
        }
        r = rqb_elapsed_ns(t0) / n;
    }
    return r;
}

/* The placement at the start and end of this run, as the peers measure
 * theirs (peers/peer.c): --compare sets speedups beside it. */
static void placement_row(struct rqb *b, const char *name)
{
    if (!rqb_pair_shares_memory(b))
        return;
    struct rqb_summary s;
    rqb_line_measure(b, name, &s);
    rqb_row(b, name, NAN, "ns", &s, "one line bounced between ranks 0 and 1: this run's placement");
}

int rqb_fam_compare(struct rqb *b)
{
    placement_row(b, "cache-line one-way latency L, start");
    rq_handler_register(b->ctx, H_COUNT, on_count, NULL, 0);
    rq_handler_register(b->ctx, H_ACK, on_ack, NULL, 0);
    rq_handler_register(b->ctx, H_PLACED, on_placed, NULL, RQ_HF_PLACE);
    struct rqb_summary s;
    rqb_measure(b, "latency 8B", latency, NULL, &s);
    rqb_row(b, "latency 8B one-way", NAN, "ns", &s, "short AM ping-pong / 2");
    const double am_latency = s.median;
    size_t len = 0;
    rqb_measure(b, "message rate 8B", stream, &len, &s);
    rqb_row(b, "message rate 8B", NAN, "M/s", &s, "16384 short AMs, one ack");
    src_buf = malloc(16u << 20);
    if (src_buf == NULL)
        return 1;
    memset(src_buf, 1, 16u << 20);
    static const size_t sizes[] = {4096, 65536, 1u << 20, 16u << 20};
    double bw[4];
    for (int i = 0; i < 4; i++) {
        len = sizes[i];
        rqb_measure(b, "bandwidth", stream, &len, &s);
        rqb_row(b, "bandwidth", (double)len, "MB/s", &s, "rq_request_long stream, one ack");
        bw[i] = s.median;
    }
    /* The same shapes on the tagged two-sided layer (tagged.c). */
    rqb_compare_tagged(b, am_latency, bw, sizes, 4);
    place_buf = malloc(16u << 20);
    if (place_buf == NULL)
        return 1;
    static const size_t big[] = {16385, 65536, 1u << 20, 4u << 20, 16u << 20};
    for (int i = 0; i < 5; i++) {
        len = big[i];
        rqb_measure(b, "large AM placed", large_placed, &len, &s);
        rqb_row(b, "large AM placed", (double)len, "ns/B", &s, "rq_request + rq_place");
    }
    free(place_buf);
    place_buf = NULL;
    static const size_t ov[] = {65536, 1u << 20, 4u << 20, 16u << 20};
    for (int put = 0; put < 2; put++)
        for (int i = 0; i < 4; i++) {
            struct ov_arg oa = {ov[i], put};
            const char *name = put ? "overlap put" : "overlap message";
            rqb_measure(b, name, overlap, &oa, &s);
            rqb_row(b, name, (double)ov[i], "frac", &s,
                    put ? "rq_put_nb + compute + wait" : "rq_request_long_nb + compute + wait");
        }
    free(src_buf);
    src_buf = NULL;
    int64_t err = 0;
    if (b->me == 0) {
        uint64_t v = 0;
        err = rq_put(b->ctx, 1, RQB_DATA_OFF, &v, 8, 0);
        if (err == 0)
            err = rq_sync(b->ctx);
    }
    rq_broadcast(b->ctx, 0, &err, sizeof err);
    if (err != 0) {
        rqb_row_na(b, "put 8B + flush", NAN, "ns", rq_strerror((int)err));
    } else {
        rqb_measure(b, "put 8B + flush", put_flush, NULL, &s);
        if (b->me == 0 && put_err != 0)
            rqb_row_na(b, "put 8B + flush", NAN, "ns", rq_strerror(put_err));
        else
            rqb_row(b, "put 8B + flush", NAN, "ns", &s, "rq_put + rq_sync");
    }
    placement_row(b, "cache-line one-way latency L, end");
    return 0;
}
