/* gas_forged - forged global-address requests and replies, written
 * straight into rank 1's request and reply rings, are rejected and counted
 * by rank 1's server (np or proc strategy), never followed outside its
 * segment; the segment is untouched and valid operations after them work.
 * Needs 2 ranks; rank 0 forges, rank 1 serves. */
#define _GNU_SOURCE
#include <string.h>

#include "check.h"
#include "ctx.h"
#include "gas/gas.h"

#define CANARY 0x5au

static int forged;

/* Publish one packet on rank dst's ring k (request or reply). */
static void forge(rq_ctx_t *ctx, int dst, unsigned k, unsigned op, unsigned nargs,
                  const uint64_t *args, uint32_t len, void (*tweak)(struct rqi_pkt *))
{
    struct rqi_ring_tx *tx = k == RQI_GAS_REQ ? &ctx->gas.req_tx[dst] : &ctx->gas.rep_tx[dst];
    unsigned n = rqi_pkt_slots(RQI_PK_INLINE, nargs, len);
    uint64_t pos;
    struct rqi_pkt *p;
    while ((p = rqi_ring_tx_reserve(tx, n, ctx->job32, (uint32_t)ctx->rank, &pos)) == NULL)
        rq_poll(ctx);
    memset((char *)p + 8, 0, (size_t)n * RQI_SLOT_BYTES - 8);
    rqi_pkt_write_header(p, ctx->job32, (uint32_t)ctx->rank, op, 0, nargs, RQI_PK_INLINE, len, n, 0);
    if (nargs != 0)
        memcpy(rqi_pkt_args(p), args, 8u * nargs);
    memset(rqi_pkt_payload(p), CANARY ^ 0xff, len);
    if (tweak != NULL)
        tweak(p);
    rqi_ring_tx_publish(p, pos);
    forged++;
}

static void bad_job(struct rqi_pkt *p) { p->job ^= 1; }
static void bad_src(struct rqi_pkt *p) { p->src = 1; } /* claims to come from the target itself */
static void bad_kind(struct rqi_pkt *p) { p->kind = RQI_PK_LONG; }
static void bad_flags(struct rqi_pkt *p) { p->flags = RQI_PF_SYSTEM; }

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_size(ctx), 2);
    const int me = rq_rank(ctx);
    void *base;
    size_t S;
    CHECK_EQ(rq_segment(ctx, &base, &S), 0);
    memset(base, CANARY, S);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 0 && ctx->gas.strategy != RQI_GAS_DIRECT) {
        const uint64_t big = UINT64_MAX / 2;
        /* requests: (off, stride, elem, count, pos, ack) */
        const uint64_t out_of_seg[6] = {S - 4, 8, 8, 1, 0, 1};
        const uint64_t wraps[6] = {8, big, 8, 3, 0, 1};
        const uint64_t overlap[6] = {0, 4, 8, 2, 0, 1};
        const uint64_t past_total[6] = {0, 8, 8, 1, 4, 1};
        const uint64_t bad_ack[6] = {0, 8, 8, 1, 0, 7};
        const uint64_t zero_elem[6] = {0, 8, 0, 1, 0, 0};
        const uint64_t ok_put[6] = {64, 8, 8, 1, 0, 0};
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 6, out_of_seg, 8, NULL);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_STORE, 6, wraps, 8, NULL);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 6, overlap, 16, NULL);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 6, past_total, 8, NULL);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 6, bad_ack, 8, NULL);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 6, zero_elem, 0, NULL);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 5, ok_put, 8, NULL);      /* wrong nargs */
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 6, ok_put, 8, bad_job);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 6, ok_put, 8, bad_src);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 6, ok_put, 8, bad_kind);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_PUT, 6, ok_put, 8, bad_flags);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_COUNT, 6, ok_put, 8, NULL);  /* unknown op */
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_ACK, 0, NULL, 0, NULL);      /* reply on request ring */
        /* gets: (off, stride, elem, count, slot, gen) */
        const uint64_t get_range[6] = {S, 8, 8, 1, 0, 0};
        const uint64_t get_slot[6] = {0, 8, 8, 1, RQI_GAS_SLOTS, 0};
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_GET, 6, get_range, 0, NULL);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_GET, 6, get_slot, 0, NULL);
        /* AMOs: (off, op, operand, compare, slot, gen) */
        const uint64_t amo_align[6] = {4, RQ_AMO_FADD, 1, 0, 0, 0};
        const uint64_t amo_op[6] = {0, 99, 1, 0, 0, 0};
        const uint64_t amo_range[6] = {S - 4, RQ_AMO_SWAP, 1, 0, 0, 0};
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_AMO, 6, amo_align, 0, NULL);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_AMO, 6, amo_op, 0, NULL);
        forge(ctx, 1, RQI_GAS_REQ, RQI_GOP_AMO, 6, amo_range, 0, NULL);
        /* replies rank 1 never asked for: (slot, gen, pos / old) */
        const uint64_t data_slot[3] = {RQI_GAS_SLOTS + 5, 0, 0};
        const uint64_t data_idle[3] = {3, 0, 0};
        forge(ctx, 1, RQI_GAS_REP, RQI_GOP_ACK, 0, NULL, 0, NULL);
        forge(ctx, 1, RQI_GAS_REP, RQI_GOP_DATA, 3, data_slot, 8, NULL);
        forge(ctx, 1, RQI_GAS_REP, RQI_GOP_DATA, 3, data_idle, 8, NULL);
        forge(ctx, 1, RQI_GAS_REP, RQI_GOP_OLD, 3, data_idle, 0, NULL);
        forge(ctx, 1, RQI_GAS_REP, RQI_GOP_PUT, 6, ok_put, 8, NULL);    /* request on reply ring */
    }
    /* A real put after the forgeries: served, so everything before it was. */
    uint64_t v = 0x1234, got = 0;
    if (me == 0) {
        CHECK_EQ(rq_write(ctx, 1, 128, &v, 8), 0);
        CHECK_EQ(rq_read(ctx, &got, 1, 128, 8), 0);
        CHECK(got == v);
    }
    int64_t n = forged;
    CHECK_EQ(rq_broadcast(ctx, 0, &n, sizeof n), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 1) {
        rq_stats_t st;
        CHECK_EQ(rq_stats(ctx, &st), 0);
        /* The real put orders the forged requests (one ring, served in
         * order), not the forged replies on the reply ring, and neither
         * does a barrier: wait for those (bounded), polling. */
        const double deadline = check_now_s() + 20;
        while (ctx->gas.strategy != RQI_GAS_DIRECT && st.rejected < (uint64_t)n &&
               check_now_s() < deadline) {
            CHECK(rq_poll(ctx) >= 0);
            CHECK_EQ(rq_stats(ctx, &st), 0);
        }
        if (ctx->gas.strategy != RQI_GAS_DIRECT)
            CHECK_EQ(st.rejected, n);
        const unsigned char *b = base;
        for (size_t i = 0; i < S; i++)
            if (b[i] != CANARY && !(i >= 128 && i < 136)) {
                fprintf(stderr, "gas_forged: byte %zu of the segment changed\n", i);
                return 1;
            }
        printf("gas_forged: %lld forged packets rejected\n", (long long)n);
    }
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
