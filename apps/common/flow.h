/* flow.h - flow control for fine-grain senders, the three schemes of the
 * Remote Queues paper's transpose study (section 4), as building blocks
 * any librq program can use.  Each keeps a sender from outrunning its
 * receivers, so that packets are consumed in place from the inbound ring
 * instead of being moved to the receiver's virtual buffer (or, with a
 * bounded buffer, stalling the sender):
 *
 *   credits      at most `window` unconsumed messages per destination:
 *                the sender spends a credit per message, the receiver
 *                hands credits back in batches of window/2 (one short
 *                active message per batch).
 *   pacing       bandwidth matching: inject at most one message per
 *                interval, the interval chosen (rqa_pace_match) as the
 *                slowest rank's time to consume one message, so no
 *                sender outruns any receiver.
 *   alternation  one send per receive: before each send, wait until the
 *                messages received catch up with those sent (less a
 *                slack), as long as more are due.
 *
 * Every wait runs a `drain` callback supplied by the caller (its own
 * receive step: rq_poll, or a rq_peek_n loop over its queue), so a waiting
 * sender keeps receiving and no scheme can deadlock a job whose receive
 * step consumes what arrives.  Blocking: the waits spin on drain.  Thread
 * safety: one thread per object, like a context.  Handler-callable: no
 * (they wait). */
#ifndef RQAPP_FLOW_H
#define RQAPP_FLOW_H

#include <stdint.h>

#include <rq.h>

/* A receive step: consume what has arrived, return how many (>= 0). */
typedef int (*rqa_drain_fn)(void *arg);

/* ---- credits per destination ------------------------------------- */
struct rqa_credits {
    rq_ctx_t *ctx;
    unsigned  handler;  /* AM id that carries returned credits */
    uint32_t  window, batch;
    uint32_t *avail;    /* per destination: credits left */
    uint32_t *owed;     /* per source: consumed, not yet returned */
    uint64_t  waits;    /* acquires that had to wait */
};

/* Register `handler` (an AM id the application does not use otherwise)
 * and give every destination `window` credits (>= 2).  Collective in
 * effect: every rank must call it before any rank sends.  0, RQ_EINVAL,
 * RQ_ENOMEM. */
int rqa_credits_init(struct rqa_credits *c, rq_ctx_t *ctx, unsigned handler, uint32_t window);
/* Spend a credit for dst, running drain (and rq_poll, which runs the
 * credit returns) until one is available.  0, RQ_EINVAL (c NULL or not
 * initialized, dst not a rank), or a negative RQ_E* of rq_poll or drain. */
int rqa_credits_acquire(struct rqa_credits *c, int dst, rqa_drain_fn drain, void *arg);
/* The receiver consumed one message from src: return credits to src
 * when a batch is owed.  0, RQ_EINVAL (c NULL or not initialized, src
 * not a rank), or a negative RQ_E* of rq_request.  Callable from a
 * handler (it sends one short message). */
int rqa_credits_consumed(struct rqa_credits *c, int src);
/* Unregister the handler, free the tables. */
void rqa_credits_fini(struct rqa_credits *c);

/* ---- bandwidth matching ------------------------------------------ */
struct rqa_pace {
    uint64_t interval_ns;  /* 0: no pacing */
    uint64_t next_ns;
};

/* Collective: the interval is the largest consume_ns over the ranks (the
 * slowest receiver sets the pace).  consume_ns: this rank's measured time
 * to receive and process one message, finite and in [0, RQA_PACE_MAX_NS]
 * (a negative time counts as 0).  0, RQ_EINVAL (p or ctx NULL; or any
 * rank's consume_ns NaN, infinite or above the limit: then every rank
 * returns RQ_EINVAL and no rank's p changes), or a negative RQ_E* of the
 * reduction. */
#define RQA_PACE_MAX_NS 1e12 /* 1000 s per message */
int rqa_pace_match(struct rqa_pace *p, rq_ctx_t *ctx, double consume_ns);
/* Before a send: run drain until the next injection slot, then take it. */
void rqa_pace_wait(struct rqa_pace *p, rqa_drain_fn drain, void *arg);

/* ---- one send per receive ---------------------------------------- */
struct rqa_alt {
    uint64_t sent, received, expected; /* expected: messages due in all */
    uint32_t slack;                    /* sends allowed ahead of receives */
};

/* Before a send: run drain while sent > received + slack and messages are
 * still due; then count the send.  The caller's drain must add what it
 * consumed to a->received. */
void rqa_alt_turn(struct rqa_alt *a, rqa_drain_fn drain, void *arg);

#endif
