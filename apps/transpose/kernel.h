/* kernel.h - the Parallel Research Kernels' transpose, the part every
 * version shares (librq and MPI): arguments, data layout, local work,
 * validation and the result lines.
 *
 * Layout (PRK): an order x order matrix of doubles, columns in contiguous
 * blocks of bo = order / ranks per rank.  Rank r holds rows 0..order-1 of
 * its columns row-major: A[i * bo + j] is global element (i, r * bo + j),
 * initially i * order + r * bo + j.  Its rows q*bo .. q*bo+bo-1 form block
 * q (bo * bo contiguous doubles), the block that goes to rank q.  Each
 * iteration B += A^T, A += 1.0; after iterations + 1 of them (the first
 * one untimed) B[i * bo + j] = (order * (r * bo + j) + i) * (iterations + 1)
 * + iterations * (iterations + 1) / 2. */
#ifndef RQAPP_TRANSPOSE_KERNEL_H
#define RQAPP_TRANSPOSE_KERNEL_H

#include <stddef.h>
#include <stdint.h>

struct tp_args {
    int  iterations;
    long order, bo, tile; /* tile <= 0 or >= bo: untiled */
};

/* Parse "<iterations> <matrix order> [tile size]" (argv[1..]) for np ranks
 * with PRK's rules.  0, or -1 with the reason in err. */
int tp_parse(int argc, char **argv, int np, struct tp_args *a, char *err, size_t errlen);

/* Fill A with its initial values and B with zeros (rank me). */
void tp_init(double *A, double *B, const struct tp_args *a, int me);

/* B's block q += (the bo x bo row-major block blk)^T, tiled. */
void tp_add_block(double *B, const double *blk, const struct tp_args *a, int q);

/* tp_add_block, and blk += 1.0 in the same pass: one read and one write
 * of each element of A per iteration instead of two reads and a write.
 * For a block that nobody else reads in this iteration. */
void tp_add_block_inc(double *B, double *blk, const struct tp_args *a, int q);

/* Elements [e0, e0 + n) of the block that rank src sent (row-major
 * bo x bo) land transposed in B's block src.  e0 + n <= bo * bo. */
void tp_scatter(double *B, const double *v, const struct tp_args *a, int src, uint64_t e0,
                uint64_t n);

/* A += 1.0 over the rank's column block. */
void tp_inc(double *A, const struct tp_args *a);

/* A += 1.0 over block q of the column block only. */
void tp_inc_block(double *A, const struct tp_args *a, int q);

/* This rank's absolute error against the closed form. */
double tp_abserr(const double *B, const struct tp_args *a, int me);

/* The header lines (rank 0). */
void tp_header(const char *title, int np, const struct tp_args *a, const char *variant);

/* The result lines (rank 0): "Solution validates" and "Rate (MB/s): r
 * Avg time (s): t", or the error line.  Returns 0 validated, 1 not. */
int tp_result(double abserr_total, double total_time, const struct tp_args *a);

#endif
