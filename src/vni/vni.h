/* vni.h - the virtual network interface: a per-rank progress thread that
 * takes the context from the main thread when the main thread is outside
 * librq (to run interrupting handlers, when it is also outside an atomicity
 * section) or merely outside librq (to move packets into the virtual
 * buffer when the atomicity timer expires), and overflow control.
 *
 * WHO OWNS THE CONTEXT
 *   The context is single-threaded state.  The main thread (whichever
 *   thread the application calls librq from) owns it while `calls` > 0;
 *   the progress thread owns it while `claim` == 1; nobody touches it
 *   otherwise.  Exclusion is a Dekker pair with an asymmetric fence:
 *
 *     main, rqi_enter:            progress, claim():
 *       calls = calls + 1           claim = 1
 *       signal fence (compiler)     membarrier(PRIVATE_EXPEDITED)
 *       load_acquire(claim) == 1?   load_acquire(calls) != 0 (or, for
 *         wait until claim == 0       handlers, atomic != 0)?  back off:
 *                                     deferred = 1; claim = 0 (release)
 *
 *   membarrier runs a full barrier on every running thread of the process,
 *   so the main thread's store of calls and load of claim are ordered as
 *   if it had fenced: at least one side sees the other's store.  The main
 *   thread's hot path thus costs two plain stores and two loads of its own
 *   cache lines per call.  Where membarrier is missing (old kernels, some
 *   sandboxes) both sides use a seq_cst fence instead (`heavy`).
 *
 * FENCE TABLE
 *   calls, atomic  main: relaxed increment; store_release of the decrement
 *                  (its context writes happen-before a claim that reads 0).
 *                  progress: load_acquire after its fence.
 *   claim          progress: relaxed 1, then store_release 0 when done (its
 *                  context writes happen-before the main thread's
 *                  load_acquire that sees 0).
 *   deferred       progress: 1 when it backed off; main: read after its
 *                  decrement of calls/atomic reaches 0 (same fence pair),
 *                  then exchanged to 0 and the bell rung (RQI_BELL_RETRY).
 *                  Only the main thread clears it: a later claim that
 *                  succeeds for other work (the atomicity timer's) must not
 *                  cancel the retry that an interrupt still waits for.
 *   held[]         active messages of each interrupt class held outside
 *                  the lanes (virtual buffer, UCX arrivals; deliver.h).
 *                  Owner of the context: store_release after the record
 *                  is in place (one writer at a time, no RMW); a 0 -> 1
 *                  step that interrupts under the mode rings RQI_BELL_INTR.
 *                  progress: load_acquire; the interrupt is owed while the
 *                  count that the mode makes interrupting is non-zero.
 *   ob_pending     owner: 1 (release) when a send is parked in the outbox,
 *                  0 once the outbox is empty; a 0 -> 1 step by the main
 *                  thread rings RQI_BELL_OUTBOX.  progress: load_acquire;
 *                  while 1 it retries the outbox, backing off to 1 ms.
 *   area->bell     futex word in the job segment.  Senders fetch_or a bit
 *                  (seq_cst RMW), then load `sleeping`; the progress thread
 *                  stores sleeping = 1 (seq_cst), then exchanges bell to 0,
 *                  and futex-waits only on a bell still 0: a bit set after
 *                  its exchange either sees sleeping = 1 (and wakes it) or
 *                  lands before the futex's own compare.
 *   area->intr_mode, hdr->intr_ranks
 *                  written by their rank with seq_cst RMWs/stores, read
 *                  relaxed by senders: a mode change applies to packets
 *                  sent after it is visible (rq_interrupts documents it).
 *   area->stop     overflow control's STOP count: RMWs by the members of
 *                  the set (UCP atomics from other nodes), read relaxed by
 *                  its rank's sends (overflow.c).
 *   ovf_member     the owner of the context: relaxed stores; the progress
 *                  thread reads it relaxed to know whether to watch memory
 *                  and acts on it only after claiming the context.
 */
#ifndef RQI_VNI_H
#define RQI_VNI_H

#include <pthread.h>
#include <stdint.h>

#include "core/asym.h"
#include "core/atomics.h"
#include "rq.h"
#include "core/mt.h"
#include "core/tls.h"
#include "net/shm.h"

struct rq_ctx;
struct rqi_vni_area;

