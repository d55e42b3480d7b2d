/* mt.h - the context lock: what makes a context safe to call from several
 * threads at once (RQ_THREAD_SAFE=1, or any context with a PDQ open).
 *
 * A recursive mutex around every public call that touches the context: a
 * handler run inside rq_poll may send (the same thread locks again).  Off
 * (the default for a context without PDQ), a call pays one predictable
 * branch on `on`.  Turned on only while one thread uses the context (in
 * rq_init, or by rq_pdq_open before it starts threads) and never off, so a
 * call cannot see it change between its lock and its unlock.
 *
 * FENCE TABLE
 *   on      written once by the single thread that turns it on, before any
 *           other thread can call in (thread creation orders it); read
 *           relaxed.
 *   owner   written by the holder (itself, then NULL before unlocking);
 *           read relaxed by a thread comparing it to itself: only that
 *           thread could have stored its own address there.
 *   depth   the holder's alone.
 *   mu      pthread mutex: acquire/release for the context's state.
 */
#ifndef RQI_MT_H
#define RQI_MT_H

#include <pthread.h>
#include <stdint.h>

#include "core/atomics.h"

struct rqi_mt {
    _Atomic uint32_t on;
    unsigned         depth;
    _Atomic(const void *) owner;
    pthread_mutex_t  mu;
};

/* A per-thread address that names the calling thread. */
extern _Thread_local char rqi_mt_self __attribute__((tls_model("initial-exec")));

static inline void rqi_mt_init(struct rqi_mt *m)
{
    atomic_init(&m->on, 0u);
    atomic_init(&m->owner, NULL);
    m->depth = 0;
    pthread_mutex_init(&m->mu, NULL);
}

static inline int rqi_mt_held(const struct rqi_mt *m)
{
    return rqi_load_relaxed(&m->owner) == &rqi_mt_self;
}

/* After acquiring mu: this thread holds it once. */
static RQI_ALWAYS_INLINE void rqi_mt_own(struct rqi_mt *m)
{
    rqi_store_relaxed(&m->owner, &rqi_mt_self);
    m->depth = 1;
}

/* Take the lock if the context is in thread-safe mode: 1 taken (unlock
 * it), 0 not needed. */
static RQI_ALWAYS_INLINE int rqi_mt_lock(struct rqi_mt *m)
{
    if (RQI_LIKELY(rqi_load_relaxed(&m->on) == 0))
        return 0;
    if (rqi_mt_held(m)) {
        m->depth++;
        return 1;
    }
    pthread_mutex_lock(&m->mu);
    rqi_mt_own(m);
    return 1;
}

/* As rqi_mt_lock, without waiting: 1 taken (unlock it), 0 held by another
 * thread or not needed. */
static inline int rqi_mt_trylock(struct rqi_mt *m)
{
    if (rqi_load_relaxed(&m->on) == 0)
        return 0;
    if (rqi_mt_held(m)) {
        m->depth++;
        return 1;
    }
    if (pthread_mutex_trylock(&m->mu) != 0)
        return 0;
    rqi_mt_own(m);
    return 1;
}

static RQI_ALWAYS_INLINE void rqi_mt_unlock(struct rqi_mt *m)
{
    if (--m->depth == 0) {
        rqi_store_relaxed(&m->owner, NULL);
        pthread_mutex_unlock(&m->mu);
    }
}

/* Inside a long wait of an outermost call, let other threads in for a
 * moment (their sends, the PDQ's intake): release, pause, retake.  Nested
 * calls (a handler's sends) keep the lock: the state of the call around
 * them is live.  1 released (call rqi_mt_retake), 0 kept. */
static inline int rqi_mt_release_outer(struct rqi_mt *m)
{
    if (RQI_LIKELY(rqi_load_relaxed(&m->on) == 0) || m->depth != 1 || !rqi_mt_held(m))
        return 0;
    rqi_store_relaxed(&m->owner, NULL);
    pthread_mutex_unlock(&m->mu);
    return 1;
}

static inline void rqi_mt_retake(struct rqi_mt *m)
{
    pthread_mutex_lock(&m->mu);
    rqi_mt_own(m); /* another holder may have run depth down to 0 meanwhile */
}

#endif
