/* matrix.h - sparse lower-triangular matrices for sptrsv: Matrix Market
 * input, the generator of the test and benchmark inputs, level sets, the
 * serial solve.  No librq, no MPI: the librq and MPI versions share it.
 *
 * Storage: CSR, columns ascending in each row, the diagonal last (it must
 * be present and non-zero). */
#ifndef RQAPP_SPTRSV_MATRIX_H
#define RQAPP_SPTRSV_MATRIX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sp_csr {
    int     n;
    int64_t nnz;
    int64_t *rowptr; /* n + 1 */
    int     *col;
    double  *val;
};

/* A matrix from a spec: a Matrix Market file (.mtx, coordinate, real or
 * integer, general or symmetric: the lower triangle is taken), or a
 * generated input "grid2d:K" (K x K 5-point Laplacian), "grid3d:K"
 * (7-point), "power:ROWS:EDGES[:SEED]" (random power-network-like graph),
 * "pwr05", "pwr06", "pwr10" (power graphs with the row and nonzero counts
 * of the RQ paper's bcsppwr05/06/10); a generated matrix is the
 * incomplete Cholesky factor IC(0) of the graph's Laplacian + I.
 * *note gets a line about the input (the paper's counts for pwr*).
 * 0, or -1 with the reason in err (malformed file, not square, an entry
 * above the diagonal, a zero or missing diagonal, out of range...). */
int sp_load(const char *spec, struct sp_csr *L, char *note, size_t notelen, char *err,
            size_t errlen);

/* Parse a Matrix Market stream (see sp_load).  0 or -1 with err. */
int sp_read_mtx(FILE *f, struct sp_csr *L, char *err, size_t errlen);
/* Write L as "coordinate real general". */
void sp_write_mtx(FILE *f, const struct sp_csr *L);

/* Number of level sets (length of the longest dependency chain). */
int sp_levels(const struct sp_csr *L);
/* Renumber rows and columns by level set (level, then index): still lower
 * triangular, rows of one level independent.  0 or -1 (memory). */
int sp_permute_levels(struct sp_csr *L);

/* x = L^{-1} b by forward substitution in row order. */
void sp_serial_solve(const struct sp_csr *L, const double *b, double *x);
/* b = L * ones (the test right-hand side). */
void sp_rhs_ones(const struct sp_csr *L, double *b);

void sp_free(struct sp_csr *L);

#endif
