/* solver.h - the distributed fan-out triangular solve that sptrsv's librq
 * and MPI versions share (no communication here: they differ only in how
 * solved values travel).
 *
 * Rows are dealt block-cyclically: row i belongs to rank (i / bs) % np.
 * A rank solves its rows as they become ready (every dependency known);
 * a solved x_j updates the rank's own dependent rows at once and travels
 * once to every other rank that owns a row depending on it: one message
 * (j, x_j) per off-rank dependency, the RQ paper's pattern.  A received
 * value does the same updates (sp_learn).
 *
 * Ready rows form a FIFO.  sp_learn may run on another thread (interrupt
 * handlers) while the owner checks sp_ready_any: the tail is published
 * with a release store and read with an acquire load; everything else
 * (accumulators, counts, the head) must be serialized by the caller
 * (atomicity sections). */
#ifndef RQAPP_SPTRSV_SOLVER_H
#define RQAPP_SPTRSV_SOLVER_H

#include <stdint.h>

#include "matrix.h"

struct sp_solver {
    const struct sp_csr *L;
    const double        *b;
    int                  me, np, bs, nown;
    int                 *own;        /* my rows, ascending */
    int64_t             *cptr;       /* column j: my dependent rows ... */
    int                 *crow;
    double              *cval;       /* ... and their L values */
    int64_t             *optr;       /* my column j: other ranks needing x_j */
    int                 *orank;
    double              *acc, *x;    /* acc, x: indexed by global row */
    int                 *cnt;        /* dependencies still unknown, per global row */
    int                 *ready;      /* FIFO of ready rows (nown) */
    int                  head, tail;
    int                  solved;
    uint64_t             expect;     /* messages this rank receives per solve */
    uint64_t             sends;      /* messages this rank sends per solve */
};

static inline int sp_owner(const struct sp_solver *s, int i) { return (i / s->bs) % s->np; }

/* Build the plan for rank me of np (bs >= 1).  0 or -1 (memory). */
int sp_solver_init(struct sp_solver *s, const struct sp_csr *L, const double *b, int me, int np,
                   int bs);
/* Start a new solve: counts, accumulators, ready rows. */
void sp_solver_reset(struct sp_solver *s);
void sp_solver_free(struct sp_solver *s);

/* Nonzero when a ready row is queued (any thread). */
static inline int sp_ready_any(const struct sp_solver *s)
{
    return __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) != s->head;
}

/* x_j is known: update my rows that depend on it. */
static inline void sp_learn(struct sp_solver *s, int j, double xj)
{
    for (int64_t k = s->cptr[j]; k < s->cptr[j + 1]; k++) {
        int i = s->crow[k];
        s->acc[i] += s->cval[k] * xj;
        if (--s->cnt[i] == 0) {
            s->ready[s->tail % s->nown] = i;
            __atomic_store_n(&s->tail, s->tail + 1, __ATOMIC_RELEASE);
        }
    }
}

/* Solve the oldest ready row (one must be queued) and apply it to my own
 * rows; returns its index: the caller sends x[i] to the ranks
 * orank[optr[i] .. optr[i+1]). */
static inline int sp_solve_next(struct sp_solver *s)
{
    int i = s->ready[s->head % s->nown];
    s->head++;
    const int64_t e = s->L->rowptr[i + 1] - 1;
    s->x[i] = (s->b[i] - s->acc[i]) / s->L->val[e];
    s->solved++;
    sp_learn(s, i, s->x[i]);
    return i;
}

/* max |x - ref| / max |ref| over my rows. */
double sp_rel_error(const struct sp_solver *s, const double *ref, double *maxref);

#endif
