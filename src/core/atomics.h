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

/* Causality that other processes carry, told to ThreadSanitizer: a packet
 * this process takes in may answer, through other ranks, any packet one
 * of its threads sent before (a DSM block written by one thread, sent to
 * its home by another, comes back as data a third thread writes in).  In
 * real memory the chain of release stores and acquire loads through those
 * processes orders it; ThreadSanitizer sees one process, and found its
 * edge in the context's lock, which every send and every intake took.  A
 * send that takes only its lane's lock (ctx.h) marks RQI_TSAN_SENT, every
 * packet taken in RQI_TSAN_TAKEN: the same edge, no stronger. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char rqi_tsan_causality;
#define RQI_TSAN_SENT()  __tsan_release(&rqi_tsan_causality)
#define RQI_TSAN_TAKEN() __tsan_acquire(&rqi_tsan_causality)
#else
#define RQI_TSAN_SENT()  ((void)0)
#define RQI_TSAN_TAKEN() ((void)0)
#endif

#endif
