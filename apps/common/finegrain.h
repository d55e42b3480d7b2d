/* finegrain.h - what FUGU's standalone fine-grain programs (thesis Tables
 * 7-2 / 7-3: barrier, null, synth-N, enum) report, in their librq and MPI forms:
 * the run time, the messages sent by all ranks, T_interhandler (the
 * average time between messages launched or received on a rank: run
 * time / ((sent + received) / ranks)) and T_handler (the average time a
 * message handler ran, measured around each one), plus, for librq, the
 * fraction of messages delivered from the virtual buffer and the largest
 * buffer any rank held.  Times in ns. */
#ifndef RQAPP_FINEGRAIN_H
#define RQAPP_FINEGRAIN_H

#include <stdint.h>

/* One rank's counts. */
struct rqa_fg {
    uint64_t sent, received;  /* messages */
    uint64_t handlers;        /* handler runs timed */
    uint64_t handler_ticks;   /* rqa_ticks spent in them */
    uint64_t direct, buffered; /* librq: deliveries by case (rq_stats) */
    uint64_t buffer_max;      /* librq: the largest rank's buffer_bytes_max */
};

/* Spin for ns nanoseconds (the programs' "work" and handler stalls). */
void rqa_fg_spin_ns(double ns);

/* Rank 0 prints the Table 7-2 row of a run of secs seconds (the slowest
 * rank's), the counts summed over the ranks in tot. */
void rqa_fg_print(const char *name, int ranks, double secs, const struct rqa_fg *tot);

#ifdef RQAPP_WITH_RQ
#include <rq.h>
/* Collective: sum c over the ranks (adding this rank's rq_stats
 * direct/buffered; buffer_max is the largest rank's) into *tot.  0 or an
 * RQ_E* code. */
int rqa_fg_sum_rq(rq_ctx_t *ctx, const struct rqa_fg *c, struct rqa_fg *tot);
#endif
#ifdef RQAPP_WITH_MPI
/* Collective on MPI_COMM_WORLD: sum c into *tot. */
void rqa_fg_sum_mpi(const struct rqa_fg *c, struct rqa_fg *tot);
#endif

#endif
