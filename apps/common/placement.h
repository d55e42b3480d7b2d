/* placement.h - where the run's first two ranks sit, as one number: the
 * one-way latency of a cache line bounced between them through memory
 * they share (the physical limit of any message between them).  The host
 * may move the vCPUs between runs (same cache: ~15-40 ns; far apart:
 * ~150-300 ns), so every program prints it beside its figures, and only
 * figures of the same placement are compared.  A librq and an MPI form:
 * the line lives in rank 0's librq segment, or in an MPI shared window. */
#ifndef RQAPP_PLACEMENT_H
#define RQAPP_PLACEMENT_H

#include <stdint.h>

/* The bounce itself: ranks with role 0 and 1 call it at the same time
 * (after a barrier) on the same zeroed, 64-byte aligned word; role 0
 * writes odd values, role 1 answers with the next even one.  Returns the
 * one-way latency in ns (median of 7 batches of 1000 round trips) to role
 * 0, 0 to role 1.  Leaves *line nonzero. */
double rqa_line_bounce(volatile uint64_t *line, int role);

/* Whether to measure: 2 or more ranks on the machine, no more than its
 * CPUs (oversubscribed ranks bounce at the scheduler's pace: no figure). */
int rqa_placement_wanted(int ranks_here);

#ifdef RQAPP_WITH_RQ
#include <rq.h>
/* Collective over ctx.  Rank 0 gets L (ns), or 0 when there is one rank,
 * ranks 0 and 1 share no memory (other nodes) or the job oversubscribes
 * the machine (rqa_placement_wanted); the other ranks get 0.  Call
 * before the segment's first 64 bytes are used: they are zeroed again
 * afterwards. */
double rqa_placement_rq(rq_ctx_t *ctx);
#endif

#ifdef RQAPP_WITH_MPI
/* The same over MPI_COMM_WORLD (an MPI shared window on ranks 0-1). */
double rqa_placement_mpi(void);
#endif

/* The line the programs print (rank 0), "Line latency (ns)    = L". */
void rqa_placement_print(double ns);

#endif
