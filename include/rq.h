/*
 * rq.h - librq public API: active messages, remote queues, global-address
 * operations, parallel dispatch queue and virtual network interface.
 *
 * THREAD RULES (read first)
 *   - By default a context (rq_ctx_t) is used by one thread at a time:
 *     calls on the same context from several threads must be serialized
 *     by the caller.  Different processes (ranks) never share a context.
 *   - Thread-safe mode: with RQ_THREAD_SAFE=1 at rq_init, and in any case
 *     from the first rq_pdq_open on, every call may be made from any
 *     thread at any time (MPI_THREAD_MULTIPLE): each call takes the
 *     context's lock (recursive), and a call that waits (rq_wait_until,
 *     collectives, a send held by overflow control, rq_pdq_drain) lets it
 *     go while it sleeps.  The lock is biased: a thread that has called
 *     alone for a while (1024 calls with no other thread between) enters
 *     without an atomic instruction, so an application thread beside an
 *     idle PDQ, or beside PDQ handlers that do not send, pays no mutex;
 *     another thread's next call takes the lock back first (a
 *     membarrier(2), a few microseconds, once per hand-over).  A short
 *     or medium rq_request, rq_reply or rq_pdq_enqueue to a rank of this
 *     node whose lane has room takes no context lock at all, only a lock
 *     of the destination's lane: a thread that sends while another polls
 *     or sends elsewhere does not wait for it.  Active-message and queue
 *     handlers still run one at a time, on whichever thread polls.  A
 *     thread's own sends to one destination queue stay FIFO; sends of
 *     different threads are ordered by whichever writes the lane first.
 *   - A handler may continue as a thread (rq_handler_promote): the rest
 *     of its work runs on a pool thread, where it may wait like any
 *     application thread; it is no longer a handler nor atomic.
 *   - PDQ handlers (rq_pdq_open) run on the PDQ's threads, in parallel
 *     with each other and with the application, serialized only per
 *     synchronization key.  They are handlers: they may send anything,
 *     and the calls that wait return RQ_EPERM from them.
 *   - Handlers run on the thread that called rq_poll(), rq_wait_until() or
 *     a blocking librq call, one at a time.  A handler never interrupts
 *     user code in polling mode (the default): code is atomic by default.
 *     With rq_interrupts() on, the rank's progress thread also runs them,
 *     only while the application's thread is outside librq and outside
 *     rq_atomic_begin/end sections, never two at once.
 *   - While the job is in overflow control (docs/delivery.md: a rank of
 *     any node raised STOP) a send made outside a handler waits for
 *     RESUME and runs handlers meanwhile (outside an atomicity section);
 *     with RQ_NONBLOCK it returns RQ_EAGAIN instead, unsent.
 *   - Inside a handler every send function may be called (requests,
 *     replies, enqueues, long requests, to any rank, self included).  A
 *     send that finds the destination full drains the caller's own inbound
 *     queue into its virtual buffer WITHOUT running handlers, so no pattern
 *     of sends from handlers deadlocks.  rq_poll() called from a handler
 *     runs nothing and returns 0; calls that wait for other ranks
 *     (rq_wait_until, rq_store_sync, rq_all_store_sync, collectives,
 *     rq_finalize) return RQ_EPERM from a handler.  Global-address
 *     operations (rq_read, rq_amo, rq_sync...) are allowed: they wait
 *     only for a service that never runs a handler.
 *   - fork(): a context is not inherited.  A child of fork() must not use
 *     its parent's context (it may exec a new program, which may call
 *     rq_init as a 1-rank job).
 *
 * RETURN CONVENTION
 *   0 or a count on success, a negative RQ_E* code on failure.
 *   RQ_EAGAIN always means "not done; poll (rq_poll), then retry".
 *
 * ORDERING
 *   Packets from one source to one destination queue are delivered in the
 *   order they were sent (FIFO per (source, destination, queue)), whether
 *   they are read in place from the inbound ring (direct delivery) or from
 *   the virtual buffer (buffered delivery).  A committed send is delivered
 *   exactly once, or the job reports a failed peer (RQ_EPEER).
 *
 * SIZE TIERS (see docs/delivery.md and docs/benchmarks.md)
 *   short   len == 0: header + up to RQ_MAX_ARGS 64-bit arguments.
 *   medium  0 < len <= rq_medium_max(): payload read in place from the
 *           inbound lane (one copy: the sender's into the lane).
 *   medium  len > rq_medium_max(), same node: copied once into the
 *           sender's staging area (RQ_BULK_BYTES) and read in place there
 *           by the handler; no fragments, no reassembly.  Larger than the
 *           staging area (or sent from a handler while the area is full):
 *           fragmented and reassembled (one extra copy).  Another node:
 *           one UCX message, rendezvous above RQ_UCX_EAGER_MAX.  Whatever
 *           the path, the handler sees one contiguous payload.  No size
 *           cap below this node's physical memory.
 *   long    rq_request_long(): payload written straight into the target's
 *           segment at dst_off, then the handler runs.
 */
#ifndef RQ_H
#define RQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RQ_VERSION_MAJOR 0
#define RQ_VERSION_MINOR 1
#define RQ_VERSION_PATCH 0

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */
#define RQ_OK          0
#define RQ_EAGAIN    (-1)  /* not committed / not ready: poll, then retry */
#define RQ_EINVAL    (-2)  /* invalid argument */
#define RQ_ENOMEM    (-3)  /* out of memory */
#define RQ_ERANGE    (-4)  /* offset/length outside a segment or buffer */
#define RQ_EPEER     (-5)  /* a peer rank died or the job is failing */
#define RQ_ETIMEDOUT (-6)  /* a bounded wait expired */
#define RQ_ENOTSUP   (-7)  /* not implemented (yet) or not supported here */
#define RQ_EPERM     (-8)  /* not allowed in this context (e.g. in a handler) */

/* ------------------------------------------------------------------ */
/* Compiled-in limits                                                  */
/* ------------------------------------------------------------------ */
#define RQ_MAX_ARGS      16u   /* 64-bit arguments per packet */
#define RQ_MAX_HANDLERS  256u  /* user handler ids: [0, RQ_MAX_HANDLERS) */
#define RQ_MAX_QUEUES    64u   /* queue ids: [0, RQ_MAX_QUEUES); 0 = AM */
#define RQ_AM_QUEUE      0u
#define RQ_PEEK_MAX      64u   /* views one rq_peek_n may return */

/* send flags */
#define RQ_NONBLOCK   0x1u  /* not committable now -> RQ_EAGAIN, nothing sent */
#define RQ_INTERRUPT  0x2u  /* wake the target's progress thread (RQ_INTR_SELECTIVE) */
/* handler flags */
#define RQ_HF_INTERRUPT 0x1u /* deliver asynchronously when interrupts are on */
#define RQ_HF_PLACE     0x2u /* large payloads reach the handler unplaced (rq_place) */
#define RQ_HF_PROMOTE   0x4u /* the handler may become a thread (rq_handler_promote) */

