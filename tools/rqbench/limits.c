/* limits.c - the physical limits every figure is judged against, measured
 * between the same two cores in the same run: the one-way latency of a
 * cache line moving between them (L), one line per direction, the rate of
 * a bare single-producer/single-consumer ring of 64-byte slots (no librq
 * code), and single-core memcpy bandwidth.  Scratch memory: the start of
 * rank 0's segment (below RQB_DATA_OFF). */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Spin politely: after many pauses the peer is probably descheduled
 * (more ranks than cores), so give it the CPU. */
static inline void relax(unsigned *spins)
{
    if (++*spins > 4096) {
        *spins = 0;
        sched_yield();
    } else {
        __builtin_ia32_pause();
    }
}

static char *scratch(rq_ctx_t *ctx) { return rq_segment_peer(ctx, 0); }

double rqb_cacheline_oneway_ns(struct rqb *b, long iters)
{
    rq_ctx_t *ctx = b->ctx;
    unsigned sp = 0;
    _Atomic uint64_t *x = (_Atomic uint64_t *)scratch(ctx);
    int me = rq_rank(ctx);
    if (me == 0)
        atomic_store(x, 0);
    rq_barrier(ctx);
    double r = 0;
    if (me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (long i = 0; i < iters; i++) {
            atomic_store_explicit(x, 2 * (uint64_t)i + 1, memory_order_release);
            while (atomic_load_explicit(x, memory_order_acquire) != 2 * (uint64_t)i + 2)
                relax(&sp);
        }
        r = rqb_elapsed_ns(t0) / (double)iters / 2.0;
    } else if (me == 1) {
        for (long i = 0; i < iters; i++) {
            while (atomic_load_explicit(x, memory_order_acquire) != 2 * (uint64_t)i + 1)
                relax(&sp);
            atomic_store_explicit(x, 2 * (uint64_t)i + 2, memory_order_release);
        }
    }
    rq_barrier(ctx);
    return r;
}

double rqb_twoline_oneway_ns(struct rqb *bench, long iters)
{
    rq_ctx_t *ctx = bench->ctx;
    unsigned sp = 0;
    /* One line per direction, as any pair of queues needs: rank 0 writes
     * line x and waits on line y; rank 1 the reverse. */
    _Atomic uint64_t *x = (_Atomic uint64_t *)(scratch(ctx) + 256);
    _Atomic uint64_t *y = (_Atomic uint64_t *)(scratch(ctx) + 384);
    int me = rq_rank(ctx);
    if (me == 0) {
        atomic_store(x, 0);
        atomic_store(y, 0);
    }
    rq_barrier(ctx);
    double r = 0;
    if (me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
            atomic_store_explicit(x, i, memory_order_release);
            while (atomic_load_explicit(y, memory_order_acquire) != i)
                relax(&sp);
        }
        r = rqb_elapsed_ns(t0) / (double)iters / 2.0;
    } else if (me == 1) {
        for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
            while (atomic_load_explicit(x, memory_order_acquire) != i)
                relax(&sp);
            atomic_store_explicit(y, i, memory_order_release);
        }
    }
    rq_barrier(ctx);
    return r;
}

#define RING_SLOTS 4096u
struct raw_slot { _Atomic uint64_t seq; uint64_t payload[7]; };

double rqb_raw_ring_rate(struct rqb *b, long n)
{
    rq_ctx_t *ctx = b->ctx;
    unsigned sp = 0;
    char *base = scratch(ctx);
    _Atomic uint64_t *head = (_Atomic uint64_t *)(base + 64);
    _Atomic uint64_t *done = (_Atomic uint64_t *)(base + 128);
    struct raw_slot *ring = (struct raw_slot *)(base + 4096);
    int me = rq_rank(ctx);
    if (me == 0) {
        memset(ring, 0, RING_SLOTS * sizeof *ring);
        atomic_store(head, 0);
        atomic_store(done, 0);
    }
    rq_barrier(ctx);
    double r = 0;
    if (me == 0) {
        uint64_t t0 = rqb_now_ns(), cached = 0;
        for (uint64_t i = 0; i < (uint64_t)n; i++) {
            while (i - cached >= RING_SLOTS) {
                cached = atomic_load_explicit(head, memory_order_acquire);
                relax(&sp);
            }
            struct raw_slot *s = &ring[i & (RING_SLOTS - 1)];
            s->payload[0] = i;
            atomic_store_explicit(&s->seq, i + 1, memory_order_release);
        }
        while (atomic_load_explicit(done, memory_order_acquire) == 0)
            relax(&sp);
        r = (double)n / (rqb_elapsed_ns(t0) * 1e-9);
    } else if (me == 1) {
        uint64_t sum = 0;
        for (uint64_t i = 0; i < (uint64_t)n; i++) {
            struct raw_slot *s = &ring[i & (RING_SLOTS - 1)];
            while (atomic_load_explicit(&s->seq, memory_order_acquire) != i + 1)
                relax(&sp);
            sum += s->payload[0];
            if (((i + 1) & (RING_SLOTS / 8 - 1)) == 0)
                atomic_store_explicit(head, i + 1, memory_order_release);
        }
        atomic_store_explicit(done, sum | 1, memory_order_release);
    }
    rq_barrier(ctx);
    return r;
}

