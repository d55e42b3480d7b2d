/* tag_basic.c - rqtag (tag/include/rqtag.h) from a user's side, on any
 * number of ranks, every phase checked with payload patterns:
 *   order      every rank sends K messages to every rank (itself
 *              included), tags cycling; each receiver takes them per
 *              source with a wildcard tag: in order, whole;
 *   any        the same taken with RQ_TAG_ANY_SOURCE: per-source order;
 *   mask       two tag families interleaved; receives by family (mask)
 *              get each family in its order;
 *   unexpected sends before any receive is posted (a barrier between):
 *              counted unexpected, then received whole;
 *   large      payloads above rq_medium_max() (rendezvous), to receives
 *              posted first and to none (unexpected), and truncated;
 *              into private buffers (placed) and into buffers in the
 *              receiver's segment (written by the sender);
 *   truncate   a small message into a smaller buffer: RQ_ERANGE, its head;
 *   probe      rq_tiprobe before and after arrival, rq_tprobe, status;
 *   cancel     a receive nobody sends to, taken back; twice; a matched one;
 *   inflight   1000 rq_tirecv posted at once, any source, then matched;
 *   errors     bad ranks, NULL buffers, blocking calls from a handler.
 * argv: messages per pair (default 200), or "badenv": rq_tag_open must
 * refuse the malformed RQ_TAG_EAGER_MAX it is given. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rq.h"
#include "rqtag.h"

#define H_PROBE  40
#define MAXBYTES 200

static rq_ctx_t *ctx;
static rq_tag_t *tg;
static int me, np;
static volatile uint64_t handler_checked;

static size_t small_len(uint64_t seq) { return (size_t)(seq * 29u % (MAXBYTES + 1)); }

static void fill(unsigned char *b, size_t len, int src, uint64_t seq)
{
    for (size_t i = 0; i < len; i++)
        b[i] = pattern_byte(src, seq, i);
}

static int same(const unsigned char *b, size_t len, int src, uint64_t seq)
{
    for (size_t i = 0; i < len; i++)
        if (b[i] != pattern_byte(src, seq, i))
            return 0;
    return 1;
}

/* Tag layout for the order phases: family << 32 | seq. */
static uint64_t tag_of(uint64_t family, uint64_t seq) { return family << 32 | seq; }

static void phase_order(uint64_t k, int any)
{
    unsigned char buf[MAXBYTES];
    for (uint64_t s = 0; s < k; s++)
        for (int d = 0; d < np; d++) {
            fill(buf, small_len(s), me, s);
            CHECK_EQ(rq_tsend(tg, d, tag_of(1, s), buf, small_len(s)), 0);
        }
    uint64_t *next = calloc((size_t)np, sizeof *next);
    for (uint64_t n = 0; n < k * (uint64_t)np; n++) {
        rq_tstatus_t st;
        int src = any ? RQ_TAG_ANY_SOURCE : (int)(n % (uint64_t)np);
        CHECK_EQ(rq_trecv(tg, src, 0, 0, buf, sizeof buf, &st), 0);
        CHECK(st.source >= 0 && st.source < np);
        CHECK(any || st.source == src);
        uint64_t s = next[st.source]++;
        CHECK_EQ(st.tag, tag_of(1, s)); /* the pair's order */
        CHECK_EQ(st.len, small_len(s));
        CHECK(same(buf, st.len, st.source, s));
    }
    free(next);
    CHECK_EQ(rq_barrier(ctx), 0);
}

