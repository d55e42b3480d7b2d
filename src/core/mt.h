/* mt.h - the context lock: what makes a context safe to call from several
 * threads at once (RQ_THREAD_SAFE=1, or any context with a PDQ open).
 *
 * A recursive lock around every public call that touches the context: a
 * handler run inside rq_poll may send (the same thread locks again).  Off
 * (the default for a context without PDQ), a call pays one predictable
 * branch on `on`.  Turned on only while one thread uses the context (in
 * rq_init, or by rq_pdq_open before it starts threads) and never off, so a
 * call cannot see it change between its lock and its unlock.
 *
 * BIASED TO THE THREAD THAT CALLS
 *   On, the lock is usually taken by one thread: the application's, while
 *   the PDQ's threads sleep or run handlers that do not send.  So the lock
 *   is biased: a thread that took it RQI_MT_REBIAS times in a row with no
 *   other thread between becomes its owner (`bias`), and enters with a
 *   store and a load of its own lines and a compiler fence, no atomic
 *   instruction and no shared line written.  Any other thread takes `mu`
 *   and revokes the bias first, a Dekker pair with asymmetric fences
 *   (core/asym.h):
 *
 *     owner, enter:                     another thread, holding mu:
 *       self.in = 1                       bias = NULL
 *       compiler fence                    membarrier (all running threads
 *       bias == &self ? inside              fence)
 *         : self.in = 0, take mu          wait until owner.in == 0
 *
 *   Either the owner sees NULL and queues on mu, or the other thread sees
 *   in != 0 and waits for the owner's call to end (its store_release of
 *   in = 0).  From then on every thread takes mu, until one again takes it
 *   RQI_MT_REBIAS times alone.  A revocation costs a membarrier (a few
 *   microseconds), at most once per RQI_MT_REBIAS acquisitions.
 *
 *   One context per process (rq_init), so a thread's biased depth is a
 *   thread-local (`rqi_mt_self.in`).  A thread that exits while it owns the
 *   bias gives it up (a thread-specific destructor, mt.c): nobody reads a
 *   dead thread's record.
 *
 * FENCE TABLE
 *   on      written once by the single thread that turns it on, before any
 *           other thread can call in (thread creation orders it); read
 *           relaxed.
 *   bias    written only by a holder of mu: the owner's record (at its
 *           last unlock, store_release) or NULL (revocation, then the
 *           asymmetric heavy fence).  Read relaxed by every call, compared
 *           with its own record: only the thread itself stored its record
 *           there, and after the revoker's fence the owner's re-read sees
 *           NULL (or a later owner, never itself again).
 *   self.in the owner's depth inside by bias; only its thread writes it
 *           (relaxed increments, store_release of each decrement: its
 *           context writes happen-before the revoker's load_acquire that
 *           sees 0).  A revoker holding mu reads it; `revoked` keeps the
 *           record of a revoked owner still inside (a trylock does not
 *           wait for it), the next holder of mu waits first.
 *   owner   written by the holder of mu (itself, then NULL before
 *           unlocking); read relaxed by a thread comparing it to itself:
 *           only that thread could have stored its own address there.
 *   depth, last, solo, revoked   under mu.
 *   mu      pthread mutex (adaptive: a waiter spins a little before it
 *           sleeps in the kernel), acquire/release for the context's state.
 */
#ifndef RQI_MT_H
#define RQI_MT_H

#include <pthread.h>
#include <stdint.h>

#include "core/asym.h"
#include "core/atomics.h"

/* Acquisitions in a row by one thread that make it the lock's owner. */
#define RQI_MT_REBIAS 1024u

/* A thread's record: its address names the thread; `in` is its depth
 * inside the context by bias. */
struct rqi_mt_thread {
    _Atomic uint32_t in;
};
extern _Thread_local struct rqi_mt_thread rqi_mt_self __attribute__((tls_model("initial-exec")));

struct rqi_mt {
    _Atomic uint32_t on;
    int              heavy; /* no membarrier: full fences on both sides */
    _Atomic(struct rqi_mt_thread *) bias;
    _Atomic(const void *) owner;
    unsigned         depth;
    const void      *last;
    unsigned         solo;
    struct rqi_mt_thread *revoked;
    pthread_mutex_t  mu;
};

/* rq_init / ctx_free (one context per process). */
void rqi_mt_init(struct rqi_mt *m);
void rqi_mt_fini(struct rqi_mt *m);

/* The slow paths (mt.c): take mu (revoking a bias), give it back (maybe
 * biasing the lock to this thread), try. */
