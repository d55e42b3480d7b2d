/* graph.h - em3d's bipartite graph, shared by the librq and MPI versions
 * (no communication here).
 *
 * em3d (Culler et al., Split-C; the PDQ paper's irregular application)
 * relaxes electric (E) and magnetic (H) field values on a bipartite graph:
 * every rank holds n E nodes and n H nodes; each node has `degree` edges
 * to nodes of the other kind, a fraction `remote` of them on other ranks
 * (drawn uniformly), the rest on its own.  One iteration updates every E
 * node from its H neighbours, then every H node from its E neighbours:
 *
 *     v = 0.5 v + sum_j w_j u_j        (sum_j w_j = 0.5, so |v| <= 1)
 *
 * The graph and the initial values come from per-rank streams, so every
 * strategy, variant and the MPI version relax the same graph, and a
 * serial relaxation of the whole graph gives each node's exact value.
 *
 * Remote neighbours are read through ghosts: each rank keeps one copy of
 * every distinct remote node its nodes read, grouped by owner and sorted
 * by index, after its own n values of that kind, so an edge is a single
 * index into [values | ghosts] of the other kind. */
#ifndef RQAPP_GRAPH_H
#define RQAPP_GRAPH_H

#include <stddef.h>
#include <stdint.h>

enum { EM_E = 0, EM_H = 1 };

struct em_args {
    uint64_t n;        /* nodes of each kind per rank */
    unsigned degree;   /* edges per node */
    double   remote;   /* fraction of edges to other ranks, [0, 1] */
    unsigned iters;    /* iterations timed */
    int      reps;     /* runs timed (median) */
};

/* Parse "[--reps R] <nodes per rank> <degree> <remote fraction>
 * <iterations>".  0, or -1 with the reason in err. */
int em_parse(int argc, char **argv, struct em_args *a, char *err, size_t errlen);

/* The nodes of one kind on one rank and what they read. */
struct em_part {
    uint64_t  n;
    unsigned  d;
    uint32_t *ref;      /* n*d: index into the other kind's [values | ghosts] */
    double   *w;        /* n*d weights */
    uint64_t  ng;       /* ghosts (distinct remote nodes of the other kind) */
    uint32_t *gidx;     /* ng: each ghost's index at its owner */
    uint64_t *gstart;   /* np+1: the ghosts owned by rank o are [gstart[o], gstart[o+1]) */
};

/* Build rank me's nodes of `kind`.  0, or -1 when out of memory. */
int em_part_build(const struct em_args *a, int me, int np, int kind, struct em_part *p);
void em_part_free(struct em_part *p);

/* The initial value of node i of `kind` on rank r. */
double em_initial(int r, int kind, uint64_t i);

/* One half-step: mine[i] = 0.5 mine[i] + sum w other[ref] for i in [0, n).
 * other is the other kind's [values | ghosts]. */
void em_update(const struct em_part *p, const double *other, double *mine);
/* The same for nodes lo .. hi-1 only (a thread's share). */
void em_update_range(const struct em_part *p, const double *other, double *mine, uint64_t lo,
                     uint64_t hi);

/* The whole graph relaxed serially: E and H (np*n each, rank-major) after
 * a->iters iterations from the initial values.  0, or -1 out of memory. */
int em_serial(const struct em_args *a, int np, double *E, double *H);

/* The largest |got - want| over n values. */
double em_max_error(const double *got, const double *want, uint64_t n);

/* Result lines (rank 0): "Solution validates" or the error line, then
 * "<prog>: ranks=P nodes_per_rank=n degree=d remote=f iterations=T
 * time_s=t ns_per_edge=e".  0 ok, 1 not. */
int em_result(const char *prog, double err, int np, const struct em_args *a, double t);

#endif