/* Symbols of the public API are exported from the shared library; every
 * internal one stays hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define RQ_API __attribute__((visibility("default")))
#else
#define RQ_API
#endif

typedef struct rq_ctx rq_ctx_t;
typedef struct rq_pdq rq_pdq_t;

/* ------------------------------------------------------------------ */
/* Lifecycle                                                           */
/* ------------------------------------------------------------------ */

/* rq_init - join the job and create this rank's context.
 *   argc, argv: may be NULL; not modified today (reserved for launcher args).
 *   ctx: out, the new context.
 * Under rqrun the rank joins the rqrun job (one node, shared memory).
 * Started by mpirun or srun it bootstraps through PMIx: ranks on the same
 * node (RQ_NODE_ID, else the host name) share memory, ranks of other nodes
 * are reached through UCX (RQ_TRANSPORT chooses; see environment(7)).
 * Without a launcher the program is a 1-rank job.  Configuration comes from RQ_* environment variables
 * (rqinfo lists them).  Collective: returns when every rank has attached.
 * Returns 0, RQ_EINVAL (ctx NULL, bad RQ_* value), RQ_ENOMEM, RQ_EPEER (a
 * peer died while starting), RQ_ETIMEDOUT (peers did not attach within
 * RQ_INIT_TIMEOUT_MS, or fail at once with RQ_EPEER when the launcher
 * knows a rank exited before attaching), RQ_ENOTSUP (started across nodes
 * by a launcher while librq was built without PMIx or UCX, or
 * RQ_TRANSPORT=shm across nodes), RQ_EPERM (a second call in this
 * process, also after rq_finalize; or this rank of the job was already
 * attached by another process, such as an earlier program of the same
 * `rqrun ... sh -c 'a; b'`: a rank slot is attached once per job, so that
 * every packet is delivered exactly once).
 * Blocking: yes.  Thread safety: call once per process, one thread. */
RQ_API int rq_init(int *argc, char ***argv, rq_ctx_t **ctx);

/* rq_finalize - leave the job.  Collective and quiescent: it returns once
 * every rank has called it and nothing is in flight anywhere.  Until then
 * it polls: handlers run (also those of messages sent to this rank from
 * other ranks' rq_finalize), and whatever they send, to any rank, is
 * delivered and run before any rank returns; parked packets are sent.
 * Then every resource is released.  Packets still unread in named queues
 * are discarded.  A chain of handlers that never stops sending keeps
 * every rank in rq_finalize.  After it returns the context is freed: any
 * use of ctx, from any thread, is a use after free, except a second
 * rq_finalize(ctx), which returns RQ_EINVAL without touching it.  A send
 * that reaches a rank that has left (only a thread that outlives its
 * rank's rq_finalize can make one) returns RQ_EPEER and sends nothing.
 * Returns 0, RQ_EINVAL (NULL, or already finalized), RQ_EPERM (from a
 * handler; nothing is released), RQ_EPEER (the job failed: no wait, but
 * everything is released all the same, so a failed rank should still
 * call it).  Blocking: yes (collective).  Thread safety: the
 * application's thread; no other thread may call librq during or after
 * it. */
RQ_API int rq_finalize(rq_ctx_t *ctx);

/* rq_rank / rq_size - this rank and the number of ranks; -1 / 0 if ctx is
 * NULL.  Non-blocking, thread-safe, callable from a handler. */
RQ_API int rq_rank(const rq_ctx_t *ctx);
RQ_API int rq_size(const rq_ctx_t *ctx);

/* rq_build_info - what this build of the library contains, as text lines
 * ("transports   shm (this node) ucx (UCX 1.13.1)", the bootstrap, the
 * thread support, the sanitizers it was built with); rqinfo prints it.
 * Static string.  Non-blocking, thread-safe, no context needed. */
RQ_API const char *rq_build_info(void);

/* rq_strerror - static name of an RQ_E* code ("RQ_EINVAL: invalid
 * argument"); unknown codes give "unknown error".  Thread-safe. */
RQ_API const char *rq_strerror(int err);

/* rq_medium_max - largest payload delivered in place in the inbound lane
 * in this job: min(RQ_MEDIUM_MAX, RQ_RING_BYTES / 4 - header).  Larger
 * medium payloads are staged (see SIZE TIERS).  0 if ctx is NULL.
 * Thread-safe. */
RQ_API size_t rq_medium_max(const rq_ctx_t *ctx);

/* ------------------------------------------------------------------ */
/* Handlers and active messages                                        */
/* ------------------------------------------------------------------ */
typedef struct rq_msg {
    int             src;     /* sending rank */
    unsigned        qid;     /* queue it arrived on */
    unsigned        handler; /* handler index (AM) or tag (plain queue) */
    unsigned        nargs;   /* <= RQ_MAX_ARGS */
    const uint64_t *args;
    void           *data;    /* payload, in place (medium) or at its destination (long) */
    size_t          len;
    uint64_t        key;     /* PDQ key; RQ_KEY_NOSYNC otherwise */
    /* implementation fields follow; do not touch */
    uint32_t        rqi_flags;
    uint32_t        rqi_pad;
} rq_msg_t;

typedef void (*rq_handler_fn)(rq_ctx_t *ctx, const rq_msg_t *msg, void *arg);

/* rq_handler_register - install fn as handler id (0 <= id < RQ_MAX_HANDLERS);
 * fn NULL uninstalls.  The table must be the same on every rank before
 * packets for id arrive: a packet for an id with no handler is rejected and
 * counted in rq_stats().rejected.  flags: 0 or any of RQ_HF_INTERRUPT,
 * RQ_HF_PLACE (see rq_place), RQ_HF_PROMOTE (see rq_handler_promote: it
 * switches the context to thread-safe mode for good, as RQ_THREAD_SAFE=1).
 * Returns 0, RQ_EINVAL, RQ_EPERM (RQ_HF_PROMOTE on a context not yet
 * thread-safe, from a handler or the progress thread).  Non-blocking;
 * callable from a handler. */
RQ_API int rq_handler_register(rq_ctx_t *ctx, unsigned id, rq_handler_fn fn, void *arg,
                        unsigned flags);

