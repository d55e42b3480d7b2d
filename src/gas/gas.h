/* gas.h - global-address state of one rank, shared by the three strategies
 * (RQ_GAS_STRATEGY):
 *   direct  the initiator moves the data itself through the peer's mapped
 *           segment (memcpy, locked RMWs for AMOs); nothing runs at the
 *           target.  The T3D / "Inject" analog of the Split-C paper.
 *   proc    requests travel as packets on the target's global-address
 *           request ring; the target's main thread serves them whenever it
 *           is inside librq (rq_poll and every blocking call), and its
 *           replies travel on the initiator's reply ring.
 *   np      the same packets, served by a per-rank progress thread (the
 *           "network processor"); the main thread only issues and waits on
 *           counters.  While it waits it may help serve (service lock).
 *           When the thread has no core of its own (RQ_NP_CORE), it wakes
 *           on a tick only, and the main thread serves as under proc.
 * Operations on one's own rank are always done in place.
 *
 * RINGS (net/shm.h): each rank has a request ring (producers: the main
 * threads of the ranks of one lane; consumer: its server) and a reply ring
 * (producers: the servers of the ranks of one lane; consumer: its server)
 * per lane: a sender uses the rings of its lane, as it does for active
 * messages, so up to 16 ranks per node no ring has two producers (issue
 * 36: one ring for every sender made each request a CAS on a line they all
 * wrote).  Replies never cause a send, so a server blocked on a full reply
 * ring drains its own reply rings and always makes progress: requests and
 * replies cannot deadlock.
 *
 * MEMORY ORDERING (who writes what, which store releases, which load
 * acquires):
 *   issued        main thread only (its own cache line).
 *   completed     server only: store_release after the operation's effects
 *                 (data copied into the get buffer, old value stored);
 *                 main thread: load_acquire in rq_sync.  On another cache
 *                 line than issued, so the np thread bumping it does not
 *                 steal the line the main thread writes per operation.
 *   slot.busy     main: store_release(1) after filling the slot (the
 *                 request's publish follows); server: load_acquire before
 *                 reading the slot for a reply, store_release(0) after
 *                 writing the data or old value; main: load_acquire before
 *                 reading results or reusing the slot.
 *   stored[src]   (net/shm.h: rqi_shm_stored) the bytes src has stored into
 *                 a rank, one cache line per source: written by whoever
 *                 lands src's stores (src itself under direct, the
 *                 target's server otherwise: one writer at a time, so a
 *                 relaxed load and a store_release of the sum, after the
 *                 data; a UCP atomic add from another node); summed with
 *                 load_acquire by rq_store_sync.  Before, every source
 *                 added to one counter per target: two senders storing
 *                 into one rank fought over its line (issue 36).
 *   area->np_sleep the np thread stores 1 (seq_cst), re-checks its rings,
 *                 then futex-waits; a sender publishes, fences (seq_cst)
 *                 and reads it: one of the two sees the other (Dekker), so
 *                 a request is never left unnoticed by a sleeping thread.
 *                 A thread sharing its rank's core (np_shared) stores 2
 *                 once: senders leave it asleep (no futex call per
 *                 request), it wakes every RQ_NP_TICK_US by itself and the
 *                 rank's main thread serves meanwhile, as under proc.
 *   service_lock  exchange(acquire) / store_release: whoever holds it is
 *                 the consumer of both rings and the producer of replies.
 *   np_active     np thread: relaxed stores (0 before it sleeps, 1 once it
 *                 runs again); main thread: a relaxed load in rq_poll that
 *                 only decides whether to try the service lock.  A polling
 *                 main thread thus covers for a sleeping (or descheduled)
 *                 network processor.
 */
#ifndef RQI_GAS_H
#define RQI_GAS_H

#include <pthread.h>
#include <stdint.h>

#include "core/atomics.h"
#include "net/shm.h"
#include "net/shm_ring.h"

/* ThreadSanitizer sees the threads of one process only.  Segment memory
 * is ordered across processes (a reply, a barrier, an active message from
 * another rank), a chain it cannot follow, so the server's accesses to our
 * own segment are left out of its tracking (RQI_TSAN_IGNORE_BEGIN/END,
 * core/atomics.h);
 * everything the main thread and the np thread share inside the process
 * (slots, counters, the service lock, get buffers) stays checked. */
#define RQI_GAS_SLOTS 1024u /* outstanding gets and AMOs per rank */

