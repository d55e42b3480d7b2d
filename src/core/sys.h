/* sys.h - the system services several layers share: a monotonic clock,
 * the node's memory size and a futex on a word in the job segment.  Leaf module. */
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

/* Bytes of physical memory on this node (UINT64_MAX if unknown). */
static inline uint64_t rqi_phys_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0)
        return UINT64_MAX;
    return (uint64_t)pages * (uint64_t)psz;
}

/* Not FUTEX_PRIVATE: the words live in the job segment and are woken from
 * other processes. */
static inline long rqi_futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

#endif
