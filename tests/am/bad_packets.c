/* bad_packets - forged and corrupted packets written straight into a
 * peer's lane (through librq's internal producer) are rejected and counted
 * in rq_stats().rejected, never followed outside the lane or the segment,
 * and valid traffic after them is delivered.  "framing" mode: a packet
 * whose slot count cannot be trusted fails the job with RQ_EPEER.
 * "framing-pdq": the same packet found by the intake of a PDQ thread that
 * runs a stream of keyed messages solo (src/pdq/pdq.c): the job fails,
 * the thread lets the context go, and the application's next call
 * returns RQ_EPEER.
 * Needs 2 ranks; rank 0 forges, rank 1 receives. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "ctx.h"
#include "deliver/deliver.h"

enum { H_OK = 1 };
static uint64_t ok_got;
static _Atomic uint64_t keyed_got;
static void on_keyed(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)m, (void)a;
    atomic_fetch_add(&keyed_got, 1);
}
static void on_ok(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->args[0], 0xfeedull);
    ok_got++;
}

/* Reserve n slots in dst's lane and publish a header built by the caller. */
static void forge(rq_ctx_t *ctx, int dst, unsigned n, void (*fill)(struct rqi_pkt *, unsigned))
{
    uint64_t pos;
    struct rqi_pkt *p;
    while ((p = rqi_ring_tx_reserve(&ctx->tx[dst], n, ctx->job32, (uint32_t)ctx->rank, &pos)) == NULL)
        rq_poll(ctx);
    memset((char *)p + 8, 0, (size_t)n * RQI_SLOT_BYTES - 8);
    rqi_pkt_write_header(p, ctx->job32, (uint32_t)ctx->rank, H_OK, 0, 1, RQI_PK_INLINE, 0, n, 0);
    rqi_pkt_args(p)[0] = 0xbad;
    fill(p, n);
    rqi_ring_tx_publish(p, pos);
}

static uint32_t g_job, g_size;
static void bad_job(struct rqi_pkt *p, unsigned n) { (void)n; p->job ^= 0x5a5a5a5a; }
static void bad_src(struct rqi_pkt *p, unsigned n) { (void)n; p->src = g_size + 7; }
static void bad_qid(struct rqi_pkt *p, unsigned n) { (void)n; p->qid = RQ_MAX_QUEUES; }
static void bad_nargs(struct rqi_pkt *p, unsigned n) { (void)n; p->nargs = RQ_MAX_ARGS + 1; }
static void bad_len(struct rqi_pkt *p, unsigned n) { (void)n; p->len = 0x7fffffff; }
static void bad_kind(struct rqi_pkt *p, unsigned n) { (void)n; p->kind = 9; }
static void bad_flags(struct rqi_pkt *p, unsigned n) { (void)n; p->flags = 0x40; }
static void bad_slots(struct rqi_pkt *p, unsigned n) { (void)n; p->len = 200; } /* needs 4 slots, has 1 */
static void bad_handler(struct rqi_pkt *p, unsigned n) { (void)n; p->tag = RQ_MAX_HANDLERS + 3; }
static void bad_sys(struct rqi_pkt *p, unsigned n) { (void)n; p->flags = RQI_PF_SYSTEM; p->tag = 99; }
static void unknown_handler(struct rqi_pkt *p, unsigned n) { (void)n; p->tag = 77; }
static void bad_long(struct rqi_pkt *p, unsigned n)
{
    (void)n;
    p->kind = RQI_PK_LONG;
    p->nargs = 0;
    struct rqi_pkt_long *e = rqi_pkt_ext(p);
    e->off = UINT64_MAX - 4; /* off + len wraps */
    e->len = 64;
}
static void stray_frag(struct rqi_pkt *p, unsigned n)
{
    (void)n;
    p->kind = RQI_PK_FRAG;
    p->nargs = 0;
    p->len = 8;
    struct rqi_pkt_frag *e = rqi_pkt_ext(p);
    e->msg_id = 12345;
    e->total = 1u << 20;
    e->offset = 4096; /* no first fragment: stray */
}
static void frag_overrun(struct rqi_pkt *p, unsigned n)
{
    (void)n;
    p->kind = RQI_PK_FRAG;
    p->nargs = 0;
    p->len = 8;
    struct rqi_pkt_frag *e = rqi_pkt_ext(p);
    e->msg_id = 1;
    e->total = 4;
    e->offset = 0; /* 8 bytes into a 4-byte message */
}
/* Staged payloads (RQI_PK_RNDV): every field that steers the receiver's
 * read of the sender's staging area. */
