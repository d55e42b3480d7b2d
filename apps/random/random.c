/* random - HPC Challenge RandomAccess (GUPS) on librq, with the HPCC/PRK
 * interface (gups.h).  How an update reaches the rank that owns its word
 * is the variant (--variant NAME or RQAPP_VARIANT; the positional
 * arguments stay HPCC's):
 *
 *   amo  one remote atomic XOR per update (rq_amo RQ_AMO_FXOR; in place
 *        through the mapped segment under RQ_GAS_STRATEGY=direct, by the
 *        owner's network processor under np, by the owner under proc)
 *   am   one active message per update; the owner's handler applies it
 *   rq   updates aggregated per destination (--bucket WORDS, default
 *        1024) and sent as one remote-queue message each; the owner
 *        applies a whole bucket at a time in its receive loop, and its
 *        own bucket likewise (the HPCC/PRK MPI approach, without its
 *        global exchange steps)
 *
 * am applies updates to the rank's own words in place at once.
 * Usage: random [--variant V] [--bucket WORDS] <update ratio> <log2 table size> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "gups.h"
#include "fail.h"
#include "placement.h"

enum { V_AMO, V_AM, V_RQ, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"amo", "am", "rq"};
enum { H_UPDATE = 1, QID = 1 };

static struct {
    rq_ctx_t        *ctx;
    int              me, np, variant;
    struct gups_args a;
    uint64_t        *T, first, nloc;  /* this rank's block and its first index */
    int              in_segment;       /* T is the segment (amo) */
    uint64_t         bucket_words;
    uint64_t       **bucket, *fill;    /* rq: per-destination buckets */
    uint64_t        *msgs_to;          /* messages sent to each rank this pass */
    uint64_t         received, due;    /* messages taken in, and due, over all passes */
    uint64_t         bad;              /* malformed updates */
} G;

/* One update that this rank owns; anything else is counted as malformed. */
static inline void apply(uint64_t v)
{
    G.bad += gups_apply(G.T, G.first, G.nloc, G.a.mask, &v, 1);
}

static void on_update(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    if (m->nargs != 1 || m->len != 0)
        G.bad++;
    else
        apply(m->args[0]);
    G.received++;
}

/* rq: take in the runs of update messages at hand. */
static void drain(void)
{
    if (G.variant == V_AM) {
        rq_poll(G.ctx);
        return;
    }
    rq_msg_t v[RQ_PEEK_MAX];
    int n = rq_peek_n(G.ctx, QID, v, RQ_PEEK_MAX);
    for (int k = 0; k < n; k++) {
        const uint64_t *w = v[k].data;
        if (v[k].len % sizeof(uint64_t) != 0 || v[k].nargs != 0) {
            G.bad++;
            continue;
        }
        G.bad += gups_apply(G.T, G.first, G.nloc, G.a.mask, w, v[k].len / sizeof(uint64_t));
    }
    if (n > 0) {
        rq_pop_n(G.ctx, QID, (unsigned)n);
        G.received += (uint64_t)n;
    }
}

static int flush(int dst)
{
    if (G.fill[dst] == 0)
        return 0;
    if (dst == G.me) {
        G.bad += gups_apply(G.T, G.first, G.nloc, G.a.mask, G.bucket[dst], G.fill[dst]);
        G.fill[dst] = 0;
        return 0;
    }
    /* A full lane at dst: consume our own arrivals while we wait (a
     * blocking send would move them into the virtual buffer instead). */
    int rc;
    while ((rc = rq_enqueue(G.ctx, dst, QID, 0, NULL, 0, G.bucket[dst],
                            G.fill[dst] * sizeof(uint64_t), RQ_NONBLOCK)) == RQ_EAGAIN)
        drain();
    G.fill[dst] = 0;
    G.msgs_to[dst]++;
    drain();
    return rc;
}

static inline int update(uint64_t v)
{
    const uint64_t idx = v & G.a.mask;
    const int o = gups_owner(&G.a, idx);
    switch (G.variant) {
    case V_AMO:
        return rq_amo(G.ctx, o, (idx - G.a.blk * (uint64_t)o) * sizeof(uint64_t), RQ_AMO_FXOR,
                      v, 0, NULL);
    case V_AM:
        if (o == G.me) {
            G.T[idx - G.first] ^= v;
            return 0;
        }
        G.msgs_to[o]++;
        for (;;) { /* a full lane at o: run our own handlers meanwhile */
            int rc = rq_request(G.ctx, o, H_UPDATE, &v, 1, NULL, 0, RQ_NONBLOCK);
            if (rc != RQ_EAGAIN)
                return rc;
            rq_poll(G.ctx);
        }
    default:
        /* Our own updates wait in our bucket too, applied as a run. */
        G.bucket[o][G.fill[o]++] = v;
        return G.fill[o] == G.bucket_words ? flush(o) : 0;
    }
}

static uint64_t x0[GUPS_STREAMS], len[GUPS_STREAMS]; /* this rank's streams */
static int nstreams;

/* One pass of this rank's updates, then until every update of every rank
 * has landed. */
