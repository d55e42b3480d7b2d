/* enum - FUGU's fine-grain search (thesis Tables 7-1 to 7-3): every
 * position of the triangle peg puzzle reachable from the start
 * (board.h), breadth first.  A position belongs to rank hash % ranks.
 * Each rank expands the positions it owns at the current level and sends
 * every new position to its owner as one short, unacknowledged active
 * message, whose handler adds it to the owner's next level (duplicates
 * dropped there); it polls as it expands.  Levels are the only
 * synchronization: the ranks sum what each sent to each, and a rank waits
 * until it has received all that was sent to it.  The per-level counts are
 * checked against a serial search of the same board on rank 0.
 * --variant bulk (the default, the faster: docs/apps.md) batches the new
 * positions per owner into medium messages of up to BATCH positions (what
 * an MPI user's Alltoallv does per level, here as the positions are
 * found); --variant fine sends each one alone, the thesis's program.
 *
 * Usage: enum [--variant fine|bulk] [--delivery poll|intr] [side (default 6)] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "board.h"
#include "fail.h"
#include "finegrain.h"

enum { H_POS = 1, H_BATCH = 2 };
#define BATCH 1024 /* positions per medium message: 8 KiB */

/* Handlers' state: under interrupt delivery the progress thread runs them
 * while the main thread expands, so the next level is theirs alone until
 * the level's count has been received (rq_wait_until). */
static struct posset next;
static struct rqa_fg fg;
static volatile uint64_t got;
static uint64_t bad;

static void on_pos(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    uint64_t t0 = rqa_ticks();
    if (m->nargs != 1 || m->args[0] == 0 || posset_add(&next, m->args[0]) < 0)
        bad++;
    fg.received++;
    fg.handlers++;
    got++;
    fg.handler_ticks += rqa_ticks() - t0;
}

/* A batch of positions: each one as H_POS would take it. */
static void on_batch(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    uint64_t t0 = rqa_ticks();
    size_t k = m->len / 8;
    const uint64_t *p = m->data;
    if (m->len % 8 != 0 || k == 0)
        bad++;
    for (size_t i = 0; i < k; i++) {
        uint64_t v;
        memcpy(&v, p + i, 8); /* the payload need not be aligned */
        if (v == 0 || posset_add(&next, v) < 0)
            bad++;
    }
    fg.received++;
    fg.handlers++;
    got += k;
    fg.handler_ticks += rqa_ticks() - t0;
}

