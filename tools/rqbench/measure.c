/* measure.c - the repeat-until-confident loop, the clock and its overhead,
 * and the rows rank 0 records. */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "bench.h"

static double timer_ns;

uint64_t rqb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double rqb_elapsed_ns(uint64_t t0)
{
    double d = (double)(rqb_now_ns() - t0) - timer_ns;
    return d > 0 ? d : 0;
}

/* Median over 64 trials of the shortest of 16 back-to-back reads. */
double rqb_timer_overhead_ns(void)
{
    double v[64];
    for (int t = 0; t < 64; t++) {
        uint64_t best = UINT64_MAX;
        for (int i = 0; i < 16; i++) {
            uint64_t a = rqb_now_ns(), c = rqb_now_ns();
            best = c - a < best ? c - a : best;
        }
        v[t] = (double)best;
    }
    struct rqb_summary s;
    rqb_summarize(v, 64, 0.9, &s);
    timer_ns = s.median;
    return timer_ns;
}

double rqb_tsc_ghz(void)
{
#if defined(__x86_64__) || defined(__i386__)
    uint64_t t0 = rqb_now_ns(), c0 = __rdtsc();
    while (rqb_now_ns() - t0 < 20000000)
        ;
    uint64_t t1 = rqb_now_ns(), c1 = __rdtsc();
    return (double)(c1 - c0) / (double)(t1 - t0);
#else
    return NAN;
#endif
}

void rqb_delay_ns(uint64_t ns)
{
    uint64_t t0 = rqb_now_ns();
    while (rqb_now_ns() - t0 < ns)
        ;
}

/* Register-only work: iters rounds of two dependent multiply-adds (no
 * memory traffic, no calls: time the CPU gives it, nothing else). */
static volatile double work_sink;
void rqb_work(uint64_t iters)
{
    double x = 1.0, y = 0.5;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 1.0000001 + y;
        y = y * 0.9999999 - 1e-9;
    }
    work_sink = x + y;
}

double rqb_work_ns_per_iter(void)
{
    uint64_t t0 = rqb_now_ns();
    rqb_work(1u << 22);
    return rqb_elapsed_ns(t0) / (1u << 22);
}

void rqb_measure(struct rqb *b, const char *what, rqb_fn fn, void *arg, struct rqb_summary *s)
{
    const struct rqb_rule rule = {b->o.min_reps, b->o.max_reps, b->o.budget_s, b->o.rel};
    double v[RQB_MAX_SAMPLES];
    int n = 0;
    fn(b, arg); /* warm-up: caches, pages, branch predictors; discarded */
    uint64_t t0 = rqb_now_ns();
    for (;;) {
        double x = fn(b, arg);
        int64_t stop = 0;
        if (b->me == 0) {
            stop = rqb_sample_and_decide(v, &n, x, (double)(rqb_now_ns() - t0) * 1e-9, &rule, s);
            if (b->progress)
                fprintf(stderr, "\rrqbench %s: %-40.40s rep %3d", b->family, what, n);
        }
        rq_broadcast(b->ctx, 0, &stop, sizeof stop);
        if (stop)
            break;
    }
    if (b->me == 0 && b->progress)
        fprintf(stderr, "\r%78s\r", "");
    /* Every rank gets rank 0's summary: a family that branches on it (large
     * skips a size whose median is NaN) must branch alike everywhere, or
     * the ranks' barriers and collectives pair up wrongly; other ranks'
     * copies were uninitialized. */
    rq_broadcast(b->ctx, 0, s, sizeof *s);
}

void rqb_row(struct rqb *b, const char *name, double param, const char *unit,
             const struct rqb_summary *s, const char *note)
{
    char buf[sizeof b->rep.rows->note];
    if (b->me == 0)
        rqb_report_add(&b->rep, b->family, "librq", name, param, unit, s,
                       rqb_paper_note(b->family, name, note, buf, sizeof buf));
}

void rqb_row_na(struct rqb *b, const char *name, double param, const char *unit, const char *why)
{
    if (b->me == 0)
        rqb_report_na(&b->rep, b->family, "librq", name, param, unit, why);
}

void rqb_row_derived(struct rqb *b, const char *name, double param, const char *unit, double v,
                     const char *note)
{
    if (b->me != 0)
        return;
    if (!isfinite(v)) { /* e.g. a fit whose slope came out negative */
        rqb_report_na(&b->rep, b->family, "librq", name, param, unit, "fit undefined");
        return;
    }
    struct rqb_summary s;
    rqb_summarize(&v, 1, 0.9, &s);
    s.min = s.max = NAN;
    char buf[sizeof b->rep.rows->note];
    rqb_report_add(&b->rep, b->family, "librq", name, param, unit, &s,
                   rqb_paper_note(b->family, name, note, buf, sizeof buf));
}

double rqb_from(struct rqb *b, int r, double v)
{
    double in = b->me == r ? v : -INFINITY, out = 0;
    rq_allreduce(b->ctx, &in, &out, 1, RQ_DOUBLE, RQ_MAX);
    return out;
}

double rqb_mean(struct rqb *b, double v)
{
    double out = 0;
    rq_allreduce(b->ctx, &v, &out, 1, RQ_DOUBLE, RQ_SUM);
    return out / b->np;
}

volatile uint64_t *rqb_flag(struct rqb *b, int i)
{
    return (volatile uint64_t *)((char *)rq_segment_peer(b->ctx, 0) + RQB_FLAG_OFF + 64 * i);
}

void rqb_spin_until(const volatile uint64_t *w, uint64_t v)
{
    for (unsigned spins = 0; __atomic_load_n(w, __ATOMIC_ACQUIRE) < v; spins++) {
        if (spins > 4096)
            sched_yield(); /* the other side may share this core */
        else
            __builtin_ia32_pause();
    }
}

double rqb_fill_then_drain(struct rqb *b, unsigned tag, int k, const volatile uint64_t *counter,
                           uint64_t *due, int side)
{
    volatile uint64_t *phase = rqb_flag(b, 0);
    static uint64_t round;
    double r = 0;
    uint64_t x = 1;
    rq_barrier(b->ctx);
    round++;
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < k; i++)
            rq_request(b->ctx, 1, tag, &x, 1, NULL, 0, 0);
        r = rqb_elapsed_ns(t0) / k;
        __atomic_store_n(phase, round, __ATOMIC_RELEASE);
    } else if (b->me == 1) {
        rqb_spin_until(phase, round);
        *due += (uint64_t)k;
        uint64_t t0 = rqb_now_ns();
        while (*counter < *due)
            rq_poll(b->ctx);
        r = rqb_elapsed_ns(t0) / k;
    }
    return rqb_from(b, side, r);
}
