/*
 * rqtag.h - tagged two-sided messages on librq: send and receive with tags
 * and source wildcards (MPI's point-to-point, UCX's tag matching), built on
 * librq's active messages and receiver placement.  A layer above librq: it
 * includes only <rq.h> and links librq like an application.
 *
 * MODEL
 *   rq_tag_open, on every rank (collective), registers RQTAG_HANDLERS
 *   active-message handler ids from handler_base.  rq_tsend carries (tag,
 *   payload) to a rank.  A receive names a source (or RQ_TAG_ANY_SOURCE),
 *   a tag and a mask: a message's tag t is accepted when (t & mask) ==
 *   (tag & mask), so mask 0 accepts any tag and RQ_TAG_ALL accepts only
 *   tag itself.  A message is matched when it arrives (its handler runs in
 *   a poll of the receiving rank) with the oldest posted receive that
 *   accepts it; with none, it waits in the unexpected queue, and a later
 *   receive takes the oldest unexpected message it accepts.
 *
 * ORDERING
 *   Messages from one source to one destination match in the order they
 *   were sent (MPI's non-overtaking rule): librq delivers one pair's
 *   active messages in order, and a message is matched on arrival.
 *   Messages from different sources match in the order they arrive.
 *
 * SIZES
 *   eager       len <= the eager limit: one active message; the payload
 *               travels in the receiver's inbound lane and is copied once
 *               into the receive buffer (or into an unexpected buffer).
 *   rendezvous  larger: the sender announces the message (tag, length);
 *               it is matched like any message on arrival; once a receive
 *               has it, the receiver answers and the sender's handler
 *               sends the data.  A receive buffer inside the receiving
 *               rank's segment (rq_segment) is written there by the
 *               sender with rq_request_long: one copy, the bandwidth of
 *               rq_request_long.  Any other buffer gets the data placed
 *               by rq_place (from the sender's staging area on this
 *               node: two copies; pulled by UCX rendezvous from the
 *               sender's buffer across nodes).  An unexpected large
 *               message costs a small record, not a copy of its payload.
 *   The eager limit is RQ_TAG_EAGER_MAX bytes from the environment at
 *   rq_tag_open (default RQTAG_EAGER_MAX, 8 KiB), at most rq_medium_max();
 *   it must be the same on every rank.  Streams of 16-64 KiB messages ran
 *   2-10x faster by rendezvous than eager in the lanes (docs/tag.md).
 *   A message longer than the receive buffer is truncated: the buffer
 *   gets its first cap bytes (a rendezvous sends only those), status.len
 *   says the full length and status.error is RQ_ERANGE.
 *
 * COMPLETION AND PROGRESS
 *   An eager send is complete when rq_tsend / rq_tisend returns (librq
 *   has copied the payload): the buffer may be reused.  A rendezvous send
 *   completes in a poll of the sender after the receiver has matched it
 *   and its data has left the buffer: rq_tsend waits for that (like
 *   MPI_Ssend), so two ranks that both send large messages to each other
 *   before receiving wait for each other; post the receives first, or use
 *   rq_tisend.  A receive completes in a poll of its rank.  The blocking
 *   calls poll (rq_wait_until), and so does any rq_poll, rq_wait_until or
 *   blocking librq call; rq_ttest polls once.
 *
 * THREADS
 *   The layer's state is under its own lock, taken by its handlers too,
 *   so its calls may be made from any thread whenever the context allows
 *   that thread to call librq (RQ_THREAD_SAFE=1, or a PDQ open), and with
 *   interrupts on.  From a handler: rq_tisend, rq_tirecv, rq_tiprobe,
 *   rq_ttest, rq_tcancel and an eager rq_tsend are allowed (they do not
 *   wait for other ranks); rq_trecv, rq_twait, rq_tprobe, rq_tag_open,
 *   rq_tag_close and a rendezvous rq_tsend return RQ_EPERM.
 *
 * ERRORS
 *   RQ_EINVAL for a NULL or foreign handle, a rank outside the job, a NULL
 *   buffer with a non-zero length; RQ_EPEER when the job fails (a waiting
 *   receive is taken back first); RQ_ENOMEM when an unexpected message
 *   cannot be kept (it is dropped and counted in rq_tag_stats).
 */
#ifndef RQTAG_H
#define RQTAG_H

#include <stddef.h>
#include <stdint.h>

#include <rq.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RQTAG_HANDLER_BASE 220u        /* default first handler id */
#define RQTAG_HANDLERS     4u          /* handler ids used from the base */
#define RQ_TAG_ANY_SOURCE  (-1)        /* a receive's source: any rank */
#define RQ_TAG_ALL         UINT64_MAX  /* a receive's mask: the whole tag */
#define RQTAG_EAGER_MAX    8192u       /* default eager limit (RQ_TAG_EAGER_MAX) */

typedef struct rq_tag rq_tag_t;

/* What a completed receive (or a probe) found. */
typedef struct rq_tstatus {
    int      source; /* the sender's rank */
    uint64_t tag;    /* the message's tag */
    size_t   len;    /* the message's length (more than the buffer: truncated) */
    int      error;  /* 0, RQ_ERANGE (truncated), RQ_EAGAIN (cancelled), RQ_EPEER */
} rq_tstatus_t;

/* A non-blocking operation, in the caller's memory: it must stay valid
 * and untouched until the operation has completed or been cancelled.
 * `done` becomes 1 when it completes (a release store or atomic add: read
 * it with rq_ttest, or wait for it with rq_wait_until(ctx, &req->done, 1));
 * `status` is valid from then on.  The other fields are the layer's. */
