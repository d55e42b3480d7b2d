/* counters.c - the per-thread blocks of rqdsm's counters (dsm.h has why).
 *
 * MEMORY ORDERING
 *   Block i of every instance is written only by the thread holding index
 *   i (relaxed load + store); the last block by any number of threads
 *   (relaxed RMW).  Readers (rqdsm_stats) load relaxed: counts only.  An
 *   index changes hands under slot_mu: the exiting thread's last stores
 *   happen before its unlock (release), the next holder's lock (acquire)
 *   before its first load, so no count is lost across the hand-over.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dsm.h"

/* initial-exec: a general-dynamic access from this shared library called
 * __tls_get_addr at every count. */
_Thread_local unsigned rqdsm_counter_slot1 __attribute__((tls_model("initial-exec")));

static pthread_mutex_t slot_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t  slot_once = PTHREAD_ONCE_INIT;
static pthread_key_t   slot_key;
static int             slot_key_ok;
static unsigned        slot_next;                          /* never handed out yet */
static unsigned        slot_free[RQDSM_COUNTER_SLOTS - 1]; /* handed back */
static unsigned        slot_nfree;

/* A thread that held a private index exits: it goes back for the next. */
static void slot_give_back(void *v)
{
    unsigned i = (unsigned)(uintptr_t)v - 1;
    pthread_mutex_lock(&slot_mu);
    slot_free[slot_nfree++] = i;
    pthread_mutex_unlock(&slot_mu);
}

static void slot_init(void)
{
    slot_key_ok = pthread_key_create(&slot_key, slot_give_back) == 0;
}

/* The calling thread's block index, assigned at its first count: a
 * private one while any is free (and the thread can be told when it
 * exits), else the shared last one. */
unsigned rqdsm_counter_slot_take(void)
{
    pthread_once(&slot_once, slot_init);
    unsigned i = RQDSM_COUNTER_SLOTS - 1;
    pthread_mutex_lock(&slot_mu);
    if (slot_key_ok) {
        if (slot_nfree != 0)
            i = slot_free[--slot_nfree];
        else if (slot_next < RQDSM_COUNTER_SLOTS - 1)
            i = slot_next++;
    }
    pthread_mutex_unlock(&slot_mu);
    if (i < RQDSM_COUNTER_SLOTS - 1 &&
        pthread_setspecific(slot_key, (void *)(uintptr_t)(i + 1)) != 0) {
        slot_give_back((void *)(uintptr_t)(i + 1));
        i = RQDSM_COUNTER_SLOTS - 1;
    }
    rqdsm_counter_slot1 = i + 1;
    return i;
}

struct rqdsm_counters *rqdsm_counters_alloc(void)
{
    const size_t size = sizeof(struct rqdsm_counters) * RQDSM_COUNTER_SLOTS;
    struct rqdsm_counters *c = aligned_alloc(64, size);
    if (c != NULL)
        memset(c, 0, size);
    return c;
}

uint64_t rqdsm_counter_sum(const rqdsm_t *d, size_t off)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < RQDSM_COUNTER_SLOTS; i++)
        s += atomic_load_explicit((const _Atomic uint64_t *)(const void *)((const char *)&d->st[i] + off),
                                  memory_order_relaxed);
    return s;
}
