/* fft.c - the FFT programs' shared parts (see fft.h). */
#include "fft.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define FFT_PI 3.14159265358979323846

int fft_parse(int argc, char **argv, int np, int me, struct fft_plan *p, char *err,
              size_t errlen)
{
    const char *reps = rqa_take_opt(&argc, argv, "reps");
    uint64_t m, r = 3;
    if (argc != 2) {
        snprintf(err, errlen, "Usage: %s [--variant V] [--reps R] <log2 points>", argv[0]);
        return -1;
    }
    if (reps != NULL && (rqa_parse_u64(reps, &r) != 0 || r < 1 || r > 1000)) {
        snprintf(err, errlen, "ERROR: --reps must be a number in 1..1000 : %s", reps);
        return -1;
    }
    if (rqa_parse_u64(argv[1], &m) != 0 || m < 2 || m > 30) {
        snprintf(err, errlen, "ERROR: log2 points must be a number in 2..30 : %s", argv[1]);
        return -1;
    }
    p->np = np;
    p->me = me;
    p->m = (unsigned)m;
    p->N = 1ull << m;
    p->N1 = 1ull << ((m + 1) / 2);
    p->N2 = 1ull << (m / 2);
    p->reps = (int)r;
    if (p->N2 < (uint64_t)np) {
        snprintf(err, errlen, "ERROR: %d ranks need at least 2^%u points (a row each)", np,
                 2 * (unsigned)ceil(log2((double)np)));
        return -1;
    }
    return 0;
}

double complex fft_input(uint64_t j)
{
    uint64_t s = 0xff700000ull ^ (j * 0x9e3779b97f4a7c15ull);
    const double re = rqa_uniform(&s) - 0.5;
    return CMPLX(re, rqa_uniform(&s) - 0.5);
}

double complex *fft_roots(uint64_t len)
{
    double complex *w = malloc((len / 2 ? len / 2 : 1) * sizeof *w);
    for (uint64_t t = 0; w != NULL && t < len / 2; t++)
        w[t] = cexp(CMPLX(0, -2.0 * FFT_PI * (double)t / (double)len));
    return w;
}

void fft_1d(double complex *a, uint64_t len, const double complex *roots)
{
    for (uint64_t i = 1, j = 0; i < len; i++) { /* bit reversal */
        uint64_t bit = len >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            const double complex t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
    for (uint64_t half = 1; half < len; half <<= 1) {
        const uint64_t step = len / (2 * half);
        for (uint64_t i = 0; i < len; i += 2 * half)
            for (uint64_t k = 0; k < half; k++) {
                const double complex u = a[i + k], v = a[i + k + half] * roots[k * step];
                a[i + k] = u + v;
                a[i + k + half] = u - v;
            }
    }
}

double complex *fft_twiddles(const struct fft_plan *p)
{
    const uint64_t lo2 = fft_lo(p, p->N2, p->me), rows = fft_lo(p, p->N2, p->me + 1) - lo2;
    double complex *tw = malloc((rows * p->N1 != 0 ? rows * p->N1 : 1) * sizeof *tw);
    for (uint64_t r = 0; tw != NULL && r < rows; r++)
        for (uint64_t k1 = 0; k1 < p->N1; k1++) {
            const uint64_t e = ((lo2 + r) * k1) % p->N;
            tw[r * p->N1 + k1] = cexp(CMPLX(0, -2.0 * FFT_PI * (double)e / (double)p->N));
        }
    return tw;
}

void fft_load(const struct fft_plan *p, double complex *rows)
{
    const uint64_t lo2 = fft_lo(p, p->N2, p->me), n = fft_lo(p, p->N2, p->me + 1) - lo2;
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t n1 = 0; n1 < p->N1; n1++)
            rows[r * p->N1 + n1] = fft_input(p->N2 * n1 + lo2 + r);
}

void fft_first_half(const struct fft_plan *p, double complex *rows, const double complex *roots1,
                    const double complex *tw)
{
    const uint64_t lo2 = fft_lo(p, p->N2, p->me), n = fft_lo(p, p->N2, p->me + 1) - lo2;
    for (uint64_t r = 0; r < n; r++) {
        double complex *a = rows + r * p->N1;
        fft_1d(a, p->N1, roots1);
        for (uint64_t k1 = 0; k1 < p->N1; k1++)
            a[k1] *= tw[r * p->N1 + k1];
    }
}

void fft_second_half(const struct fft_plan *p, const double complex *recv, double complex *out,
                     const double complex *roots2)
{
    const uint64_t lo1 = fft_lo(p, p->N1, p->me), n = fft_lo(p, p->N1, p->me + 1) - lo1;
    for (uint64_t r = 0; r < n; r++) {
        double complex *a = out + r * p->N2;
        for (int src = 0; src < p->np; src++) {
            const uint64_t lo2 = fft_lo(p, p->N2, src), hi2 = fft_lo(p, p->N2, src + 1);
            const double complex *in = recv + fft_recv_index(p, src, p->me, lo2, lo1 + r);
            memcpy(a + lo2, in, (hi2 - lo2) * sizeof *a);
        }
        fft_1d(a, p->N2, roots2);
    }
}

double fft_error(const struct fft_plan *p, const double complex *out)
{
    double complex *x = malloc(p->N * sizeof *x), *w = fft_roots(p->N);
    if (x == NULL || w == NULL) {
        free(x);
        free(w);
        return -1;
    }
    for (uint64_t j = 0; j < p->N; j++)
        x[j] = fft_input(j);
    fft_1d(x, p->N, w);
    double big = 0, err = 0;
    for (uint64_t k = 0; k < p->N; k++)
        big = fmax(big, cabs(x[k]));
    big = big > 0 ? big : 1;
    /* Two outputs of the plain DFT sum: the serial transform is right. */
    for (uint64_t s = 0; s < 2; s++) {
        const uint64_t k = (s * 0x9e3779b97f4a7c15ull + (uint64_t)p->me * 7919u) % p->N;
        double complex sum = 0;
        for (uint64_t j = 0; j < p->N; j++)
            sum += fft_input(j) *
                   cexp(CMPLX(0, -2.0 * FFT_PI * (double)((j * k) % p->N) / (double)p->N));
        err = fmax(err, cabs(sum - x[k]));
    }
    const uint64_t lo1 = fft_lo(p, p->N1, p->me), rows = fft_lo(p, p->N1, p->me + 1) - lo1;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t k2 = 0; k2 < p->N2; k2++) {
            const double e = cabs(out[r * p->N2 + k2] - x[lo1 + r + p->N1 * k2]);
            err = isnan(e) ? INFINITY : fmax(err, e);
        }
    free(x);
    free(w);
    return err / big;
}

int fft_result(const char *prog, double err, const struct fft_plan *p, double t)
{
    if (!(err >= 0 && err < 1e-9)) {
        printf("ERROR: the transform differs from the serial one by %g (relative)\n", err);
        return 1;
    }
    printf("Solution validates\n");
    printf("%s: ranks=%d points=%llu time_s=%.6f GFlops=%.3f\n", prog, p->np,
           (unsigned long long)p->N, t, 5e-9 * (double)p->N * p->m / t);
    return 0;
}
