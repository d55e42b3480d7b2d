/* ucx_forged - forged packets sent over UCX to a rank of another node (a
 * stray process, another job, a replay) are refused and counted in
 * rq_stats().rejected, never delivered and never written outside the
 * segment; valid traffic after them is delivered in order.  Needs 2 ranks
 * on two nodes (tests/two_nodes.sh); rank 0 forges, rank 1 receives. */
#include <string.h>

#include "check.h"
#include "ctx.h"
#include "deliver/deliver.h"

enum { H_OK = 1 };
static uint64_t ok_got, ok_next;
static void on_ok(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->args[0], ok_next); /* only the valid ones, in order */
    ok_next++;
    ok_got++;
}

/* A valid header for one argument, 8 payload bytes; then spoil it. */
static size_t build(rq_ctx_t *ctx, struct rqi_ucx_hdr *h, uint64_t seq, unsigned kind)
{
    memset(h, 0, sizeof *h);
    h->key = rqi_ucx_key(ctx);
    rqi_pkt_write_header(&h->pkt, ctx->job32, (uint32_t)ctx->rank, H_OK, RQ_AM_QUEUE, 1, kind,
                         kind == RQI_PK_LONG ? 0 : 8, 0, 0);
    rqi_store_relaxed(&h->pkt.seq, seq);
    size_t ext = rqi_pkt_ext_bytes(kind);
    if (kind == RQI_PK_LONG) {
        h->w[0] = 0;
        h->w[1] = 8;
    }
    h->w[ext / 8] = 0xbad;
    return RQI_UCX_HDR_MIN + ext + 8;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_size(ctx), 2);
    CHECK(ctx->remote[1 - rq_rank(ctx)]); /* started across two nodes */
    rq_handler_register(ctx, H_OK, on_ok, NULL, 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    const int forged = 14;
    if (rq_rank(ctx) == 0) {
        uint64_t pay = 0xdead, seq = rqi_ucx_next_seq(ctx, 1);
        struct rqi_ucx_hdr h;
        size_t n;
#define SEND(hl, d, l) CHECK_EQ(rqi_ucx_send_raw(ctx, 1, &h, (hl), (d), (l)), 0)
        n = build(ctx, &h, seq, RQI_PK_INLINE); h.key ^= 1;              SEND(n, &pay, 8); /* another job */
        n = build(ctx, &h, seq, RQI_PK_INLINE); h.pkt.job ^= 1;          SEND(n, &pay, 8);
        n = build(ctx, &h, seq, RQI_PK_INLINE); h.pkt.src = 1;           SEND(n, &pay, 8); /* not us */
        n = build(ctx, &h, seq, RQI_PK_INLINE); h.pkt.src = 99;          SEND(n, &pay, 8);
        n = build(ctx, &h, seq, RQI_PK_INLINE);                          SEND(n - 8, &pay, 8); /* short */
        n = build(ctx, &h, seq, RQI_PK_INLINE); h.pkt.nargs = 200;       SEND(n, &pay, 8);
        n = build(ctx, &h, seq, RQI_PK_INLINE);                          SEND(n, &pay, 4); /* len */
        n = build(ctx, &h, seq, RQI_PK_INLINE); h.pkt.kind = RQI_PK_FRAG; SEND(n, &pay, 8);
        n = build(ctx, &h, seq, RQI_PK_INLINE); h.pkt.tag = RQ_MAX_HANDLERS; SEND(n, &pay, 8);
        n = build(ctx, &h, seq, RQI_PK_LONG); h.w[0] = ctx->seg_bytes - 4; SEND(n, &pay, 8); /* outside */
        n = build(ctx, &h, seq, RQI_PK_LONG); h.w[1] = 16;               SEND(n, &pay, 8);
        n = build(ctx, &h, seq, RQI_PK_INLINE); h.pkt.pad_ = 0x80;      SEND(n, &pay, 8); /* flags */
        SEND(3, &pay, 8); /* a header too short to hold one */
        /* A valid packet takes number seq; a replay of it is refused. */
        uint64_t zero = 0;
        CHECK_EQ(rq_request(ctx, 1, H_OK, &zero, 1, &pay, 8, 0), 0);
        n = build(ctx, &h, seq, RQI_PK_INLINE); h.w[0] = 0;              SEND(n, &pay, 8);
        for (uint64_t i = 1; i < 1000; i++)
            CHECK_EQ(rq_request(ctx, 1, H_OK, &i, 1, &pay, 8, 0), 0);
    } else {
        while (ok_got < 1000)
            CHECK(rq_poll(ctx) >= 0);
        rq_stats_t st;
        CHECK_EQ(rq_stats(ctx, &st), 0);
        CHECK_EQ(st.rejected, (uint64_t)forged);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    printf("ucx_forged: ok\n");
    return 0;
}