/* Request and reply opcodes (rqi_pkt.tag on the global-address rings). */
enum {
    RQI_GOP_PUT = 1,   /* args: off, stride, elem, count, pos, ack; payload */
    RQI_GOP_STORE,     /* same; also counted by the target's store counter */
    RQI_GOP_GET,       /* args: off, stride, elem, count, slot, gen */
    RQI_GOP_AMO,       /* args: off, op, operand, compare, slot, gen */
    RQI_GOP_ACK,       /* reply: a put or store completed; no args */
    RQI_GOP_DATA,      /* reply: args slot, gen, pos; payload */
    RQI_GOP_OLD,       /* reply: args slot, gen, old value */
    RQI_GOP_COUNT
};

struct rqi_gas_slot {
    _Atomic uint32_t busy;
    uint32_t         gen;
    char            *dst;        /* get: first block; AMO: unused */
    uint64_t         dst_stride, elem, total;
    uint64_t         got;        /* server: bytes received so far */
    uint64_t         old;        /* AMO result */
    int              peer;       /* the rank that must answer */
};

struct rqi_gas {
    int strategy;                 /* RQI_GAS_* */
    unsigned serve_tick;          /* in-place calls since the network was progressed */
    uint64_t consumed;            /* stored bytes rq_store_sync has taken */
    struct rqi_gas_area *area;    /* our counters in the job segment */

    _Alignas(RQI_CACHELINE) _Atomic uint64_t issued; /* main thread */
    uint32_t next_slot;
    _Alignas(RQI_CACHELINE) _Atomic uint64_t completed; /* server */
    _Atomic uint64_t rejected;    /* server: malformed packets dropped */
    _Atomic int np_active;        /* np thread: 0 while it sleeps (or is not
                                     yet back on a CPU); rq_poll then serves */
    _Alignas(RQI_CACHELINE) _Atomic int service_lock;

    /* Our request and reply rings, one of each per lane (server only). */
    struct rqi_ring_rx rx[RQI_GAS_KINDS][RQI_MAX_LANES];
    unsigned nlanes;
    /* The lanes whose rings can hold packets for us: all but our own when
     * we are its only producer (our own operations are done in place). */
    unsigned nscan, scan[RQI_MAX_LANES];
    unsigned rr[RQI_GAS_KINDS];            /* server: index into scan the next pass starts at */
    uint64_t chunk_max;                    /* payload bytes a packet carries at most */
    struct rqi_ring_tx *req_tx;            /* our lane's request ring at each rank (main) */
    struct rqi_ring_tx *rep_tx;            /* our lane's reply ring at each rank (server) */
    struct rqi_gas_slot *slot;             /* RQI_GAS_SLOTS */

    int main_serves;              /* proc, or np sharing its rank's core: the main
                                     thread serves whenever it is inside librq */
    int np_shared;                /* np: the thread shares its rank's core
                                     (RQ_NP_CORE): it wakes on a tick only */
    int np_cpu;                   /* CPU to pin the np thread to, or -1 */
    pthread_t np_thread;
    int np_running;
    _Atomic int np_stop;
};

struct rq_ctx;
/* rq_init: map the rings, start the np thread.  0 or RQ_E*. */
int rqi_gas_init(struct rq_ctx *ctx);
/* rq_finalize, after the final barrier: stop the np thread, free. */
void rqi_gas_fini(struct rq_ctx *ctx);
/* Serve both rings once (proc strategy: from rq_poll).  Returns the number
 * of packets handled. */
int rqi_gas_serve(struct rq_ctx *ctx);
/* np strategy, from rq_poll while the np thread sleeps: serve unless
 * somebody else is serving (service lock). */
int rqi_gas_help(struct rq_ctx *ctx);
/* Wait until every operation this rank issued has completed. */
int rqi_gas_quiet(struct rq_ctx *ctx);

/* np/proc requests (arguments validated by the caller; total > 0).  A put
 * or store is complete at the initiator when it returns (source reusable)
 * and remotely complete at rqi_gas_quiet.  A get or AMO names its slot;
 * rqi_gas_wait_slot waits for that one operation. */
int rqi_gas_send_put(struct rq_ctx *ctx, int dst, int store, uint64_t off, uint64_t dst_stride,
                     const char *src, uint64_t src_stride, uint64_t elem, uint64_t count);
int rqi_gas_send_get(struct rq_ctx *ctx, char *dst, uint64_t dst_stride, int src_rank,
                     uint64_t off, uint64_t src_stride, uint64_t elem, uint64_t count,
                     uint32_t *slot);
int rqi_gas_send_amo(struct rq_ctx *ctx, int dst, uint64_t off, int op, uint64_t operand,
                     uint64_t compare, uint32_t *slot);
int rqi_gas_wait_slot(struct rq_ctx *ctx, uint32_t slot, uint64_t *old);
/* Apply an AMO to a word of a segment (every strategy uses this one). */
uint64_t rqi_gas_amo_apply(_Atomic uint64_t *w, int op, uint64_t operand, uint64_t compare);

#endif
