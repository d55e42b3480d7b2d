/* overlap.h - the overlap measurement that rqbench and its peer programs
 * share (OSU's definition): t_comm, a transfer alone; t_total, the same
 * transfer started, then t_comm of computation, then its completion
 * awaited.  The fraction of the transfer hidden behind the computation is
 *   overlap = 1 - (t_total - t_comp) / t_comm, clamped to [0, 1]
 * (1: the transfer cost nothing beyond the computation; 0: it was
 * serialized with it).  The computation is floating-point work in
 * registers, so it competes for no memory bandwidth. */
#ifndef RQBENCH_OVERLAP_H
#define RQBENCH_OVERLAP_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define RQB_OVERLAP_REPS 8 /* transfers per figure, each way */

static inline uint64_t rqb_ov_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Compute for ns nanoseconds; returns the time it took. */
static inline double rqb_ov_compute(double ns)
{
    volatile double sink;
    double x = 1.0, y = 0.5;
    uint64_t t0 = rqb_ov_now_ns(), end = t0 + (uint64_t)ns;
    while (rqb_ov_now_ns() < end)
        for (int i = 0; i < 256; i++) {
            x = x * 1.0000001 + y;
            y = y * 0.9999999 - 1e-9;
        }
    sink = x + y;
    (void)sink;
    return (double)(rqb_ov_now_ns() - t0);
}

static inline int rqb_ov_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double rqb_ov_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, rqb_ov_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline double rqb_ov_fraction(double t_comm, double t_comp, double t_total)
{
    if (t_comm <= 0)
        return 0;
    double f = 1.0 - (t_total - t_comp) / t_comm;
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

#endif