/* ---- handlers that become threads (FUGU's user_active_global) ----
 * rq_handler_promote - continue the running handler in a thread.
 * Called inside a handler (active message, queue or PDQ handler, on any
 * thread that runs it) with msg, the message that handler was given, it
 * hands the rest of the handler's work, fn(ctx, copy, arg), to a thread.
 * It copies the message (its args, and its payload
 * unless that already lies in this rank's segment, as a long request's
 * does; an unplaced RQ_HF_PLACE payload is not carried: data NULL, len
 * as the handler saw it) and queues fn with the copy to the context's
 * promotion pool; the handler then returns, and the ring is not held.
 * fn runs on a pool thread, outside any handler: there every librq call
 * is allowed, the blocking ones included (rq_wait_until, rq_read,
 * collectives, a DSM section as rqdsm.h THREADS allows), as from an
 * application thread of a thread-safe context; it may run long, wait
 * for other messages, or
 * block, while handlers keep running on the threads that poll.  The copy
 * (msg, its args and payload) is valid until fn returns.
 *   Pool: one per context, created by the first promotion; a thread is
 * started whenever more parts wait than threads are idle, up to
 * RQ_PROMOTE_THREADS (default 32); beyond that parts start in the order
 * they were promoted as threads come free (a part that waits for the
 * effect of a part not yet started, while every thread is taken, waits
 * forever: raise RQ_PROMOTE_THREADS).  An idle pool thread looks for
 * work RQ_PROMOTE_SPIN_US (default 50), yielding the CPU, then sleeps.
 * The threads inherit the rank's CPU set: a rank bound to one core
 * (rqrun --bind core, mpirun --bind-to core) runs its parts on that core
 * in turns with the application; give such ranks two cores or more.
 * Cost (rqbench am, "promotion" rows): about 0.3-0.4 us over a plain
 * handler with a core free for the pool, 8 us sharing one core.
 *   Atomicity and order: a promoted part is not a handler and not atomic:
 * it runs in parallel with handlers, the application and other promoted
 * parts, like an application thread.  Parts start in promotion order;
 * nothing orders their ends.  In a PDQ, promotion ends the handler's hold
 * on its key: the key's next message may run at once, in parallel with
 * the part (serialize across the part yourself if it needs the key), and
 * an RQ_KEY_SEQUENTIAL handler's part runs in parallel with what follows
 * it; rq_pdq_drain does not wait for promoted parts.
 *   Sends from a part are a thread's sends (deadlock-free as any sender's:
 * a full destination makes it drain, not wait for a handler).  When the
 * job fails, a part's waits return RQ_EPEER like any thread's.
 *   rq_finalize waits until every promoted part has returned (parts may
 * send, so they belong to the job's quiescence); parts promoted by
 * handlers that run within rq_finalize's last waves run on the
 * finalizing thread, one at a time, and must not call collectives.  If
 * the job has failed, parts not yet started are dropped.
 * Returns 0, RQ_EINVAL (ctx, msg or fn NULL; msg malformed), RQ_EPERM
 * (not inside a handler; or the context is not thread-safe: register the
 * handler with RQ_HF_PROMOTE, set RQ_THREAD_SAFE=1 or open a PDQ),
 * RQ_ENOMEM (nothing queued: the handler still has its message).
 * Blocking: no (it may start a thread).  Thread safety: from a handler,
 * on any thread. */
typedef void (*rq_promoted_fn)(rq_ctx_t *ctx, const rq_msg_t *msg, void *arg);
RQ_API int rq_handler_promote(rq_ctx_t *ctx, const rq_msg_t *msg, rq_promoted_fn fn, void *arg);

/* rq_request - send an active message: handler runs on dst with args and
 * the payload.  len 0 = short, else medium (see SIZE TIERS).
 *   args: nargs words (nargs <= RQ_MAX_ARGS; args may be NULL iff nargs 0);
 *   data: len bytes (may be NULL iff len 0).  Both buffers are copied before
 *   the call returns and may be reused at once.
 *   flags: RQ_NONBLOCK, RQ_INTERRUPT.
 * Blocking: if dst's inbound queue is full (or, for a staged payload, the
 * caller's staging area has no room until receivers consume earlier
 * payloads) the call drains the caller's own inbound queue into its
 * virtual buffer (running no handler) and retries until committed; with
 * RQ_NONBLOCK it returns RQ_EAGAIN instead and sends nothing (for a
 * fragmented payload: if the first fragment cannot be committed; once it
 * is, the rest is sent blocking).
 * Returns 0, RQ_EINVAL (rank, handler id, nargs, NULL buffer, flags, len
 * above this node's physical memory), RQ_EAGAIN, RQ_EPEER, RQ_ENOMEM.
 * Callable from a handler: yes. */
RQ_API int rq_request(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
               unsigned nargs, const void *data, size_t len, unsigned flags);

/* rq_reply - rq_request() to req->src.  req is the message a handler
 * received (or any delivered message).  Same returns and blocking. */
RQ_API int rq_reply(rq_ctx_t *ctx, const rq_msg_t *req, unsigned handler, const uint64_t *args,
             unsigned nargs, const void *data, size_t len, unsigned flags);

/* rq_request_long - copy len bytes from src to dst's segment at dst_off,
 * then run handler on dst with msg->data pointing at that segment range.
 * The copy is done by the initiator (shared memory) before the call
 * returns: src may be reused at once.  dst_off + len must lie within the
 * target's segment (RQ_SEGMENT_SIZE), else RQ_ERANGE and nothing happens.
 * Same blocking and RQ_NONBLOCK behaviour as rq_request (RQ_EAGAIN: the
 * segment was not written).  Callable from a handler: yes. */
RQ_API int rq_request_long(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                    unsigned nargs, const void *src, size_t len, uint64_t dst_off,
                    unsigned flags);

/* ---- receiver-placed payloads (UCX's ucp_am_recv_data_nbx, FUGU's
 * extractdma) ----
 * A handler registered with RQ_HF_PLACE sees every active message whose
 * payload is larger than rq_medium_max() before that payload is placed:
 * msg->data is NULL and msg->len its size, the args are there.  From
 * inside that handler it names where the payload goes, once, with
 * rq_place (a buffer of its own) or rq_place_segment (its segment at an
 * offset); the sender needed no knowledge of the receiver's memory.  If
 * the handler returns without placing it, the payload is discarded.
 * Smaller payloads reach such a handler in place as usual (msg->data set).
 * The same on every transport and delivery path; where the payload waits
 * meanwhile: the sender's staging area (same node), the virtual buffer
 * (buffered delivery), the sender's own buffer (another node: its
 * rq_request returns once the payload has been pulled; a receiver that is
 * itself blocked sending, or buffering, pulls it into a buffer of its own
 * first, so two ranks sending to each other never wait for each other).
 *
 * Completion: when the payload is in dst, *done (if not NULL) is
 * incremented by one (an atomic add with release: read it with
 * rq_wait_until or an acquire load), then fn(ctx, arg, status) (if not
 * NULL) runs from a later rq_poll or wait on this rank, as a handler
 * (never inside rq_place; status 0, or RQ_EPEER if the job failed first).
 * dst must stay valid and untouched until then.  On this node the copy is
 * made within rq_place (*done has moved when it returns); from another
 * node the payload is pulled by rendezvous straight from the sender's
 * buffer into dst after rq_place returns (zero-copy; the counter moves
 * from a later poll or wait).  Rely only on the counter or the callback.
 *
 * rq_place - place msg's payload at dst (msg->len bytes).
 * rq_place_segment - place it in this rank's segment at off.
 * Returns 0, RQ_EINVAL (ctx, msg or dst NULL; msg is not the unplaced
 * message of the handler running now, or was placed already), RQ_ERANGE
 * (rq_place_segment: off + len outside the segment; nothing is written,
 * the attempt is counted in rq_stats().rejected, and the handler may still
 * place the payload elsewhere).  The sender is not told (its rq_request
 * returned long before).  Non-blocking.  Only from the RQ_HF_PLACE
 * handler the message was given to, on the thread running it. */
