/* async.h - non-blocking bulk transfers (rq_put_nb, rq_get_nb,
 * rq_request_long_nb) and the copy engine that moves them.
 *
 * ONE NODE  A transfer of at least RQ_ASYNC_MIN bytes to or from another
 *   rank of this node is queued (long requests are pulled by their target
 *   instead, below).  A copy thread per rank (started by the first such
 *   transfer; FUGU's DMA engine behind injectdma; kept off the CPU its
 *   issuer runs on) copies it in RQI_ASYNC_CHUNK pieces through the peer's
 *   mapped segment, and the application thread copies pieces too while it
 *   waits inside librq
 *   (rq_wait_until, rq_sync, every call that polls while it blocks), so a
 *   waiting caller never idles beside a busy engine.  Smaller transfers
 *   (and those to one's own rank) are copied at the call.  A put or get is
 *   complete when its last piece is copied: that copier moves the caller's
 *   counter.  A long request also needs its announcement (the packet that
 *   runs the target's handler), which only the context's owner may send:
 *   the last copier puts the transfer on the landed list and rings its own
 *   rank's progress thread, which sends it when it can claim the context;
 *   the application thread sends it first if it polls.  Its counter moves
 *   once the announcement is sent (or parked in the outbox).
 *
 * PULLED LONG REQUESTS  A long request needs its target to poll anyway (its
 *   handler runs there), so the target copies it, as MPI and UCX
 *   rendezvous do: the initiator allocates an empty block in its staging
 *   area (net/shm_bulk.h: a header and a cookie, the transfer's completion
 *   word) and sends a small PULL message (the source's address, length,
 *   offset, the block's offset and cookie, handler, arguments); the
 *   target, polling, checks the block as it checks a staged payload's
 *   (bounds, alignment, live cookie: a forged or stale PULL is rejected
 *   and counted), reads the bytes straight from the initiator's memory
 *   into its segment with process_vm_readv (Linux cross-memory attach),
 *   releases the block (cookie -> 0), rings the initiator's doorbell
 *   (RQI_BELL_ASYNC) and runs the handler.  The initiator's progress thread
 *   (or its application thread, in any poll or wait) reaps transfers whose
 *   block was released: their counters move without the initiator calling
 *   librq, and its thread computes while the target copies.  Nothing is
 *   ever written into the initiator's private memory.  Where the target
 *   cannot read the initiator (ptrace rules: each rank allows it with
 *   prctl(PR_SET_PTRACER_ANY) at rq_init, as Open MPI does for CMA) it
 *   marks the block refused (cookie -> RQI_PULL_REFUSED) and answers
 *   PULL_NAK; the transfer goes to the copy engine, as do all later ones.
 *   Used only while the target has interrupts off and the request is not
 *   an interrupting one (a system message interrupts nobody), and only
 *   with a staging area (RQ_BULK_BYTES > 0) that has room for the block.
 *
 * OTHER NODES  The transfers are UCP requests (a put and an endpoint
 *   flush, a get, a rendezvous active message) whose callbacks complete
 *   them; callbacks run inside the worker's progress, on the context's
 *   owner.
 *
 * Nothing bounds the number outstanding: each is one malloc'd record.
 *
 * MEMORY ORDERING (who writes what, which store releases, which load
 * acquires)
 *   lock        the mutex guards the queue, each record's `claimed`, the
 *               landed list and `stop`; the engine sleeps on `wake`.
 *   op->copied  fetch_add(acq_rel) by a copier after its memcpy: the one
 *               that brings it to len has acquired every other copier's
 *               bytes before it completes the transfer.
 *   *done       the caller's counter: fetch_add(release) by the completer
 *               after the bytes (and a long request's announcement); the
 *               application reads it with an acquire load (rq_wait_until,
 *               rq_test).
 *   pending     issuer: relaxed increment (owner of the context);
 *               completer: fetch_sub(release) after *done; rqi_async_quiet
 *               reads it with load_acquire.
 *   queued, landed_n, npulls  stored under the lock (release), read
 *               relaxed as hints by waiters and by rqi_poll; the lock
 *               orders the rest.
 *   op->hdr->cookie  the completion word in the initiator's staging area:
 *               the target's CAS(cookie -> 0 or RQI_PULL_REFUSED) with
 *               release after the bytes landed in its segment; the
 *               reaper's load_acquire (any thread of the initiator).
 */
