/* am_sizes - every payload size boundary, rank to every rank (self too):
 * 0, 1, around one slot, around rq_medium_max() (in place vs fragmented),
 * several MiB; long transfers up to 64 MiB.  Handlers check length, args,
 * every byte and per-source order. */
#include <string.h>

#include <rq.h>

#include "check.h"

enum { H_MED = 1, H_LONG = 2 };
static uint64_t got, next_seq[4096], long_got;

static void on_med(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    CHECK_EQ(m->nargs, 3);
    /* FIFO per source: the sender's sequence is global, so it only grows;
     * the total count at the end proves nothing was lost. */
    CHECK(m->args[0] >= next_seq[m->src]);
    next_seq[m->src] = m->args[0] + 1;
    CHECK_EQ(m->len, m->args[1]);
    const unsigned char *d = m->data;
    for (size_t i = 0; i < m->len; i++)
        if (d[i] != pattern_byte(m->src, m->args[0], i)) {
            fprintf(stderr, "byte %zu of %zu from %d wrong\n", i, m->len, m->src);
            exit(1);
        }
    got++;
}

static void on_long(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)arg;
    void *base;
    size_t size;
    rq_segment(ctx, &base, &size);
    CHECK((char *)m->data == (char *)base + m->args[0]);
    CHECK_EQ(m->len, m->args[1]);
    const unsigned char *d = m->data;
    for (size_t i = 0; i < m->len; i += (m->len > 4096 ? 509 : 1))
        CHECK(d[i] == pattern_byte(m->src, m->args[1], i));
    if (m->len)
        CHECK(d[m->len - 1] == pattern_byte(m->src, m->args[1], m->len - 1));
    long_got++;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    int me = rq_rank(ctx), n = rq_size(ctx);
    size_t mm = rq_medium_max(ctx);
    rq_handler_register(ctx, H_MED, on_med, NULL, 0);
    rq_handler_register(ctx, H_LONG, on_long, NULL, 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    /* 3 args: header 32 + args 24 = 56, so 8 bytes fill the first slot. */
    size_t sizes[] = {0, 1, 7, 8, 9, 71, 72, 73, mm - 1, mm, mm + 1, 2 * mm + 3, 3u << 20};
    const size_t nsz = sizeof sizes / sizeof sizes[0];
    unsigned char *buf = malloc(3u << 20);
    CHECK(buf != NULL);
    uint64_t seq = 0;
    for (size_t s = 0; s < nsz; s++) {
        for (int k = 0; k < n; k++) {
            int dst = (me + k) % n;
            for (size_t i = 0; i < sizes[s]; i++)
                buf[i] = pattern_byte(me, seq, i);
            uint64_t a[3] = {seq, sizes[s], 0};
            CHECK_EQ(rq_request(ctx, dst, H_MED, a, 3, buf, sizes[s], 0), 0);
            seq++;
        }
        rq_poll(ctx);
    }
    CHECK_EQ(rq_wait_until(ctx, &got, (uint64_t)n * nsz), 0);

    /* Long: rank r writes into rank r+1's segment. */
    void *base;
    size_t segsz;
    rq_segment(ctx, &base, &segsz);
    const size_t lsizes[] = {0, 1, 4096, 1u << 20, 64u << 20};
    unsigned char *lb = malloc(64u << 20);
    CHECK(lb != NULL);
    uint64_t expect_long = 0;
    for (size_t s = 0; s < 5; s++) {
        size_t len = lsizes[s];
        if (len > segsz)
            continue;
        uint64_t off = (segsz - len) & ~(uint64_t)7;
        for (size_t i = 0; i < len; i++)
            lb[i] = pattern_byte(me, len, i);
        uint64_t a[2] = {off, len};
        CHECK_EQ(rq_request_long(ctx, (me + 1) % n, H_LONG, a, 2, lb, len, off, 0), 0);
        /* the next transfer may overwrite: wait for the target's handler */
        expect_long++;
        CHECK_EQ(rq_wait_until(ctx, &long_got, expect_long), 0);
        CHECK_EQ(rq_barrier(ctx), 0);
    }
    rq_stats_t st;
    rq_stats(ctx, &st);
    CHECK(st.rejected == 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("am_sizes: %d ranks, medium max %zu: ok\n", n, mm);
    free(buf);
    free(lb);
    return 0;
}