typedef void (*rq_place_fn)(rq_ctx_t *ctx, void *arg, int status);
RQ_API int rq_place(rq_ctx_t *ctx, const rq_msg_t *msg, void *dst, volatile uint64_t *done,
                    rq_place_fn fn, void *arg);
RQ_API int rq_place_segment(rq_ctx_t *ctx, const rq_msg_t *msg, uint64_t off,
                            volatile uint64_t *done, rq_place_fn fn, void *arg);

/* rq_poll - run the handlers of arrived active messages (buffered ones
 * first, then the inbound ring in place), at most RQ_POLL_BATCH per call:
 * on this node it reads an inbound lane (one per sending rank, unless
 * RQ_LANES makes ranks share them) while the lane has messages, and
 * returns once a lane it delivered from is empty (the next call starts at
 * the next lane), so one call runs every message that had arrived in one
 * lane, up to the batch.  Packets for named queues met on the way are
 * moved to their queue's buffer.  Returns the number of handlers run (0
 * when nothing arrived, and always 0 when called from a handler),
 * RQ_EINVAL.  Non-blocking.
 * Oversubscription: rq_poll, rq_peek, rq_peek_n and rq_dequeue count the
 * calls in a row that found nothing (returned 0; any other return resets
 * the count).  With RQ_YIELD_IDLE on (by default only when this node runs
 * more ranks than it has CPUs), each such call past the first
 * RQ_SPIN_COUNT also yields the CPU (sched_yield, after releasing the
 * context) before it returns, so a loop spinning on them lets a
 * descheduled peer run; counted in rq_stats().idle_yields. */
RQ_API int rq_poll(rq_ctx_t *ctx);

/* rq_wait_until - poll until *word >= at_least (a word normally written by
 * a handler or a long/put transfer; read with acquire, so what was written
 * before the word's release increment is visible at return).  While idle
 * it also copies pieces of this rank's queued non-blocking transfers.
 * Returns 0, RQ_EINVAL, RQ_EPEER (a peer died while waiting), RQ_EPERM
 * (called from a handler).
 * Blocking: yes; spins, then yields the CPU (RQ_SPIN_COUNT). */
RQ_API int rq_wait_until(rq_ctx_t *ctx, const volatile uint64_t *word, uint64_t at_least);

/* rq_test - non-blocking test of a completion counter: 1 if *word >=
 * at_least (acquire load), else one rq_poll step (handlers may run; the
 * network progresses) and 1 or 0 from a second look.  Copies nothing:
 * a rank that computes between tests leaves its transfers to its copy
 * thread.  Returns 1, 0, RQ_EINVAL (ctx or word NULL), RQ_EPEER (the job
 * failed and the word is still below at_least).  Callable from a
 * handler (it then polls nothing).  Thread safety: like rq_poll. */
RQ_API int rq_test(rq_ctx_t *ctx, const volatile uint64_t *word, uint64_t at_least);

/* ---- non-blocking bulk transfers (the RQ paper's am_store_async and
 * am_get, FUGU's injectdma with a completion flag) ----
 * rq_put_nb, rq_get_nb and rq_request_long_nb start a transfer and return
 * at once; it completes later, in any order relative to the caller's other
 * transfers.  done is a counter the caller owns (or NULL): when the
 * transfer completes it is incremented by one with an atomic add with
 * release; wait for it with rq_wait_until, test it with rq_test or an
 * acquire load.  One counter may serve many transfers (wait for their
 * number).  rq_sync also waits for every transfer this rank started, and
 * rq_finalize completes them all (counters move, handlers run) before it
 * returns.  Nothing bounds how many are outstanding (one small allocation
 * each: RQ_ENOMEM when none can be had).
 *
 * Who moves the bytes: to or from another rank of this node, a put or get
 * of at least RQ_ASYNC_MIN bytes (default 64 KiB) is copied by this rank's
 * copy thread (started by the first one; it runs on another CPU than the
 * caller) and, while this rank waits in rq_wait_until, rq_sync or another
 * blocking call, by the waiting thread too; the target takes no part.  A
 * long request of that size is copied by its target, which reads the
 * caller's memory (Linux cross-memory attach) when it polls, as it must
 * anyway to run the handler; where it may not (ptrace rules; RQ_ASYNC_PULL
 * =off; the target has interrupts on; RQ_INTERRUPT; RQ_BULK_BYTES=0) the
 * copy thread does it.  Either way the caller's own thread is free to compute, and the
 * counter moves without it calling librq (its progress thread moves it).
 * Smaller transfers, and those on one's own rank, are copied within the
 * call (complete at return).  To another node they are UCX RMA or
 * rendezvous operations, which progress when this rank calls librq.  The
 * strategy (RQ_GAS_STRATEGY) does not change this.
 *
 * Buffers: the local buffer (src of a put or long request, dst of a get)
 * belongs to the transfer until its counter moves: do not write it (put,
 * long) or read it (get) before.  The remote bytes follow the rules of
 * rq_put / rq_get: a put's bytes are visible at the target once the
 * counter moved; nothing orders them with other operations.
 *
 * Arguments as rq_put / rq_get / rq_request_long (flags: 0 for put and
 * get; RQ_INTERRUPT for a long request, whose announcement then
 * interrupts; RQ_NONBLOCK is refused, RQ_EINVAL).  A transfer of 0 bytes
 * (put, get) completes within the call.  After the job failed they return
 * RQ_EPEER, and transfers still pending never complete: copying stops
 * within one 256 KiB piece of the failure being seen, no counter moves
 * once a call of this rank has returned RQ_EPEER, and a rank waiting for
 * them (rq_wait_until, rq_sync) gets RQ_EPEER even while it copies.
 * Blocking: they wait only where rq_request would, for room in the
 * target's lane (a long request's small PULL message), and never inside a
 * handler (the message is parked instead).  Callable from a handler: yes.
 * Thread safety: like every call on a context; the counter may be read
 * from any thread.
 *
 * rq_put_nb - copy len bytes from src to dst's segment at off.  Complete:
 * the bytes are visible at the target and src may be reused.
 * rq_get_nb - copy len bytes from src_rank's segment at off into dst.
 * Complete: dst holds them.
 * rq_request_long_nb - copy len bytes from src to dst's segment at dst_off,
 * then run handler on dst as rq_request_long does (msg->data in the
 * segment), once every byte has landed.  Complete: the bytes have landed
 * and the handler will run (or has run) at the target without anything
 * more from the initiator, which may compute meanwhile; src may be
 * reused.  Handlers of several long requests run in the order their bytes
 * landed, which need not be the order of the calls.
 * Returns 0, RQ_EINVAL, RQ_ERANGE, RQ_EPEER, RQ_ENOMEM. */
