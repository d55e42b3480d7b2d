/* atomics.h - the named ordering points librq uses, over C11 atomics.
 *
 * Each use in the code says which store a load pairs with.  On x86-64
 * (TSO) acquire loads and release stores compile to plain moves: they only
 * restrain the compiler.  Read-modify-writes (CAS) are locked instructions.
 */
#ifndef RQI_ATOMICS_H
#define RQI_ATOMICS_H

#include <stdatomic.h>
#include <stdint.h>

#define rqi_load_acquire(p)     atomic_load_explicit((p), memory_order_acquire)
#define rqi_load_relaxed(p)     atomic_load_explicit((p), memory_order_relaxed)
#define rqi_store_release(p, v) atomic_store_explicit((p), (v), memory_order_release)
#define rqi_store_relaxed(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)

static inline void rqi_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

#define RQI_CACHELINE 64
/* How far apart lines written by different threads are kept: the
 * hardware prefetchers pull a missed line's neighbours too (the adjacent
 * line of its 128-byte pair, the next line), so two cores writing lines
 * within a few hundred bytes of each other take them from one another
 * though no byte is shared (docs/pdq.md, "Neighbouring lines"). */
#define RQI_APART 256
#define RQI_LIKELY(x)   __builtin_expect(!!(x), 1)
#define RQI_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RQI_ALWAYS_INLINE inline __attribute__((always_inline))
#define RQI_NOINLINE __attribute__((noinline))

/* Accesses ThreadSanitizer must not track between RQI_TSAN_IGNORE_BEGIN
 * and _END (plain and atomic, and the synchronization of the atomic
 * ones): it sees the threads of one process only, and some orderings are
 * carried by other processes (gas/gas.h) or by a design it cannot follow
 * (a hint read that any value may answer: shm_ring.h,
 * rqi_ring_rx_waiting).  Every use says why. */
#if defined(__SANITIZE_THREAD__)
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
void AnnotateIgnoreSyncBegin(const char *file, int line);
void AnnotateIgnoreSyncEnd(const char *file, int line);
#define RQI_TSAN_IGNORE_BEGIN()                                                          \
    (AnnotateIgnoreReadsBegin(__FILE__, __LINE__), AnnotateIgnoreWritesBegin(__FILE__, __LINE__), \
     AnnotateIgnoreSyncBegin(__FILE__, __LINE__))
#define RQI_TSAN_IGNORE_END()                                                            \
    (AnnotateIgnoreSyncEnd(__FILE__, __LINE__), AnnotateIgnoreWritesEnd(__FILE__, __LINE__), \
     AnnotateIgnoreReadsEnd(__FILE__, __LINE__))
#else
#define RQI_TSAN_IGNORE_BEGIN() ((void)0)
#define RQI_TSAN_IGNORE_END()   ((void)0)
#endif

#endif