/* Doorbell bits. */
#define RQI_BELL_INTR  0x1u /* an interrupting packet was published */
#define RQI_BELL_FULL  0x2u /* a sender found one of our lanes full */
#define RQI_BELL_RETRY 0x4u /* the main thread left what we waited for */
#define RQI_BELL_STOP  0x8u /* rq_finalize: exit */
#define RQI_BELL_PDQ   0x10u /* a packet for a PDQ whose threads sleep */
#define RQI_BELL_NET   0x20u /* the network has events, or wants arming (netwake.c) */
#define RQI_BELL_OUTBOX 0x40u /* a send was parked in the outbox */
#define RQI_BELL_ASYNC 0x80u /* a long request landed: send its announcement (gas/async.h) */
#define RQI_BELL_OVERFLOW 0x100u /* we joined overflow's STOP set: watch memory (overflow.c) */

struct rqi_vni {
    /* written by the main thread */
    _Alignas(RQI_CACHELINE) _Atomic uint32_t calls; /* librq call depth */
    _Atomic int32_t  atomic;     /* rq_atomic_begin depth */
    int              on;         /* the progress thread runs */
    int              heavy;      /* no membarrier: seq_cst fences on both sides */
    int              mb_global;  /* registered for other ranks' global membarriers */
    int              intr_mode;  /* RQ_INTR_* */
    _Atomic int      ovf_member; /* this rank is in the STOP set (overflow.c) */
    uint64_t         ovf_bytes, ovf_free, ovf_high; /* threshold, low- and high-water marks */
    char             ovf_meminfo[256]; /* where MemAvailable is read (RQ_OVERFLOW_MEMINFO) */
    uint64_t         ovf_next_check_ns;
    uint64_t         ovf_high_exits; /* left the set on the high-water mark */
    pthread_t        thread;
    struct rqi_vni_area *area;   /* our doorbell in the job segment */
    /* written by the progress thread */
    _Alignas(RQI_CACHELINE) _Atomic uint32_t claim;
    _Atomic uint32_t deferred;
    uint64_t         timeout_ns; /* RQ_ATOMIC_TIMEOUT_US */
    uint64_t         interrupts; /* interrupt deliveries (handler batches) */
    /* the network watcher (netwake.c) */
    _Atomic uint32_t net_armed;  /* futex word: NET_IDLE / NET_ARMED / NET_STOP */
    int              net_on, net_stopfd;
    pthread_t        net_thread;
    uint64_t         revocations;/* atomicity-timer expiries that buffered */
    /* written by the context's owner, read by the progress thread */
    _Alignas(RQI_CACHELINE) _Atomic uint64_t held[2]; /* RQI_CLS_PLAIN, _INTR - 1 */
    _Atomic uint32_t ob_pending;
};

/* Set in the progress thread: its librq calls (from handlers it runs)
 * already own the context. */

void rqi_vni_wait_claim(struct rq_ctx *ctx);
void rqi_vni_retry(struct rq_ctx *ctx);

/* The doorbell (the progress thread's futex word in the job segment):
 * set bit, waking the thread if it sleeps; take the pending bits, sleeping
 * until some arrive or timeout_ns passes (UINT64_MAX: no timeout). */
void     rqi_vni_bell_ring(struct rqi_vni_area *a, uint32_t bit);
uint32_t rqi_vni_bell_take(struct rqi_vni_area *a, uint64_t timeout_ns);

/* The progress thread's side of the ownership protocol (above): whether
 * the application is in a librq call (or, for handlers, an atomicity
 * section); take the context (1), or back off (0: leaving rings
 * RQI_BELL_RETRY); give it back. */
int  rqi_vni_main_busy(const struct rqi_vni *v, int handlers);
int  rqi_vni_claim(struct rqi_vni *v, int handlers);
void rqi_vni_unclaim(struct rqi_vni *v);

/* Interrupt classes of an active message (deliver.h: rqi_cls_of): never
 * interrupts (a named queue, librq's own), under RQ_INTR_ALL only, or
 * under RQ_INTR_SELECTIVE too. */
enum { RQI_CLS_NONE = 0, RQI_CLS_PLAIN = 1, RQI_CLS_INTR = 2 };

/* Whether an active message of interrupt class cls interrupts under mode
 * (RQ_INTR_*). */
static inline int rqi_vni_cls_interrupts(uint32_t mode, unsigned cls)
{
    return mode == RQ_INTR_ALL || (mode == RQ_INTR_SELECTIVE && cls == RQI_CLS_INTR);
}

/* One more active message of class cls held outside the lanes (the
 * virtual buffer, the UCX arrival list; deliver.h); the owner of the
 * context only.  A first held message that interrupts under the current
 * mode rings our own doorbell. */
void rqi_held_add(struct rq_ctx *ctx, unsigned cls);

static inline void rqi_vni_fence(const struct rqi_vni *v)
{
    rqi_asym_light(v->heavy);
}