void rqi_mt_lock_slow(struct rqi_mt *m);
void rqi_mt_unlock_slow(struct rqi_mt *m);
int  rqi_mt_trylock_slow(struct rqi_mt *m);

static inline int rqi_mt_held(const struct rqi_mt *m)
{
    return rqi_load_relaxed(&m->owner) == (const void *)&rqi_mt_self;
}

/* Enter by bias, or nest: 1 done, 0 take mu. */
static RQI_ALWAYS_INLINE int rqi_mt_enter_fast(struct rqi_mt *m)
{
    /* The record is reached as the variable, not through a pointer to
     * it: GCC 12's UBSan reported a null member access through `t` in a
     * PDQ thread of a statically linked test (a false report: the same
     * accesses through the variable pass). */
    struct rqi_mt_thread *t = &rqi_mt_self;
    uint32_t in = rqi_load_relaxed(&rqi_mt_self.in);
    if (in != 0) { /* nested in our biased hold: ours even if revoked now */
        rqi_store_relaxed(&rqi_mt_self.in, in + 1);
        return 1;
    }
    if (rqi_load_relaxed(&m->bias) == t) {
        rqi_store_relaxed(&rqi_mt_self.in, 1u);
        rqi_asym_light(m->heavy);
        if (RQI_LIKELY(rqi_load_relaxed(&m->bias) == t))
            return 1;
        rqi_store_release(&rqi_mt_self.in, 0u); /* revoked meanwhile: let it finish */
    }
    if (rqi_mt_held(m)) {
        m->depth++;
        return 1;
    }
    return 0;
}

/* Take the lock if the context is in thread-safe mode: 1 taken (unlock
 * it), 0 not needed. */
static RQI_ALWAYS_INLINE int rqi_mt_lock(struct rqi_mt *m)
{
    if (RQI_LIKELY(rqi_load_relaxed(&m->on) == 0))
        return 0;
    if (!rqi_mt_enter_fast(m))
        rqi_mt_lock_slow(m);
    return 1;
}

/* As rqi_mt_lock, without waiting: 1 taken (unlock it), 0 held by another
 * thread (or a revoked owner still inside) or not needed. */
static inline int rqi_mt_trylock(struct rqi_mt *m)
{
    if (rqi_load_relaxed(&m->on) == 0)
        return 0;
    return rqi_mt_enter_fast(m) || rqi_mt_trylock_slow(m);
}

static RQI_ALWAYS_INLINE void rqi_mt_unlock(struct rqi_mt *m)
{
    uint32_t in = rqi_load_relaxed(&rqi_mt_self.in);
    if (in != 0) /* pairs with a revoker's load_acquire of 0 */
        rqi_store_release(&rqi_mt_self.in, in - 1);
    else if (--m->depth == 0)
        rqi_mt_unlock_slow(m);
}

/* The calling thread's depth inside the lock (0: not held). */
static inline unsigned rqi_mt_depth(const struct rqi_mt *m)
{
    uint32_t in = rqi_load_relaxed(&rqi_mt_self.in);
    return in != 0 ? in : rqi_mt_held(m) ? m->depth : 0u;
}

/* Whether another thread may be waiting for the lock the caller holds:
 * 0 only while the caller holds it by a bias still its own (a thread
 * that wants the lock clears the bias first); held by the mutex, it
 * cannot tell, and answers 1. */
static inline int rqi_mt_maybe_wanted(const struct rqi_mt *m)
{
    return rqi_load_relaxed(&rqi_mt_self.in) == 0 ||
           rqi_load_relaxed(&m->bias) != &rqi_mt_self;
}

/* Inside a long wait of an outermost call, let other threads in for a
 * moment (their sends, the PDQ's intake): release, pause, retake.  Nested
 * calls (a handler's sends) keep the lock: the state of the call around
 * them is live.  1 released (call rqi_mt_retake), 0 kept. */
static inline int rqi_mt_release_outer(struct rqi_mt *m)
{
    if (RQI_LIKELY(rqi_load_relaxed(&m->on) == 0) || rqi_mt_depth(m) != 1)
        return 0;
    /* Held by bias still ours: nobody waits (a revoker clears it first),
     * so the wait goes on without a pause. */
    if (rqi_load_relaxed(&rqi_mt_self.in) != 0 && rqi_load_relaxed(&m->bias) == &rqi_mt_self)
        return 0;
    rqi_mt_unlock(m);
    return 1;
}

static inline void rqi_mt_retake(struct rqi_mt *m)
{
    (void)rqi_mt_lock(m);
}

#endif
