/* fft.h - the FFT programs' shared parts (fft, fftb and fft-mpi; no
 * communication here).
 *
 * A complex FFT of N = 2^m points by the four-step method with one remap,
 * as the Split-C FFT: N = N1 N2 (N1 = 2^ceil(m/2), N2 = 2^floor(m/2)),
 * x[N2 n1 + n2] seen as the rows n2 of an N2 x N1 matrix, the rows dealt
 * in contiguous blocks over the ranks (any rank count up to N2).
 *
 *   1. each rank transforms its rows (length N1, over n1),
 *   2. multiplies by the twiddles W_N^(n2 k1),
 *   3. the remap: element (n2, k1) goes to the rank owning row k1 of the
 *      N1 x N2 transpose, into a receive area grouped by source rank
 *      ([source][k1][n2], each source's part contiguous),
 *   4. each rank gathers its rows k1 and transforms them (length N2):
 *      X[k1 + N1 k2] is element k2 of row k1.
 *
 * Only step 3 communicates; the programs differ in how. */
#ifndef RQAPP_FFT_H
#define RQAPP_FFT_H

#include <complex.h>
#include <stddef.h>
#include <stdint.h>

struct fft_plan {
    int      np, me;
    unsigned m;                 /* log2 N */
    uint64_t N, N1, N2;
    int      reps;
};

/* Parse "[--reps R] <log2 points>" for np ranks.  0, or -1 with the
 * reason. */
int fft_parse(int argc, char **argv, int np, int me, struct fft_plan *p, char *err,
              size_t errlen);

/* Rank r's first row of a dimension of `total` rows (r = np: total). */
static inline uint64_t fft_lo(const struct fft_plan *p, uint64_t total, int r)
{
    return total * (uint64_t)r / (uint64_t)p->np;
}

/* Input point j. */
double complex fft_input(uint64_t j);

/* The roots for transforms of length len: w[t] = exp(-2 pi i t / len),
 * t < len / 2.  NULL when out of memory. */
double complex *fft_roots(uint64_t len);

/* In-place radix-2 transform of a[0..len) (len a power of two), with
 * fft_roots(len). */
void fft_1d(double complex *a, uint64_t len, const double complex *roots);

/* My rows of the input: rows[n2 - lo2][n1] = x[N2 n1 + n2]. */
void fft_load(const struct fft_plan *p, double complex *rows);

/* Steps 1 and 2 on my loaded rows: transformed, then twiddled.  tw: my
 * rows' twiddles (fft_twiddles; NULL when out of memory). */
double complex *fft_twiddles(const struct fft_plan *p);
void fft_first_half(const struct fft_plan *p, double complex *rows, const double complex *roots1,
                    const double complex *tw);

/* Step 4: gather my rows k1 from the receive area (grouped by source) and
 * transform them; out[k1 - lo1][k2]. */
void fft_second_half(const struct fft_plan *p, const double complex *recv, double complex *out,
                     const double complex *roots2);

/* Where element (n2, k1) of source rank `src` lands at the rank owning
 * k1, in elements from the start of its receive area. */
static inline uint64_t fft_recv_index(const struct fft_plan *p, int src, int dst, uint64_t n2,
                                      uint64_t k1)
{
    const uint64_t rows1 = fft_lo(p, p->N1, dst + 1) - fft_lo(p, p->N1, dst);
    const uint64_t lo2 = fft_lo(p, p->N2, src), rows2 = fft_lo(p, p->N2, src + 1) - lo2;
    return rows1 * lo2 + (k1 - fft_lo(p, p->N1, dst)) * rows2 + (n2 - lo2);
}

/* The largest |out - serial| / max |serial| over my outputs, with the
 * serial transform of the whole input computed here (and a few outputs
 * of it checked against the plain DFT sum).  Negative: out of memory. */
double fft_error(const struct fft_plan *p, const double complex *out);

/* Result lines (rank 0): "Solution validates" (error below 1e-9) or the
 * error line, then "<prog>: ranks=P points=N time_s=t GFlops=g" (5 N
 * log2 N flops).  0 ok, 1 not. */
int fft_result(const char *prog, double err, const struct fft_plan *p, double t);

#endif