static uint64_t g_bulk;
static void rndv(struct rqi_pkt *p, uint64_t off, uint64_t len, uint64_t cookie)
{
    p->kind = RQI_PK_RNDV;
    p->nargs = 0;
    struct rqi_pkt_rndv *e = rqi_pkt_ext(p);
    e->off = off;
    e->len = len;
    e->cookie = cookie;
}
static void rndv_past_end(struct rqi_pkt *p, unsigned n) { (void)n; rndv(p, g_bulk - 128, 4096, 1); }
static void rndv_wrap(struct rqi_pkt *p, unsigned n) { (void)n; rndv(p, UINT64_MAX - 63, 128, 1); }
static void rndv_misaligned(struct rqi_pkt *p, unsigned n) { (void)n; rndv(p, 8, 64, 1); }
static void rndv_no_block(struct rqi_pkt *p, unsigned n) { (void)n; rndv(p, 0, 64, 0x5eed5eed); }
static void rndv_inline(struct rqi_pkt *p, unsigned n) { (void)n; rndv(p, 0, 64, 1); p->len = 8; }
static void frag_huge(struct rqi_pkt *p, unsigned n)
{
    (void)n;
    p->kind = RQI_PK_FRAG;
    p->nargs = 0;
    p->len = 8;
    struct rqi_pkt_frag *e = rqi_pkt_ext(p);
    e->msg_id = 99;
    e->total = UINT64_MAX / 2; /* more than any node's memory */
    e->offset = 0;
}
/* Pulled long requests (RQI_SYS_PULL, gas/async.h): every field that
 * steers the target's read into its segment, and the completion block in
 * our staging area that it would release.  2 slots: header + 6 args. */
static uint64_t g_seg, g_boff, g_cookie; /* a live completion block of ours */
static void pull_at(struct rqi_pkt *p, uint64_t from, uint64_t len, uint64_t off, uint64_t hw,
                    uint64_t boff, uint64_t cookie)
{
    p->flags = RQI_PF_SYSTEM;
    p->tag = RQI_SYS_PULL;
    p->nargs = 6;
    uint64_t *a = rqi_pkt_args(p);
    a[0] = from;
    a[1] = len;
    a[2] = off;
    a[3] = boff;
    a[4] = cookie;
    a[5] = hw;
}
static void pull(struct rqi_pkt *p, uint64_t from, uint64_t len, uint64_t off, uint64_t hw)
{
    pull_at(p, from, len, off, hw, g_boff, g_cookie);
}
static void pull_past_end(struct rqi_pkt *p, unsigned n) { (void)n; pull(p, 4096, 128, g_seg - 64, H_OK); }
static void pull_wrap(struct rqi_pkt *p, unsigned n) { (void)n; pull(p, 4096, 128, UINT64_MAX - 63, H_OK); }
static void pull_empty(struct rqi_pkt *p, unsigned n) { (void)n; pull(p, 4096, 0, 0, H_OK); }
static void pull_handler(struct rqi_pkt *p, unsigned n) { (void)n; pull(p, 4096, 8, 0, RQ_MAX_HANDLERS); }
static void pull_nargs(struct rqi_pkt *p, unsigned n) { (void)n; pull(p, 4096, 8, 0, H_OK | 3ull << 32); }
static void pull_huge_nargs(struct rqi_pkt *p, unsigned n) { (void)n; pull(p, 4096, 8, 0, H_OK | 99ull << 32); }
static void pull_stale(struct rqi_pkt *p, unsigned n) { (void)n; pull_at(p, 4096, 8, 0, H_OK, g_boff, g_cookie + 77); }
static void pull_misaligned(struct rqi_pkt *p, unsigned n) { (void)n; pull_at(p, 4096, 8, 0, H_OK, g_boff + 8, g_cookie); }
static void pull_past_area(struct rqi_pkt *p, unsigned n) { (void)n; pull_at(p, 4096, 8, 0, H_OK, UINT64_MAX - 63, g_cookie); }
static void pull_refused_mark(struct rqi_pkt *p, unsigned n) { (void)n; pull_at(p, 4096, 8, 0, H_OK, g_boff, UINT64_MAX); }
/* Valid but unreadable (the zero page): the target marks the block
 * refused and says so; the refusal names no transfer of ours, so we count
 * it.  Each uses a fresh block. */