static void phase_mask(uint64_t k)
{
    /* To the next rank: families 2 and 3 interleaved. */
    int to = (me + 1) % np, from = (me + np - 1) % np;
    unsigned char buf[MAXBYTES];
    for (uint64_t s = 0; s < k; s++) {
        uint64_t fam = 2 + (s % 2);
        fill(buf, 8, me, s);
        CHECK_EQ(rq_tsend(tg, to, tag_of(fam, s), buf, 8), 0);
    }
    for (uint64_t fam = 3; fam >= 2; fam--)
        for (uint64_t s = fam - 2; s < k; s += 2) {
            rq_tstatus_t st;
            CHECK_EQ(rq_trecv(tg, from, tag_of(fam, 0), 0xffffffff00000000ull, buf, sizeof buf, &st),
                     0);
            CHECK_EQ(st.tag, tag_of(fam, s));
            CHECK(same(buf, 8, from, s));
        }
    /* An exact tag (RQ_TAG_ALL) takes only that one. */
    uint64_t x = 77;
    CHECK_EQ(rq_tsend(tg, to, tag_of(4, 1), &x, 8), 0);
    CHECK_EQ(rq_tsend(tg, to, tag_of(4, 2), &x, 8), 0);
    rq_tstatus_t st;
    CHECK_EQ(rq_trecv(tg, from, tag_of(4, 2), RQ_TAG_ALL, &x, 8, &st), 0);
    CHECK_EQ(st.tag, tag_of(4, 2));
    CHECK_EQ(rq_trecv(tg, from, tag_of(4, 1), RQ_TAG_ALL, &x, 8, &st), 0);
    CHECK_EQ(st.tag, tag_of(4, 1));
    CHECK_EQ(rq_barrier(ctx), 0);
}

