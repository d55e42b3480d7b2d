/* kernel.h - blocked LU without pivoting (SPLASH-2 LU's kernels), shared
 * by lu (on rqdsm regions) and lu-mpi.  Blocks are b x b doubles, row
 * major.  The matrix is diagonally dominant, so no pivoting is needed. */
#ifndef RQAPP_LU_KERNEL_H
#define RQAPP_LU_KERNEL_H

#include <stddef.h>

/* Element (i, j) of the n x n input matrix. */
double lu_input(size_t n, size_t i, size_t j);

/* Block (bi, bj) of the input into a (b x b). */
void lu_input_block(double *a, size_t n, size_t b, size_t bi, size_t bj);

/* Factor the diagonal block in place: unit L below, U on and above. */
void lu_diag(double *a, size_t b);
/* A block right of the diagonal: blk = L^-1 blk. */
void lu_row(const double *diag, double *blk, size_t b);
/* A block below the diagonal: blk = blk U^-1. */
void lu_col(const double *diag, double *blk, size_t b);
/* An interior block: c -= a * bb. */
void lu_update(double *c, const double *a, const double *bb, size_t b);

/* The owner of block (bi, bj): 2-D cyclic over a pr x pc grid of ranks
 * (pr the largest divisor of np not above its square root). */
int lu_owner(size_t bi, size_t bj, int np);

/* The serial blocked LU of the input (nb x nb blocks of b x b, stored
 * block after block): what every parallel run is compared against. */
void lu_serial(double *blocks, size_t n, size_t b);

#endif
