/* order_soak - many packets between all pairs, on the AM queue and a named
 * queue, random sizes: per-(source, queue) order, nothing lost, nothing
 * duplicated, checksums equal.  argv[1]: packets each rank sends (total). */
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "check.h"

#define Q 3
enum { H_SEQ = 1 };
static uint64_t *next_am, *next_q, am_got, q_got, sum_recv;

static uint64_t lcg(uint64_t *s) { return *s = *s * 6364136223846793005ull + 1442695040888963407ull; }

static void check_payload(int src, const uint64_t *args, const void *data, size_t len)
{
    CHECK_EQ(len, args[1]);
    const unsigned char *d = data;
    for (size_t i = 0; i < len; i++)
        CHECK(d[i] == pattern_byte(src, args[0], i));
    sum_recv += args[0] * 2654435761u + len + (uint64_t)src;
}

static void on_seq(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    CHECK_EQ(m->args[2], next_am[m->src]++);
    check_payload(m->src, m->args, m->data, m->len);
    am_got++;
}

static void drain_queue(rq_ctx_t *ctx)
{
    rq_msg_t v;
    while (rq_peek(ctx, Q, &v) == 1) {
        CHECK_EQ(v.args[2], next_q[v.src]++);
        check_payload(v.src, v.args, v.data, v.len);
        q_got++;
        CHECK_EQ(rq_pop(ctx, Q), 1);
    }
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    long total = argc > 1 ? atol(argv[1]) : 200000;
    int me = rq_rank(ctx), n = rq_size(ctx);
    next_am = calloc((size_t)n, 8);
    next_q = calloc((size_t)n, 8);
    uint64_t *seq_am = calloc((size_t)n, 8), *seq_q = calloc((size_t)n, 8);
    uint64_t *to_am = calloc((size_t)n, 8), *to_q = calloc((size_t)n, 8);
    rq_handler_register(ctx, H_SEQ, on_seq, NULL, 0);
    rq_queue_open(ctx, Q);
    CHECK_EQ(rq_barrier(ctx), 0);

    uint64_t rnd = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1), sum_sent = 0, gseq = 0;
    unsigned char buf[512];
    for (long i = 0; i < total; i++) {
        uint64_t r = lcg(&rnd);
        int dst = (int)((r >> 33) % (uint64_t)n);
        size_t len = (r >> 20) % 5 == 0 ? (size_t)((r >> 8) % 300) : 0;
        int onq = (r >> 40) % 3 == 0;
        uint64_t a[3] = {gseq++, len, onq ? seq_q[dst]++ : seq_am[dst]++};
        for (size_t b = 0; b < len; b++)
            buf[b] = pattern_byte(me, a[0], b);
        sum_sent += a[0] * 2654435761u + len + (uint64_t)me;
        if (onq) {
            to_q[dst]++;
            CHECK_EQ(rq_enqueue(ctx, dst, Q, 1, a, 3, buf, len, 0), 0);
        } else {
            to_am[dst]++;
            CHECK_EQ(rq_request(ctx, dst, H_SEQ, a, 3, buf, len, 0), 0);
        }
        if ((i & 63) == 0) {
            rq_poll(ctx);
            drain_queue(ctx);
        }
    }
    /* How many each rank must receive: sum over senders. */
    uint64_t *want_am = calloc((size_t)n, 8), *want_q = calloc((size_t)n, 8);
    CHECK_EQ(rq_allreduce(ctx, to_am, want_am, (size_t)n, RQ_UINT64, RQ_SUM), 0);
    CHECK_EQ(rq_allreduce(ctx, to_q, want_q, (size_t)n, RQ_UINT64, RQ_SUM), 0);
    while (am_got < want_am[me] || q_got < want_q[me]) {
        rq_poll(ctx);
        drain_queue(ctx);
    }
    CHECK_EQ(am_got, want_am[me]);
    CHECK_EQ(q_got, want_q[me]);
    uint64_t sums[2] = {sum_sent, sum_recv}, tot[2];
    CHECK_EQ(rq_allreduce(ctx, sums, tot, 2, RQ_UINT64, RQ_SUM), 0);
    CHECK_EQ(tot[0], tot[1]);
    rq_stats_t st;
    rq_stats(ctx, &st);
    CHECK_EQ(st.rejected, 0);
    /* RQ_BUFFER_ALWAYS=1: nothing is delivered in place. */
    const char *ba = getenv("RQ_BUFFER_ALWAYS");
    if (ba != NULL && strcmp(ba, "1") == 0) {
        CHECK_EQ(st.direct, 0);
        CHECK(st.buffered > 0);
    }
    CHECK_EQ(rq_finalize(ctx), 0);
    free(next_am);
    free(next_q);
    free(seq_am);
    free(seq_q);
    free(to_am);
    free(to_q);
    free(want_am);
    free(want_q);
    if (me == 0)
        printf("order_soak: %d ranks x %ld packets: ok (direct %llu, buffered %llu on rank 0)\n", n,
               total, (unsigned long long)st.direct, (unsigned long long)st.buffered);
    return 0;
}
