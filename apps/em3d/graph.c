/* graph.c - em3d's graph, update and serial check (see graph.h). */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define EM_MAX_N      (1ull << 26)
#define EM_MAX_DEGREE 64u

int em_parse(int argc, char **argv, struct em_args *a, char *err, size_t errlen)
{
    const char *reps = rqa_take_opt(&argc, argv, "reps");
    uint64_t n, d, it, r = 3;
    double f;
    if (argc != 5) {
        snprintf(err, errlen, "Usage: %s [--variant V] [--reps R] <nodes per rank> <degree> "
                 "<remote fraction> <iterations>", argv[0]);
        return -1;
    }
    if (reps != NULL && (rqa_parse_u64(reps, &r) != 0 || r < 1 || r > 1000)) {
        snprintf(err, errlen, "ERROR: --reps must be a number in 1..1000 : %s", reps);
        return -1;
    }
    if (rqa_parse_u64(argv[1], &n) != 0 || n < 1 || n > EM_MAX_N) {
        snprintf(err, errlen, "ERROR: nodes per rank must be a number in 1..%llu : %s",
                 EM_MAX_N, argv[1]);
        return -1;
    }
    if (rqa_parse_u64(argv[2], &d) != 0 || d < 1 || d > EM_MAX_DEGREE) {
        snprintf(err, errlen, "ERROR: degree must be a number in 1..%u : %s", EM_MAX_DEGREE,
                 argv[2]);
        return -1;
    }
    if (rqa_parse_double(argv[3], &f) != 0 || !(f >= 0.0 && f <= 1.0)) {
        snprintf(err, errlen, "ERROR: remote fraction must be a number in [0, 1] : %s", argv[3]);
        return -1;
    }
    if (rqa_parse_u64(argv[4], &it) != 0 || it < 1 || it > 1000000) {
        snprintf(err, errlen, "ERROR: iterations must be a number in 1..1000000 : %s", argv[4]);
        return -1;
    }
    a->n = n;
    a->degree = (unsigned)d;
    a->remote = f;
    a->iters = (unsigned)it;
    a->reps = (int)r;
    return 0;
}

/* The edges of rank r's nodes of `kind`: owner rank, index there, weight. */
static void gen_edges(const struct em_args *a, int r, int np, int kind, uint32_t *owner,
                      uint32_t *idx, double *w)
{
    uint64_t s = 0xe3d00000ull + 2 * (uint64_t)r + (uint64_t)kind;
    const unsigned d = a->degree;
    for (uint64_t i = 0; i < a->n; i++) {
        double sum = 0;
        for (unsigned j = 0; j < d; j++) {
            const uint64_t e = i * d + j;
            const int far = np > 1 && rqa_uniform(&s) < a->remote;
            owner[e] = far ? (uint32_t)((r + 1 + (int)(rqa_splitmix(&s) % (uint64_t)(np - 1))) % np)
                           : (uint32_t)r;
            idx[e] = (uint32_t)(rqa_splitmix(&s) % a->n);
            w[e] = 0.25 + rqa_uniform(&s);
            sum += w[e];
        }
        for (unsigned j = 0; j < d; j++)
            w[i * d + j] *= 0.5 / sum;
    }
}

