/* peer.h - what the peer programs (rqbench-mpi, rqbench-ucx) share: the
 * same stopping rule as rqbench (90% CI of the median within 5%), a clock,
 * and the rows they emit into the "compare" family for rqbench --compare. */
#ifndef RQBENCH_PEER_H
#define RQBENCH_PEER_H

#include <stdatomic.h>
#include <stdint.h>

#include "report.h"

struct peer {
    int               me;
    int               min_reps, max_reps;
    double            budget_s;
    const char       *emit;
    const char       *impl;                     /* "mpi", "ucx" */
    struct rqb_report rep;                      /* rank 0 */
    void            (*bcast)(struct peer *, int64_t *v); /* rank 0's *v to both */
    void             *u;                        /* transport state */
};

uint64_t peer_now_ns(void);
/* Parse --emit FILE [--quick|--smoke]; returns 0 or prints usage and -1. */
int  peer_args(struct peer *p, int argc, char **argv);
/* Repeat fn (both ranks; the figure is rank 0's) until converged. */
void peer_measure(struct peer *p, double (*fn)(struct peer *, void *), void *arg,
                  struct rqb_summary *s);
/* Rank 0: add a "compare" row / write the CSV. */
void peer_row(struct peer *p, const char *name, double param, const char *unit,
              const struct rqb_summary *s, const char *note);
int  peer_emit(struct peer *p);

/* The placement of this peer's two processes, measured as librq's limits
 * are (limits.c): one cache line bounced between them through memory both
 * map (x, zeroed on both sides before the call), and a "compare" row
 * PEER_PLACEMENT_ROW ", start" or ", end" (when) with the median.  Both
 * processes call it. */
#define PEER_PLACEMENT_ROW "cache-line one-way latency L"
void peer_placement(struct peer *p, _Atomic uint64_t *x, const char *when);

#endif
