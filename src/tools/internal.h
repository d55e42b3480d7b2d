/* internal.h - the one door of librq's own tools into its internals.
 * Every other tool and program uses the public API (rq.h) only; these two
 * are part of the library's runtime and need what no user may touch:
 *   rqrun   creates the job segment (net/shm.h: rqi_shm_create, the job
 *           header it watches for failure) and reads the RQ_* table
 *           (core/config.h: RQ_KILL_GRACE_MS, the ring sizes it lays out);
 *   rqinfo  prints the RQ_* table with defaults and ranges (core/config.h)
 *           and the compiled-in limits (net/shm.h: RQI_MAX_RANKS, lanes,
 *           slots, rqi_shm_medium_max).
 * They link rq_internal (config, errors, job ids, the segment), not the
 * library's objects. */
#ifndef RQI_TOOLS_INTERNAL_H
#define RQI_TOOLS_INTERNAL_H

#include "core/config.h"
#include "net/shm.h"

#endif
