/* ucx.h - the inter-node transport: UCX (UCP) for the ranks of other
 * nodes, behind the same send / intake / drain steps as the shared-memory
 * rings.  Chosen per peer at rq_init (RQ_TRANSPORT; ctx->remote[r] = 1).
 *
 * PACKETS  One UCP active message per packet.  Its UCP header is
 *   struct rqi_ucx_hdr: the 64-bit job key, the ring's packet header (seq =
 *   a per-pair sequence number from 1, nslots = 0) and extension and
 *   argument words; the payload is the UCP data.  Payloads up to
 *   RQ_UCX_EAGER_MAX go eagerly: sent straight from the caller's buffers
 *   when UCX takes them at once, else from a copy (at most RQ_UCX_INFLIGHT
 *   copies outstanding; beyond that a send is RQ_EAGAIN and the sender
 *   drains and retries, as on a full ring).  Larger payloads go by
 *   rendezvous: the receiver pulls them straight into their final buffer
 *   (the target segment for rq_request_long), and the send returns when
 *   the source is no longer needed.  No packet is fragmented.
 *
 * RECEIVE  The UCP callback (inside ucp_worker_progress, from any librq call
 *   that polls or waits) validates the header against the job's limits
 *   and the job key, checks the sequence number (a duplicate is refused
 *   and counted; a gap fails the job: a committed packet was lost) and
 *   queues an entry in arrival order.  Eager data stays in UCX's receive
 *   buffer (UCP_AM_FLAG_PERSISTENT_DATA): an active-message handler reads
 *   it in place, the direct case; other queues, the PDQ and a drain copy it
 *   into the virtual buffer, the buffered case.  A rendezvous entry blocks
 *   the entries behind it until its data has landed: per-pair FIFO holds.
 *   Handlers never run inside a UCX callback.
 *
 * RECEIVER-PLACED  A rendezvous active message above rq_medium_max for an
 *   RQ_HF_PLACE handler is not pulled on arrival: its descriptor is kept
 *   (deferred) and the handler runs with data NULL; rq_place pulls the
 *   payload straight from the sender's buffer into the destination it
 *   names (ucp_am_recv_data_nbx), zero-copy; unplaced, the descriptor is
 *   released.  The sender's rq_request waits for that pull, so a rank that
 *   itself waits on a send (wait_req), drains into the virtual buffer, or
 *   finds the handler no longer placing, first pulls every deferred
 *   payload into a buffer of its own: two ranks sending to each other can
 *   never wait for each other's handlers.
 *
 * WAKE-UP  The worker has UCP_FEATURE_WAKEUP.  While the rank has
 *   interrupts on or a PDQ whose threads all sleep, its progress thread
 *   keeps the worker's event fd armed and a watcher thread sleeps on it
 *   (vni/netwake.c): a packet from another node then gets taken in, and
 *   run if it interrupts, without the application polling.
 *
 * GLOBAL ADDRESS  Each rank registers its segment and its store counter
 *   (one region: its area of the job segment) and publishes the remote key
 *   through PMIx.  Puts, gets and stores to another node are UCP RMA, AMOs
 *   UCP atomics; rq_sync is a worker flush; a store's counter bump is a UCP
 *   atomic add issued after a fence behind the data.
 *
 * OVERFLOW  A rank's STOP count (net/shm.h) lies in its registered area;
 *   another node's member of the STOP set adds to it with a UCP atomic
 *   (src/vni/overflow.c).  Over TCP the target's progress applies it, so
 *   a sender whose sends all complete at once still progresses the worker
 *   every RQI_UCX_SENDS_PER_PROGRESS sends.
 *
 * FAILURE  Endpoints use UCP_ERR_HANDLING_MODE_PEER: a lost connection
 *   fails the job (RQ_EPEER) unless rq_finalize has passed its final
 *   fence.
 *
 * THREADS  The worker is UCS_THREAD_MODE_SERIALIZED: only the context's
 *   owner (see ctx.h: the context lock and the progress-thread protocol)
 *   calls in. */
#ifndef RQI_UCX_H
#define RQI_UCX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "net/shm_ring.h"
#include "rq.h"

struct rq_ctx;
struct rqi_ucx;
struct rqi_ucx_rx;

