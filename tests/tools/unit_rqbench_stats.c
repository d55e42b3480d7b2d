/* unit_rqbench_stats - rqbench's statistics and report code on synthetic
 * data whose answers are known: medians, the order-statistic confidence
 * interval of the median (textbook ranks), the stopping rule, least-squares
 * fits, curve intersections, and a CSV write/read round trip. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "report.h"
#include "stats.h"

#define NEAR(a, b, eps) CHECK(fabs((a) - (b)) <= (eps))

static void medians_and_ci(void)
{
    double v[20];
    struct rqb_summary s;
    rqb_summarize(NULL, 0, 0.9, &s);
    CHECK(s.n == 0 && isnan(s.median));

    const double odd[] = {5, 1, 4, 2, 3};
    rqb_summarize(odd, 5, 0.9, &s);
    NEAR(s.median, 3, 0);
    NEAR(s.min, 1, 0);
    NEAR(s.max, 5, 0);
    NEAR(s.mean, 3, 1e-12);
    NEAR(s.sd, sqrt(2.5), 1e-12);
    const double even[] = {4, 1, 3, 2};
    rqb_summarize(even, 4, 0.9, &s);
    NEAR(s.median, 2.5, 0);

    /* Binomial(n, 1/2) ranks of the 90% interval: n=5 -> 1..5, n=10 ->
     * 2..9, n=20 -> 6..15 (standard tables); n=4 is too small. */
    int lo, hi;
    CHECK(rqb_median_ci_ranks(4, 0.9, &lo, &hi) == -1);
    CHECK(rqb_median_ci_ranks(5, 0.9, &lo, &hi) == 0 && lo == 1 && hi == 5);
    CHECK(rqb_median_ci_ranks(10, 0.9, &lo, &hi) == 0 && lo == 2 && hi == 9);
    CHECK(rqb_median_ci_ranks(20, 0.9, &lo, &hi) == 0 && lo == 6 && hi == 15);
    CHECK(rqb_median_ci_ranks(20, 0.95, &lo, &hi) == 0 && lo == 6 && hi == 15);
    CHECK(rqb_median_ci_ranks(10, 0.95, &lo, &hi) == 0 && lo == 2 && hi == 9);
    CHECK(rqb_median_ci_ranks(200, 0.9, &lo, &hi) == 0 && hi == 201 - lo && lo > 80 && lo < 100);

    for (int i = 0; i < 20; i++)
        v[i] = 100 + i; /* sorted: x(6) = 105, x(15) = 114 */
    rqb_summarize(v, 20, 0.9, &s);
    NEAR(s.ci_lo, 105, 0);
    NEAR(s.ci_hi, 114, 0);
    NEAR(s.median, 109.5, 0);
    CHECK(!rqb_converged(&s, 0.04)); /* 109.5 - 105 = 4.1% */
    CHECK(rqb_converged(&s, 0.05));
    rqb_summarize(v, 4, 0.9, &s);
    CHECK(isinf(s.ci_lo) && !rqb_converged(&s, 0.5));
}

/* The stopping rule: never before min_reps, at once at max_reps, and in
 * between on convergence or on the budget. */
static void stopping_rule(void)
{
    const struct rqb_rule r = {5, 8, 1.0, 0.05};
    double v[RQB_MAX_SAMPLES];
    struct rqb_summary s;
    int n = 0;
    for (int i = 0; i < 4; i++)
        CHECK(!rqb_sample_and_decide(v, &n, 100, 99.0, &r, &s)); /* below min_reps */
    CHECK(rqb_sample_and_decide(v, &n, 100, 0.0, &r, &s));      /* 5 equal: converged */
    n = 0;
    const double noisy[] = {100, 300, 50, 400, 10, 250, 60};
    for (int i = 0; i < 7; i++)
        CHECK(!rqb_sample_and_decide(v, &n, noisy[i], 0.0, &r, &s));
    CHECK(rqb_sample_and_decide(v, &n, 70, 0.0, &r, &s)); /* max_reps */
    CHECK_EQ(n, 8);
    n = 0;
    for (int i = 0; i < 4; i++)
        rqb_sample_and_decide(v, &n, noisy[i], 0.0, &r, &s);
    CHECK(rqb_sample_and_decide(v, &n, noisy[4], 2.0, &r, &s)); /* budget spent */
}

