/* hooks.h - the upcalls of the lower layers into the layers above them,
 * one documented hook per layer (DESIGN.md: calls point down; a lower
 * layer reaches a higher one only through its hook).  Set once by rq_init
 * (src/init/init.c, which assembles the layers) before anything polls, and never
 * changed; every pointer is valid for the context's life.  Called by the
 * context's owner only (or as each says).
 *
 *   from progress/ (a poll, a wait, the progress thread) and am/ (a send
 *   waiting for room):
 *     gas_serve     gas/: serve the global-address requests addressed to
 *                   this rank (proc strategy); runs no handler.  Returns
 *                   how many were served.
 *     gas_help      gas/: the np strategy's progress thread is idle: serve
 *                   for it once.
 *     async_help    gas/async: copy one piece of a queued non-blocking
 *                   transfer, or complete pulled ones: 1 if it did.
 *     async_announce, async_reap
 *                   gas/async: send the announcements of long requests
 *                   whose bytes landed; complete the long requests a
 *                   target pulled.  Return how many.
 *     outbox_flush  am/: send what fits of every destination's outbox.
 *   from deliver/ (a packet for a named queue with a PDQ attached):
 *     pdq_push      pdq/: queue the message in q (rqi_pdq_push).
 *   from progress/ (a poll, holding the context, finding a PDQ's packet
 *   at a lane's head):
 *     pdq_defer     pdq/: 1 if the calling thread will take it in itself
 *                   at once (rqi_pdq_defer): the poll leaves it there.
 *   from progress/ (the progress thread, holding the VNI claim, on the
 *   PDQ doorbell: every thread of q sleeps and packets came for it):
 *     pdq_wake      pdq/: wake one of q's threads, which takes the packets
 *                   in itself (rqi_pdq_wake).
 */
#ifndef RQI_PROGRESS_HOOKS_H
#define RQI_PROGRESS_HOOKS_H

#include <stddef.h>
#include <stdint.h>

struct rq_ctx;
struct rq_pdq;

/* init/init.c: the hooks of this build's layers. */
struct rqi_hooks;
void rqi_hooks_init(struct rqi_hooks *h);

struct rqi_hooks {
    int  (*gas_serve)(struct rq_ctx *ctx);
    int  (*gas_help)(struct rq_ctx *ctx);
    int  (*async_help)(struct rq_ctx *ctx);
    int  (*async_announce)(struct rq_ctx *ctx);
    int  (*async_reap)(struct rq_ctx *ctx);
    void (*outbox_flush)(struct rq_ctx *ctx);
    int  (*pdq_push)(struct rq_pdq *q, uint32_t src, uint32_t tag, unsigned flags,
                     const uint64_t *args, unsigned nargs, void *data, size_t len, int how);
    int  (*pdq_defer)(struct rq_pdq *q);
    void (*pdq_wake)(struct rq_pdq *q);
};

#endif