/* Single-core memcpy bandwidth (MB/s) between two private buffers of
 * *arg bytes, on rank 0; the others wait in the broadcast that follows. */
double rqb_memcpy_bw(struct rqb *b, void *arg)
{
    size_t len = *(const size_t *)arg;
    if (b->me != 0)
        return 0;
    static char *src, *dst;
    static size_t have;
    if (have < len) {
        free(src);
        free(dst);
        src = malloc(len);
        dst = malloc(len);
        if (src == NULL || dst == NULL) {
            free(src);
            free(dst);
            src = dst = NULL;
            have = 0;
            return NAN;
        }
        memset(src, 1, len);
        memset(dst, 2, len);
        have = len;
    }
    int rounds = len >= (8u << 20) ? 2 : (int)((16u << 20) / len);
    uint64_t t0 = rqb_now_ns();
    for (int i = 0; i < rounds; i++) {
        memcpy(dst, src, len);
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
    return (double)len * rounds / rqb_elapsed_ns(t0) * 1e3;
}

struct lim_arg { double (*fn)(struct rqb *, long); long iters; };

static double lim_call(struct rqb *b, void *arg)
{
    const struct lim_arg *a = arg;
    return a->fn(b, a->iters);
}

static long line_iters(const struct rqb *b)
{
    return b->o.smoke ? 500 : b->o.quick ? 5000 : 20000;
}

int rqb_pair_shares_memory(struct rqb *b)
{
    uint64_t apart = b->me < 2 && rq_segment_peer(b->ctx, 1 - b->me) == NULL, any;
    rq_allreduce(b->ctx, &apart, &any, 1, RQ_UINT64, RQ_MAX);
    return any == 0;
}

void rqb_line_measure(struct rqb *b, const char *what, struct rqb_summary *L)
{
    struct lim_arg a = {rqb_cacheline_oneway_ns, line_iters(b)};
    rqb_measure(b, what, lim_call, &a, L);
}

/* The limits rows (family "limits", impl "limit"); also sets the run's
 * placement from L.  full: add the two-line, raw ring and 16 MiB rows. */
void rqb_limits(struct rqb *b, int full)
{
    /* Ranks 0 and 1 on different nodes (mpirun across nodes): no shared
     * line to bounce; the network peers of --compare are the reference. */
    if (!rqb_pair_shares_memory(b)) {
        b->rep.line_ns = NAN;
        snprintf(b->rep.placement, sizeof b->rep.placement, "%s", "nodes");
        return;
    }
    const char *fam = b->family;
    b->family = "limits";
    long it = line_iters(b);
    struct rqb_summary L, s;
    struct lim_arg a = {rqb_cacheline_oneway_ns, it};
    rqb_line_measure(b, "cache-line one-way", &L);
    if (b->me == 0) {
        rqb_report_add(&b->rep, "limits", "limit", "cache-line one-way latency L", NAN, "ns", &L,
                       "one line bounced between ranks 0 and 1");
        b->rep.line_ns = L.median;
        snprintf(b->rep.placement, sizeof b->rep.placement, "%s",
                 L.median < 100 ? "near" : "far");
    }
    if (full) {
        a.fn = rqb_twoline_oneway_ns;
        rqb_measure(b, "two-line one-way", lim_call, &a, &s);
        if (b->me == 0)
            rqb_report_add(&b->rep, "limits", "limit", "two-line one-way latency", NAN, "ns", &s,
                           "one line per direction: the floor of any pair of queues");
        a.fn = rqb_raw_ring_rate;
        a.iters = it * 50;
        rqb_measure(b, "raw ring", lim_call, &a, &s);
        if (b->me == 0) {
            s.median /= 1e6; s.min /= 1e6; s.max /= 1e6; s.ci_lo /= 1e6; s.ci_hi /= 1e6;
            rqb_report_add(&b->rep, "limits", "limit", "raw SPSC ring, 64-byte slots", NAN,
                           "M/s", &s, "no librq code");
        }
    }
    /* The compare family's bandwidth sizes, so each has its own limit. */
    static const size_t sizes[] = {1u << 20, 4u << 10, 64u << 10, 16u << 20};
    for (int i = 0; i < (full ? 4 : 1); i++) {
        rqb_measure(b, "memcpy", rqb_memcpy_bw, (void *)&sizes[i], &s);
        if (b->me == 0)
            rqb_report_add(&b->rep, "limits", "limit", "memcpy bandwidth, one core",
                           (double)sizes[i], "MB/s", &s, "private buffers on rank 0");
    }
    b->family = fam;
}