typedef struct rq_treq {
    volatile uint64_t done;
    rq_tstatus_t      status;
    /* the layer's: */
    struct rq_treq   *next;
    void             *buf;
    size_t            cap;
    void             *held;  /* an unexpected message whose payload is still landing */
    uint64_t          tag, mask, id;
    int               src;
    unsigned          state;
} rq_treq_t;

/* Counters since rq_tag_open, this rank. */
typedef struct rq_tag_stats {
    uint64_t sent, received;        /* messages */
    uint64_t rendezvous;            /* received messages placed by rq_place (larger
                                       than rq_medium_max()) */
    uint64_t unexpected;            /* received messages that waited for their receive */
    uint64_t unexpected_now;        /* messages in the unexpected queue now */
    uint64_t unexpected_bytes_max;  /* the most payload bytes it held at once */
    uint64_t truncated, cancelled, dropped;
} rq_tag_stats_t;

/* rq_tag_open - start the layer on ctx: registers handler ids
 * [handler_base, handler_base + RQTAG_HANDLERS) (0 = RQTAG_HANDLER_BASE)
 * on every rank, then waits for every rank (rq_barrier).  Returns 0,
 * RQ_EINVAL (ctx or t NULL, ids outside [0, RQ_MAX_HANDLERS), a
 * malformed RQ_TAG_EAGER_MAX), RQ_ENOMEM,
 * RQ_EPERM (from a handler), RQ_EPEER.  Blocking: yes (collective).
 * Thread safety: one thread, once per context. */
int rq_tag_open(rq_ctx_t *ctx, unsigned handler_base, rq_tag_t **t);

/* rq_tag_close - wait for every rank (rq_barrier), unregister the
 * handlers, complete the receives still posted as cancelled (RQ_EAGAIN),
 * free the unexpected messages left and t.  Returns 0, RQ_EINVAL, RQ_EPERM
 * (from a handler: nothing closed), RQ_EPEER (closed anyway).  Blocking:
 * yes (collective).  Thread safety: once, while no other thread uses t. */
int rq_tag_close(rq_tag_t *t);

/* rq_tsend - send len bytes of buf to rank dst with tag.  Returns when
 * buf may be reused: at once for an eager message (up to the eager
 * limit, SIZES); for a rendezvous once
 * the receiver has matched it and the data has left.  Returns 0,
 * RQ_EINVAL, RQ_EPERM (a rendezvous from a handler), RQ_EPEER, RQ_ENOMEM.
 * Blocking: an eager send only while dst's inbound lane is full (librq's
 * flow control); a rendezvous until a matching receive is posted at dst.
 * rq_tisend - the same as a request: an eager one is complete when it
 * returns 0 (done is 1); a rendezvous completes in a later poll of this
 * rank (rq_ttest, rq_twait), buf untouched until then. */
int rq_tsend(rq_tag_t *t, int dst, uint64_t tag, const void *buf, size_t len);
int rq_tisend(rq_tag_t *t, int dst, uint64_t tag, const void *buf, size_t len, rq_treq_t *req);

/* rq_tirecv - post a receive of at most cap bytes into buf, from src (or
 * RQ_TAG_ANY_SOURCE) with a tag accepted by (tag, mask): taken from the
 * unexpected queue at once if a message there matches, else matched by a
 * later arrival.  Returns 0 or RQ_EINVAL.  Non-blocking.
 * rq_trecv - the same, then wait for it; *st (may be NULL) gets its
 * status.  Returns status.error (0, RQ_ERANGE truncated), RQ_EINVAL,
 * RQ_EPERM (from a handler: nothing posted), RQ_EPEER (the receive is
 * taken back).  Blocking: yes. */
int rq_tirecv(rq_tag_t *t, int src, uint64_t tag, uint64_t mask, void *buf, size_t cap,
              rq_treq_t *req);
int rq_trecv(rq_tag_t *t, int src, uint64_t tag, uint64_t mask, void *buf, size_t cap,
             rq_tstatus_t *st);

/* rq_ttest - poll once; 1 if req has completed, 0 if not, RQ_EINVAL.
 * Non-blocking.
 * rq_twait - wait for req; returns its status.error, RQ_EINVAL, RQ_EPERM
 * (from a handler), RQ_EPEER (a posted receive is taken back first).
 * Blocking: yes. */
int rq_ttest(rq_tag_t *t, rq_treq_t *req);
int rq_twait(rq_tag_t *t, rq_treq_t *req);

/* rq_tcancel - take back a posted receive that has not matched: it
 * completes at once as cancelled (status.error RQ_EAGAIN).  Returns 0,
 * RQ_EAGAIN (it has matched already: it completes as usual), RQ_EINVAL
 * (a send, not a receive of t, or completed).  Non-blocking. */
int rq_tcancel(rq_tag_t *t, rq_treq_t *req);

/* rq_tiprobe - poll once, then look for a message in the unexpected queue
 * that a receive (src, tag, mask) would take, without taking it: 1 and
 * *st filled (may be NULL), 0 none, RQ_EINVAL.  Non-blocking.
 * rq_tprobe - wait until there is one.  Returns 0, RQ_EINVAL, RQ_EPERM
 * (from a handler), RQ_EPEER.  Blocking: yes. */
int rq_tiprobe(rq_tag_t *t, int src, uint64_t tag, uint64_t mask, rq_tstatus_t *st);
int rq_tprobe(rq_tag_t *t, int src, uint64_t tag, uint64_t mask, rq_tstatus_t *st);

/* rq_tag_stats - this rank's counters.  Returns 0 or RQ_EINVAL.
 * Non-blocking; any thread. */
int rq_tag_stats(rq_tag_t *t, rq_tag_stats_t *s);

#ifdef __cplusplus
}
#endif
#endif /* RQTAG_H */