static void phase_unexpected(uint64_t k)
{
    rq_tag_stats_t a, b;
    CHECK_EQ(rq_tag_stats(tg, &a), 0);
    int to = (me + 1) % np, from = (me + np - 1) % np;
    unsigned char buf[MAXBYTES];
    for (uint64_t s = 0; s < k; s++) {
        fill(buf, small_len(s), me, s + 1000);
        CHECK_EQ(rq_tsend(tg, to, tag_of(5, s), buf, small_len(s)), 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0); /* our messages are out before any receive */
    /* The last first (an exact tag), then the rest in order. */
    rq_tstatus_t st;
    CHECK_EQ(rq_trecv(tg, from, tag_of(5, k - 1), RQ_TAG_ALL, buf, sizeof buf, &st), 0);
    CHECK(same(buf, small_len(k - 1), from, k - 1 + 1000));
    /* The pair's order: every earlier one has arrived, none received. */
    CHECK_EQ(rq_tag_stats(tg, &b), 0);
    CHECK(b.unexpected_now >= k - 1);
    for (uint64_t s = 0; s + 1 < k; s++) {
        CHECK_EQ(rq_trecv(tg, from, tag_of(5, 0), 0xffffffff00000000ull, buf, sizeof buf, &st), 0);
        CHECK_EQ(st.tag, tag_of(5, s));
        CHECK(same(buf, small_len(s), from, s + 1000));
    }
    CHECK_EQ(rq_tag_stats(tg, &b), 0);
    CHECK(b.unexpected > a.unexpected || a.unexpected >= k - 1);
    CHECK_EQ(b.unexpected_now, 0);
    CHECK_EQ(rq_barrier(ctx), 0);
}

/* in_segment: the receive buffer lies in this rank's segment (the
 * sender writes it with rq_request_long), else in private memory. */
static void phase_large(int in_segment)
{
    const size_t big = rq_medium_max(ctx) * 3 + 77;
    unsigned char *out = malloc(big), *in = malloc(big), *mine = in;
    if (in_segment) {
        void *seg;
        size_t seg_size;
        CHECK_EQ(rq_segment(ctx, &seg, &seg_size), 0);
        CHECK(seg_size >= big + 64);
        in = (unsigned char *)seg + 64; /* not at its start: the offset travels */
    }
    int to = (me + 1) % np, from = (me + np - 1) % np;
    rq_tag_stats_t a, b;
    CHECK_EQ(rq_tag_stats(tg, &a), 0);
    /* Posted first. */
    rq_treq_t r;
    memset(in, 0, big);
    CHECK_EQ(rq_tirecv(tg, from, tag_of(6, 0), RQ_TAG_ALL, in, big, &r), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    fill(out, big, me, 6);
    CHECK_EQ(rq_tsend(tg, to, tag_of(6, 0), out, big), 0);
    CHECK_EQ(rq_twait(tg, &r), 0);
    CHECK_EQ(r.status.len, big);
    CHECK(same(in, big, from, 6));
    /* Unexpected (sent before the receive), then one truncated.  Above
     * rq_medium_max() a send waits for its receive (rendezvous): every
     * rank sending before it receives must not block, so rq_tisend. */
    unsigned char *out8 = malloc(big);
    rq_treq_t s7, s8;
    fill(out, big, me, 7);
    CHECK_EQ(rq_tisend(tg, to, tag_of(7, 0), out, big, &s7), 0);
    fill(out8, big, me, 8);
    CHECK_EQ(rq_tisend(tg, to, tag_of(8, 0), out8, big, &s8), 0);
    CHECK_EQ(rq_ttest(tg, &s7), 0); /* nobody has received it yet */
    CHECK_EQ(rq_barrier(ctx), 0);
    rq_tag_stats_t mid;
    CHECK_EQ(rq_tiprobe(tg, from, tag_of(7, 0), RQ_TAG_ALL, NULL), 1);
    CHECK_EQ(rq_tag_stats(tg, &mid), 0);
    CHECK(mid.unexpected_bytes_max - a.unexpected_bytes_max < big); /* a record, no copy */
    rq_tstatus_t st;
    memset(in, 0, big);
    CHECK_EQ(rq_trecv(tg, from, tag_of(7, 0), RQ_TAG_ALL, in, big, &st), 0);
    CHECK_EQ(st.len, big);
    CHECK(same(in, big, from, 7));
    memset(in, 0, big);
    CHECK_EQ(rq_trecv(tg, from, tag_of(8, 0), RQ_TAG_ALL, in, 1000, &st), RQ_ERANGE);
    CHECK_EQ(st.len, big);
    CHECK(same(in, 1000, from, 8));
    CHECK_EQ(in[1000], 0);
    CHECK_EQ(rq_twait(tg, &s7), 0);
    CHECK_EQ(rq_twait(tg, &s8), 0);
    free(out8);
    /* A large one to a receive too small, posted first. */
    CHECK_EQ(rq_tirecv(tg, from, tag_of(9, 0), RQ_TAG_ALL, in, 500, &r), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    fill(out, big, me, 9);
    CHECK_EQ(rq_tsend(tg, to, tag_of(9, 0), out, big), 0);
    CHECK_EQ(rq_twait(tg, &r), RQ_ERANGE);
    CHECK(same(in, 500, from, 9));
    CHECK_EQ(rq_tag_stats(tg, &b), 0);
    CHECK_EQ(b.rendezvous - a.rendezvous, 4);
    CHECK(b.truncated - a.truncated >= 2);
    free(out);
    free(mine);
    CHECK_EQ(rq_barrier(ctx), 0);
}

static void phase_truncate_probe(void)
{
    int to = (me + 1) % np, from = (me + np - 1) % np;
    unsigned char buf[64];
    rq_tstatus_t st;
    CHECK_EQ(rq_tiprobe(tg, from, tag_of(10, 0), RQ_TAG_ALL, &st), 0);
    CHECK_EQ(rq_barrier(ctx), 0); /* nothing sent before everyone looked */
    unsigned char out[100];
    fill(out, sizeof out, me, 10);
    CHECK_EQ(rq_tsend(tg, to, tag_of(10, 0), out, sizeof out), 0);
    memset(&st, 0, sizeof st);
    CHECK_EQ(rq_tprobe(tg, RQ_TAG_ANY_SOURCE, tag_of(10, 0), RQ_TAG_ALL, &st), 0);
    CHECK_EQ(st.source, from);
    CHECK_EQ(st.len, sizeof out);
    CHECK_EQ(rq_tiprobe(tg, from, tag_of(10, 0), RQ_TAG_ALL, NULL), 1); /* still there */
    CHECK_EQ(rq_trecv(tg, from, tag_of(10, 0), RQ_TAG_ALL, buf, 40, &st), RQ_ERANGE);
    CHECK_EQ(st.len, sizeof out);
    CHECK(same(buf, 40, from, 10));
    CHECK_EQ(rq_tiprobe(tg, from, tag_of(10, 0), RQ_TAG_ALL, NULL), 0); /* taken */
    CHECK_EQ(rq_barrier(ctx), 0);
}

static void phase_cancel(void)
{
    int to = (me + 1) % np, from = (me + np - 1) % np;
    uint64_t x = 0;
    rq_treq_t r;
    CHECK_EQ(rq_tirecv(tg, from, tag_of(11, 0), RQ_TAG_ALL, &x, 8, &r), 0);
    CHECK_EQ(rq_ttest(tg, &r), 0);
    CHECK_EQ(rq_tcancel(tg, &r), 0);
    CHECK_EQ(r.done, 1);
    CHECK_EQ(r.status.error, RQ_EAGAIN);
    CHECK_EQ(rq_tcancel(tg, &r), RQ_EINVAL);
    /* A matched receive cannot be taken back. */
    CHECK_EQ(rq_tirecv(tg, from, tag_of(12, 0), RQ_TAG_ALL, &x, 8, &r), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    uint64_t v = 12345 + (uint64_t)me;
    rq_treq_t s;
    CHECK_EQ(rq_tisend(tg, to, tag_of(12, 0), &v, 8, &s), 0);
    CHECK_EQ(rq_ttest(tg, &s), 1);
    CHECK_EQ(rq_twait(tg, &r), 0);
    CHECK_EQ(x, 12345 + (uint64_t)from);
    CHECK_EQ(rq_tcancel(tg, &r), RQ_EINVAL);
    CHECK_EQ(rq_tcancel(tg, &s), RQ_EINVAL);
    CHECK_EQ(rq_barrier(ctx), 0);
}

static void phase_inflight(void)
{
    enum { N = 1000 };
    rq_treq_t *r = calloc(N, sizeof *r);
    uint64_t *v = calloc(N, sizeof *v);
    int to = (me + 1) % np;
    for (int i = 0; i < N; i++)
        CHECK_EQ(rq_tirecv(tg, RQ_TAG_ANY_SOURCE, tag_of(13, 0), 0xffffffff00000000ull, &v[i], 8,
                           &r[i]),
                 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    for (uint64_t s = 0; s < N; s++) {
        uint64_t x = s * 7 + 1;
        CHECK_EQ(rq_tsend(tg, to, tag_of(13, s), &x, 8), 0);
    }
    for (int i = 0; i < N; i++) {
        CHECK_EQ(rq_twait(tg, &r[i]), 0);
        CHECK_EQ(r[i].status.tag, tag_of(13, (uint64_t)i)); /* posted order = arrival order */
        CHECK_EQ(v[i], (uint64_t)i * 7 + 1);
    }
    free(r);
    free(v);
    CHECK_EQ(rq_barrier(ctx), 0);
}

static void on_probe(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)c, (void)m, (void)arg;
    unsigned char b[8];
    rq_treq_t r;
    CHECK_EQ(rq_trecv(tg, 0, 0, 0, b, 8, NULL), RQ_EPERM);
    CHECK_EQ(rq_tprobe(tg, 0, 0, 0, NULL), RQ_EPERM);
    CHECK_EQ(rq_tag_close(tg), RQ_EPERM);
    /* Non-blocking calls are allowed. */
    CHECK_EQ(rq_tirecv(tg, RQ_TAG_ANY_SOURCE, tag_of(14, 0), RQ_TAG_ALL, b, 8, &r), 0);
    CHECK_EQ(rq_twait(tg, &r), RQ_EPERM);
    CHECK_EQ(rq_tcancel(tg, &r), 0);
    /* A large rq_tsend waits for its receive: not from a handler. */
    static unsigned char big[1 << 17];
    CHECK(sizeof big > rq_medium_max(c));
    CHECK_EQ(rq_tsend(tg, me, tag_of(15, 0), big, sizeof big), RQ_EPERM);
    handler_checked++;
}

static void phase_errors(void)
{
    unsigned char b[8];
    rq_treq_t r;
    CHECK_EQ(rq_tsend(NULL, 0, 0, b, 8), RQ_EINVAL);
    CHECK_EQ(rq_tsend(tg, np, 0, b, 8), RQ_EINVAL);
    CHECK_EQ(rq_tsend(tg, -1, 0, b, 8), RQ_EINVAL);
    CHECK_EQ(rq_tsend(tg, 0, 0, NULL, 8), RQ_EINVAL);
    CHECK_EQ(rq_tisend(tg, 0, 0, b, 8, NULL), RQ_EINVAL);
    CHECK_EQ(rq_tirecv(tg, np, 0, 0, b, 8, &r), RQ_EINVAL);
    CHECK_EQ(rq_tirecv(tg, -2, 0, 0, b, 8, &r), RQ_EINVAL);
    CHECK_EQ(rq_tirecv(tg, 0, 0, 0, NULL, 8, &r), RQ_EINVAL);
    CHECK_EQ(rq_tirecv(tg, 0, 0, 0, b, 8, NULL), RQ_EINVAL);
    CHECK_EQ(rq_trecv(NULL, 0, 0, 0, b, 8, NULL), RQ_EINVAL);
    CHECK_EQ(rq_tiprobe(tg, np, 0, 0, NULL), RQ_EINVAL);
    CHECK_EQ(rq_tprobe(NULL, 0, 0, 0, NULL), RQ_EINVAL);
    CHECK_EQ(rq_ttest(tg, NULL), RQ_EINVAL);
    CHECK_EQ(rq_twait(NULL, &r), RQ_EINVAL);
    CHECK_EQ(rq_tcancel(tg, NULL), RQ_EINVAL);
    CHECK_EQ(rq_tag_stats(tg, NULL), RQ_EINVAL);
    CHECK_EQ(rq_tag_close(NULL), RQ_EINVAL);
    rq_tag_t *t2;
    CHECK_EQ(rq_tag_open(NULL, 0, &t2), RQ_EINVAL);
    CHECK_EQ(rq_tag_open(ctx, 0, NULL), RQ_EINVAL);
    CHECK_EQ(rq_tag_open(ctx, RQ_MAX_HANDLERS, &t2), RQ_EINVAL);
    /* Forged rendezvous packets (a stale id, a short one) are dropped and
     * counted, nothing written. */
    rq_tag_stats_t a, b2;
    CHECK_EQ(rq_tag_stats(tg, &a), 0);
    uint64_t forged[3] = {12345, 1ull << 40 | 7, 8};
    CHECK_EQ(rq_request(ctx, me, RQTAG_HANDLER_BASE + 3, forged, 1, b, 8, 0), 0); /* data */
    CHECK_EQ(rq_request(ctx, me, RQTAG_HANDLER_BASE + 2, forged, 3, NULL, 0, 0), 0); /* go-ahead */
    CHECK_EQ(rq_request(ctx, me, RQTAG_HANDLER_BASE + 1, forged, 2, NULL, 0, 0), 0); /* announce */
    CHECK_EQ(rq_request(ctx, me, RQTAG_HANDLER_BASE + 0, forged, 3, NULL, 0, 0), 0); /* eager */
    do {
        CHECK(rq_poll(ctx) >= 0);
        CHECK_EQ(rq_tag_stats(tg, &b2), 0);
    } while (b2.dropped - a.dropped < 4);
    CHECK_EQ(b2.dropped - a.dropped, 4);
    /* The blocking calls from a handler. */
    CHECK_EQ(rq_handler_register(ctx, H_PROBE, on_probe, NULL, 0), 0);
    CHECK_EQ(rq_request(ctx, me, H_PROBE, NULL, 0, NULL, 0, 0), 0);
    CHECK_EQ(rq_wait_until(ctx, &handler_checked, 1), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
}

int main(int argc, char **argv)
{
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    me = rq_rank(ctx);
    np = rq_size(ctx);
    if (argc > 1 && strcmp(argv[1], "badenv") == 0) { /* RQ_TAG_EAGER_MAX malformed */
        CHECK_EQ(rq_tag_open(ctx, 0, &tg), RQ_EINVAL);
        CHECK_EQ(rq_finalize(ctx), 0);
        if (me == 0)
            printf("tag_basic: RQ_TAG_EAGER_MAX=%s refused\n", getenv("RQ_TAG_EAGER_MAX"));
        return 0;
    }
    uint64_t k = argc > 1 ? strtoull(argv[1], NULL, 10) : 200;
    CHECK(k >= 2);
    CHECK_EQ(rq_tag_open(ctx, 0, &tg), 0);
    phase_order(k, 0);
    phase_order(k, 1);
    phase_mask(k);
    phase_unexpected(k);
    phase_large(0);
    phase_large(1);
    phase_truncate_probe();
    phase_cancel();
    phase_inflight();
    phase_errors();
    rq_tag_stats_t st;
    CHECK_EQ(rq_tag_stats(tg, &st), 0);
    CHECK_EQ(st.dropped, 4); /* the forged ones */
    CHECK_EQ(st.unexpected_now, 0);
    CHECK_EQ(rq_tag_close(tg), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("tag_basic: ok (%d ranks, %llu per pair; sent %llu, unexpected %llu, rendezvous "
               "%llu)\n",
               np, (unsigned long long)k, (unsigned long long)st.sent,
               (unsigned long long)st.unexpected, (unsigned long long)st.rendezvous);
    return 0;
}
