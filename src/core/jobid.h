/* jobid.h - a fresh 64-bit job id: random, never 0.  It keys a job's
 * packets (a packet of another job is refused) and, across nodes, its
 * UCX messages.  Leaf module. */
#ifndef RQI_CORE_JOBID_H
#define RQI_CORE_JOBID_H

#include <stdint.h>

uint64_t rqi_job_id_new(void);

#endif
