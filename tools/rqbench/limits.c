/* limits.c - the physical limits every figure is judged against, measured
 * between the same two cores in the same run: the one-way latency of a
 * cache line moving between them (L), and the rate of a bare single-
 * producer/single-consumer ring of 64-byte slots (no librq code). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "bench.h"

static inline void relax(void) { __builtin_ia32_pause(); }

static char *scratch(rq_ctx_t *ctx) { return rq_segment_peer(ctx, 0); }

double rqb_cacheline_oneway_ns(rq_ctx_t *ctx, long iters)
{
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
                relax();
        }
        r = (double)(rqb_now_ns() - t0) / (double)iters / 2.0;
    } else if (me == 1) {
        for (long i = 0; i < iters; i++) {
            while (atomic_load_explicit(x, memory_order_acquire) != 2 * (uint64_t)i + 1)
                relax();
            atomic_store_explicit(x, 2 * (uint64_t)i + 2, memory_order_release);
        }
    }
    rq_barrier(ctx);
    return r;
}

double rqb_twoline_oneway_ns(rq_ctx_t *ctx, long iters)
{
    /* One line per direction, as any pair of queues needs: rank 0 writes
     * line a and waits on line b; rank 1 the reverse. */
    _Atomic uint64_t *a = (_Atomic uint64_t *)(scratch(ctx) + 256);
    _Atomic uint64_t *b = (_Atomic uint64_t *)(scratch(ctx) + 384);
    int me = rq_rank(ctx);
    if (me == 0) {
        atomic_store(a, 0);
        atomic_store(b, 0);
    }
    rq_barrier(ctx);
    double r = 0;
    if (me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
            atomic_store_explicit(a, i, memory_order_release);
            while (atomic_load_explicit(b, memory_order_acquire) != i)
                relax();
        }
        r = (double)(rqb_now_ns() - t0) / (double)iters / 2.0;
    } else if (me == 1) {
        for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
            while (atomic_load_explicit(a, memory_order_acquire) != i)
                relax();
            atomic_store_explicit(b, i, memory_order_release);
        }
    }
    rq_barrier(ctx);
    return r;
}

#define RING_SLOTS 4096u
struct raw_slot { _Atomic uint64_t seq; uint64_t payload[7]; };

double rqb_raw_ring_rate(rq_ctx_t *ctx, long n)
{
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
                relax();
            }
            struct raw_slot *s = &ring[i & (RING_SLOTS - 1)];
            s->payload[0] = i;
            atomic_store_explicit(&s->seq, i + 1, memory_order_release);
        }
        while (atomic_load_explicit(done, memory_order_acquire) == 0)
            relax();
        r = (double)n / ((double)(rqb_now_ns() - t0) * 1e-9);
    } else if (me == 1) {
        uint64_t sum = 0;
        for (uint64_t i = 0; i < (uint64_t)n; i++) {
            struct raw_slot *s = &ring[i & (RING_SLOTS - 1)];
            while (atomic_load_explicit(&s->seq, memory_order_acquire) != i + 1)
                relax();
            sum += s->payload[0];
            if (((i + 1) & (RING_SLOTS / 8 - 1)) == 0)
                atomic_store_explicit(head, i + 1, memory_order_release);
        }
        atomic_store_explicit(done, sum | 1, memory_order_release);
    }
    rq_barrier(ctx);
    return r;
}
