/* asym.h - fences for a Dekker pair whose two sides run at very different
 * rates: the frequent side pays a compiler fence, the rare side a
 * membarrier(2) that runs a full barrier on every running thread of the
 * process.  Used by the context lock's bias (mt.h) and by the ownership
 * protocol between the application and the progress thread (vni.h).
 *
 * Where membarrier is missing (old kernels, some sandboxes) or under
 * ThreadSanitizer (which does not model it), both sides use a full fence
 * instead: `heavy`, as rqi_asym_register returns it.
 */
#ifndef RQI_ASYM_H
#define RQI_ASYM_H

#include <stdint.h>

#include "core/atomics.h"

/* A full fence.  ThreadSanitizer models no standalone fence: there a
 * seq_cst read-modify-write (a full barrier on x86 too) stands in. */
extern _Atomic uint32_t rqi_fence_word;
static inline void rqi_full_fence(void)
{
#if defined(__SANITIZE_THREAD__)
    atomic_fetch_add(&rqi_fence_word, 0u);
#else
    atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* Register the process for expedited membarrier: 0 it may be used, 1 not
 * (heavy: full fences on both sides).  Idempotent; any thread. */
int rqi_asym_register(void);

/* The frequent side's fence. */
static RQI_ALWAYS_INLINE void rqi_asym_light(int heavy)
{
    if (RQI_UNLIKELY(heavy))
        rqi_full_fence();
    else
        atomic_signal_fence(memory_order_seq_cst);
}

/* The rare side's fence (a system call, microseconds). */
void rqi_asym_heavy(int heavy);

/* The same pair across the processes of a node (a PDQ's senders and its
 * last thread going to sleep: pdq.c, vni.c).  Register this process as a
 * target of other processes' global barriers: 0 done (its frequent side
 * may use rqi_asym_light), 1 not (it fences).  Once, at rq_init. */
int rqi_asym_register_global(void);

/* The rare side across processes: a full barrier on every running thread
 * of every registered process, and on the caller (registered callers
 * only). */
void rqi_asym_heavy_global(void);

#endif
