/* pipeline.c - the p2p kernel's shared parts (see pipeline.h). */
#include "pipeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"

int pl_parse(int argc, char **argv, int np, struct pl_args *a, char *err, size_t errlen)
{
    uint64_t it, m, n;
    if (argc != 4) {
        snprintf(err, errlen, "Usage: %s <# iterations> <first array dimension> <second array "
                 "dimension>", argv[0]);
        return -1;
    }
    if (rqa_parse_u64(argv[1], &it) != 0 || it < 1 || it > 1000000000u) {
        snprintf(err, errlen, "ERROR: iterations must be >= 1 : %s", argv[1]);
        return -1;
    }
    if (rqa_parse_u64(argv[2], &m) != 0 || rqa_parse_u64(argv[3], &n) != 0 || m < 2 || n < 2 ||
        m > (1u << 24) || n > (1u << 24)) {
        snprintf(err, errlen, "ERROR: grid dimensions must be numbers in 2..%u : %s %s",
                 1u << 24, argv[2], argv[3]);
        return -1;
    }
    if (n - 1 < (uint64_t)np) {
        snprintf(err, errlen, "ERROR: second array dimension %llu must exceed # procs %d",
                 (unsigned long long)n, np);
        return -1;
    }
    a->iterations = (int)it;
    a->m = (long)m;
    a->n = (long)n;
    return 0;
}

/* Columns 1 .. n-1 (the swept ones) are dealt evenly; rank 0 also holds
 * column 0, so every ghost column lies in row 0's constant part (never
 * the corner A[0][0]). */
static void columns(const struct pl_args *a, int r, int np, long *j0, long *w)
{
    *j0 = r == 0 ? 0 : 1 + (a->n - 1) * r / np;
    *w = 1 + (a->n - 1) * (r + 1) / np - *j0;
}

size_t pl_local_bytes(const struct pl_args *a, int r, int np)
{
    long j0, w;
    columns(a, r, np, &j0, &w);
    return (size_t)a->m * (size_t)(w + 1) * sizeof(double);
}

int pl_local_init(struct pl_local *L, const struct pl_args *a, int r, int np, void *mem)
{
    columns(a, r, np, &L->j0, &L->w);
    L->ld = L->w + 1;
    L->own = mem == NULL;
    L->a = L->own ? calloc((size_t)a->m * (size_t)L->ld, sizeof(double)) : mem;
    if (L->a == NULL)
        return -1;
    for (size_t k = 0; !L->own && k < (size_t)a->m * (size_t)L->ld; k++)
        L->a[k] = 0.0;
    for (long jl = L->j0 == 0 ? 1 : 0; jl <= L->w; jl++) /* the ghost too: row 0 is fixed */
        PL(L, 0, jl) = (double)(L->j0 + jl - 1);
    if (L->j0 == 0)
        for (long i = 0; i < a->m; i++)
            PL(L, i, 1) = (double)i;
    return 0;
}

void pl_local_free(struct pl_local *L)
{
    if (L->own)
        free(L->a);
    L->a = NULL;
}

void pl_header(const char *title, int np, const struct pl_args *a, const char *variant)
{
    printf("Parallel Research Kernels interface\n");
    printf("%s\n", title);
    printf("Number of ranks                = %d\n", np);
    printf("Grid sizes                     = %ld, %ld\n", a->m, a->n);
    printf("Number of iterations           = %d\n", a->iterations);
    printf("Variant                        = %s\n", variant);
}

int pl_result(double corner, double total_time, const struct pl_args *a)
{
    const double epsilon = 1.e-8;
    const double want = (double)(a->iterations + 1) * (double)(a->m + a->n - 2);
    if (fabs(corner - want) / want > epsilon) {
        printf("ERROR: checksum %lf does not match verification value %lf\n", corner, want);
        return 1;
    }
    printf("Solution validates\n");
    const double avgtime = total_time / a->iterations;
    printf("Rate (MFlops/s): %lf Avg time (s): %lf\n",
           1.0E-06 * 2 * (double)(a->m - 1) * (double)(a->n - 1) / avgtime, avgtime);
    return 0;
}
