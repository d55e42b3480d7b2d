/* mat.h - the matrix-multiply programs' shared parts (cannon, mm, and
 * their MPI versions; no communication here).
 *
 * C = A B, N x N doubles, cut into nb x nb blocks of order b = N / nb.
 * Block v = i nb + j belongs to rank v % P, in its slot v / P; a rank
 * computes the C blocks it owns.  At step s (0 <= s < nb) block (i, j)
 * needs A(i, k) and B(k, j) with
 *
 *   cannon  k = (i + j + s) mod nb, nb the smallest order with nb^2 a
 *           multiple of P and nb^2 >= P: Cannon's skewed schedule on a
 *           virtual nb x nb grid, where every block is read by exactly one
 *           reader per step (no hot spot); large blocks
 *   mm      k = s, small blocks (--block): the blocked matrix multiply;
 *           a row of A blocks is read by every rank that owns a C block
 *           of that row, at the same time
 *
 * Entries are small integers (exact in double at any order used here),
 * so each C block is checked exactly against a serial product. */
#ifndef RQAPP_MAT_H
#define RQAPP_MAT_H

#include <stddef.h>
#include <stdint.h>

struct mm_plan {
    int      np, skew;   /* ranks; Cannon's schedule (1) or the plain one */
    uint64_t N;          /* matrix order */
    unsigned nb, b;      /* blocks per side; block order */
    unsigned nslots;     /* most blocks on one rank: ceil(nb^2 / np) */
    int      reps;
};

/* Parse "[--reps R] [--block B] <matrix order>" for `prog` (skew: cannon,
 * which takes no --block).  0, or -1 with the reason. */
int mm_parse(int argc, char **argv, int np, int skew, struct mm_plan *p, char *err, size_t errlen);

static inline int mm_owner(const struct mm_plan *p, uint64_t v) { return (int)(v % (uint64_t)p->np); }
static inline unsigned mm_slot(const struct mm_plan *p, uint64_t v) { return (unsigned)(v / (uint64_t)p->np); }
/* The block in slot `slot` of rank r, or UINT64_MAX when r has fewer. */
static inline uint64_t mm_block(const struct mm_plan *p, int r, unsigned slot)
{
    const uint64_t v = (uint64_t)slot * (uint64_t)p->np + (uint64_t)r;
    return v < (uint64_t)p->nb * p->nb ? v : UINT64_MAX;
}
/* The k that block v uses at step s. */
static inline unsigned mm_k(const struct mm_plan *p, uint64_t v, unsigned s)
{
    const unsigned i = (unsigned)(v / p->nb), j = (unsigned)(v % p->nb);
    return p->skew ? (i + j + s) % p->nb : s;
}

/* Fill block v of A (which 0) or B (which 1), b*b row-major. */
void mm_fill(const struct mm_plan *p, int which, uint64_t v, double *blk);

/* c += a b for b x b row-major blocks. */
void mm_block_fma(unsigned b, const double *a, const double *bm, double *c);

/* 1 if C block v equals the serial product's. */
int mm_check_block(const struct mm_plan *p, uint64_t v, const double *c);

/* Result lines (rank 0): "Solution validates" or the error line, then
 * "<prog>: ranks=P order=N blocks=nb block=b time_s=t GFlops=g".  0 ok. */
int mm_result(const char *prog, int ok, const struct mm_plan *p, double t);

#endif