double em_initial(int r, int kind, uint64_t i)
{
    uint64_t s = ((uint64_t)r << 40) ^ ((uint64_t)kind << 39) ^ i;
    return 2.0 * rqa_uniform(&s) - 1.0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

int em_part_build(const struct em_args *a, int me, int np, int kind, struct em_part *p)
{
    const uint64_t ne = a->n * a->degree;
    memset(p, 0, sizeof *p);
    p->n = a->n;
    p->d = a->degree;
    uint32_t *owner = malloc(ne * sizeof *owner);
    uint64_t *keys = malloc(ne * sizeof *keys);
    p->ref = malloc(ne * sizeof *p->ref);
    p->w = malloc(ne * sizeof *p->w);
    p->gstart = calloc((size_t)np + 1, sizeof *p->gstart);
    if (owner == NULL || keys == NULL || p->ref == NULL || p->w == NULL || p->gstart == NULL)
        goto oom;
    gen_edges(a, me, np, kind, owner, p->ref, p->w);
    /* The distinct remote nodes, by (owner, index): the ghosts. */
    uint64_t nk = 0;
    for (uint64_t e = 0; e < ne; e++)
        if ((int)owner[e] != me)
            keys[nk++] = (uint64_t)owner[e] << 32 | p->ref[e];
    qsort(keys, nk, sizeof *keys, cmp_u64);
    uint64_t ng = 0;
    for (uint64_t k = 0; k < nk; k++)
        if (ng == 0 || keys[k] != keys[ng - 1])
            keys[ng++] = keys[k];
    p->ng = ng;
    p->gidx = malloc((ng ? ng : 1) * sizeof *p->gidx);
    if (p->gidx == NULL)
        goto oom;
    for (uint64_t g = 0; g < ng; g++) {
        p->gidx[g] = (uint32_t)keys[g];
        p->gstart[(keys[g] >> 32) + 1]++;
    }
    for (int o = 0; o < np; o++)
        p->gstart[o + 1] += p->gstart[o];
    /* Each remote edge points at its ghost, after the n local values. */
    for (uint64_t e = 0; e < ne; e++) {
        if ((int)owner[e] == me)
            continue;
        const uint64_t key = (uint64_t)owner[e] << 32 | p->ref[e];
        uint64_t lo = 0, hi = ng;
        while (hi - lo > 1) {
            const uint64_t mid = (lo + hi) / 2;
            if (keys[mid] <= key)
                lo = mid;
            else
                hi = mid;
        }
        p->ref[e] = (uint32_t)(a->n + lo);
    }
    free(owner);
    free(keys);
    return 0;
oom:
    free(owner);
    free(keys);
    em_part_free(p);
    return -1;
}

void em_part_free(struct em_part *p)
{
    free(p->ref);
    free(p->w);
    free(p->gidx);
    free(p->gstart);
    memset(p, 0, sizeof *p);
}

void em_update(const struct em_part *p, const double *other, double *mine)
{
    em_update_range(p, other, mine, 0, p->n);
}

void em_update_range(const struct em_part *p, const double *other, double *mine, uint64_t lo,
                     uint64_t hi)
{
    const unsigned d = p->d;
    const uint32_t *ref = p->ref + lo * d;
    const double *w = p->w + lo * d;
    for (uint64_t i = lo; i < hi; i++, ref += d, w += d) {
        double acc = 0;
        for (unsigned j = 0; j < d; j++)
            acc += w[j] * other[ref[j]];
        mine[i] = 0.5 * mine[i] + acc;
    }
}

int em_serial(const struct em_args *a, int np, double *E, double *H)
{
    const uint64_t n = a->n, ne = n * a->degree, tot = (uint64_t)np * n;
    uint64_t *g[2] = {malloc(tot * a->degree * sizeof(uint64_t)),
                      malloc(tot * a->degree * sizeof(uint64_t))};
    double *w[2] = {malloc(tot * a->degree * sizeof(double)),
                    malloc(tot * a->degree * sizeof(double))};
    uint32_t *owner = malloc(ne * sizeof *owner), *idx = malloc(ne * sizeof *idx);
    int rc = -1;
    if (g[0] == NULL || g[1] == NULL || w[0] == NULL || w[1] == NULL || owner == NULL ||
        idx == NULL)
        goto out;
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < np; r++) {
            gen_edges(a, r, np, k, owner, idx, w[k] + (uint64_t)r * ne);
            for (uint64_t e = 0; e < ne; e++)
                g[k][(uint64_t)r * ne + e] = (uint64_t)owner[e] * n + idx[e];
        }
    for (int r = 0; r < np; r++)
        for (uint64_t i = 0; i < n; i++) {
            E[(uint64_t)r * n + i] = em_initial(r, EM_E, i);
            H[(uint64_t)r * n + i] = em_initial(r, EM_H, i);
        }
    double *val[2] = {E, H};
    for (unsigned it = 0; it < a->iters; it++)
        for (int k = 0; k < 2; k++) {
            const uint64_t *ref = g[k];
            const double *wk = w[k], *other = val[k ^ 1];
            double *mine = val[k];
            for (uint64_t i = 0; i < tot; i++, ref += a->degree, wk += a->degree) {
                double acc = 0;
                for (unsigned j = 0; j < a->degree; j++)
                    acc += wk[j] * other[ref[j]];
                mine[i] = 0.5 * mine[i] + acc;
            }
        }
    rc = 0;
out:
    free(g[0]);
    free(g[1]);
    free(w[0]);
    free(w[1]);
    free(owner);
    free(idx);
    return rc;
}

double em_max_error(const double *got, const double *want, uint64_t n)
{
    double m = 0;
    for (uint64_t i = 0; i < n; i++) {
        const double e = fabs(got[i] - want[i]);
        if (!(e <= m)) /* NaN counts as the largest */
            m = isnan(e) ? INFINITY : e;
    }
    return m;
}

int em_result(const char *prog, double err, int np, const struct em_args *a, double t)
{
    if (!(err <= 1e-12)) {
        printf("ERROR: the field values differ from the serial relaxation by %g\n", err);
        return 1;
    }
    printf("Solution validates\n");
    const double edges = 2.0 * (double)a->n * a->degree * np * a->iters;
    printf("%s: ranks=%d nodes_per_rank=%llu degree=%u remote=%g iterations=%u time_s=%.6f "
           "ns_per_edge=%.3f\n", prog, np, (unsigned long long)a->n, a->degree, a->remote,
           a->iters, t, 1e9 * t * np / edges);
    return 0;
}