RQ_API int rq_put_nb(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len,
                     volatile uint64_t *done, unsigned flags);
RQ_API int rq_get_nb(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len,
                     volatile uint64_t *done, unsigned flags);
RQ_API int rq_request_long_nb(rq_ctx_t *ctx, int dst, unsigned handler, const uint64_t *args,
                              unsigned nargs, const void *src, size_t len, uint64_t dst_off,
                              volatile uint64_t *done, unsigned flags);

/* ------------------------------------------------------------------ */
/* Remote queues (RQ paper: read_queue = peek, delete_queue = pop)     */
/* ------------------------------------------------------------------ */

/* rq_queue_open - start consuming queue qid (1 <= qid < RQ_MAX_QUEUES).
 * Packets that arrived for qid before it was opened were kept and are
 * delivered first.  Opening twice is allowed.  Returns 0, RQ_EINVAL (qid 0
 * is the AM queue and is always open).  Non-blocking. */
RQ_API int rq_queue_open(rq_ctx_t *ctx, unsigned qid);

/* rq_enqueue - append a packet (tag, args, payload) to queue qid of rank
 * dst (1 <= qid < RQ_MAX_QUEUES; the queue need not be open yet).
 * Same buffer ownership, blocking, RQ_NONBLOCK and returns as rq_request. */
RQ_API int rq_enqueue(rq_ctx_t *ctx, int dst, unsigned qid, unsigned tag, const uint64_t *args,
               unsigned nargs, const void *data, size_t len, unsigned flags);

/* rq_peek - view the head of open queue qid without removing it.
 * Returns 1 and fills *view (view->args/view->data point into librq
 * memory, valid until rq_pop(qid) or rq_finalize), 0 if the queue is
 * empty, RQ_EINVAL (queue not open, view NULL).  While a view of a packet
 * still in the inbound ring is held, ring space behind it is not reused:
 * pop promptly.  Runs no handler.  Non-blocking (may yield the CPU when
 * idle: RQ_YIELD_IDLE, see rq_poll). */
RQ_API int rq_peek(rq_ctx_t *ctx, unsigned qid, rq_msg_t *view);

/* rq_pop - remove the head of queue qid (the one rq_peek showed, or the
 * current head).  Returns 1 removed, 0 empty, RQ_EINVAL.  Non-blocking. */
RQ_API int rq_pop(rq_ctx_t *ctx, unsigned qid);

/* rq_peek_n - view a run of up to max packets at the head of open queue
 * qid without removing them: the batched, zero-copy form of rq_peek for
 * an inlined consumer loop (one call, then one rq_pop_n, per run instead
 * of two calls per packet).  views[0] is the head, views[i+1] the packet
 * after views[i] (the queue's FIFO order).  Returns how many views were
 * filled (1..max; fewer than max when fewer are at hand now; a run never
 * mixes packets still in the inbound ring with packets of the virtual
 * buffer, so call again after rq_pop_n), 0 if the queue is empty, RQ_EINVAL
 * (queue not open, views NULL, max 0 or > RQ_PEEK_MAX).  Each view stays
 * valid until its packet is popped (rq_pop, rq_pop_n, rq_dequeue) or
 * rq_finalize; viewing again returns the same packets first.  Ring space
 * behind a held view is not reused: pop promptly.  Runs no handler.
 * Non-blocking (may yield the CPU when idle: RQ_YIELD_IDLE, see rq_poll).
 * Thread safety: as every call on ctx. */
RQ_API int rq_peek_n(rq_ctx_t *ctx, unsigned qid, rq_msg_t *views, unsigned max);

/* rq_pop_n - remove the n packets at the head of queue qid (those the last
 * rq_peek_n showed, in order; pop the first k <= n shown and the others
 * stay at the head, still valid).  Beyond the packets viewed it removes
 * unviewed ones, like n calls of rq_pop.  Returns how many were removed
 * (less than n when the queue ran empty; 0 for n 0), RQ_EINVAL (queue not
 * open, n > INT32_MAX).  Non-blocking. */
RQ_API int rq_pop_n(rq_ctx_t *ctx, unsigned qid, unsigned n);

/* rq_dequeue - copy the head's first nargs arguments and first nbytes of
 * payload into args/buf and remove it.  Returns 1 copied and removed, 0
 * empty, RQ_ERANGE if the head has fewer than nargs arguments or fewer
 * than nbytes of payload (the head stays), RQ_EINVAL.  Non-blocking (may
 * yield the CPU when idle: RQ_YIELD_IDLE, see rq_poll). */
RQ_API int rq_dequeue(rq_ctx_t *ctx, unsigned qid, uint64_t *args, unsigned nargs, void *buf,
               size_t nbytes);

/* ------------------------------------------------------------------ */
/* Global address space                                                */
/* ------------------------------------------------------------------ */

/* rq_segment - this rank's segment (RQ_SEGMENT_SIZE bytes, zero-filled at
 * start, page aligned).  Peers reach it by offset.  Returns 0, RQ_EINVAL. */
RQ_API int rq_segment(rq_ctx_t *ctx, void **base, size_t *size);

/* rq_segment_peer - a local pointer to rank's segment when that rank's
 * segment is mapped here (same node, shared memory), else NULL (a rank on
 * another node, or a bad rank).  Loads and stores through it are plain memory accesses; the
 * caller orders them.  Thread-safe. */
RQ_API void *rq_segment_peer(rq_ctx_t *ctx, int rank);