/* A packet's UCP header. */
struct rqi_ucx_hdr {
    uint64_t       key;
    struct rqi_pkt pkt;
    uint64_t       w[3 + RQ_MAX_ARGS + 1]; /* extension, then args (+ PDQ key) */
};
#define RQI_UCX_HDR_MIN (8u + sizeof(struct rqi_pkt))
/* Wire-only flags in the header's pkt.pad_ (cleared at intake). */
#define RQI_UCX_F_INTR 0x1u /* sent with RQ_INTERRUPT */

/* A packet to send (arguments validated by the caller). */
struct rqi_ucx_out {
    unsigned        kind, qid, tag, pflags, nargs; /* kind: RQI_PK_INLINE or RQI_PK_LONG */
    unsigned        sflags; /* the caller's send flags (RQ_INTERRUPT travels) */
    const uint64_t *args;
    const void     *data;
    size_t          len;
    uint64_t        off; /* LONG: where the payload lands in the target segment */
};

/* The transport's one hook upward (DESIGN: upcalls through one documented
 * hook per layer): what it hands packets to.  Set by rq_init before
 * rqi_ucx_init; both run on the context's owner, from intake.
 *   ingest    a packet of a named queue (or one being drained): into its
 *             queue's buffer or PDQ (deliver/: rqi_ingest_pkt).  0 or
 *             RQ_ENOMEM (the packet stays, intake stops).
 *   held_add  an active message of class cls waits in the transport for
 *             delivery (vni/: the progress thread owes it an interrupt). */
struct rqi_ucx_up {
    int  (*ingest)(struct rq_ctx *ctx, struct rqi_pkt *p, void *data, size_t len);
    void (*held_add)(struct rq_ctx *ctx, unsigned cls);
};

/* Completion of a non-blocking transfer (gas/async.h): fn runs once, from
 * the worker's progress on the context's owner (or before the issuing call
 * returns); ok is 0 when the request failed (the job has failed too). */
struct rqi_ucx_done {
    void (*fn)(struct rq_ctx *ctx, struct rqi_ucx_done *d, int ok);
    struct rq_ctx *ctx; /* set by the issuing call */
    struct rqi_ucx_hdr hdr; /* a send's header: UCX reads it until completion */
};

#ifdef RQ_HAVE_UCX
/* rq_init, after the job segment is attached (needs the PMIx exchange):
 * worker, endpoints to every remote rank, our registered area, the peers'
 * remote keys.  0 or RQ_E* with a message in err. */
int  rqi_ucx_init(struct rq_ctx *ctx, char *err, size_t errlen);
/* rq_finalize, after every rank's final fence: close and free. */
void rqi_ucx_fini(struct rq_ctx *ctx);
/* Stop treating lost connections as failures (the job is ending). */
void rqi_ucx_closing(struct rq_ctx *ctx);

/* Send one packet to remote rank dst: 0, RQ_EAGAIN (too many copies in
 * flight; nothing sent), RQ_EPEER. */
int  rqi_ucx_send(struct rq_ctx *ctx, int dst, const struct rqi_ucx_out *o);

/* Progress the worker and take in what arrived: packets of other queues
 * and PDQs go to their buffers; active messages wait for delivery.  Runs
 * no handler.  Returns nonzero when anything happened. */
int  rqi_ucx_progress(struct rq_ctx *ctx);
/* The oldest active message waiting for delivery (removed from the
 * queue), or NULL; its message in *m.  Release with rqi_ucx_rx_free. */
struct rqi_ucx_rx *rqi_ucx_am_next(struct rq_ctx *ctx, rq_msg_t *m);
void rqi_ucx_rx_free(struct rq_ctx *ctx, struct rqi_ucx_rx *e);
/* Progress, then move every waiting active message into the virtual
 * buffer.  0 or RQ_ENOMEM. */
int  rqi_ucx_drain(struct rq_ctx *ctx);
/* Active messages waiting for delivery. */
int  rqi_ucx_am_waiting(const struct rq_ctx *ctx);
/* The worker's event fd (readable once armed and something arrived), or
 * -1 when the transports in use cannot wake a sleeper. */
