/* fail.h - the one-line error exit of every application, for its librq
 * and its MPI form: rank 0 prints the reason on stdout, every rank flushes
 * (rqrun and mpirun stop the job at the first non-zero exit, which may be
 * another rank's) and leaves the job; returns 1, the exit status. */
#ifndef RQAPP_FAIL_H
#define RQAPP_FAIL_H

#ifdef RQAPP_WITH_RQ
#include <rq.h>
/* Then rq_finalize(ctx).  msg NULL: print nothing. */
int rqa_fail(rq_ctx_t *ctx, const char *msg);

/* The end of a run, collective: rc, this rank's first librq error (0 if
 * none), and bad, the malformed messages its handlers rejected, summed over
 * the ranks.  Rank 0 prints the error line if the run failed.  Returns 1
 * on every rank if it did, else 0 (then rank 0 prints the result). */
int rqa_run_failed(rq_ctx_t *ctx, int rc, uint64_t bad);
#endif

#ifdef RQAPP_WITH_MPI
/* Then MPI_Finalize().  msg NULL: print nothing. */
int rqa_mpi_fail(const char *msg);
#endif

#endif
