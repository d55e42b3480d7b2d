/* stats.c - see stats.h. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* log of C(n, i) / 2^n, the binomial(n, 1/2) probability of i. */
static double log_binom_half(int n, int i)
{
    return lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) - n * log(2.0);
}

int rqb_median_ci_ranks(int n, double conf, int *lo, int *hi)
{
    double tail = (1.0 - conf) / 2.0, cdf = 0;
    int k = 0;
    /* k = largest rank with P(B <= k-1) <= tail. */
    for (int i = 0; i < n; i++) {
        cdf += exp(log_binom_half(n, i));
        if (cdf > tail * (1 + 1e-12))
            break;
        k = i + 1;
    }
    if (k < 1 || k > n - k + 1)
        return -1;
    *lo = k;
    *hi = n - k + 1;
    return 0;
}

void rqb_summarize(const double *v, int n, double conf, struct rqb_summary *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (n <= 0) {
        s->n = 0;
        s->median = s->min = s->max = s->mean = s->sd = s->ci_lo = s->ci_hi = NAN;
        return;
    }
    double *t = malloc(sizeof(double) * (size_t)n);
    if (t == NULL) { /* fall back to the unsorted extremes only */
        s->median = s->min = s->max = s->mean = v[0];
        s->sd = 0;
        s->ci_lo = -INFINITY;
        s->ci_hi = INFINITY;
        return;
    }
    memcpy(t, v, sizeof(double) * (size_t)n);
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    s->min = t[0];
    s->max = t[n - 1];
    s->median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++)
        sum += t[i];
    s->mean = sum / n;
    for (int i = 0; i < n; i++)
        sq += (t[i] - s->mean) * (t[i] - s->mean);
    s->sd = n > 1 ? sqrt(sq / (n - 1)) : 0;
    int lo, hi;
    if (rqb_median_ci_ranks(n, conf, &lo, &hi) == 0) {
        s->ci_lo = t[lo - 1];
        s->ci_hi = t[hi - 1];
    } else {
        s->ci_lo = -INFINITY;
        s->ci_hi = INFINITY;
    }
    free(t);
}

int rqb_converged(const struct rqb_summary *s, double rel)
{
    if (s->n == 0 || !isfinite(s->ci_lo) || !isfinite(s->ci_hi))
        return 0;
    double tol = fabs(s->median) * rel;
    return s->median - s->ci_lo <= tol && s->ci_hi - s->median <= tol;
}

int rqb_sample_and_decide(double *v, int *n, double x, double spent_s, const struct rqb_rule *r,
                          struct rqb_summary *s)
{
    int max = r->max_reps < RQB_MAX_SAMPLES ? r->max_reps : RQB_MAX_SAMPLES;
    v[(*n)++] = x;
    rqb_summarize(v, *n, 0.90, s);
    return *n >= max ||
           (*n >= r->min_reps && (rqb_converged(s, r->rel) || spent_s > r->budget_s));
}

int rqb_linfit(const double *x, const double *y, int n, double *c, double *b, double *r2)
{
    if (n < 2)
        return -1;
    double mx = 0, my = 0;
    for (int i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= n;
    my /= n;
    double sxx = 0, sxy = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
        syy += (y[i] - my) * (y[i] - my);
    }
    if (sxx == 0)
        return -1;
    *b = sxy / sxx;
    *c = my - *b * mx;
    if (r2 != NULL)
        *r2 = syy == 0 ? 1.0 : (sxy * sxy) / (sxx * syy);
    return 0;
}

int rqb_intersect(const double *x, const double *y1, const double *y2, int n, double *xi,
                  double *yi)
{
    for (int i = 0; i + 1 < n; i++) {
        double d0 = y1[i] - y2[i], d1 = y1[i + 1] - y2[i + 1];
        if (d0 == 0) {
            *xi = x[i];
            *yi = y1[i];
            return 0;
        }
        if ((d0 < 0) != (d1 < 0) || d1 == 0) {
            double f = d0 / (d0 - d1);
            *xi = x[i] + f * (x[i + 1] - x[i]);
            *yi = y1[i] + f * (y1[i + 1] - y1[i]);
            return 0;
        }
    }
    return -1;
}