int  rqi_ucx_efd(const struct rq_ctx *ctx);
/* Arm the event fd: 0, RQ_EAGAIN (events are pending: progress first and
 * try again), RQ_ENOTSUP. */
int  rqi_ucx_arm(struct rq_ctx *ctx);

/* Validate a received header (hlen bytes, copied into h) for a payload of
 * len bytes: RQI_PKT_OK or RQI_PKT_REJECT.  Exposed for the fuzzer. */
int  rqi_ucx_hdr_check(const struct rq_ctx *ctx, const struct rqi_ucx_hdr *h, size_t hlen,
                       size_t len);

/* Test hook: send hlen header bytes and len payload bytes to dst as a
 * packet, unchecked and without a sequence number of its own (the forged
 * packet tests).  0 or RQ_EPEER. */
int  rqi_ucx_send_raw(struct rq_ctx *ctx, int dst, const void *hdr, size_t hlen,
                      const void *data, size_t len);
/* The next sequence number a packet to dst carries, and the job key. */
uint64_t rqi_ucx_next_seq(const struct rq_ctx *ctx, int dst);
uint64_t rqi_ucx_key(const struct rq_ctx *ctx);

/* Global-address operations on a remote rank (validated by the caller).
 * Puts and stores return when the source is reusable; every operation is
 * complete at rqi_ucx_flush; gets with wait return with the data. */
int  rqi_ucx_put(struct rq_ctx *ctx, int dst, uint64_t off, uint64_t rstride, const char *src,
                 uint64_t lstride, uint64_t elem, uint64_t count, int store);
int  rqi_ucx_get(struct rq_ctx *ctx, char *dst, uint64_t lstride, int src_rank, uint64_t off,
                 uint64_t rstride, uint64_t elem, uint64_t count, int wait);
int  rqi_ucx_amo(struct rq_ctx *ctx, int dst, uint64_t off, int op, uint64_t operand,
                 uint64_t compare, uint64_t *old);
int  rqi_ucx_flush(struct rq_ctx *ctx);
/* Overflow control: add delta (two's complement: -1 takes one back) to
 * remote rank dst's STOP count, without waiting (the job's next flush
 * completes it; adds and takes commute, so their order does not matter).
 * 0 or RQ_EPEER. */
int  rqi_ucx_stop_add(struct rq_ctx *ctx, int dst, uint64_t delta);
/* Eager sends between two progress calls of a sender that never waits. */
#define RQI_UCX_SENDS_PER_PROGRESS 64u
/* Non-blocking forms: 0 (d->fn will run once the put is complete
 * remotely, the get's data is in dst, the packet's source is no longer
 * needed), or RQ_E* and d->fn never runs.  The buffers stay the caller's
 * until then. */
int  rqi_ucx_put_nb(struct rq_ctx *ctx, int dst, uint64_t off, const char *src, uint64_t len,
                    struct rqi_ucx_done *d);
int  rqi_ucx_get_nb(struct rq_ctx *ctx, char *dst, int src_rank, uint64_t off, uint64_t len,
                    struct rqi_ucx_done *d);
int  rqi_ucx_send_nb(struct rq_ctx *ctx, int dst, const struct rqi_ucx_out *o,
                     struct rqi_ucx_done *d);
/* Whether entry e's payload still waits at its sender (a rendezvous
 * deferred for an RQ_HF_PLACE handler; e->data is NULL). */
int  rqi_ucx_rx_deferred(const struct rqi_ucx_rx *e);
/* Pull e's deferred payload straight into dst: 0 (fn(ctx, arg, ok) runs
 * once it has landed, from the worker's progress, or before this
 * returns), RQ_EPEER (fn never runs). */
int  rqi_ucx_place(struct rq_ctx *ctx, struct rqi_ucx_rx *e, void *dst,
                   void (*fn)(struct rq_ctx *ctx, void *arg, int ok), void *arg);
/* Pull e's deferred payload into a buffer of its own and wait for it (its
 * handler no longer places); m->data then points at it.  0 or RQ_EPEER /
 * RQ_ENOMEM. */
int  rqi_ucx_rx_fetch(struct rq_ctx *ctx, struct rqi_ucx_rx *e, rq_msg_t *m);
#endif

#endif