static void fits(void)
{
    double x[8], y[8], c, b, r2;
    for (int i = 0; i < 8; i++) {
        x[i] = 1 << (3 * i);
        y[i] = 250 + 0.1 * x[i];
    }
    CHECK(rqb_linfit(x, y, 8, &c, &b, &r2) == 0);
    NEAR(c, 250, 1e-6);
    NEAR(b, 0.1, 1e-12);
    NEAR(r2, 1, 1e-12);
    /* symmetric noise of +-1 around y = 2x + 1 leaves the fit in place */
    double xs[] = {0, 0, 1, 1, 2, 2}, ys[] = {0, 2, 2, 4, 4, 6};
    CHECK(rqb_linfit(xs, ys, 6, &c, &b, &r2) == 0);
    NEAR(c, 1, 1e-12);
    NEAR(b, 2, 1e-12);
    CHECK(r2 < 1 && r2 > 0.5);
    CHECK(rqb_linfit(xs, ys, 1, &c, &b, &r2) == -1);
    double same[] = {3, 3, 3};
    CHECK(rqb_linfit(same, ys, 3, &c, &b, NULL) == -1);

    /* per message rises, per poll falls: they cross at x = 150, y = 150 */
    double d[] = {0, 100, 200, 300}, msg[] = {50, 100, 200, 300}, poll[] = {400, 200, 100, 50};
    double xi, yi;
    CHECK(rqb_intersect(d, msg, poll, 4, &xi, &yi) == 0);
    NEAR(xi, 150, 1e-9);
    NEAR(yi, 150, 1e-9);
    double never[] = {500, 600, 700, 800};
    CHECK(rqb_intersect(d, msg, never, 4, &xi, &yi) == -1);
}

static void csv_round_trip(void)
{
    struct rqb_report r = {0}, back = {0};
    r.tsc_ghz = 2.0;
    const double v[] = {10, 11, 12, 13, 14};
    struct rqb_summary s;
    rqb_summarize(v, 5, 0.9, &s);
    CHECK(rqb_report_add(&r, "am", "librq", "one-to-one (gap g)", NAN, "ns", &s, "plain") != NULL);
    CHECK(rqb_report_add(&r, "xfer", "librq", "swap, double-word", 4096, "ns", &s,
                         "quoted, \"note\" with commas") != NULL);
    rqb_report_na(&r, "splitc", "librq", "gap: get", NAN, "ns", "needs 3 ranks");
    CHECK(r.rows[0].cycles == 24); /* median 12 ns at 2 GHz */
    char path[] = "/tmp/rqbench_csv_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(rqb_report_csv(path, &r) == 0);
    CHECK(rqb_report_read_csv(path, &back) == 0);
    unlink(path);
    CHECK_EQ(back.n, 3);
    for (int i = 0; i < 3; i++) {
        CHECK(strcmp(back.rows[i].family, r.rows[i].family) == 0);
        CHECK(strcmp(back.rows[i].name, r.rows[i].name) == 0);
        CHECK(strcmp(back.rows[i].note, r.rows[i].note) == 0);
        CHECK_EQ(back.rows[i].s.n, r.rows[i].s.n);
    }
    NEAR(back.rows[1].param, 4096, 0);
    CHECK(isnan(back.rows[0].param));
    NEAR(back.rows[1].s.median, 12, 0);
    NEAR(back.rows[1].s.ci_lo, 10, 0);
    CHECK(back.rows[2].s.n == 0 && strstr(back.rows[2].note, "not available") != NULL);
    CHECK(rqb_report_find(&back, "xfer", "librq", "swap, double-word", 4096) == &back.rows[1]);
    CHECK(rqb_report_find(&back, "xfer", "mpi", "swap, double-word", 4096) == NULL);
    rqb_report_free(&r);
    rqb_report_free(&back);
}

int main(void)
{
    medians_and_ci();
    stopping_rule();
    fits();
    csv_round_trip();
    printf("unit_rqbench_stats: ok\n");
    return 0;
}