static int pass(void)
{
    static uint64_t x[GUPS_STREAMS];
    const int s = nstreams;
    memcpy(x, x0, sizeof x);
    int rc = 0;
    memset(G.msgs_to, 0, (size_t)G.np * sizeof *G.msgs_to);
    /* Streams are longest first: round i runs the streams still going. */
    for (uint64_t i = 0; s > 0 && i < len[0] && rc == 0; i++) {
        for (int j = 0; j < s && i < len[j] && rc == 0; j++)
            rc = update(x[j] = gups_next(x[j]));
        if (G.variant == V_AM && (i & 15) == 0)
            rq_poll(G.ctx); /* keep the handlers' work flowing */
    }
    for (int d = 0; d < G.np && rc == 0 && G.variant == V_RQ; d++)
        rc = flush(d);
    if (rc != 0)
        return rc;
    if (G.variant == V_AMO)
        return rq_barrier(G.ctx); /* every AMO completed before its call returned */
    /* Messages to expect: the column of the send counts. */
    uint64_t *tot = malloc((size_t)G.np * sizeof *tot);
    if (tot == NULL)
        return RQ_ENOMEM;
    rc = rq_allreduce(G.ctx, G.msgs_to, tot, (size_t)G.np, RQ_UINT64, RQ_SUM);
    /* Cumulative: a faster rank's next pass may already be arriving. */
    G.due += tot[G.me];
    free(tot);
    while (rc == 0 && G.received < G.due)
        drain();
    return rc == 0 ? rq_barrier(G.ctx) : rc;
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, "random: rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx);
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, "rq");
    const char *bucket_opt = rqa_take_opt(&argc, argv, "bucket");
    char err[200];
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    G.bucket_words = 1024;
    if (bucket_opt != NULL && (rqa_parse_u64(bucket_opt, &G.bucket_words) != 0 ||
                               G.bucket_words < 1 ||
                               G.bucket_words * sizeof(uint64_t) > rq_medium_max(G.ctx)))
        return rqa_fail(G.ctx, "ERROR: --bucket must be 1 .. rq_medium_max() / 8 words");
    if (gups_parse(argc, argv, G.np, &G.a, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    G.first = G.a.blk * (uint64_t)G.me;
    G.nloc = gups_local_words(&G.a, G.me);
    void *seg;
    size_t seg_bytes;
    rq_segment(G.ctx, &seg, &seg_bytes);
    if (G.variant != V_AMO) {
        G.T = gups_alloc_table(G.a.blk); /* only its owner touches it */
    } else if (G.a.blk * sizeof(uint64_t) <= seg_bytes) {
        G.T = seg;
        G.in_segment = 1;
    } else {
        snprintf(err, sizeof err,
                 "ERROR: variant amo keeps the table in the segment: set RQ_SEGMENT_SIZE >= %llu",
                 (unsigned long long)(G.a.blk * sizeof(uint64_t)));
        return rqa_fail(G.ctx, err);
    }
    G.fill = calloc((size_t)G.np, sizeof *G.fill);
    G.msgs_to = calloc((size_t)G.np, sizeof *G.msgs_to);
    G.bucket = calloc((size_t)G.np, sizeof *G.bucket);
    if (G.T == NULL || G.fill == NULL || G.msgs_to == NULL || G.bucket == NULL)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    for (int d = 0; d < G.np && G.variant == V_RQ; d++)
        if ((G.bucket[d] = malloc(G.bucket_words * sizeof(uint64_t))) == NULL)
            return rqa_fail(G.ctx, "ERROR: out of memory");
    gups_init(G.T, &G.a, G.me);
    nstreams = gups_streams(&G.a, G.me, G.np, x0, len); /* jump-ahead, untimed */
    rq_handler_register(G.ctx, H_UPDATE, on_update, NULL, 0);
    rq_queue_open(G.ctx, QID);
    if (G.me == 0) {
        char what[64];
        if (G.variant == V_RQ)
            snprintf(what, sizeof what, "rq (%llu-word buckets)",
                     (unsigned long long)G.bucket_words);
        else
            snprintf(what, sizeof what, "%s", variant_names[G.variant]);
        gups_header("librq random access", G.np, &G.a, what);
        rqa_placement_print(line_ns);
    }
    rq_barrier(G.ctx);

    double t0 = rqa_now();
    int rc = pass();
    double mine = rqa_now() - t0, t;
    if (rc == 0)
        rc = rq_allreduce(G.ctx, &mine, &t, 1, RQ_DOUBLE, RQ_MAX);
    if (rc == 0)
        rc = pass(); /* untimed: the same updates again restore T[i] = i */
    rq_stats_t st;
    rq_stats(G.ctx, &st);
    uint64_t mine_e[4] = {gups_errors(G.T, &G.a, G.me), G.bad, G.received, st.buffered};
    uint64_t tot_e[4] = {0, 0, 0, 0};
    if (rc == 0)
        rc = rq_allreduce(G.ctx, mine_e, tot_e, 4, RQ_UINT64, RQ_SUM);
    int bad = rc != 0 || tot_e[1] != 0;
    if (G.me == 0) {
        if (rc != 0)
            printf("ERROR: communication failed: %s\n", rq_strerror(rc));
        else if (tot_e[1] != 0)
            printf("ERROR: %llu malformed updates\n", (unsigned long long)tot_e[1]);
        else
            bad |= gups_result(tot_e[0], t, &G.a);
        if (G.variant != V_AMO)
            printf("Messages per rank             = %.0f per pass (%.1f%% buffered)\n",
                   (double)tot_e[2] / 2 / G.np,
                   tot_e[2] ? 100.0 * (double)tot_e[3] / (double)tot_e[2] : 0.0);
    }
    for (int d = 0; d < G.np; d++)
        free(G.bucket[d]);
    free(G.bucket);
    free(G.fill);
    free(G.msgs_to);
    if (!G.in_segment)
        free(G.T);
    fflush(stdout);
    if (rq_finalize(G.ctx) != 0)
        bad = 1;
    return bad;
}
