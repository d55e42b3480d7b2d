/* fail.h - a rank's view of the job's failure, and the completion gate.
 * Leaf module: core only.  Every layer reads it; any layer may declare
 * the job failed (a peer died, a lane's framing broke, a transport
 * error).
 *
 * MEMORY ORDERING (who writes what, which store releases, which load
 * acquires)
 *   job        the job's flag, in shared memory (net/shm.h): set by any
 *              rank (rqi_fail_set: seq_cst store) or by rqrun (release);
 *              read by every rank's waits (acquire), by copy threads
 *              (rqi_fail_any, acquire) and by completers (seq_cst).
 *   failed     this rank's sticky copy: the context owner only.
 *   completing completers inside the gate: any thread, seq_cst RMWs.
 *
 * THE COMPLETION GATE: no transfer's counter moves once a caller was told
 * RQ_EPEER.  A completer (any thread) enters, moves the counter only if
 * the job has not failed, and leaves; the owner, the first time it sees
 * the job failed (rqi_fail_set, rqi_fail_seen), waits until no completer
 * is inside.  Dekker style: the completer's seq_cst increment of
 * completing precedes its seq_cst load of the flag, and the owner's
 * seq_cst store (or load, then a seq_cst fence) of the flag precedes its
 * seq_cst loads of completing: either the completer sees the flag and
 * backs out, or the owner sees it inside and waits for its release
 * decrement, which follows the counter's move.  The wait is a few
 * instructions of one completer. */
#ifndef RQI_CORE_FAIL_H
#define RQI_CORE_FAIL_H

#include <stdint.h>

#include "core/atomics.h"

struct rqi_fail {
    int               failed;     /* sticky: owner of the context */
    int               rank;       /* for the message */
    _Atomic uint32_t *job;        /* the job's flag (rqi_fail_attach) */
    _Atomic unsigned  completing; /* completers inside the gate */
    _Atomic uint32_t  alone;      /* the flag until the job's is attached */
};

/* A fresh state whose flag is its own until rqi_fail_attach. */
static inline void rqi_fail_init(struct rqi_fail *f, int rank)
{
    f->failed = 0;
    f->rank = rank;
    atomic_init(&f->alone, 0u);
    atomic_init(&f->completing, 0u);
    f->job = &f->alone;
}

/* From now on the job's flag (in shared memory) is the one. */
static inline void rqi_fail_attach(struct rqi_fail *f, _Atomic uint32_t *job)
{
    if (rqi_load_relaxed(&f->alone) != 0)
        rqi_store_release(job, 1u);
    f->job = job;
}

/* Declare the job failed for every rank (why: printed once).  Owner. */
void rqi_fail_set(struct rqi_fail *f, const char *why);

/* The first time this rank sees the job failed: the sticky flag, then the
 * gate is waited out.  Owner. */
void rqi_fail_noticed(struct rqi_fail *f);

/* Whether the job has failed (our flag, or the job's, which becomes
 * ours).  Owner. */
static inline int rqi_fail_seen(struct rqi_fail *f)
{
    if (RQI_LIKELY(!f->failed)) {
        if (RQI_LIKELY(rqi_load_acquire(f->job) == 0))
            return 0;
        rqi_fail_noticed(f);
    }
    return 1;
}

/* The same from any thread (a copy thread): the job's flag only. */
static inline int rqi_fail_any(const struct rqi_fail *f)
{
    return rqi_load_acquire(f->job) != 0;
}

/* The gate: 1 inside (then move the counter and leave), 0 when the job
 * failed (move nothing).  Any thread. */
static inline int rqi_gate_enter(struct rqi_fail *f)
{
    atomic_fetch_add_explicit(&f->completing, 1, memory_order_seq_cst);
    if (atomic_load_explicit(f->job, memory_order_seq_cst) == 0)
        return 1;
    atomic_fetch_sub_explicit(&f->completing, 1, memory_order_release);
    return 0;
}

static inline void rqi_gate_leave(struct rqi_fail *f)
{
    atomic_fetch_sub_explicit(&f->completing, 1, memory_order_release);
}

#endif
