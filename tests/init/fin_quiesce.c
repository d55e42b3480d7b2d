/* fin_quiesce - rq_finalize is collective and quiescent: handlers run
 * inside it may send, and what they send is delivered before any rank
 * leaves (never a hang on a rank that already left, never a loss).
 *
 *   reply  [n]   every rank but 0 sends n requests to rank 0 and calls
 *                rq_finalize at once; rank 0 calls rq_finalize at once too,
 *                and its handler replies to each request.  Each sender
 *                must have all n replies when rq_finalize returns.
 *   chain  [n]   rank 0 sends n requests to rank 1 and finalizes; every
 *                handler forwards the message to the next rank until it
 *                has made 2 x size hops; every hop must have run.
 *   intr   [n]   "reply" with every rank in RQ_INTR_ALL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "check.h"

enum { H_REQ = 1, H_REP, H_HOP };

static uint64_t replies, hops_run, next_rep;

static void on_req(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    CHECK_EQ(rq_reply(c, m, H_REP, m->args, 1, NULL, 0, 0), 0);
}

static void on_rep(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->args[0], next_rep++); /* FIFO, exactly once */
    replies++;
}

static void on_hop(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    hops_run++;
    if (m->args[0] == 0)
        return;
    uint64_t left = m->args[0] - 1;
    CHECK_EQ(rq_request(c, (rq_rank(c) + 1) % rq_size(c), H_HOP, &left, 1, NULL, 0, 0), 0);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK(argc >= 2);
    const char *mode = argv[1];
    uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 5000;
    int me = rq_rank(ctx), size = rq_size(ctx);
    CHECK(size >= 2);
    CHECK_EQ(rq_handler_register(ctx, H_REQ, on_req, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_REP, on_rep, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_HOP, on_hop, NULL, 0), 0);
    if (strcmp(mode, "intr") == 0)
        CHECK_EQ(rq_interrupts(ctx, RQ_INTR_ALL), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (strcmp(mode, "reply") == 0 || strcmp(mode, "intr") == 0) {
        if (me != 0)
            for (uint64_t i = 0; i < n; i++)
                CHECK_EQ(rq_request(ctx, 0, H_REQ, &i, 1, NULL, 0, 0), 0);
        CHECK_EQ(rq_finalize(ctx), 0);
        if (me != 0)
            CHECK_EQ(replies, n);
    } else if (strcmp(mode, "chain") == 0) {
        uint64_t hops = 2u * (uint64_t)size;
        if (me == 0)
            for (uint64_t i = 0; i < n; i++)
                CHECK_EQ(rq_request(ctx, 1, H_HOP, &hops, 1, NULL, 0, 0), 0);
        CHECK_EQ(rq_finalize(ctx), 0);
        /* Hop k (k = hops .. 0) runs on rank (1 + hops - k) mod size. */
        uint64_t want = 0;
        for (uint64_t k = 0; k <= hops; k++)
            want += (uint64_t)((1 + (int)(hops - k)) % size == me);
        CHECK_EQ(hops_run, want * n);
    } else {
        fprintf(stderr, "usage: fin_quiesce reply|chain|intr [n]\n");
        return 2;
    }
    printf("fin_quiesce %s: rank %d: ok\n", mode, me);
    return 0;
}