static void pull_unreadable(struct rqi_pkt *p, unsigned n) { (void)n; pull(p, 8, 64, 0, H_OK); }
static void broken_framing(struct rqi_pkt *p, unsigned n) { (void)n; p->nslots = 0; }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "reject";
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_size(ctx), 2);
    int me = rq_rank(ctx);
    g_job = ctx->job32;
    g_size = (uint32_t)ctx->size;
    g_bulk = ctx->bulk_bytes;
    rq_handler_register(ctx, H_OK, on_ok, NULL, 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (strcmp(mode, "framing-pdq") == 0) {
        enum { QID = 9, H_KEYED = 2, N = 2000 };
        rq_handler_register(ctx, H_KEYED, on_keyed, NULL, 0);
        rq_pdq_t *pdq = NULL;
        if (me == 1) {
            rq_pdq_attr_t at = {.threads = 1, .mode = RQ_PDQ_DEDICATED};
            CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
        }
        CHECK_EQ(rq_barrier(ctx), 0);
        if (me == 0) {
            for (uint64_t i = 0; i < N; i++)
                CHECK_EQ(rq_pdq_enqueue(ctx, 1, QID, i % 8, H_KEYED, &i, 1, NULL, 0, 0), 0);
            forge(ctx, 1, 1, broken_framing);
            uint64_t never = 0;
            CHECK_EQ(rq_wait_until(ctx, &never, 1), RQ_EPEER);
            CHECK_EQ(rq_finalize(ctx), RQ_EPEER);
            return 0;
        }
        /* No librq call meanwhile: the PDQ's thread takes everything in,
         * the broken packet included. */
        const double deadline = check_now_s() + 30;
        while (!atomic_load(&keyed_got) || check_now_s() < deadline - 29.5)
            CHECK(check_now_s() < deadline);
        CHECK_EQ(rq_barrier(ctx), RQ_EPEER);
        rq_stats_t st;
        rq_stats(ctx, &st);
        CHECK_EQ(st.rejected, 1);
        CHECK_EQ(rq_finalize(ctx), RQ_EPEER);
        printf("bad_packets framing-pdq: %llu keyed handled, job failed with RQ_EPEER: ok\n",
               (unsigned long long)atomic_load(&keyed_got));
        return 0;
    }
    if (strcmp(mode, "framing") == 0) {
        int rc = 0;
        if (me == 0)
            forge(ctx, 1, 1, broken_framing);
        else
            rc = rq_barrier(ctx); /* polls the broken lane */
        if (me == 1) {
            CHECK_EQ(rc, RQ_EPEER);
            rq_stats_t st;
            rq_stats(ctx, &st);
            CHECK_EQ(st.rejected, 1);
            CHECK_EQ(rq_finalize(ctx), RQ_EPEER); /* frees all the same */
            printf("bad_packets framing: job failed with RQ_EPEER: ok\n");
            return 0;
        }
        uint64_t never = 0; /* rank 0 learns of the failure from the job flag */
        CHECK_EQ(rq_wait_until(ctx, &never, 1), RQ_EPEER);
        CHECK_EQ(rq_finalize(ctx), RQ_EPEER);
        return 0;
    }
    void (*bad[])(struct rqi_pkt *, unsigned) = {bad_job, bad_src, bad_qid, bad_nargs, bad_len,
                                                  bad_kind, bad_flags, bad_slots, bad_handler,
                                                  bad_sys, unknown_handler, bad_long, stray_frag,
                                                  frag_overrun, rndv_past_end, rndv_wrap,
                                                  rndv_misaligned, rndv_no_block, rndv_inline,
                                                  frag_huge};
    void (*bad_pull[])(struct rqi_pkt *, unsigned) = {
        pull_past_end, pull_wrap,      pull_empty,       pull_handler,     pull_nargs,
        pull_huge_nargs, pull_stale,   pull_misaligned,  pull_past_area,   pull_refused_mark};
    const unsigned nbad = sizeof bad / sizeof bad[0] + sizeof bad_pull / sizeof bad_pull[0];
    g_seg = ctx->seg_bytes;
    uint64_t undo;
    if (me == 0) /* a live completion block: only other fields make them invalid */
        CHECK((g_cookie = rqi_bulk_alloc(&ctx->btx, 0, 1, &g_boff, &undo)) != 0);
    if (me == 0) {
        for (int round = 0; round < 50; round++) {
            for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
                forge(ctx, 1, 1, bad[i]);
            for (unsigned i = 0; i < sizeof bad_pull / sizeof bad_pull[0]; i++)
                forge(ctx, 1, 2, bad_pull[i]);
        }
        const uint64_t first_boff = g_boff, first_cookie = g_cookie;
        for (int round = 0; round < 50; round++) {
            CHECK((g_cookie = rqi_bulk_alloc(&ctx->btx, 0, 1, &g_boff, &undo)) != 0);
            forge(ctx, 1, 2, pull_unreadable);
        }
        uint64_t a = 0xfeed;
        CHECK_EQ(rq_request(ctx, 1, H_OK, &a, 1, NULL, 0, 0), 0);
        /* the 50 refusals come back: counted, nothing else happens */
        rq_stats_t st;
        do {
            rq_poll(ctx);
            rq_stats(ctx, &st);
        } while (st.rejected < 50);
        CHECK_EQ(st.rejected, 50);
        /* the invalid ones (handled before these refusals) left our first
         * block alone */
        CHECK_EQ(rqi_load_acquire(&rqi_bulk_at(ctx->btx.base, ctx->btx.size, first_boff)->cookie),
                 first_cookie);
        CHECK_EQ(rqi_load_acquire(&rqi_bulk_at(ctx->btx.base, ctx->btx.size, g_boff)->cookie),
                 UINT64_MAX); /* marked refused by the target */
    } else {
        CHECK_EQ(rq_wait_until(ctx, &ok_got, 1), 0);
        rq_stats_t st;
        rq_stats(ctx, &st);
        CHECK_EQ(st.rejected, 50 * nbad);
    }
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 1)
        printf("bad_packets: %u kinds x 50 rejected and counted, valid traffic delivered: ok\n",
               nbad);
    return 0;
}
