/* peer.c - see peer.h. */
#define _GNU_SOURCE
#include "peer.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t peer_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int peer_args(struct peer *p, int argc, char **argv)
{
    p->min_reps = 5;
    p->max_reps = 200;
    p->budget_s = 2.0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--emit") == 0 && i + 1 < argc) {
            p->emit = argv[++i];
        } else if (strcmp(argv[i], "--quick") == 0) {
            p->min_reps = 3;
            p->budget_s = 0.3;
        } else if (strcmp(argv[i], "--smoke") == 0) {
            p->min_reps = 2;
            p->max_reps = 3;
            p->budget_s = 0.05;
        } else {
            fprintf(stderr, "usage: %s [--emit FILE.csv] [--quick|--smoke]\n", argv[0]);
            return -1;
        }
    }
    return 0;
}

void peer_measure(struct peer *p, double (*fn)(struct peer *, void *), void *arg,
                  struct rqb_summary *s)
{
    const struct rqb_rule rule = {p->min_reps, p->max_reps, p->budget_s, 0.05};
    double v[RQB_MAX_SAMPLES];
    int n = 0;
    fn(p, arg); /* warm-up */
    uint64_t t0 = peer_now_ns();
    for (;;) {
        double x = fn(p, arg);
        int64_t stop = 0;
        if (p->me == 0) {
            stop = rqb_sample_and_decide(v, &n, x, (double)(peer_now_ns() - t0) * 1e-9, &rule, s);
        }
        p->bcast(p, &stop);
        if (stop)
            break;
    }
}

void peer_row(struct peer *p, const char *name, double param, const char *unit,
              const struct rqb_summary *s, const char *note)
{
    if (p->me == 0)
        rqb_report_add(&p->rep, "compare", p->impl, name, param, unit, s, note);
}

int peer_emit(struct peer *p)
{
    if (p->me != 0)
        return 0;
    if (p->emit != NULL)
        return rqb_report_csv(p->emit, &p->rep) == 0 ? 0 : 1;
    rqb_report_text(stdout, &p->rep);
    return 0;
}

/* One bounce run: rank 0 stores odd values, rank 1 answers with the next
 * even one; the values go on from run to run (both ranks count alike). */
struct line_arg {
    _Atomic uint64_t *x;
    uint64_t          next;
    long              iters;
};

static void relax(unsigned *spins)
{
    if (++*spins > 4096) { /* the other process may share our CPU */
        *spins = 0;
        sched_yield();
    } else {
        __builtin_ia32_pause();
    }
}

static double line_once(struct peer *p, void *arg)
{
    struct line_arg *a = arg;
    const uint64_t base = a->next;
    unsigned sp = 0;
    a->next += 2 * (uint64_t)a->iters;
    if (p->me == 0) {
        uint64_t t0 = peer_now_ns();
        for (long i = 0; i < a->iters; i++) {
            atomic_store_explicit(a->x, base + 2 * (uint64_t)i + 1, memory_order_release);
            while (atomic_load_explicit(a->x, memory_order_acquire) != base + 2 * (uint64_t)i + 2)
                relax(&sp);
        }
        return (double)(peer_now_ns() - t0) / (double)a->iters / 2.0;
    }
    for (long i = 0; i < a->iters; i++) {
        while (atomic_load_explicit(a->x, memory_order_acquire) != base + 2 * (uint64_t)i + 1)
            relax(&sp);
        atomic_store_explicit(a->x, base + 2 * (uint64_t)i + 2, memory_order_release);
    }
    return 0;
}

void peer_placement(struct peer *p, _Atomic uint64_t *x, const char *when)
{
    /* Where the values go on from: rank 0's view of x, given to both
     * before either stores. */
    int64_t from = (int64_t)atomic_load_explicit(x, memory_order_acquire);
    p->bcast(p, &from);
    struct line_arg a = {x, (uint64_t)from,
                         p->budget_s < 0.1 ? 500 : p->budget_s < 1 ? 5000 : 20000};
    struct rqb_summary s;
    peer_measure(p, line_once, &a, &s);
    char name[64];
    snprintf(name, sizeof name, "%s, %s", PEER_PLACEMENT_ROW, when);
    peer_row(p, name, NAN, "ns", &s, "one line bounced between the peer's two processes");
}

