/* ctx.h - the context: every layer's state for one rank, assembled here.
 * Process-local; used by one thread at a time (see the thread rules in
 * rq.h). */
#ifndef RQI_CTX_H
#define RQI_CTX_H

#include <sched.h>
#include <stdint.h>

#include "rq.h"
#include "core/config.h"
#include "core/copy.h"
#include "core/fail.h"
#include "core/tls.h"
#include "deliver/vbuf.h"
#include "gas/async.h"
#include "gas/gas.h"
#include "net/shm.h"
#include "net/shm_bulk.h"
#include "net/shm_ring.h"
#include "net/ucx.h"
#include "progress/hooks.h"
#include "vni/vni.h"

/* Internal handler ids (RQI_PF_SYSTEM packets). */
enum {
    RQI_SYS_BARRIER = 0,
    RQI_SYS_COLL_DATA,
    RQI_SYS_PULL,      /* a long request whose target copies it (gas/async.h) */
    RQI_SYS_PULL_NAK,  /* ... which that target could not read */
    RQI_SYS_COUNT
};
#define RQI_BARRIER_ROUNDS 16 /* ceil(log2(RQI_MAX_RANKS)) + margin */

struct rqi_handler {
    rq_handler_fn fn;
    void         *arg;
    unsigned      flags;
};

/* A large medium payload being reassembled from fragments. */
struct rqi_reasm {
    struct rqi_reasm *next;
    uint64_t          msg_id, total, got;
    uint32_t          src, tag;
    uint16_t          qid;
    uint8_t           nargs, flags;
    uint64_t          args[RQ_MAX_ARGS + 1]; /* + a PDQ key */
    char             *buf;
};

/* The unplaced payload of the RQ_HF_PLACE handler running now (rq_place):
 * the message given to it, where the payload waits, whether it was
 * placed. */
struct rqi_place {
    const rq_msg_t *msg;
    const void     *src;      /* where the payload waits, or NULL: */
    size_t          len;
    int             placed;
    struct rqi_ucx_rx *ucx;   /* ... still at the sender (UCX rendezvous) */
};


/* A placement's completion callback, run by a later poll. */
struct rqi_place_done {
    struct rqi_place_done *next;
    rq_place_fn            fn;
    void                  *arg;
    int                    status;
};

/* A collective payload that arrived before its receiver asked for it. */
struct rqi_mail {
    struct rqi_mail *next;
    uint64_t         seq;
    int              src;
    size_t           len;
    char             data[];
};

/* A packet of a named queue taken from the ring but not released: a view
 * handed out by rq_peek / rq_peek_n. */
struct rqi_held {
    struct rqi_pkt     *pkt;
    struct rqi_ring_rx *rx;  /* its lane */
    uint64_t            pos;
};

/* The views of one queue that are still in the ring: h[first .. first+n),
 * oldest first.  They are older than anything in the queue's buffer FIFO
 * (packets are taken from the ring only while that FIFO is empty). */
struct rqi_view {
    unsigned        first, n;
    struct rqi_held h[RQ_PEEK_MAX];
};

struct rqi_net_ops;

/* THE LANE LOCK: a send without the context lock (am.c, fast_send).
 *
 * In thread-safe mode every thread of the process that writes our lane at
 * dst (its ring's producer side, ctx->tx[dst], and the outbox
 * ctx->outbox[dst]) holds lk: the sends of rq_request and rq_pdq_enqueue
 * that fit the ring (only lk), and the general path, the outbox's flush
 * and park (the context's lock, then lk: never the other way, and nothing
 * waits while lk is held).  A sender therefore writes its lane's lock line
 * and the ring, not the context lock's line that every polling, helping
 * and sending thread of the rank wrote before (a sender beside a polling
 * thread: 257-536 ns a message on 2 and 16 cores, 68-86 now, against
 * 25-54 for one thread doing both; docs/benchmarks-log.md).  Off
 * thread-safe mode nobody takes it.
 *
 *   lk    0 free, 1 held: exchange(acquire) takes it, store_release(0)
 *         gives it back; the producer side of tx[dst] and outbox[dst] are
 *         written only under it, so each holder sees the last one's.
 *   sent  packets the lane path published (stats.sent counts the rest):
 *         written under lk (relaxed load and store), read relaxed by
 *         rqi_sent (rq_stats, the quiescence count).
 * One line per destination: senders to different ranks share nothing. */
struct rqi_tx_lock {
    _Alignas(64) _Atomic uint32_t lk;
    _Atomic uint64_t sent;
};