/* Send owner's batch: 0 or an RQ_E* code. */
static int flush(rq_ctx_t *ctx, int owner, uint64_t *buf, unsigned *n, uint64_t *msgs)
{
    if (*n == 0)
        return 0;
    int rc = rq_request(ctx, owner, H_BATCH, NULL, 0, buf, (size_t)*n * 8, 0);
    *n = 0;
    (*msgs)++;
    return rc;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    static const char *const names[] = {"poll", "intr"}, *const variants[] = {"fine", "bulk"};
    const int intr = rqa_variant(&argc, argv, "delivery", names, 2, "poll");
    const int bulk = rqa_variant(&argc, argv, "variant", variants, 2, "bulk");
    uint64_t side = 6;
    if (intr < 0)
        return rqa_fail(ctx, "ERROR: unknown delivery");
    if (bulk < 0)
        return rqa_fail(ctx, "ERROR: unknown variant");
    if (argc > 2)
        return rqa_fail(ctx, "Usage: enum [--variant fine|bulk] [--delivery poll|intr] [side]");
    if (argc == 2 && (rqa_parse_u64(argv[1], &side) != 0 || side < 3 || side > 8))
        return rqa_fail(ctx, "ERROR: side must be in 3..8");
    const int me = rq_rank(ctx), np = rq_size(ctx);
    struct board b;
    struct posset cur;
    uint64_t *sent = calloc((size_t)np, sizeof *sent), *tot = calloc((size_t)np, sizeof *tot);
    if (board_init(&b, (int)side) != 0 || posset_init(&cur, 1024) != 0 ||
        posset_init(&next, 1024) != 0 || sent == NULL || tot == NULL)
        return rqa_fail(ctx, "ERROR: out of memory");
    uint64_t *succ = malloc((size_t)b.nmoves * sizeof *succ);
    uint64_t *count = calloc((size_t)b.holes, sizeof *count), *serial = calloc((size_t)b.holes, 8);
    if (succ == NULL || count == NULL || serial == NULL)
        return rqa_fail(ctx, "ERROR: out of memory");
    uint64_t *batch = bulk ? malloc((size_t)np * BATCH * 8) : NULL;
    unsigned *nb = bulk ? calloc((size_t)np, sizeof *nb) : NULL;
    if (bulk && (batch == NULL || nb == NULL))
        return rqa_fail(ctx, "ERROR: out of memory");
    int rc = rq_handler_register(ctx, H_POS, on_pos, NULL, 0);
    if (rc == 0)
        rc = rq_handler_register(ctx, H_BATCH, on_batch, NULL, 0);
    if (rc == 0 && intr)
        rc = rq_interrupts(ctx, RQ_INTR_ALL);
    if ((int)(board_hash(b.start) % (uint64_t)np) == me)
        (void)posset_add(&cur, b.start);
    if (rc == 0)
        rc = rq_barrier(ctx);
    if (me == 0)
        printf("librq enum: %d ranks, triangle of side %d (%d holes), %s, %s delivery\n", np,
               b.side, b.holes, bulk ? "batches of positions" : "a message per position",
               intr ? "interrupt" : "polled");
    uint64_t requests = 0, expect = 0;
    double t0 = rqa_now();
    for (int d = 0; d <= b.holes - 2 && rc == 0; d++) {
        uint64_t mine = cur.n;
        rc = rq_allreduce(ctx, &mine, &count[d], 1, RQ_UINT64, RQ_SUM);
        memset(sent, 0, (size_t)np * sizeof *sent);
        /* Every new position goes to its owner's handler, ours included:
         * only handlers add to the next level. */
        for (size_t i = 0; i < cur.cap && rc == 0; i++) {
            if (cur.slot[i] == 0)
                continue;
            int k = board_next(&b, cur.slot[i], succ);
            for (int j = 0; j < k && rc == 0; j++) {
                int owner = (int)(board_hash(succ[j]) % (uint64_t)np);
                sent[owner]++;
                if (!bulk) {
                    rc = rq_request(ctx, owner, H_POS, &succ[j], 1, NULL, 0, 0);
                    requests++;
                    continue;
                }
                batch[(size_t)owner * BATCH + nb[owner]++] = succ[j];
                if (nb[owner] == BATCH)
                    rc = flush(ctx, owner, batch + (size_t)owner * BATCH, &nb[owner], &requests);
            }
            /* Take in what arrived as we go: a rank that only sends fills
             * its peers' lanes, blocks, and buffers what they sent it. */
            if (!intr)
                while (rq_poll(ctx) > 0)
                    ;
        }
        for (int r = 0; r < np && bulk && rc == 0; r++)
            rc = flush(ctx, r, batch + (size_t)r * BATCH, &nb[r], &requests);
        if (rc == 0)
            rc = rq_allreduce(ctx, sent, tot, (size_t)np, RQ_UINT64, RQ_SUM);
        expect += tot[me];
        /* The level is complete here; nobody sends the one after before
         * the barrier, so no handler runs while the sets swap. */
        if (rc == 0)
            rc = rq_wait_until(ctx, &got, expect);
        struct posset t = cur;
        cur = next;
        next = t;
        posset_clear(&next);
        if (rc == 0)
            rc = rq_barrier(ctx);
    }
    double secs = rqa_now() - t0, slowest = 0;
    if (rc == 0 && intr)
        rc = rq_interrupts(ctx, RQ_INTR_OFF);
    fg.sent += requests;
    if (rc == 0)
        rc = rq_allreduce(ctx, &secs, &slowest, 1, RQ_DOUBLE, RQ_MAX);
    if (rc == 0 && me == 0) {
        if (board_search_serial(&b, serial) != 0)
            return rqa_fail(ctx, "ERROR: out of memory");
        for (int d = 0; d <= b.holes - 2; d++)
            bad += count[d] != serial[d];
    }
    struct rqa_fg all;
    if (rc == 0)
        rc = rqa_fg_sum_rq(ctx, &fg, &all);
    if (rqa_run_failed(ctx, rc, bad))
        return rqa_fail(ctx, NULL);
    if (me == 0) {
        board_print_result(&b, count);
        rqa_fg_print("enum", np, slowest, &all);
        printf("Solution validates\n");
    }
    fflush(stdout);
    board_free(&b);
    posset_free(&cur);
    posset_free(&next);
    free(sent);
    free(tot);
    free(succ);
    free(count);
    free(serial);
    free(batch);
    free(nb);
    return rq_finalize(ctx) != 0;
}
