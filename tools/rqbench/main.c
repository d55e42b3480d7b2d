/* rqbench - librq's measurement tool (LogP microbenchmarks of the seeds).
 * Run under rqrun:  rqrun -n 2 --bind core rqbench am [--quick] [--reps N]
 * Subcommands: am (short-AM latency, rate and poll cost beside the
 * physical limits).  Further families arrive with the rqbench issue. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

uint64_t rqb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rqb_add(struct rqb_sample *s, double v)
{
    if (s->n < (int)(sizeof s->v / sizeof s->v[0]))
        s->v[s->n++] = v;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rqb_median(const struct rqb_sample *s)
{
    if (s->n == 0)
        return 0;
    double t[64];
    memcpy(t, s->v, sizeof(double) * (size_t)s->n);
    qsort(t, (size_t)s->n, sizeof t[0], cmp);
    return s->n % 2 ? t[s->n / 2] : (t[s->n / 2 - 1] + t[s->n / 2]) / 2;
}

double rqb_min(const struct rqb_sample *s)
{
    double m = s->n ? s->v[0] : 0;
    for (int i = 1; i < s->n; i++)
        m = s->v[i] < m ? s->v[i] : m;
    return m;
}

double rqb_max(const struct rqb_sample *s)
{
    double m = s->n ? s->v[0] : 0;
    for (int i = 1; i < s->n; i++)
        m = s->v[i] > m ? s->v[i] : m;
    return m;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rqrun -n 2 --bind core rqbench SUBCOMMAND [--quick] [--reps N]\n"
        "subcommands:\n"
        "  am   short active messages between ranks 0 and 1: one-way latency\n"
        "       (round trip / 2 over 200k trips), streaming rate (2M 1-argument\n"
        "       AMs, acknowledged), unsuccessful rq_poll cost (10M calls); beside\n"
        "       the cache-line one-way latency L (one line bounced), the two-line\n"
        "       one-way latency (one line per direction, the floor of any pair of\n"
        "       queues) and a raw SPSC ring of 64-byte slots, measured between\n"
        "       the same cores in the same run.\n"
        "options:\n"
        "  --reps N  repetitions (default 7; the median is reported)\n"
        "  --quick   3 repetitions of shorter runs (a few seconds)\n");
}

int main(int argc, char **argv)
{
    struct rqb_opts o = {.reps = 7, .iters = 200000, .msgs = 2000000, .quick = 0};
    const char *sub = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            o.quick = 1;
            o.reps = 3;
            o.iters = 50000;
            o.msgs = 1000000;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            o.reps = atoi(argv[++i]);
            if (o.reps < 1 || o.reps > 64) {
                fprintf(stderr, "rqbench: --reps takes 1..64\n");
                return 2;
            }
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (sub == NULL && argv[i][0] != '-') {
            sub = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (sub == NULL || strcmp(sub, "am") != 0) {
        usage(stderr);
        return 2;
    }
    rq_ctx_t *ctx;
    int rc = rq_init(&argc, &argv, &ctx);
    if (rc != 0) {
        fprintf(stderr, "rqbench: rq_init: %s\n", rq_strerror(rc));
        return 1;
    }
    rc = rqb_am(ctx, &o);
    rq_finalize(ctx);
    return rc;
}