struct rq_ctx {
    int                rank, size;
    uint32_t           job32;
    uint64_t           hdr_w0;       /* header word 1 of our packets: job | src << 32 */
    struct rqi_fail    fail;         /* the job's failure as this rank sees it (core/fail.h) */
    uint64_t           medium_max;
    uint64_t           seg_bytes;
    uint64_t           bulk_bytes;   /* each rank's staging area (net/shm_bulk.h) */
    int                bulk_stream;  /* RQ_BULK_STREAM: RQI_STREAM_* */
    struct rqi_copy_cost *stage;     /* per destination: staged payloads' copy (core/copy.h) */
    struct rqi_copy_cost *seg_copy;  /* per destination: copies into its segment */
    uint64_t           large_max;    /* largest payload accepted: physical memory */
    struct rqi_config  cfg;

    /* transport: shared memory */
    struct rqi_shm     shm;
    struct rqi_ring_rx rx[RQI_MAX_LANES]; /* our inbound lanes */
    unsigned           nlanes;
    unsigned           lane_rr;  /* lane the next poll starts at */
    unsigned           my_lane;  /* the lane (and global-address rings) we
                                    produce into at every rank of the node */
    int                lane_exclusive; /* we are my_lane's only producer */
    struct rqi_ring_tx *tx;   /* our lane at each destination rank */
    struct rqi_tx_lock *txl;  /* its senders' lock in thread-safe mode (below) */
    char             **seg;   /* each rank's segment, mapped here */
    char             **bulk;  /* each rank's staging area, mapped here */
    uint64_t          *bulk_resident; /* per sender: bytes of its area resident in our
                                         mapping (net/shm_bulk.h: RESIDENCE) */
    struct rqi_bulk_tx btx;   /* our own staging area (we allocate in it) */
    struct rqi_peers   peers;
    uint64_t           next_peer_check_ns;
    unsigned           busy_steps; /* rqi_busy_step's count */

    /* transport: UCX, for the ranks of other nodes (src/net/ucx.h) */
    unsigned char     *remote;   /* size flags: 1 = reached through UCX */
    struct rqi_ucx    *ucx;      /* NULL when every rank is on this node */
    const struct rqi_net_ops *net; /* the transport to other nodes (net/net.h) */
    struct rqi_ucx_up  ucx_up;   /* its hook upward (net/ucx.h) */
    struct rqi_hooks   hooks;    /* the other layers' hooks upward (progress/hooks.h) */
    int                pmix;     /* bootstrapped through PMIx */

    /* delivery: virtual buffer, per-queue FIFOs, views, reassembly */
    struct rqi_vbuf    vb;
    struct rqi_vfifo   fifo[RQ_MAX_QUEUES];
    struct rqi_view    view[RQ_MAX_QUEUES];
    uint8_t            open[RQ_MAX_QUEUES];
    int                buffered_mode; /* virtual buffer non-empty */
    struct rqi_reasm  *reasm;
    uint64_t           next_msg_id;

    /* outbox: packets parked by a sender whose own ring is pinned (a
     * handler running in place, a held view) when the destination is full;
     * one FIFO per destination, flushed by every librq call */
    struct rqi_vbuf    ob;
    struct rqi_vfifo  *outbox;
    uint64_t           parked;   /* packets ever parked */

    /* handlers */
    struct rqi_handler handlers[RQ_MAX_HANDLERS];
    struct rqi_place   place;                 /* receiver-placed payloads */
    struct rqi_ucx_rx *place_ucx;             /* the deferred entry being delivered */
    struct rqi_place_done *place_done, **place_done_tail;
    struct rqi_handler sys[RQI_SYS_COUNT];

    /* collectives */
    uint64_t           barrier_epoch;
    uint64_t           barrier_arrived[RQI_BARRIER_ROUNDS];
    uint64_t           coll_seq;
    struct rqi_mail   *mail;
    /* librq's own packets among stats.sent / stats.received (the rest are
     * the application's, counted by rq_finalize's termination detection) */
    uint64_t           sys_sent, sys_received;

    /* global address space (src/gas/gas.h) */
    struct rqi_gas     gas;
    /* non-blocking bulk transfers and their copy engine (gas/async.h) */
    struct rqi_async   async;

    /* virtual network interface: progress thread, atomicity, overflow
     * control (src/vni/vni.h) */
    struct rqi_vni     vni;

    /* the context lock: thread-safe mode (src/core/mt.h) */
    struct rqi_mt      mt;

    /* parallel dispatch queues attached to queue ids (src/pdq/pdq.h) */
    struct rq_pdq     *pdq[RQ_MAX_QUEUES];
    struct rqi_promote *_Atomic promote; /* handlers promoted to threads (progress/promote.c) */
    _Atomic uint64_t   pdq_rejected; /* PDQ messages with no handler */

