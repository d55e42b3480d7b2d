/* pipeline.h - the Parallel Research Kernels' p2p (pipeline) kernel, the
 * part its librq and MPI versions share: arguments, layout, the sweep of
 * one row segment, validation and the result lines.
 *
 * Interface: p2p <iterations> <m> <n>.  An m x n grid of doubles whose
 * columns are dealt in contiguous blocks over the ranks (columns 1..n-1
 * as evenly as they go; column 0 with rank 0).  First row and first
 * column hold their index; each iteration sweeps
 * A[i][j] = A[i-1][j] + A[i][j-1] - A[i-1][j-1] (i, j >= 1) as a
 * wavefront, row by row, each rank waiting for its left neighbour's last
 * column value of the row, then sets A[0][0] = -A[m-1][n-1].  After
 * iterations + 1 sweeps (the first untimed) A[m-1][n-1] must be
 * (iterations + 1) * (m + n - 2).  Rate = 2 (m-1)(n-1) / avg time. */
#ifndef RQAPP_PIPELINE_H
#define RQAPP_PIPELINE_H

#include <stddef.h>

struct pl_args {
    int  iterations;
    long m, n;
};

/* This rank's columns: global [j0, j0 + w); the local array is m rows of
 * w + 1 doubles, column 0 a ghost holding global column j0 - 1. */
struct pl_local {
    long   j0, w, ld;
    double *a;
    int    own;  /* a was allocated here */
};

#define PL(L, i, jl) ((L)->a[(size_t)(i) * (size_t)(L)->ld + (size_t)(jl)])

/* Parse "<iterations> <m> <n>" (argv[1..3]) for np ranks.  0, or -1 with
 * the reason in err. */
int pl_parse(int argc, char **argv, int np, struct pl_args *a, char *err, size_t errlen);

/* Bytes of rank r's columns (ghost included). */
size_t pl_local_bytes(const struct pl_args *a, int r, int np);

/* Initialise rank r's columns (first row and column = index, the rest 0)
 * in mem (pl_local_bytes of them), or in memory of its own when mem is
 * NULL.  0, or -1 out of memory. */
int pl_local_init(struct pl_local *L, const struct pl_args *a, int r, int np, void *mem);
void pl_local_free(struct pl_local *L);

/* Sweep row i (1 <= i < m) of this rank's columns; the ghost A[i][0]
 * (global j0 - 1) must hold the left neighbour's value already. */
static inline void pl_row(struct pl_local *L, long i)
{
    double *cur = &PL(L, i, 0), *up = &PL(L, i - 1, 0);
    for (long jl = L->j0 == 0 ? 2 : 1; jl <= L->w; jl++)
        cur[jl] = up[jl] + cur[jl - 1] - up[jl - 1];
}

/* Header lines (rank 0). */
void pl_header(const char *title, int np, const struct pl_args *a, const char *variant);

/* Result lines (rank 0) from the final corner A[m-1][n-1] and the total
 * time of the timed iterations: "Solution validates" and "Rate (MFlops/s):
 * r Avg time (s): t", or the error line.  0 validated, 1 not. */
int pl_result(double corner, double total_time, const struct pl_args *a);

#endif
