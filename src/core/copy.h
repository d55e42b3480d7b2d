/* copy.h - the sender's copy of a large payload into memory another rank
 * reads next (a staged medium, a long request's bytes in the target's
 * segment): ordinary stores or stores that bypass the caches
 * (non-temporal), chosen per destination by what each has cost lately.
 * Streaming wins for payloads too large for the shared cache (a cached
 * copy evicts the receiver's working set and the lines it is about to
 * read: 16-64 MiB in near placement, 1.35-1.6x the long path with memcpy,
 * 0.8-1.3x with this) and for a receiver that shares no cache with the
 * sender (far placement: memcpy pays a coherence round trip per line,
 * 0.35 ns/B, this 0.04); ordinary stores win where the receiver's reads
 * hit the shared cache.  Leaf module. */
#ifndef RQI_COPY_H
#define RQI_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#include <x86intrin.h>
#else
#include <time.h>
#endif

/* A cheap timestamp for comparing two copies on one thread (TSC cycles;
 * nanoseconds where there is no TSC). */
static inline uint64_t rqi_cycles(void)
{
#if defined(__x86_64__)
    return __rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* Cycle-counter ticks in 1024 ns, measured once per process over 20 us
 * and rounded down by 1/16, so that fewer than ns nanoseconds have surely
 * passed while a difference of rqi_cycles() stays under
 * ns * rqi_cycles_per_1024ns() / 1024 (an invariant TSC and the monotonic
 * clock both run on through a preemption of the measuring thread).  1024
 * where the counter is in nanoseconds.  Thread safety: any thread. */
uint64_t rqi_cycles_per_1024ns(void);

/* Copy len bytes with stores that bypass the caches (any alignment; the
 * bytes before dst's first 16-byte boundary are stored normally).  The
 * stores are ordered (sfence) before the function returns, so a later
 * release publishes them as it does ordinary stores. */
static inline void rqi_copy_stream(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 15u);
    if (head > len)
        head = len;
    memcpy(d, s, head);
    d += head;
    s += head;
    len -= head;
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
        _mm_stream_si128((__m128i *)(void *)(d + i), a);
        _mm_stream_si128((__m128i *)(void *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(void *)(d + i + 48), e);
    }
    _mm_sfence();
    memcpy(d + i, s + i, len - i);
#else
    memcpy(dst, src, len);
#endif
}

/* The two ways' recent cost to one destination: cycles per byte of the
 * sender's own copy, which is where a far receiver's round trip per line
 * is paid.  Each estimate is the median of the last RQI_COPY_SAMPLES
 * copies made that way, so a copy slowed by preemption or a page fault
 * does not flip the choice.  Zeroed: nothing measured yet. */
#define RQI_COPY_SAMPLES 8
struct rqi_copy_cost {
    float    c[2][RQI_COPY_SAMPLES]; /* [0] memcpy, [1] rqi_copy_stream */
    uint32_t k[2];                   /* samples taken of each */
    uint32_t n;                      /* copies so far */
    int      stream;                 /* the way in use: 1 = rqi_copy_stream */
};

#define RQI_COPY_STREAM_ALWAYS (8u << 20) /* auto streams from here up */
#define RQI_COPY_CHOOSE_MIN    (4u << 10) /* below, auto is plain memcpy */

/* Copy len bytes to memory another rank reads next: mode is
 * RQ_BULK_STREAM's value (RQI_STREAM_*, core/config.h); under auto
 * the way that has cost this sender less per byte to that destination
 * lately (cost: that destination's record, one thread at a time; below
 * RQI_COPY_CHOOSE_MIN plain memcpy, whose lines mostly sit in our cache
 * anyway), else the way mode names.  Orders its stores as rqi_copy_stream does. */
void rqi_copy_chosen(struct rqi_copy_cost *cost, int mode, void *dst, const void *src,
                     size_t len);

#endif
