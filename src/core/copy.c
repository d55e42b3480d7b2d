/* copy.c - the choice between ordinary and streaming stores for a large
 * copy into memory another rank reads next, and the cycle counter's rate
 * (copy.h). */
#define _GNU_SOURCE
#include "copy.h"

#include "config.h"
#include "sys.h"

#include <stdatomic.h>

/* The median of the last samples of way m (at least one). */
static float cost_median(const struct rqi_copy_cost *s, int m)
{
    unsigned k = s->k[m] < RQI_COPY_SAMPLES ? s->k[m] : RQI_COPY_SAMPLES;
    float v[RQI_COPY_SAMPLES];
    for (unsigned i = 0; i < k; i++) { /* insertion sort: at most 8 */
        float x = s->c[m][i];
        unsigned j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    return v[k / 2];
}

static void copy_way(int stream, void *dst, const void *src, size_t len)
{
    if (stream)
        rqi_copy_stream(dst, src, len);
    else
        memcpy(dst, src, len);
}

void rqi_copy_chosen(struct rqi_copy_cost *s, int mode, void *dst, const void *src, size_t len)
{
    if (mode != RQI_STREAM_AUTO) {
        copy_way(mode == RQI_STREAM_ALWAYS, dst, src, len);
        return;
    }
    /* From 8 MiB up two payloads in flight no longer fit a shared cache:
     * streaming wins in every placement measured. */
    if (len < RQI_COPY_CHOOSE_MIN) {
        memcpy(dst, src, len);
        return;
    }
    if (len >= RQI_COPY_STREAM_ALWAYS) {
        rqi_copy_stream(dst, src, len);
        return;
    }
    /* Measure the other way now and then: every other copy at first,
     * every 16th while the first pass through the destination still
     * faults pages in (samples from then are 10-20x too high for both
     * ways and must age out of the medians), then every 128th (the
     * placement may move); the way in use every 8th copy (timing and
     * medians cost ~10% of a 16 KiB copy: not on every one). */
    const uint32_t n = ++s->n;
    int m = s->stream;
    const uint32_t every = n <= 32 ? 1u : n <= 2048 ? 15u : 127u;
    const int explore = s->k[!m] == 0 || (n & every) == 0;
    if (explore)
        m = !m;
    if (!explore && (n & 7u) != 0) {
        copy_way(m, dst, src, len);
        return;
    }
    uint64_t t0 = rqi_cycles();
    copy_way(m, dst, src, len);
    s->c[m][s->k[m]++ % RQI_COPY_SAMPLES] = (float)(rqi_cycles() - t0) / (float)len;
    /* Streaming only when it is clearly cheaper: its reads from memory are
     * paid by the receiver, where this measure does not see them (near
     * placement: the two copies cost the sender about the same, and
     * memcpy's lines reach the receiver from the shared cache, though a
     * page fault or a cold cache can triple a few of its samples; far:
     * 7-10x). */
    s->stream = s->k[0] >= 4 && s->k[1] >= 4 && cost_median(s, 0) > 4.0f * cost_median(s, 1);
}

uint64_t rqi_cycles_per_1024ns(void)
{
    /* Threads that race here measure alike; any one's result will do. */
    static _Atomic uint64_t rate;
    uint64_t r = atomic_load_explicit(&rate, memory_order_relaxed);
    if (r != 0)
        return r;
#if defined(__x86_64__)
    const uint64_t t0 = rqi_mono_ns(), c0 = rqi_cycles();
    uint64_t t1;
    while ((t1 = rqi_mono_ns()) - t0 < 20000u)
        ;
    const uint64_t c1 = rqi_cycles();
    r = (c1 - c0) * 1024u / (t1 - t0);
    r -= r / 16u;
    if (r == 0)
        r = 1;
#else
    r = 1024u; /* rqi_cycles() counts nanoseconds */
#endif
    atomic_store_explicit(&rate, r, memory_order_relaxed);
    return r;
}
