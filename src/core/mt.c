/* mt.c - the context lock's slow paths: mu, revoking and granting the
 * bias, and a dying owner's release of it (see mt.h). */
#define _GNU_SOURCE
#include "core/mt.h"

#include <sched.h>

_Thread_local struct rqi_mt_thread rqi_mt_self __attribute__((tls_model("initial-exec")));

/* The live lock, for a thread that exits owning its bias: the destructor
 * runs on threads that may outlive rq_finalize, so it finds the lock here
 * (under live_mu) rather than keeping a pointer that may dangle. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rqi_mt *live;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static _Thread_local int exit_armed __attribute__((tls_model("initial-exec")));

static void owner_exits(void *arg)
{
    (void)arg;
    struct rqi_mt_thread *t = &rqi_mt_self;
    pthread_mutex_lock(&live_mu);
    struct rqi_mt *m = live;
    if (m != NULL) {
        pthread_mutex_lock(&m->mu);
        if (rqi_load_relaxed(&m->bias) == t) /* not inside: exiting */
            rqi_store_relaxed(&m->bias, NULL);
        if (m->revoked == t)
            m->revoked = NULL;
        if (m->last == t)
            m->last = NULL;
        pthread_mutex_unlock(&m->mu);
    }
    pthread_mutex_unlock(&live_mu);
}

static void make_key(void)
{
    pthread_key_create(&exit_key, owner_exits);
}

void rqi_mt_init(struct rqi_mt *m)
{
    atomic_init(&m->on, 0u);
    atomic_init(&m->owner, NULL);
    atomic_init(&m->bias, NULL);
    m->heavy = rqi_asym_register();
    m->depth = 0;
    m->last = NULL;
    m->solo = 0;
    m->revoked = NULL;
    /* Adaptive: a thread that finds mu taken spins a little before it
     * sleeps in the kernel (holds are short: an intake, a send). */
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&m->mu, &a);
    pthread_mutexattr_destroy(&a);
    pthread_mutex_lock(&live_mu);
    live = m;
    pthread_mutex_unlock(&live_mu);
}

void rqi_mt_fini(struct rqi_mt *m)
{
    pthread_mutex_lock(&live_mu);
    if (live == m)
        live = NULL;
    pthread_mutex_unlock(&live_mu);
    pthread_mutex_destroy(&m->mu);
}

/* Holding mu: end any bias.  With `wait`, until the revoked owner's call
 * has ended; without, 0 if it is still inside (kept in `revoked`). */
static int revoke(struct rqi_mt *m, int wait)
{
    struct rqi_mt_thread *b = rqi_load_relaxed(&m->bias);
    if (b != NULL) {
        rqi_store_relaxed(&m->bias, NULL);
        rqi_asym_heavy(m->heavy); /* the owner's next check sees NULL */
        m->revoked = b;
    }
    if (m->revoked == NULL)
        return 1;
    /* Pairs with the owner's store_release of in = 0. */
    for (unsigned spins = 0; rqi_load_acquire(&m->revoked->in) != 0; spins++) {
        if (!wait)
            return 0;
        if (spins < 64)
            rqi_cpu_relax();
        else
            sched_yield();
    }
    m->revoked = NULL;
    return 1;
}

/* Holding mu, alone: count acquisitions in a row by this thread. */
static void own(struct rqi_mt *m)
{
    const void *self = &rqi_mt_self;
    rqi_store_relaxed(&m->owner, self);
    m->depth = 1;
    if (m->last == self) {
        m->solo++;
    } else {
        m->last = self;
        m->solo = 0;
    }
}

void rqi_mt_lock_slow(struct rqi_mt *m)
{
    pthread_mutex_lock(&m->mu);
    revoke(m, 1);
    own(m);
}

int rqi_mt_trylock_slow(struct rqi_mt *m)
{
    if (pthread_mutex_trylock(&m->mu) != 0)
        return 0;
    if (!revoke(m, 0)) {
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    own(m);
    return 1;
}

void rqi_mt_unlock_slow(struct rqi_mt *m)
{
    struct rqi_mt_thread *t = &rqi_mt_self;
    if (m->solo >= RQI_MT_REBIAS && m->revoked == NULL) {
        if (!exit_armed) { /* give the bias up if this thread exits */
            pthread_once(&key_once, make_key);
            pthread_setspecific(exit_key, m);
            exit_armed = 1;
        }
        m->solo = 0;
        rqi_store_release(&m->bias, t);
    }
    rqi_store_relaxed(&m->owner, NULL);
    pthread_mutex_unlock(&m->mu);
}