#ifndef RQI_ASYNC_H
#define RQI_ASYNC_H

#include <pthread.h>
#include <stdint.h>

#include "core/atomics.h"
#include "net/shm_bulk.h"
#include "net/ucx.h"
#include "rq.h"

#define RQI_ASYNC_CHUNK (256u * 1024u) /* bytes one copier takes at a time */
#define RQI_PULL_REFUSED UINT64_MAX     /* a completion block its target could not pull */

enum { RQI_AOP_PUT, RQI_AOP_GET, RQI_AOP_LONG };

struct rqi_aop {
    struct rqi_aop     *next;
    struct rqi_ucx_done ucx;        /* other nodes: the request's completion */
    int                 kind, peer;
    char               *to;
    const char         *from;
    uint64_t            len;
    uint64_t            claimed;    /* under the lock */
    _Atomic uint64_t    copied;
    volatile uint64_t  *done;       /* the caller's counter, or NULL */
    unsigned            handler, nargs, flags; /* long request */
    uint64_t            off;                    /* offset in the peer's segment */
    uint64_t            args[RQ_MAX_ARGS];
    struct rqi_bulk_hdr *hdr;       /* pulled long request: its completion block */
    uint64_t            cookie;     /* ... and that block's cookie */
};

struct rqi_async {
    pthread_mutex_t   lock;
    pthread_cond_t    wake;
    struct rqi_aop   *head, **tail;               /* bytes left to claim */
    struct rqi_aop   *landed, **landed_tail;      /* long requests to announce */
    struct rqi_aop   *pulls, **pulls_tail;        /* long requests targets pull */
    _Atomic uint32_t  npulls;
    int               cma_off;                    /* a target could not pull */
    int               pull_mode;                  /* RQ_ASYNC_PULL */
    _Atomic uint32_t  queued, landed_n;
    int               stop, started, inited;
    int               ring;   /* the progress thread ran when the engine
                                 started (read by the engine only: after
                                 rq_finalize stops it, a bell rung is
                                 harmless and the finalizer announces) */
    pthread_t         thread;
    int               avoid_cpu;  /* the CPU the engine is kept off */
    uint64_t          min;                        /* RQ_ASYNC_MIN */
    _Alignas(RQI_CACHELINE) _Atomic uint64_t pending;
    uint64_t          engine_bytes, caller_bytes; /* who copied (statistics) */
};

struct rq_ctx;
int  rqi_async_init(struct rq_ctx *ctx);
/* Stop the copy thread; free what was never completed (a failed job). */
void rqi_async_fini(struct rq_ctx *ctx);
/* Issue op (malloc'd and filled by the caller: kind, peer, to/from, off,
 * len > 0, done; a long request's handler, args, flags; arguments
 * validated, the job alive): by UCX to another node, queued for the copy
 * engine, or copied at once (small, or to one's own rank).  0, or RQ_E*
 * with op freed and nothing issued. */
int  rqi_async_issue(struct rq_ctx *ctx, struct rqi_aop *op);
/* Copy one piece of the oldest queued transfer (any thread), or reap
 * pulled ones: 1 if there was anything. */
int  rqi_async_help(struct rq_ctx *ctx);
/* Owner of the context: send the announcements of landed long requests
 * and complete them.  Returns how many. */
int  rqi_async_announce(struct rq_ctx *ctx);
/* Complete op: move its counter, free it, one less pending. */
void rqi_async_complete(struct rq_ctx *ctx, struct rqi_aop *op);
/* Complete the pulled long requests whose targets have finished (any
 * thread; no context needed).  Returns how many. */
int  rqi_async_reap(struct rq_ctx *ctx);

/* Owner: wait until every transfer issued has completed, helping and
 * polling meanwhile.  0 or RQ_EPEER. */
int  rqi_async_quiet(struct rq_ctx *ctx);

/* Whether a waiter should help (a hint: read relaxed). */
static inline int rqi_async_has_work(const struct rqi_async *a)
{
    return rqi_load_relaxed(&a->queued) != 0 || rqi_load_relaxed(&a->npulls) != 0;
}

#endif