/* Bracket every public call that touches the context. */
static RQI_ALWAYS_INLINE void rqi_vni_enter(struct rqi_vni *v, struct rq_ctx *ctx)
{
    if (!v->on || rqi_vni_on_progress)
        return;
    rqi_store_relaxed(&v->calls, rqi_load_relaxed(&v->calls) + 1);
    rqi_vni_fence(v);
    /* Pairs with the progress thread's store_release(claim, 0). */
    if (RQI_UNLIKELY(rqi_load_acquire(&v->claim) != 0))
        rqi_vni_wait_claim(ctx);
}

static RQI_ALWAYS_INLINE void rqi_vni_leave(struct rqi_vni *v, struct rq_ctx *ctx)
{
    if (!v->on || rqi_vni_on_progress)
        return;
    uint32_t c = rqi_load_relaxed(&v->calls) - 1;
    /* Pairs with claim()'s load_acquire(calls). */
    rqi_store_release(&v->calls, c);
    if (c == 0) {
        rqi_vni_fence(v);
        if (RQI_UNLIKELY(rqi_load_relaxed(&v->deferred) != 0))
            rqi_vni_retry(ctx);
    }
}

/* The context lock (core/mt.h) for a public call; the progress thread
 * owns the context by its claim and never takes it. */
static RQI_ALWAYS_INLINE int rqi_call_lock(struct rqi_mt *m)
{
    return rqi_vni_on_progress ? 0 : rqi_mt_lock(m);
}

/* Start / stop the progress thread (rq_init / rq_finalize):
 * progress/thread.c. */
int  rqi_vni_init(struct rq_ctx *ctx);
void rqi_vni_fini(struct rq_ctx *ctx);

/* After publishing a packet for (qid, tag) to dst with the send flags:
 * ring dst's doorbell if the packet interrupts there.  Cheap when no rank
 * has interrupts on (one load of a read-mostly line). */
void rqi_vni_sent(struct rq_ctx *ctx, int dst, unsigned qid, unsigned tag, unsigned pflags,
                  unsigned flags);
/* After publishing a keyed packet for dst's queue qid: if that PDQ's
 * threads all sleep, ring dst's doorbell (its progress thread takes the
 * packets in and the intake wakes them). */
void rqi_vni_pdq_sent(struct rq_ctx *ctx, int dst, unsigned qid);
/* Ring dst's doorbell with bit (RQI_BELL_*). */
void rqi_vni_ring(struct rq_ctx *ctx, int dst, uint32_t bit);
/* A sender found dst's lane full: start dst's atomicity timer. */
void rqi_vni_full(struct rq_ctx *ctx, int dst);

/* Packets from other nodes for a sleeping rank (netwake.c).  Start / stop
 * the watcher thread (no-op without UCX wake-up): 0 or RQ_ENOMEM. */
int  rqi_netwake_start(struct rq_ctx *ctx);
void rqi_netwake_stop(struct rq_ctx *ctx);
/* Progress thread, owning the context: take the network's arrivals in and
 * keep the event fd armed while a sleeper needs it.  Arrivals that
 * interrupt are counted held (deliver.h): the interrupt step sees them. */
void rqi_netwake_service(struct rq_ctx *ctx);

/* Overflow control (overflow.c).  Read the thresholds: 0 or RQ_EINVAL
 * (a high-water mark below the low-water mark). */
int  rqi_overflow_init(struct rq_ctx *ctx);
/* The buffer is past RQ_OVERFLOW_BYTES, or this rank is in the STOP set:
 * at most once per ms, join the set if the node is low on memory, or
 * leave it if memory rose above the high-water mark. */
void rqi_overflow_check(struct rq_ctx *ctx);
/* Whether the node's MemAvailable is above the high-water mark (reads
 * /proc/meminfo: any thread). */
int  rqi_overflow_memory_high(const struct rq_ctx *ctx);
/* Owning the context: leave the STOP set on the high-water mark. */
void rqi_overflow_high_exit(struct rq_ctx *ctx);
/* The buffer is empty: leave the STOP set. */
void rqi_overflow_leave(struct rq_ctx *ctx);
/* A send outside a handler while the job is stopped: consume until
 * RESUME (progress/waits.c: it runs handlers).  0 or RQ_EPEER. */
int  rqi_overflow_wait(struct rq_ctx *ctx);
/* Some member of the STOP set, on any node, holds this rank's sends. */
static inline int rqi_overflow_stopped(const struct rqi_vni *v)
{
    return rqi_load_relaxed(&v->area->stop) != 0;
}

#endif