/* Global-address operations (Split-C).  A global address is (rank,
 * offset into that rank's segment).  Who moves the data is chosen per job
 * by RQ_GAS_STRATEGY (the same program gives the same results under each):
 *   direct  the initiator copies through the peer's mapped segment (the
 *           default on shared memory; nothing runs at the target);
 *   np      a progress thread per rank (the "network processor") serves
 *           requests; the main thread never has to poll for them;
 *   proc    the target's own thread serves requests whenever it is inside
 *           librq in a call that a program may spin on: rq_poll,
 *           rq_wait_until, every blocking call, every global-address
 *           operation (also one done in place on its own segment),
 *           rq_peek / rq_dequeue, and sends.  A rank that spins on its
 *           own memory without calling librq serves nobody: spin with
 *           rq_amo, rq_read or rq_poll instead.
 * Operations on one's own rank are always done in place.
 *
 * After a rank died (the job failed) every one of them returns RQ_EPEER,
 * under every strategy and transport, including operations on live ranks
 * and on one's own segment.
 *
 * Arguments, for all of them: ranks in [0, rq_size); local buffers
 * non-NULL unless the length is 0; flags must be 0 (reserved); the remote
 * bytes must lie inside the target's segment: RQ_ERANGE otherwise (also
 * for an offset past the end with length 0).  The initiator checks; under
 * np and proc the target checks every request again and drops (and
 * counts, rq_stats().rejected) any that fail.  A transfer of 0 bytes does
 * nothing and returns 0.
 *
 * Completion semantics:
 *   source reuse  the source buffer of a put, store or strided put may be
 *                 reused as soon as the call returns (the data has been
 *                 copied into the target or into the request packets).
 *   puts          complete remotely (visible to any reader at the target)
 *                 when rq_sync returns; under direct already at return.
 *   gets          the destination buffer holds the data when rq_sync
 *                 returns; do not read or reuse it before.
 *   stores        land at the target without any initiator waiting; the
 *                 target learns of them through its byte counter
 *                 (rq_store_sync); rq_sync also waits for the initiator's
 *                 stores to land.
 *   ordering      operations are not ordered with one another, nor with
 *                 active messages from the same initiator: call rq_sync
 *                 before an active message that announces a put ("data is
 *                 ready"), or use stores and rq_store_sync.
 *   blocking      rq_read, rq_write, rq_amo, rq_sync, rq_store_sync and
 *                 rq_all_store_sync block; while they wait they run
 *                 handlers (outside a handler) and serve global-address
 *                 requests (proc).  rq_put/rq_get/rq_store block only
 *                 while the target's request ring is full.
 * Thread safety: like every call on a context, one thread at a time. */

/* rq_put - copy len bytes from src to dst's segment at off.  Split-phase:
 * complete remotely at rq_sync.  0, RQ_EINVAL, RQ_ERANGE, RQ_EPEER,
 * RQ_ENOMEM. */
RQ_API int rq_put(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len, unsigned flags);
/* rq_get - copy len bytes from src_rank's segment at off into dst.
 * Split-phase: dst is filled when rq_sync returns.  Returns as rq_put. */
RQ_API int rq_get(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len, unsigned flags);
/* rq_store - a put that the target counts: every byte landed adds one to
 * the target's store counter (see rq_store_sync).  Returns as rq_put. */
RQ_API int rq_store(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len, unsigned flags);
/* rq_sync - wait until every put, get, store and AMO this rank issued has
 * completed (puts and stores remotely), and every non-blocking transfer
 * (rq_put_nb, rq_get_nb, rq_request_long_nb) too.  Blocks.  0, RQ_EINVAL,
 * RQ_EPEER. */
RQ_API int rq_sync(rq_ctx_t *ctx);
/* rq_store_sync - wait until at least nbytes more bytes have been stored
 * into this rank (by anyone) than earlier rq_store_sync calls consumed,
 * then consume nbytes.  The stored data is visible when it returns.
 * Blocks (nbytes 0: returns at once).  0, RQ_EINVAL (NULL, or a count that
 * would overflow), RQ_EPERM (inside a handler: it waits for other ranks),
 * RQ_EPEER. */
RQ_API int rq_store_sync(rq_ctx_t *ctx, uint64_t nbytes);
/* rq_all_store_sync - collective: returns once every store any rank issued
 * before calling it has landed (an rq_sync, then a barrier).  It consumes
 * nothing: pair it with rq_store_sync only if the counts are known.
 * Blocks.  0, RQ_EINVAL, RQ_EPERM (inside a handler), RQ_EPEER. */
RQ_API int rq_all_store_sync(rq_ctx_t *ctx);
/* rq_read - blocking get: dst holds the data at return.  Returns as
 * rq_put. */
RQ_API int rq_read(rq_ctx_t *ctx, void *dst, int src_rank, uint64_t off, size_t len);
/* rq_write - blocking put: the data is visible at the target at return.
 * Waits for every outstanding operation of this rank (an rq_sync).
 * Returns as rq_put. */
RQ_API int rq_write(rq_ctx_t *ctx, int dst, uint64_t off, const void *src, size_t len);
/* rq_put_strided - count blocks of elem bytes: block i goes from
 * src + i*src_stride to dst's segment at off + i*dst_stride.  Written
 * blocks may not overlap (dst_stride >= elem when count > 1: RQ_EINVAL);
 * the source may (a stride of 0 repeats one block).  Many small blocks
 * travel packed in few packets (np, proc).  Completion as rq_put. */
RQ_API int rq_put_strided(rq_ctx_t *ctx, int dst, uint64_t off, size_t dst_stride, const void *src,
                   size_t src_stride, size_t elem, size_t count, unsigned flags);
/* rq_get_strided - the converse: block i comes from src_rank's segment at
 * off + i*src_stride into dst + i*dst_stride (dst_stride >= elem when
 * count > 1).  Completion as rq_get. */
RQ_API int rq_get_strided(rq_ctx_t *ctx, void *dst, size_t dst_stride, int src_rank, uint64_t off,
                   size_t src_stride, size_t elem, size_t count, unsigned flags);
#define RQ_AMO_FADD  1
#define RQ_AMO_SWAP  2
#define RQ_AMO_CSWAP 3
#define RQ_AMO_FAND  4
#define RQ_AMO_FOR   5
#define RQ_AMO_FXOR  6
/* rq_amo - atomically apply op to the 64-bit word at dst's segment + off
 * (8-byte aligned) and return the value it held before in *old (old may be
 * NULL):  FADD w += operand;  SWAP w = operand;  CSWAP w = operand if
 * w == compare (*old tells whether it happened);  FAND/FOR/FXOR w op=
 * operand.  Blocks until done.  AMOs on one word are linearizable, whatever
 * the strategy and the ranks issuing them; plain loads and stores of the
 * word are not atomic with respect to them.  0, RQ_EINVAL (bad rank, op,
 * or alignment), RQ_ERANGE, RQ_EPEER. */
RQ_API int rq_amo(rq_ctx_t *ctx, int dst, uint64_t off, int op, uint64_t operand, uint64_t compare,
           uint64_t *old);

/* ------------------------------------------------------------------ */
/* Collectives (built on active messages, logarithmic in rank count)  */
/* ------------------------------------------------------------------ */
#define RQ_INT64  1
#define RQ_UINT64 2
#define RQ_DOUBLE 3
#define RQ_SUM 1
#define RQ_MIN 2
#define RQ_MAX 3

