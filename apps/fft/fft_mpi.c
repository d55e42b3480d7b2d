/* fft-mpi - the same four-step FFT (fft.h) with MPI, as an MPI user writes
 * it: the remap packs each destination's points (in the receiver's
 * grouped-by-source layout) and moves them in one MPI_Alltoallv.  Same
 * input, check and output as the librq versions.
 *
 * Usage: fft-mpi [--reps R] <log2 points> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "fail.h"
#include "fft.h"
#include "placement.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const double line_ns = rqa_placement_mpi();
    struct fft_plan P;
    char err[200];
    if (fft_parse(argc, argv, np, me, &P, err, sizeof err) != 0)
        return rqa_mpi_fail(err);
    const struct fft_plan *p = &P;
    const uint64_t lo2 = fft_lo(p, p->N2, me), rows2 = fft_lo(p, p->N2, me + 1) - lo2;
    const uint64_t lo1 = fft_lo(p, p->N1, me), rows1 = fft_lo(p, p->N1, me + 1) - lo1;
    if (rows1 * p->N2 > INT32_MAX || rows2 * p->N1 > INT32_MAX)
        return rqa_mpi_fail("ERROR: more points per rank than an MPI count");
    double complex *rows = malloc((rows2 ? rows2 : 1) * p->N1 * sizeof *rows);
    double complex *send = malloc((rows2 ? rows2 : 1) * p->N1 * sizeof *send);
    double complex *recv = malloc((rows1 ? rows1 : 1) * p->N2 * sizeof *recv);
    double complex *out = malloc((rows1 ? rows1 : 1) * p->N2 * sizeof *out);
    double complex *roots1 = fft_roots(p->N1), *roots2 = fft_roots(p->N2), *tw = fft_twiddles(p);
    int *ints = malloc(4 * (size_t)np * sizeof *ints);
    double *times = malloc((size_t)p->reps * sizeof *times);
    if (!rows || !send || !recv || !out || !roots1 || !roots2 || !tw || !ints || !times)
        return rqa_mpi_fail("ERROR: out of memory");
    int *scount = ints, *sdispl = ints + np, *rcount = ints + 2 * np, *rdispl = ints + 3 * np;
    for (int r = 0; r < np; r++) {
        const uint64_t their1 = fft_lo(p, p->N1, r + 1) - fft_lo(p, p->N1, r);
        const uint64_t their2 = fft_lo(p, p->N2, r + 1) - fft_lo(p, p->N2, r);
        scount[r] = (int)(their1 * rows2);
        sdispl[r] = (int)(fft_lo(p, p->N1, r) * rows2);
        rcount[r] = (int)(rows1 * their2);
        rdispl[r] = (int)(rows1 * fft_lo(p, p->N2, r));
    }
    if (me == 0) {
        printf("Split-C FFT, MPI version (alltoallv)\n");
        printf("Number of ranks      = %d\n", np);
        printf("Points               = %llu (2^%u = %llu x %llu)\n", (unsigned long long)p->N,
               p->m, (unsigned long long)p->N1, (unsigned long long)p->N2);
        rqa_placement_print(line_ns);
    }
    for (int rep = 0; rep < p->reps; rep++) {
        fft_load(p, rows);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        fft_first_half(p, rows, roots1, tw);
        /* Pack: for each k1 (destinations in order), my rows' column. */
        double complex *to = send;
        for (uint64_t k1 = 0; k1 < p->N1; k1++)
            for (uint64_t r = 0; r < rows2; r++)
                *to++ = rows[r * p->N1 + k1];
        MPI_Alltoallv(send, scount, sdispl, MPI_C_DOUBLE_COMPLEX, recv, rcount, rdispl,
                      MPI_C_DOUBLE_COMPLEX, MPI_COMM_WORLD);
        fft_second_half(p, recv, out, roots2);
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(&t, &times[rep], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    double e = fft_error(p, out), emax;
    if (e < 0)
        e = 1e300;
    MPI_Allreduce(&e, &emax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int failed = 1;
    if (me == 0)
        failed = fft_result("fft-mpi", emax, p, rqa_median(times, p->reps));
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(rows);
    free(send);
    free(recv);
    free(out);
    free(roots1);
    free(roots2);
    free(tw);
    free(ints);
    free(times);
    fflush(stdout);
    MPI_Finalize();
    return failed;
}
