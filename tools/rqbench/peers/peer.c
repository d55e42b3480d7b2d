/* peer.c - see peer.h. */
#define _GNU_SOURCE
#include "peer.h"

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