/* rq_barrier - dissemination barrier over all ranks; runs handlers while
 * it waits.  It orders no other message: one sent before it may arrive
 * after it ends (from another node, or parked in its sender's outbox
 * while our lane was full); wait for such messages by count
 * (rq_wait_until), or use the stores' rq_all_store_sync.  Returns 0,
 * RQ_EINVAL, RQ_EPEER, RQ_EPERM (from a handler).  Blocking, collective:
 * every rank calls the same collectives in the same order. */
RQ_API int rq_barrier(rq_ctx_t *ctx);

/* rq_broadcast - copy len bytes of root's buf into buf on every rank
 * (binomial tree).  len must be the same on all ranks.  Same returns and
 * blocking as rq_barrier, plus RQ_EINVAL for a bad root or NULL buf with
 * len > 0, RQ_ENOMEM. */
RQ_API int rq_broadcast(rq_ctx_t *ctx, int root, void *buf, size_t len);

/* rq_allreduce - out[i] = op over ranks of in[i], i < count, elements of
 * dtype (RQ_INT64, RQ_UINT64, RQ_DOUBLE), op RQ_SUM, RQ_MIN, RQ_MAX
 * (binomial reduce to rank 0, then broadcast; every rank gets bitwise the
 * same result).  in and out may alias.  Same returns as rq_broadcast. */
RQ_API int rq_allreduce(rq_ctx_t *ctx, const void *in, void *out, size_t count, int dtype, int op);

/* ------------------------------------------------------------------ */
/* Virtual network interface                                           */
/* ------------------------------------------------------------------ */
#define RQ_INTR_OFF       0
#define RQ_INTR_SELECTIVE 1
#define RQ_INTR_ALL       2

/* Every rank runs a progress thread that sleeps on a futex until a sender
 * rings it (docs/delivery.md).  It runs handlers asynchronously when
 * interrupts are on, and buffers a lane that a sender found full and that
 * this rank did not drain for RQ_ATOMIC_TIMEOUT_US (revocable atomicity).
 *
 * rq_atomic_begin / rq_atomic_end - open / close an atomicity section
 * (nestable).  Once rq_atomic_begin returns, no handler runs on the
 * progress thread until the matching rq_atomic_end (a handler running when
 * it is called finishes first).  Handlers still run inside the section's
 * own rq_poll and blocking calls.  Packets keep arriving: past the
 * atomicity timer they are buffered, not lost.  About 3 ns uncontended.
 * Called from a handler: no effect (handlers are atomic), but begin/end
 * must still pair.  Returns 0, RQ_EINVAL (ctx NULL; end without begin).
 * Non-blocking except for waiting out a running interrupt handler.
 * Thread safety: the application's thread (like every call on ctx). */
RQ_API int rq_atomic_begin(rq_ctx_t *ctx);
RQ_API int rq_atomic_end(rq_ctx_t *ctx);

/* rq_interrupts - how arriving packets reach their handlers:
 *   RQ_INTR_OFF        (default) only by polling (rq_poll, waits);
 *   RQ_INTR_SELECTIVE  packets sent with RQ_INTERRUPT, or for a handler
 *                      registered with RQ_HF_INTERRUPT, wake the progress
 *                      thread, which runs handlers as rq_poll does (every
 *                      packet before them too, in order, and whatever
 *                      arrived by the time it runs) while the
 *                      application's thread is outside librq and outside
 *                      any atomicity section; others wait for a poll;
 *   RQ_INTR_ALL        every packet does.
 * Interrupt handlers run concurrently with the application's code outside
 * librq: share data with them under rq_atomic_begin/end.  The mode applies
 * to packets sent after the change is visible to the sender (a barrier
 * after the call makes it so for every rank); packets already here are
 * taken up at once.  Every packet that interrupts under the mode is run
 * without this rank polling, wherever it waits (a lane, the virtual buffer
 * after a revocation, another node's arrivals), and sends parked by
 * handlers leave without an application call: the progress thread sends
 * them.  Packets from other nodes interrupt the same way: the
 * progress thread then also sleeps on the network's event fd, and so also
 * serves other nodes' remote reads and writes over transports that need
 * the target's help (TCP).
 * Cost: a call that widens the mode (OFF -> SELECTIVE -> ALL) wakes the
 * progress thread to take up what waits (a futex wake, microseconds); any
 * other call, including one that leaves the mode as it is, is a few
 * nanoseconds and wakes nobody.
 * Returns 0, RQ_EINVAL (ctx NULL, bad mode), RQ_ENOTSUP (no progress
 * thread).  Non-blocking. */
RQ_API int rq_interrupts(rq_ctx_t *ctx, int mode);

typedef struct rq_stats {
    uint64_t sent, received;        /* packets (fragments count once each) */
    uint64_t direct, buffered;      /* how received packets were delivered */
    uint64_t buffer_bytes_now, buffer_bytes_max;
    uint64_t mode_switches, overflow_stops, rejected;
    /* librq extensions to the contract's fields */
    uint64_t parked;                /* sends parked in the outbox (see below) */
    uint64_t interrupts;            /* interrupt deliveries by the progress thread */
    uint64_t revocations;           /* atomicity-timer expiries that buffered packets */
    uint64_t idle_yields;           /* receive calls that gave the CPU away (RQ_YIELD_IDLE) */
    uint64_t overflow_high_exits;   /* STOPs lifted by the memory high-water mark */
    uint64_t promoted;              /* handlers promoted to threads (rq_handler_promote) */
    uint64_t promote_threads;       /* threads its pool started */
} rq_stats_t;

/* rq_stats - this rank's counters since rq_init.  direct: delivered in
 * place from the inbound ring; buffered: delivered from the virtual buffer;
 * mode_switches: transitions between an empty and a non-empty virtual
 * buffer; rejected: packets that failed validation (dropped, counted);
 * parked: sends that found the destination full while this rank's own
 * ring was pinned (a handler running in place, a held view) and were
 * parked in its outbox instead of waiting; overflow_stops: times this rank
 * raised the job's overflow STOP (its buffer past RQ_OVERFLOW_BYTES while
 * its node was low on memory); overflow_high_exits: times it lifted its
 * STOP because its node's free memory rose above RQ_OVERFLOW_HIGH_BYTES
 * before its buffer had drained; interrupts: handler runs by the progress
 * thread; revocations: atomicity-timer expiries that buffered packets
 * (docs/delivery.md); idle_yields: rq_poll, rq_peek, rq_peek_n and
 * rq_dequeue calls that yielded the CPU because RQ_SPIN_COUNT calls in a
 * row before them had found nothing (RQ_YIELD_IDLE, on by default only
 * when the node runs more ranks than it has CPUs); promoted: calls of
 * rq_handler_promote that queued a part; promote_threads: threads the
 * promotion pool started (at most RQ_PROMOTE_THREADS at once).
 * Returns 0, RQ_EINVAL.  Non-blocking. */
