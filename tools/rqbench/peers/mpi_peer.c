/* mpi_peer.c - rqbench-mpi: the "compare" shapes over MPI, for
 * rqbench --compare (run: mpirun -n 2 --bind-to core rqbench-mpi).
 *   latency 8B one-way  MPI_Send/MPI_Recv ping-pong, 1024 round trips / 2
 *                       (and again as "tagged latency 8B one-way", beside
 *                       librq's tagged layer; likewise the rate and
 *                       bandwidth).
 *   message rate 8B     16384 messages in windows of 64 MPI_Isend /
 *                       MPI_Irecv + MPI_Waitall, one ack (OSU style).
 *   bandwidth           the same with arrays (window 64, or 16 for >= 1 MiB).
 *   put 8B + flush      MPI_Put + MPI_Win_flush in a lock_all epoch.
 *   large AM placed     the bandwidth stream's time per byte (the message
 *                       lands in the buffer the receiver posted).
 *   overlap message     MPI_Isend + computation + MPI_Wait at the sender,
 *                       MPI_Irecv + MPI_Wait at the receiver (overlap.h).
 *   cache-line one-way latency L, start / end: this run's placement
 *                       (peer_placement), through a shared-memory window. */
#define _GNU_SOURCE
#include <math.h>
#include <stdatomic.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overlap.h"
#include "peer.h"