    /* Oversubscription (RQ_YIELD_IDLE): receive calls in a row that found
     * nothing; past RQ_SPIN_COUNT of them each one yields the CPU, so a
     * rank spinning in its own receive loop lets a descheduled peer run. */
    int                yield_idle;
    int                buffer_always; /* RQ_BUFFER_ALWAYS: no direct delivery */
    uint64_t           buffer_delay_ns; /* RQ_BUFFER_DELAY_NS: a slower buffered path */
    unsigned           idle_calls;
    int                host_ranks;   /* this job's ranks on this machine */
    int                host_index;   /* this rank's place among them, in rank order */

    rq_stats_t         stats;
};

/* Packets sent: the general path's count and every lane's (the lane
 * lock's block above). */
static inline uint64_t rqi_sent(const rq_ctx_t *ctx)
{
    uint64_t n = ctx->stats.sent;
    for (int r = 0; r < ctx->size; r++)
        n += atomic_load_explicit(&ctx->txl[r].sent, memory_order_relaxed);
    return n;
}

/* The failure state of the context (core/fail.h), by context. */
static inline int rqi_job_failed(rq_ctx_t *ctx) { return rqi_fail_seen(&ctx->fail); }
static inline int rqi_job_failed_any(const rq_ctx_t *ctx) { return rqi_fail_any(&ctx->fail); }
static inline void rqi_fail(rq_ctx_t *ctx, const char *why) { rqi_fail_set(&ctx->fail, why); }
static inline int rqi_complete_enter(rq_ctx_t *ctx) { return rqi_gate_enter(&ctx->fail); }
static inline void rqi_complete_leave(rq_ctx_t *ctx) { rqi_gate_leave(&ctx->fail); }

/* Inside a handler on this thread (core/tls.h: per thread, not per
 * context: the application's thread must not read "in a handler" while the
 * progress thread runs one; rq_finalize or rq_wait_until then failed with
 * RQ_EPERM at random in interrupt mode).  Handlers run nothing else and
 * never wait. */
static inline int rqi_in_handler(const rq_ctx_t *ctx)
{
    (void)ctx;
    return rqi_am_handler_depth != 0 || rqi_pdq_handler_depth != 0;
}

/* Bracket a public call that touches the context: the context lock
 * (thread-safe mode), then the ownership protocol against the progress
 * thread.  Returns what rqi_ctx_leave needs. */
static RQI_ALWAYS_INLINE int rqi_ctx_enter(rq_ctx_t *ctx)
{
    int locked = rqi_call_lock(&ctx->mt);
    rqi_vni_enter(&ctx->vni, ctx);
    return locked;
}

static RQI_ALWAYS_INLINE void rqi_ctx_leave(rq_ctx_t *ctx, int locked)
{
    rqi_vni_leave(&ctx->vni, ctx);
    if (locked)
        rqi_mt_unlock(&ctx->mt);
}

/* The body of a public call, bracketed (ctx already checked non-NULL). */
#define RQI_GUARDED(ctx, call)                          \
    do {                                                \
        int rqi_l_ = rqi_ctx_enter(ctx);                \
        int rqi_rc_ = (call);                           \
        rqi_ctx_leave((ctx), rqi_l_);                   \
        return rqi_rc_;                                 \
    } while (0)

/* After a non-blocking receive call (rq_poll, rq_peek, rq_peek_n,
 * rq_dequeue) returned rc: count it as idle or not, and say whether the
 * caller should yield the CPU once the context is released. */
static RQI_ALWAYS_INLINE int rqi_idle_account(rq_ctx_t *ctx, int rc)
{
    if (RQI_LIKELY(!ctx->yield_idle))
        return 0;
    if (rc != 0) {
        ctx->idle_calls = 0;
        return 0;
    }
    if (++ctx->idle_calls <= ctx->cfg.v[RQI_CFG_SPIN_COUNT] || rqi_in_handler(ctx))
        return 0;
    ctx->stats.idle_yields++;
    return 1;
}

/* RQI_GUARDED for a non-blocking receive call: the yield (if any) comes
 * after the context is released, so the progress thread and the other
 * threads can use it meanwhile. */
#define RQI_GUARDED_RECV(ctx, call)                       \
    do {                                                  \
        int rqi_l_ = rqi_ctx_enter(ctx);                  \
        int rqi_rc_ = (call);                             \
        int rqi_y_ = rqi_idle_account((ctx), rqi_rc_);    \
        rqi_ctx_leave((ctx), rqi_l_);                     \
        if (RQI_UNLIKELY(rqi_y_))                         \
            sched_yield();                                \
        return rqi_rc_;                                   \
    } while (0)

#endif
