/* pmix.h - the out-of-band exchange of a job started by a PMIx launcher
 * (mpirun, srun): a thin layer over the PMIx client so that the rest of
 * librq never includes pmix.h.  One process-wide session (PMIx itself is
 * per process).  Every call blocks; none is thread-safe (rq_init and
 * rq_finalize call them from the initializing thread). */
#ifndef RQI_PMIX_H
#define RQI_PMIX_H

#include <stddef.h>

/* Nonzero when this process was started by a PMIx launcher. */
int rqi_pmix_launched(void);

#ifdef RQ_HAVE_PMIX
/* Connect to the launcher's PMIx server: our rank and the job size.
 * 0 or an RQ_E* code with a message in err. */
int rqi_pmix_init(int *rank, int *size, char *err, size_t errlen);
/* Publish len bytes under key for every rank (visible after the next
 * rqi_pmix_fence). */
int rqi_pmix_put(const char *key, const void *buf, size_t len);
/* Commit what we put and wait for every rank to do the same (a barrier
 * that also exchanges the data). */
int rqi_pmix_fence(void);
/* Copy rank's value of key into buf (cap bytes); sets *len.  0 or
 * RQ_EPEER (no such value) / RQ_ERANGE (larger than cap). */
int rqi_pmix_get(int rank, const char *key, void *buf, size_t cap, size_t *len);
void rqi_pmix_fini(void);
#endif

#endif
