/* copy.h - a copy whose destination bypasses the caches (non-temporal
 * stores), for staged payloads: too large for the shared cache (a cached
 * copy evicts the receiver's working set and the lines it is about to
 * read: 16-64 MiB in near placement, 1.35-1.6x the long path with memcpy,
 * 0.8-1.3x with this), or read by a receiver that shares no cache with the
 * sender (far placement: memcpy pays a coherence round trip per line,
 * 0.35 ns/B, this 0.04).  Leaf module. */
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

/* Copy len bytes; dst must be 16-byte aligned.  The stores are ordered
 * (sfence) before the function returns, so a later release publishes
 * them as it does ordinary stores. */
static inline void rqi_copy_stream(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;
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

#endif
