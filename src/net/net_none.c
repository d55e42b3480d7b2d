/* net_none.c - the transport table of a build without UCX: a job that
 * spans nodes is refused at rq_init, and every other operation finds
 * nothing to do or refuses (RQ_ENOTSUP). */
#include "net/net.h"

#include <stdio.h>

#include "rq.h"

static int none_init(struct rq_ctx *ctx, char *err, size_t errlen)
{
    (void)ctx;
    snprintf(err, errlen, "ranks on other nodes need UCX: librq was built without it "
                          "(install libucx-dev and rebuild)");
    return RQ_ENOTSUP;
}
static void none_fini(struct rq_ctx *ctx) { (void)ctx; }
static void none_closing(struct rq_ctx *ctx) { (void)ctx; }
static int none_send(struct rq_ctx *ctx, int dst, const struct rqi_ucx_out *o)
{ (void)ctx; (void)dst; (void)o; return RQ_ENOTSUP; }
static int none_progress(struct rq_ctx *ctx) { (void)ctx; return 0; }
static struct rqi_ucx_rx *none_am_next(struct rq_ctx *ctx, rq_msg_t *m)
{ (void)ctx; (void)m; return NULL; }
static void none_rx_free(struct rq_ctx *ctx, struct rqi_ucx_rx *e) { (void)ctx; (void)e; }
static int none_drain(struct rq_ctx *ctx) { (void)ctx; return 0; }
static int none_am_waiting(const struct rq_ctx *ctx) { (void)ctx; return 0; }
static int none_efd(const struct rq_ctx *ctx) { (void)ctx; return -1; }
static int none_arm(struct rq_ctx *ctx) { (void)ctx; return RQ_ENOTSUP; }
static int none_put(struct rq_ctx *ctx, int dst, uint64_t off, uint64_t rstride,
                              const char *src, uint64_t lstride, uint64_t elem, uint64_t count,
                              int store)
{ (void)ctx; (void)dst; (void)off; (void)rstride; (void)src; (void)lstride; (void)elem;
  (void)count; (void)store; return RQ_ENOTSUP; }
static int none_get(struct rq_ctx *ctx, char *dst, uint64_t lstride, int src_rank,
                              uint64_t off, uint64_t rstride, uint64_t elem, uint64_t count,
                              int wait)
{ (void)ctx; (void)dst; (void)lstride; (void)src_rank; (void)off; (void)rstride; (void)elem;
  (void)count; (void)wait; return RQ_ENOTSUP; }
static int none_amo(struct rq_ctx *ctx, int dst, uint64_t off, int op,
                              uint64_t operand, uint64_t compare, uint64_t *old)
{ (void)ctx; (void)dst; (void)off; (void)op; (void)operand; (void)compare; (void)old;
  return RQ_ENOTSUP; }
static int none_flush(struct rq_ctx *ctx) { (void)ctx; return 0; }
static int none_stop_add(struct rq_ctx *ctx, int dst, uint64_t delta)
{ (void)ctx; (void)dst; (void)delta; return RQ_ENOTSUP; }
static int none_put_nb(struct rq_ctx *ctx, int dst, uint64_t off, const char *src,
                                 uint64_t len, struct rqi_ucx_done *d)
{ (void)ctx; (void)dst; (void)off; (void)src; (void)len; (void)d; return RQ_ENOTSUP; }
static int none_get_nb(struct rq_ctx *ctx, char *dst, int src_rank, uint64_t off,
                                 uint64_t len, struct rqi_ucx_done *d)
{ (void)ctx; (void)dst; (void)src_rank; (void)off; (void)len; (void)d; return RQ_ENOTSUP; }
static int none_send_nb(struct rq_ctx *ctx, int dst, const struct rqi_ucx_out *o,
                                  struct rqi_ucx_done *d)
{ (void)ctx; (void)dst; (void)o; (void)d; return RQ_ENOTSUP; }
static int none_rx_deferred(const struct rqi_ucx_rx *e) { (void)e; return 0; }
static int none_place(struct rq_ctx *ctx, struct rqi_ucx_rx *e, void *dst,
                                void (*fn)(struct rq_ctx *ctx, void *arg, int ok), void *arg)
{ (void)ctx; (void)e; (void)dst; (void)fn; (void)arg; return RQ_ENOTSUP; }
static int none_rx_fetch(struct rq_ctx *ctx, struct rqi_ucx_rx *e, rq_msg_t *m)
{ (void)ctx; (void)e; (void)m; return RQ_ENOTSUP; }

const struct rqi_net_ops rqi_net_none = {
    .name = "none",
    .init = none_init,
    .fini = none_fini,
    .closing = none_closing,
    .send = none_send,
    .progress = none_progress,
    .am_waiting = none_am_waiting,
    .am_next = none_am_next,
    .rx_free = none_rx_free,
    .drain = none_drain,
    .rx_deferred = none_rx_deferred,
    .place = none_place,
    .rx_fetch = none_rx_fetch,
    .efd = none_efd,
    .arm = none_arm,
    .put = none_put,
    .get = none_get,
    .amo = none_amo,
    .flush = none_flush,
    .put_nb = none_put_nb,
    .get_nb = none_get_nb,
    .send_nb = none_send_nb,
    .stop_add = none_stop_add,
};

const struct rqi_net_ops *rqi_net_default(void)
{
#ifdef RQ_HAVE_UCX
    return &rqi_net_ucx;
#else
    return &rqi_net_none;
#endif
}
