/* netwake.c - interrupts and sleeping PDQs for packets from other nodes.
 *
 * A packet of the same node rings our doorbell itself (vni.c).  A packet
 * from another node is only a UCX event until someone progresses the
 * worker, which only the context's owner may do.  So, while this rank has
 * interrupts on or a PDQ whose threads all sleep, the progress thread
 * keeps the worker's event fd armed, and a watcher thread sleeps in poll()
 * on it and rings the doorbell (RQI_BELL_NET) when it fires.  The progress
 * thread then claims the context, takes the arrivals in (a PDQ's packets
 * wake its threads), arms again and, if an arrival interrupts, runs the
 * interrupt as for a ring packet.  The watcher makes no UCX call.
 *
 * MEMORY ORDERING  vni.net_armed (process-private futex word): the progress
 *   thread stores 1 (release) after ucp_worker_arm succeeded, then wakes
 *   the watcher; the watcher loads it (acquire) before poll() and, on an
 *   event, exchanges it to 0 before ringing, so one arming gives at most
 *   one ring.  2 stops the watcher (with a write to stopfd that ends its
 *   poll).  Nothing else is shared: the fd's own state is the kernel's.
 */
#define _GNU_SOURCE
#include "core/sys.h"
#include "net/net.h"
#include "vni/vni.h"

#include <linux/futex.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ctx.h"
#include "net/ucx.h"

enum { NET_IDLE, NET_ARMED, NET_STOP };

static void *watch_main(void *arg)
{
    rq_ctx_t *ctx = arg;
    struct rqi_vni *v = &ctx->vni;
    struct pollfd pf[2] = {{.fd = ctx->net->efd(ctx), .events = POLLIN},
                           {.fd = v->net_stopfd, .events = POLLIN}};
    for (;;) {
        uint32_t s = rqi_load_acquire(&v->net_armed);
        if (s == NET_STOP)
            break;
        if (s == NET_IDLE) {
            rqi_futex(&v->net_armed, FUTEX_WAIT_PRIVATE, NET_IDLE, NULL);
            continue;
        }
        if (poll(pf, 2, -1) <= 0 || (pf[1].revents & POLLIN))
            continue; /* EINTR, or stopping: net_armed says which */
        uint32_t armed = NET_ARMED;
        if ((pf[0].revents & (POLLIN | POLLERR | POLLHUP)) &&
            atomic_compare_exchange_strong(&v->net_armed, &armed, NET_IDLE))
            rqi_vni_ring(ctx, ctx->rank, RQI_BELL_NET);
    }
    return NULL;
}

int rqi_netwake_start(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    if (ctx->net->efd(ctx) < 0)
        return 0; /* no remote peers, or transports that cannot wake us */
    v->net_stopfd = eventfd(0, EFD_CLOEXEC);
    if (v->net_stopfd < 0)
        return RQ_ENOMEM;
    atomic_store(&v->net_armed, NET_IDLE);
    if (pthread_create(&v->net_thread, NULL, watch_main, ctx) != 0) {
        close(v->net_stopfd);
        return RQ_ENOMEM;
    }
    v->net_on = 1;
    return 0;
}

void rqi_netwake_stop(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    if (!v->net_on)
        return;
    atomic_store(&v->net_armed, NET_STOP);
    rqi_futex(&v->net_armed, FUTEX_WAKE_PRIVATE, 1, NULL);
    uint64_t one = 1;
    if (write(v->net_stopfd, &one, sizeof one) != sizeof one) {
        /* an eventfd write of 1 cannot fail short of a bad fd */
    }
    pthread_join(v->net_thread, NULL);
    close(v->net_stopfd);
    v->net_on = 0;
}

/* Whether a sleeper needs the network to wake it. */
static int wanted(const rq_ctx_t *ctx)
{
    return ctx->vni.intr_mode != RQ_INTR_OFF || rqi_load_relaxed(&ctx->vni.area->pdq_idle) != 0;
}

void rqi_netwake_service(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    if (!v->net_on)
        return;
    /* Take in, then arm; arming fails while events are pending.  Bounded:
     * under a flood we ring ourselves and come back after the interrupt
     * (or the main thread) has had its turn. */
    int settled = 0;
    for (int round = 0; round < 64 && !settled; round++) {
        (void)ctx->net->progress(ctx);
        if (!wanted(ctx) || rqi_load_relaxed(&v->net_armed) == NET_ARMED) {
            settled = 1;
        } else {
            int rc = ctx->net->arm(ctx);
            if (rc == 0) {
                rqi_store_release(&v->net_armed, NET_ARMED);
                rqi_futex(&v->net_armed, FUTEX_WAKE_PRIVATE, 1, NULL);
            }
            settled = rc != RQ_EAGAIN;
        }
    }
    if (!settled)
        rqi_vni_ring(ctx, ctx->rank, RQI_BELL_NET);
}
