/* keyset.h - the set of synchronization keys whose handlers are running
 * (a PDQ's dispatch status).  Open addressing with linear probing and
 * backward-shift deletion, so lookups stay short with no tombstones; it
 * holds at most one key per running handler.  UINT64_MAX marks an empty
 * slot: it is RQ_KEY_SEQUENTIAL, which is never stored (nor is
 * RQ_KEY_NOSYNC).  Not thread-safe: used under its PDQ's lock. */
#ifndef RQI_KEYSET_H
#define RQI_KEYSET_H

#include <stdint.h>
#include <stdlib.h>

#define RQI_KEYSET_EMPTY UINT64_MAX

struct rqi_keyset {
    uint64_t *slot;
    unsigned  mask, count;
};

static inline int rqi_keyset_init(struct rqi_keyset *s, unsigned cap_pow2)
{
    s->slot = malloc(sizeof *s->slot * cap_pow2);
    if (s->slot == NULL)
        return -1;
    for (unsigned i = 0; i < cap_pow2; i++)
        s->slot[i] = RQI_KEYSET_EMPTY;
    s->mask = cap_pow2 - 1;
    s->count = 0;
    return 0;
}

static inline void rqi_keyset_fini(struct rqi_keyset *s)
{
    free(s->slot);
    s->slot = NULL;
}

static inline unsigned rqi_keyset_home(const struct rqi_keyset *s, uint64_t k)
{
    /* Fibonacci hashing: keys are often addresses or small integers. */
    return (unsigned)((k * 0x9E3779B97F4A7C15ull) >> 32) & s->mask;
}

static inline int rqi_keyset_has(const struct rqi_keyset *s, uint64_t k)
{
    for (unsigned i = rqi_keyset_home(s, k);; i = (i + 1) & s->mask) {
        if (s->slot[i] == k)
            return 1;
        if (s->slot[i] == RQI_KEYSET_EMPTY)
            return 0;
    }
}

static inline void rqi_keyset_put(struct rqi_keyset *s, uint64_t k)
{
    unsigned i = rqi_keyset_home(s, k);
    while (s->slot[i] != RQI_KEYSET_EMPTY)
        i = (i + 1) & s->mask;
    s->slot[i] = k;
    s->count++;
}

/* Room for one more key at most half full: 0, or -1 out of memory. */
static inline int rqi_keyset_reserve(struct rqi_keyset *s)
{
    if (2u * (s->count + 1) <= s->mask + 1)
        return 0;
    struct rqi_keyset n;
    if (rqi_keyset_init(&n, 2u * (s->mask + 1)) != 0)
        return -1;
    for (unsigned i = 0; i <= s->mask; i++)
        if (s->slot[i] != RQI_KEYSET_EMPTY)
            rqi_keyset_put(&n, s->slot[i]);
    free(s->slot);
    *s = n;
    return 0;
}

static inline void rqi_keyset_del(struct rqi_keyset *s, uint64_t k)
{
    unsigned i = rqi_keyset_home(s, k);
    while (s->slot[i] != k) {
        if (s->slot[i] == RQI_KEYSET_EMPTY)
            return;
        i = (i + 1) & s->mask;
    }
    /* Backward shift: pull later entries of the probe run into the hole
     * unless that would move one before its home slot. */
    for (unsigned j = (i + 1) & s->mask; s->slot[j] != RQI_KEYSET_EMPTY; j = (j + 1) & s->mask) {
        unsigned h = rqi_keyset_home(s, s->slot[j]);
        if (((j - h) & s->mask) >= ((j - i) & s->mask)) {
            s->slot[i] = s->slot[j];
            i = j;
        }
    }
    s->slot[i] = RQI_KEYSET_EMPTY;
    s->count--;
}

#endif
