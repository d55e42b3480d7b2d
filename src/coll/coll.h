/* coll.h - collectives' hooks into init/finalize. */
#ifndef RQI_COLL_H
#define RQI_COLL_H

#include "ctx.h"

void rqi_coll_init(rq_ctx_t *ctx);  /* install the system handlers */
void rqi_coll_fini(rq_ctx_t *ctx);  /* free unclaimed payloads */
int  rqi_barrier(rq_ctx_t *ctx);    /* rq_barrier without the handler check */
/* rq_finalize's collective part: return once every packet the
 * application's ranks sent (handlers included) has been received and every
 * active message has run, job-wide.  0 or RQ_EPEER. */
int  rqi_quiesce(rq_ctx_t *ctx);

#endif
