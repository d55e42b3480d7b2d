/* kernel.c - the transpose's shared local work (see kernel.h). */
#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app.h"

int tp_parse(int argc, char **argv, int np, struct tp_args *a, char *err, size_t errlen)
{
    uint64_t it, order, tile = 0;
    if (argc != 3 && argc != 4) {
        snprintf(err, errlen, "Usage: %s <# iterations> <matrix order> [tile size]", argv[0]);
        return -1;
    }
    if (rqa_parse_count(argv[1], 1, &it) != 0) {
        snprintf(err, errlen, "ERROR: iterations must be >= 1 : %s", argv[1]);
        return -1;
    }
    if (rqa_parse_u64(argv[2], &order) != 0 || order > (1u << 20)) {
        snprintf(err, errlen, "ERROR: matrix order must be a number in 1..%u : %s", 1u << 20,
                 argv[2]);
        return -1;
    }
    if (order < (uint64_t)np) {
        snprintf(err, errlen, "ERROR: matrix order %llu should at least # procs %d",
                 (unsigned long long)order, np);
        return -1;
    }
    if (order % (uint64_t)np != 0) {
        snprintf(err, errlen, "ERROR: matrix order %llu should be divisible by # procs %d",
                 (unsigned long long)order, np);
        return -1;
    }
    if (argc == 4 && (rqa_parse_u64(argv[3], &tile) != 0 || tile > order)) {
        snprintf(err, errlen, "ERROR: tile size must be a number in 0..order : %s", argv[3]);
        return -1;
    }
    a->iterations = (int)it;
    a->order = (long)order;
    a->bo = (long)(order / (uint64_t)np);
    a->tile = (long)tile;
    return 0;
}

void tp_init(double *A, double *B, const struct tp_args *a, int me)
{
    const long bo = a->bo;
    for (long i = 0; i < a->order; i++)
        for (long j = 0; j < bo; j++) {
            A[i * bo + j] = (double)(me * bo + i * a->order + j);
            B[i * bo + j] = 0.0;
        }
}

void tp_add_block(double *B, const double *blk, const struct tp_args *a, int q)
{
    const long bo = a->bo, t = a->tile > 0 && a->tile < bo ? a->tile : bo;
    double *Bq = B + (size_t)bo * (size_t)bo * (size_t)q;
    for (long it = 0; it < bo; it += t)
        for (long jt = 0; jt < bo; jt += t)
            for (long i = it; i < it + t && i < bo; i++)
                for (long j = jt; j < jt + t && j < bo; j++)
                    Bq[i + bo * j] += blk[j + bo * i];
}

void tp_add_block_inc(double *B, double *blk, const struct tp_args *a, int q)
{
    const long bo = a->bo, t = a->tile > 0 && a->tile < bo ? a->tile : bo;
    double *Bq = B + (size_t)bo * (size_t)bo * (size_t)q;
    for (long it = 0; it < bo; it += t)
        for (long jt = 0; jt < bo; jt += t)
            for (long i = it; i < it + t && i < bo; i++)
                for (long j = jt; j < jt + t && j < bo; j++) {
                    const double v = blk[j + bo * i];
                    Bq[i + bo * j] += v;
                    blk[j + bo * i] = v + 1.0;
                }
}

void tp_scatter(double *B, const double *v, const struct tp_args *a, int src, uint64_t e0,
                uint64_t n)
{
    const uint64_t bo = (uint64_t)a->bo;
    double *Bq = B + bo * bo * (uint64_t)src;
    uint64_t i = e0 / bo, j = e0 % bo;
    for (uint64_t k = 0; k < n; k++) {
        Bq[i + bo * j] += v[k];
        if (++j == bo) {
            j = 0;
            i++;
        }
    }
}

void tp_inc(double *A, const struct tp_args *a)
{
    const size_t n = (size_t)a->order * (size_t)a->bo;
    for (size_t k = 0; k < n; k++)
        A[k] += 1.0;
}

void tp_inc_block(double *A, const struct tp_args *a, int q)
{
    const size_t n = (size_t)a->bo * (size_t)a->bo;
    double *Aq = A + n * (size_t)q;
    for (size_t k = 0; k < n; k++)
        Aq[k] += 1.0;
}

double tp_abserr(const double *B, const struct tp_args *a, int me)
{
    const long bo = a->bo, order = a->order;
    const double n1 = (double)a->iterations + 1.0;
    const double addit = n1 * (double)a->iterations / 2.0;
    double err = 0.0;
    for (long i = 0; i < order; i++)
        for (long j = 0; j < bo; j++) {
            const double want = (double)(order * (me * bo + j) + i) * n1 + addit;
            err += fabs(B[i * bo + j] - want);
        }
    return err;
}

void tp_header(const char *title, int np, const struct tp_args *a, const char *variant)
{
    printf("Parallel Research Kernels interface\n");
    printf("%s: B = A^T\n", title);
    printf("Number of ranks      = %d\n", np);
    printf("Matrix order         = %ld\n", a->order);
    printf("Number of iterations = %d\n", a->iterations);
    if (a->tile > 0 && a->tile < a->bo)
        printf("Tile size            = %ld\n", a->tile);
    else
        printf("Untiled\n");
    printf("Variant              = %s\n", variant);
}

int tp_result(double abserr_total, double total_time, const struct tp_args *a)
{
    const double epsilon = 1.e-8;
    const double bytes = 2.0 * sizeof(double) * (double)a->order * (double)a->order;
    if (abserr_total < epsilon) {
        printf("Solution validates\n");
        const double avgtime = total_time / (double)a->iterations;
        printf("Rate (MB/s): %lf Avg time (s): %lf\n", 1.0E-06 * bytes / avgtime, avgtime);
        return 0;
    }
    printf("ERROR: Aggregate squared error %lf exceeds threshold %e\n", abserr_total, epsilon);
    return 1;
}
