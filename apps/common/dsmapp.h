/* dsmapp.h - what the programs on rqdsm share (lu, and the others of
 * issue 20): the protocol organisation from the command line, a barrier
 * that keeps serving the protocol while it waits, and the FUGU Table 7-2
 * row of a run (messages, T_interhandler, T_handler from rqdsm's
 * counters; buffered fraction from librq's). */
#ifndef RQAPP_DSMAPP_H
#define RQAPP_DSMAPP_H

#include <stddef.h>

#include <rq.h>
#include <rqdsm.h>

/* Take --protocol auto|pdq|multiplexed|poll|spinlock, --threads T
 * (protocol threads, 1..1024), --app-threads A (application threads per
 * rank, 1..64: the rank is an A-processor node of the PDQ paper's
 * cluster) and --dsm-block B (coherence block bytes) from argv, start
 * rqdsm on ctx (collective) and describe the organisation in org (e.g.
 * "2 app threads, pdq dedicated, 2 threads, 128 B blocks").  auto, the
 * default, is the fastest where the job runs: pdq when every rank's
 * protocol threads have CPUs of their own, else poll (the same choice on
 * every rank).  0, or -1 after printing why to stderr (rank 0). */
int rqa_dsm_start(rq_ctx_t *ctx, int *argc, char **argv, rqdsm_t **dsm, char *org,
                  size_t orgn);

/* A barrier over active messages whose wait runs rqdsm_poll, so a rank
 * that arrives early keeps serving the others' misses (rq_barrier would
 * leave them to the protocol threads, or under poll, to nobody). */
int rqa_dsm_barrier(rq_ctx_t *ctx, rqdsm_t *dsm);

/* The application threads per rank that --app-threads asked for (1 when
 * not given), after rqa_dsm_start. */
int rqa_app_threads(void);

/* Run fn(t, arg) on the rank's application threads t = 0 .. A-1 (t = 0 on
 * the calling thread, the others started and joined here).  0, or -1 if
 * a thread could not start (nothing ran). */
int rqa_team_run(void (*fn)(int t, void *arg), void *arg);

/* Every application thread of every rank meets: the rank's threads wait
 * for each other serving the protocol (rqdsm_poll: the PDQ paper's idle
 * processors running handlers, Hurricane-1 Mult), the last to arrive
 * makes the job-wide rqa_dsm_barrier for them all.  Every thread gets its
 * result.  With one application thread, rqa_dsm_barrier. */
int rqa_team_barrier(rq_ctx_t *ctx, rqdsm_t *dsm);

/* The rank's application threads meet (no other rank takes part), the
 * waiting ones serving the protocol.  With one thread, nothing. */
void rqa_team_sync(rqdsm_t *dsm);

/* Collective: rank 0 prints "NAME: ranks N, time T s, messages M,
 * T_interhandler X ns, T_handler Y ns, buffered F, buffer max B" and a
 * line of the protocol's counters summed over the ranks. */
int rqa_dsm_report(rq_ctx_t *ctx, rqdsm_t *dsm, const char *name, double secs);

#endif