RQ_API int rq_stats(rq_ctx_t *ctx, rq_stats_t *out);

/* ------------------------------------------------------------------ */
/* Parallel dispatch queue (PDQ paper; docs/pdq.md)                    */
/* ------------------------------------------------------------------ */
/* A PDQ consumes one queue id with several threads.  Every message names
 * a synchronization key: messages with different keys run in parallel,
 * messages with the same key never overlap and run in arrival order (per
 * source), and the queue, not the handler, does the waiting: a message
 * whose key is busy stays queued while later messages with other keys
 * go ahead, so no handler locks or busy-waits.  Dispatch goes around at
 * most `window` queued messages of busy keys, so its cost stays flat
 * however long the queue grows: once `window` messages wait behind busy
 * keys, later messages wait too until one of those runs.  Handlers are the ones registered with rq_handler_register (the
 * message's `handler` id; one for an id with none is dropped and counted
 * in rq_stats().rejected); m->key holds the key.  Memory for queued
 * messages counts against RQ_VBUF_MAX when that is set. */
#define RQ_KEY_SEQUENTIAL UINT64_MAX          /* runs alone: waits for the running
                                                 handlers, blocks dispatch until done */
#define RQ_KEY_NOSYNC     (UINT64_MAX - 1)    /* runs any time, beside anything */
#define RQ_PDQ_DEDICATED   1  /* the PDQ owns `threads` threads; idle ones sleep */
#define RQ_PDQ_MULTIPLEXED 2  /* application threads run handlers in rq_pdq_help;
                                 `threads` fallback threads run them until the
                                 first help, then step in only when nobody
                                 helped for RQ_PDQ_FALLBACK_US, and at most 4x
                                 that after the last help */
typedef struct rq_pdq_attr { unsigned threads; int mode; unsigned window; } rq_pdq_attr_t;

/* rq_pdq_open - make queue qid (1 <= qid < RQ_MAX_QUEUES, not opened with
 * rq_queue_open, not already a PDQ) a parallel dispatch queue.  Its threads
 * are pinned one per CPU of the calling thread's allowed set, the node's
 * ranks taking places in turn (RQ_PDQ_BIND=spread, the default; none
 * leaves them where the caller may run; a caller allowed one CPU keeps
 * them there).
 *   attr->threads  1..1024 threads (see the modes above);
 *   attr->mode     RQ_PDQ_DEDICATED or RQ_PDQ_MULTIPLEXED;
 *   attr->window   messages of busy keys dispatch goes around, 1..65536;
 *                  0 = RQ_PDQ_WINDOW
 *                  when it is set, else 64 or 32 per thread, whichever
 *                  is more.
 * Messages that arrived for qid before were kept and are dispatched now.
 * Switches the context to thread-safe mode for good (THREAD RULES).  The
 * threads block every signal and are named rq-pdq<qid>.<i> (as top, perf
 * and gdb show them).  Returns 0, RQ_EINVAL, RQ_ENOMEM (threads
 * or memory), RQ_EPERM (from a handler or the progress thread).
 * Blocking: no (starts threads).  Thread safety: any thread. */
RQ_API int rq_pdq_open(rq_ctx_t *ctx, unsigned qid, const rq_pdq_attr_t *attr, rq_pdq_t **pdq);

/* rq_pdq_enqueue - send a message to queue qid of rank dst (a PDQ there),
 * to be run by handler `handler` under synchronization key `key` (any
 * value; RQ_KEY_SEQUENTIAL and RQ_KEY_NOSYNC as above).  args/nargs/data/
 * len/flags as rq_enqueue; the key travels in the packet, so nargs + 1
 * words must fit the packet (nargs <= RQ_MAX_ARGS).  A plain rq_enqueue
 * to a PDQ's qid runs with RQ_KEY_NOSYNC.  Returns 0, RQ_EINVAL, RQ_EAGAIN
 * (RQ_NONBLOCK and the ring is full), RQ_EPEER.  Non-blocking unless the
 * destination is full (as rq_enqueue).  Thread safety: any thread (the
 * context is thread-safe once a PDQ exists; before, as every call);
 * callable from any handler, PDQ handlers included. */
RQ_API int rq_pdq_enqueue(rq_ctx_t *ctx, int dst, unsigned qid, uint64_t key, unsigned handler,
                   const uint64_t *args, unsigned nargs, const void *data, size_t len,
                   unsigned flags);

/* rq_pdq_help - run up to max ready handlers of pdq on the calling thread
 * (taking arrived messages in when none is ready), then return; max 0
 * only announces that the caller is idle.  In RQ_PDQ_MULTIPLEXED mode
 * this is how application threads serve the PDQ; each call also holds
 * the fallback threads off for RQ_PDQ_FALLBACK_US (to within 2 us while
 * a thread calls at a steady rate; a thread that calls densely marks the
 * time only every few calls, so up to 15 of its calls just before it
 * slows down may not count).  While calls keep coming, a fallback thread
 * looks less often (each look that finds a call within
 * RQ_PDQ_FALLBACK_US doubles its next sleep, up to 4x): once the calls
 * stop, the fallback threads step in between 1x and 4x
 * RQ_PDQ_FALLBACK_US after the last one.  Allowed in DEDICATED mode too.
 * Returns handlers run (>= 0), RQ_EINVAL, RQ_EPERM (from a handler).
 * Non-blocking (runs handlers).  Thread safety: any number of threads at
 * once. */
RQ_API int rq_pdq_help(rq_pdq_t *pdq, unsigned max);

/* rq_pdq_drain - return when every message that had arrived at the call
 * (published to this rank's rings before it) has been handled.  Polls
 * meanwhile (running active-message handlers) and, in MULTIPLEXED mode,
 * runs PDQ handlers itself.  Returns 0, RQ_EINVAL, RQ_EPERM (from a
 * handler), RQ_EPEER.  Blocking: yes.  Thread safety: any thread; new
 * messages arriving meanwhile do not delay it. */
RQ_API int rq_pdq_drain(rq_pdq_t *pdq);

/* rq_pdq_close - drain, stop and join the PDQ's threads, run what arrived
 * in between on the calling thread, and free the PDQ; qid then keeps
 * later messages as an unopened queue does.  Returns 0 or rq_pdq_drain's
 * error (the PDQ is closed either way), RQ_EINVAL, RQ_EPERM (from a
 * handler: nothing is closed).  Blocking: yes.  Thread safety: once per
 * PDQ, while no other thread uses pdq; rq_finalize closes open PDQs. */
RQ_API int rq_pdq_close(rq_pdq_t *pdq);

#ifdef __cplusplus
}
#endif
#endif /* RQ_H */
