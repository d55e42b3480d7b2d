/* mat.c - the matrix-multiply programs' shared parts (see mat.h). */
#include "mat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define MM_MAX_ORDER 65536u

int mm_parse(int argc, char **argv, int np, int skew, struct mm_plan *p, char *err, size_t errlen)
{
    const char *reps = rqa_take_opt(&argc, argv, "reps");
    const char *block = skew ? NULL : rqa_take_opt(&argc, argv, "block");
    uint64_t n, r = 3, b = 16;
    if (argc != 2) {
        snprintf(err, errlen, "Usage: %s [--variant V] [--reps R]%s <matrix order>", argv[0],
                 skew ? "" : " [--block B]");
        return -1;
    }
    if (reps != NULL && (rqa_parse_u64(reps, &r) != 0 || r < 1 || r > 1000)) {
        snprintf(err, errlen, "ERROR: --reps must be a number in 1..1000 : %s", reps);
        return -1;
    }
    if (rqa_parse_u64(argv[1], &n) != 0 || n < 1 || n > MM_MAX_ORDER) {
        snprintf(err, errlen, "ERROR: matrix order must be a number in 1..%u : %s", MM_MAX_ORDER,
                 argv[1]);
        return -1;
    }
    unsigned nb;
    if (skew) {
        nb = 1;
        while ((uint64_t)nb * nb < (uint64_t)np || ((uint64_t)nb * nb) % (uint64_t)np != 0)
            nb++;
        if (n % nb != 0) {
            snprintf(err, errlen, "ERROR: matrix order must be a multiple of %u (the %ux%u grid "
                     "for %d ranks) : %llu", nb, nb, nb, np, (unsigned long long)n);
            return -1;
        }
        b = n / nb;
    } else {
        if (block != NULL && (rqa_parse_u64(block, &b) != 0 || b < 1 || b > n || n % b != 0)) {
            snprintf(err, errlen, "ERROR: --block must divide the matrix order : %s", block);
            return -1;
        }
        if (block == NULL && n % b != 0)
            b = n; /* one block: the order is no multiple of the default */
        nb = (unsigned)(n / b);
    }
    p->np = np;
    p->skew = skew;
    p->N = n;
    p->nb = nb;
    p->b = (unsigned)b;
    p->nslots = (unsigned)(((uint64_t)nb * nb + (uint64_t)np - 1) / (uint64_t)np);
    p->reps = (int)r;
    return 0;
}

static double entry(int which, uint64_t r, uint64_t c)
{
    return which == 0 ? (double)((int)((r * 3 + c * 5) % 11) - 5)
                      : (double)((int)((r * 7 + c * 2) % 13) - 6);
}

void mm_fill(const struct mm_plan *p, int which, uint64_t v, double *blk)
{
    const uint64_t r0 = (v / p->nb) * p->b, c0 = (v % p->nb) * p->b;
    for (unsigned r = 0; r < p->b; r++)
        for (unsigned c = 0; c < p->b; c++)
            blk[(size_t)r * p->b + c] = entry(which, r0 + r, c0 + c);
}

void mm_block_fma(unsigned b, const double *a, const double *bm, double *c)
{
    for (unsigned i = 0; i < b; i++) {
        double *ci = c + (size_t)i * b;
        for (unsigned k = 0; k < b; k++) {
            const double aik = a[(size_t)i * b + k];
            const double *bk = bm + (size_t)k * b;
            for (unsigned j = 0; j < b; j++)
                ci[j] += aik * bk[j];
        }
    }
}

int mm_check_block(const struct mm_plan *p, uint64_t v, const double *c)
{
    const uint64_t r0 = (v / p->nb) * p->b, c0 = (v % p->nb) * p->b;
    double *row = malloc(p->b * sizeof *row);
    if (row == NULL)
        return 0;
    int ok = 1;
    for (unsigned r = 0; r < p->b && ok; r++) {
        memset(row, 0, p->b * sizeof *row);
        for (uint64_t t = 0; t < p->N; t++) {
            const double a = entry(0, r0 + r, t);
            for (unsigned col = 0; col < p->b; col++)
                row[col] += a * entry(1, t, c0 + col);
        }
        for (unsigned col = 0; col < p->b; col++)
            ok &= row[col] == c[(size_t)r * p->b + col];
    }
    free(row);
    return ok;
}

int mm_result(const char *prog, int ok, const struct mm_plan *p, double t)
{
    if (!ok) {
        printf("ERROR: the product differs from the serial one\n");
        return 1;
    }
    printf("Solution validates\n");
    printf("%s: ranks=%d order=%llu blocks=%u block=%u time_s=%.6f GFlops=%.3f\n", prog, p->np,
           (unsigned long long)p->N, p->nb, p->b, t,
           2e-9 * (double)p->N * (double)p->N * (double)p->N / t);
    return 0;
}
