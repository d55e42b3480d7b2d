/* stats.h - rqbench's statistics: summaries with a distribution-free
 * confidence interval of the median, the stopping rule of the repeat loop,
 * least-squares line fits and curve intersections.  Pure functions of their
 * inputs (no librq, no clock), so tests check them on synthetic data. */
#ifndef RQBENCH_STATS_H
#define RQBENCH_STATS_H

/* One measured quantity over n repetitions.  The confidence interval is
 * that of the median, from order statistics (binomial, no normality
 * assumption): [x(k), x(n-k+1)] with k the largest rank such that
 * P(Bin(n, 1/2) < k) <= (1 - conf) / 2.  With too few samples for the
 * requested confidence, ci_lo/ci_hi are -inf/+inf. */
struct rqb_summary {
    int    n;
    double median, min, max, mean, sd;
    double ci_lo, ci_hi;
};

/* Summarize v[0..n) at confidence conf (e.g. 0.90).  v is not modified.
 * n == 0 gives an all-NAN summary with n 0. */
void rqb_summarize(const double *v, int n, double conf, struct rqb_summary *s);

/* The 1-based order-statistic ranks [*lo, *hi] of the median's confidence
 * interval for n samples; returns 0, or -1 when n is too small. */
int rqb_median_ci_ranks(int n, double conf, int *lo, int *hi);

/* Whether the confidence interval lies within rel (e.g. 0.05) of the
 * median on both sides. */
int rqb_converged(const struct rqb_summary *s, double rel);

/* The stopping rule of every repeat loop (rqbench and its peers). */
#define RQB_MAX_SAMPLES 256
struct rqb_rule {
    int    min_reps, max_reps; /* max_reps is capped at RQB_MAX_SAMPLES */
    double budget_s;           /* stop after min_reps once this much time was spent */
    double rel;                /* stop after min_reps once the CI is within rel */
};

/* Append x to v (room for RQB_MAX_SAMPLES), summarize v into s, and return
 * whether to stop, given spent_s seconds so far. */
int rqb_sample_and_decide(double *v, int *n, double x, double spent_s, const struct rqb_rule *r,
                          struct rqb_summary *s);

/* Least-squares fit of y = c + b*x over n >= 2 points; *r2 gets the
 * coefficient of determination (may be NULL).  Returns 0, or -1 if the
 * x values are all equal or n < 2. */
int rqb_linfit(const double *x, const double *y, int n, double *c, double *b, double *r2);

/* First crossing of curves y1(x) and y2(x) sampled at the same increasing
 * x[0..n), by linear interpolation between the two samples around the
 * sign change of y1 - y2.  Returns 0 with *xi, *yi, or -1 if they do not
 * cross. */
int rqb_intersect(const double *x, const double *y1, const double *y2, int n, double *xi,
                  double *yi);

#endif
