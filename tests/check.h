/* check.h - minimal test assertions: print where and why, exit 1. */
#ifndef RQ_TEST_CHECK_H
#define RQ_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define CHECK_EQ(a, b)                                                                   \
    do {                                                                                 \
        long long a_ = (long long)(a), b_ = (long long)(b);                              \
        if (a_ != b_) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = %lld, %s = %lld\n", __FILE__, \
                    __LINE__, #a, a_, #b, b_);                                           \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* Deterministic payload bytes for (src, seq, i). */
static inline unsigned char pattern_byte(int src, unsigned long long seq, size_t i)
{
    return (unsigned char)((unsigned long long)src * 131u + seq * 31u + i * 7u + (i >> 8));
}

/* Fill b with the pattern of (src, seq). */
static inline void pattern_fill(unsigned char *b, size_t len, int src, unsigned long long seq)
{
    for (size_t i = 0; i < len; i++)
        b[i] = pattern_byte(src, seq, i);
}

/* FNV-1a of len bytes: a payload checksum carried in the arguments. */
static inline unsigned long long payload_fnv(const unsigned char *p, size_t len)
{
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#ifdef CLOCK_MONOTONIC /* POSIX: a test that defines _GNU_SOURCE or _POSIX_C_SOURCE */
/* Seconds on the monotonic clock: deadlines in tests that wait (never a
 * timing assertion). */
static inline double check_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
#endif

#endif
