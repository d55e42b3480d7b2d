/* sys.h - the two system services several layers share: a monotonic clock
 * and a futex on a word in the job segment.  Leaf module. */
#ifndef RQI_SYS_H
#define RQI_SYS_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t rqi_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Not FUTEX_PRIVATE: the words live in the job segment and are woken from
 * other processes. */
static inline long rqi_futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

#endif