static void bcast(struct peer *p, int64_t *v)
{
    (void)p;
    MPI_Bcast(v, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
}

static double latency(struct peer *p, void *arg)
{
    (void)arg;
    uint64_t x = 1;
    const int n = 1024;
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = peer_now_ns();
    for (int i = 0; i < n; i++) {
        if (p->me == 0) {
            MPI_Send(&x, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(&x, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&x, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&x, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (double)(peer_now_ns() - t0) / n / 2;
}

static char *buf;

/* arg: array size, 0 = 8-byte messages (M/s); else MB/s. */
static double stream(struct peer *p, void *arg)
{
    size_t len = *(const size_t *)arg;
    int bytes = len ? (int)len : 8;
    long n = len == 0 ? 16384 : len >= (1u << 20) ? 16 : 256;
    int window = len >= (1u << 20) ? 16 : 64;
    MPI_Request req[64];
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = peer_now_ns();
    for (long i = 0; i < n; i += window) {
        for (int w = 0; w < window; w++) {
            if (p->me == 0)
                MPI_Isend(buf, bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[w]);
            else
                MPI_Irecv(buf, bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[w]);
        }
        MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
    }
    if (p->me == 0)
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    double t = (double)(peer_now_ns() - t0);
    return len == 0 ? n / t * 1e3 : (double)n * (double)len / t * 1e3;
}

/* arg: message size; the overlap fraction at the sender. */
static double overlap(struct peer *p, void *arg)
{
    size_t len = *(const size_t *)arg;
    const int k = RQB_OVERLAP_REPS;
    double comm[RQB_OVERLAP_REPS], comp[RQB_OVERLAP_REPS], tot[RQB_OVERLAP_REPS], r = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int pass = 0; pass < 2; pass++) {
        double tc = pass && p->me == 0 ? rqb_ov_median(comm, k) : 0;
        for (int i = 0; i < k; i++) {
            MPI_Request q;
            uint64_t t0 = peer_now_ns();
            if (p->me == 0) {
                MPI_Isend(buf, (int)len, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &q);
                if (pass)
                    comp[i] = rqb_ov_compute(tc);
            } else {
                MPI_Irecv(buf, (int)len, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &q);
            }
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            (pass ? tot : comm)[i] = (double)(peer_now_ns() - t0);
        }
    }
    if (p->me == 0)
        r = rqb_ov_fraction(rqb_ov_median(comm, k), rqb_ov_median(comp, k), rqb_ov_median(tot, k));
    MPI_Barrier(MPI_COMM_WORLD);
    return r;
}

/* MB/s -> ns per byte: the order statistics invert (the median of the
 * inverse is the inverse of the median); mean and sd do not. */
static void to_ns_per_byte(struct rqb_summary *s)
{
    double lo = 1e3 / s->max, hi = 1e3 / s->min, clo = 1e3 / s->ci_hi, chi = 1e3 / s->ci_lo;
    s->median = 1e3 / s->median;
    s->min = lo;
    s->max = hi;
    s->ci_lo = clo;
    s->ci_hi = chi;
    s->mean = s->sd = NAN;
}

static MPI_Win win;

static double put_flush(struct peer *p, void *arg)
{
    (void)arg;
    uint64_t v = 1;
    const int n = 1024;
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = peer_now_ns();
    if (p->me == 0) {
        for (int i = 0; i < n; i++) {
            MPI_Put(&v, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
            MPI_Win_flush(1, win);
        }
    }
    return (double)(peer_now_ns() - t0) / n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct peer p = {.impl = "mpi", .bcast = bcast};
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &p.me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (peer_args(&p, argc, argv) != 0 || size != 2) {
        if (size != 2 && p.me == 0)
            fprintf(stderr, "rqbench-mpi: run with mpirun -n 2\n");
        MPI_Finalize();
        return 2;
    }
    buf = malloc(16u << 20);
    if (buf == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, 1, 16u << 20);
    /* The placement (peer_placement), through a word of a shared-memory
     * window, when both ranks share a node (they do under --compare). */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_size;
    MPI_Comm_size(node, &node_size);
    MPI_Win line_win = MPI_WIN_NULL;
    _Atomic uint64_t *line = NULL;
    if (node_size == 2) {
        void *mine, *at;
        MPI_Aint sz;
        int du;
        MPI_Win_allocate_shared(p.me == 0 ? 64 : 0, 1, MPI_INFO_NULL, node, &mine, &line_win);
        MPI_Win_shared_query(line_win, 0, &sz, &du, &at);
        line = at;
        if (p.me == 0)
            atomic_store(line, 0);
        MPI_Barrier(MPI_COMM_WORLD);
        peer_placement(&p, line, "start");
    }
    struct rqb_summary s;
    peer_measure(&p, latency, NULL, &s);
    peer_row(&p, "latency 8B one-way", NAN, "ns", &s, "MPI_Send/Recv ping-pong / 2");
    size_t len = 0;
    peer_measure(&p, stream, &len, &s);
    peer_row(&p, "message rate 8B", NAN, "M/s", &s, "window 64 Isend/Irecv");
    static const size_t sizes[] = {4096, 65536, 1u << 20, 16u << 20};
    for (int i = 0; i < 4; i++) {
        len = sizes[i];
        peer_measure(&p, stream, &len, &s);
        peer_row(&p, "bandwidth", (double)len, "MB/s", &s, "window of Isend/Irecv");
    }
    /* MPI's point-to-point calls are tagged already: the same shapes,
     * measured again beside librq's tagged layer (rqbench tagged.c). */
    peer_measure(&p, latency, NULL, &s);
    peer_row(&p, "tagged latency 8B one-way", NAN, "ns", &s, "MPI_Send/Recv ping-pong / 2");
    len = 0;
    peer_measure(&p, stream, &len, &s);
    peer_row(&p, "tagged message rate 8B", NAN, "M/s", &s, "window 64 Isend/Irecv");
    for (int i = 0; i < 4; i++) {
        len = sizes[i];
        peer_measure(&p, stream, &len, &s);
        peer_row(&p, "tagged bandwidth", (double)len, "MB/s", &s, "window of Isend/Irecv");
    }
    static const size_t big[] = {16385, 65536, 1u << 20, 4u << 20, 16u << 20};
    for (int i = 0; i < 5; i++) {
        len = big[i];
        peer_measure(&p, stream, &len, &s);
        to_ns_per_byte(&s);
        peer_row(&p, "large AM placed", (double)len, "ns/B", &s, "Isend/Irecv stream, posted buffer");
    }
    static const size_t ov[] = {65536, 1u << 20, 4u << 20, 16u << 20};
    for (int i = 0; i < 4; i++) {
        len = ov[i];
        peer_measure(&p, overlap, &len, &s);
        peer_row(&p, "overlap message", (double)len, "frac", &s, "MPI_Isend + compute + MPI_Wait");
    }
    void *base;
    MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_lock_all(0, win);
    peer_measure(&p, put_flush, NULL, &s);
    peer_row(&p, "put 8B + flush", NAN, "ns", &s, "MPI_Put + MPI_Win_flush");
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    if (line != NULL) {
        peer_placement(&p, line, "end");
        MPI_Win_free(&line_win);
    }
    MPI_Comm_free(&node);
    int rc = peer_emit(&p);
    rqb_report_free(&p.rep);
    free(buf);
    MPI_Finalize();
    return rc;
}
