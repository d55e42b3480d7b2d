/* net.h - the transport interface: how the layers above reach the ranks
 * of other nodes, one small table of operations (DESIGN.md: one transport
 * vtable, no per-packet indirection on the shared-memory path).  The
 * shared-memory transport of this node is not behind it: its lanes are
 * written and read inline (net/shm_ring.h), the hot path.  The table of
 * the context (ctx->net) is UCX's (net/ucx.c) when librq was built with
 * UCX, else one whose operations refuse (RQ_ENOTSUP) or find nothing; it
 * is called only where ctx->remote[r] or ctx->ucx says another node is
 * involved.  Every operation runs on the context's owner; what each does,
 * returns and waits for is documented at its UCX implementation
 * (net/ucx.h). */
#ifndef RQI_NET_H
#define RQI_NET_H

#include "net/ucx.h"

struct rqi_net_ops {
    const char *name;
    /* lifecycle */
    int  (*init)(struct rq_ctx *ctx, char *err, size_t errlen);
    void (*fini)(struct rq_ctx *ctx);
    void (*closing)(struct rq_ctx *ctx);
    /* packets: send; take in (progress), run or buffer what arrived */
    int  (*send)(struct rq_ctx *ctx, int dst, const struct rqi_ucx_out *o);
    int  (*progress)(struct rq_ctx *ctx);
    int  (*am_waiting)(const struct rq_ctx *ctx);
    struct rqi_ucx_rx *(*am_next)(struct rq_ctx *ctx, rq_msg_t *m);
    void (*rx_free)(struct rq_ctx *ctx, struct rqi_ucx_rx *e);
    int  (*drain)(struct rq_ctx *ctx);
    /* receiver-placed payloads still at their sender */
    int  (*rx_deferred)(const struct rqi_ucx_rx *e);
    int  (*place)(struct rq_ctx *ctx, struct rqi_ucx_rx *e, void *dst,
                  void (*fn)(struct rq_ctx *ctx, void *arg, int ok), void *arg);
    int  (*rx_fetch)(struct rq_ctx *ctx, struct rqi_ucx_rx *e, rq_msg_t *m);
    /* waking a sleeping rank on arrivals */
    int  (*efd)(const struct rq_ctx *ctx);
    int  (*arm)(struct rq_ctx *ctx);
    /* global address and bulk transfers */
    int  (*put)(struct rq_ctx *ctx, int dst, uint64_t off, uint64_t rstride, const char *src,
                uint64_t lstride, uint64_t elem, uint64_t count, int store);
    int  (*get)(struct rq_ctx *ctx, char *dst, uint64_t lstride, int src_rank, uint64_t off,
                uint64_t rstride, uint64_t elem, uint64_t count, int wait);
    int  (*amo)(struct rq_ctx *ctx, int dst, uint64_t off, int op, uint64_t operand,
                uint64_t compare, uint64_t *old);
    int  (*flush)(struct rq_ctx *ctx);
    int  (*put_nb)(struct rq_ctx *ctx, int dst, uint64_t off, const char *src, uint64_t len,
                   struct rqi_ucx_done *d);
    int  (*get_nb)(struct rq_ctx *ctx, char *dst, int src_rank, uint64_t off, uint64_t len,
                   struct rqi_ucx_done *d);
    int  (*send_nb)(struct rq_ctx *ctx, int dst, const struct rqi_ucx_out *o,
                    struct rqi_ucx_done *d);
    /* overflow control's STOP count on another node */
    int  (*stop_add)(struct rq_ctx *ctx, int dst, uint64_t delta);
};

/* The tables: UCX's (built with UCX), and the one without a transport. */
extern const struct rqi_net_ops rqi_net_ucx;
extern const struct rqi_net_ops rqi_net_none;

/* This build's transport for other nodes. */
const struct rqi_net_ops *rqi_net_default(void);

#endif
