/* pdq.h - the parallel dispatch queue's side of delivery: packets for a
 * queue id with a PDQ attached (ctx->pdq[qid]) are copied out of the lane
 * into the PDQ (its intake) instead of into the queue's virtual-buffer
 * FIFO.  Called by whoever owns the context (see src/core/mt.h,
 * src/vni/vni.h). */
#ifndef RQI_PDQ_H
#define RQI_PDQ_H

#include <stddef.h>
#include <stdint.h>

struct rq_ctx;
struct rq_pdq;

/* How a message's payload reaches the PDQ entry. */
enum {
    RQI_PDQ_COPY = 0, /* copy it (in place in a lane) */
    RQI_PDQ_BORROW,   /* keep the pointer (in our segment: a long message) */
    RQI_PDQ_OWN,      /* take the malloc'd block (a reassembled message) */
    RQI_PDQ_DIRECT,   /* run in place from its lane (pdq.c's direct dispatch) */
};

/* Queue one message (args include the key word when flags has
 * RQI_PF_KEY).  0, or RQ_ENOMEM (nothing taken: the packet stays in its
 * lane, as with the virtual buffer's limit). */
int rqi_pdq_push(struct rq_pdq *q, uint32_t src, uint32_t tag, unsigned flags,
                 const uint64_t *args, unsigned nargs, void *data, size_t len, int how);

/* A poll (holding the context) found q's packet at a lane's head: 1 if
 * it should leave it there, because the calling thread is q's one helper
 * (multiplexed) and called rq_pdq_help(q, max > 0) with no poll since,
 * as rqdsm's waits alternate the two: its next help runs the packet at
 * once, where the poll's intake would queue it (an entry, its admission
 * and key, twice a direct run's time).  Once per help: a thread that
 * stops helping has its packets taken in by its next poll after that. */
int rqi_pdq_defer(struct rq_pdq *q);

/* The PDQ doorbell rang (every thread of q sleeps; packets came): wake one
 * thread, which takes them in itself (the progress thread, holding the
 * VNI claim, so q cannot be closed meanwhile). */
void rqi_pdq_wake(struct rq_pdq *q);


#endif
