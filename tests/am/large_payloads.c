/* large_payloads - medium payloads above rq_medium_max(): staged (one
 * copy through the sender's staging area) or fragmented (larger than the
 * area, or sent from a pinned handler while the area is full), to every
 * rank (self included), on the AM queue and a named queue.
 *   sizes  0, 1, limit-1, limit, limit+1, 64 KiB, 1 MiB (and 64 MiB to the
 *          next rank, unless "small" is given);
 *   check  every payload's checksum (FNV-1a, carried in the args) and
 *          length, per-source FIFO order, nothing lost or duplicated;
 *   reuse  the sender overwrites its buffer as soon as rq_request returns
 *          (the documented moment): the receiver must still see the
 *          original bytes;
 *   storm  each handler of a large payload answers with a large payload
 *          (handler sends while the lane is pinned, staging full with a
 *          small RQ_BULK_BYTES), so every fallback path runs;
 *   queue  large payloads on a named queue, read with rq_peek (in place)
 *          and rq_pop;
 *   place  an RQ_HF_PLACE handler names where each large payload lands: a
 *          buffer of its own, its segment at an offset, first an invalid
 *          offset (RQ_ERANGE, counted, nothing written), or nowhere
 *          (discarded); completion by counter and by callback; payloads
 *          up to rq_medium_max() still arrive in place.
 * Run with any RQ_BULK_BYTES (0: always fragmented). */
#include <string.h>

#include <rq.h>

#include "check.h"

enum { H_BIG = 1, H_ECHO = 2, H_ECHOED = 3, H_PLACE = 4, QID = 5 };
enum { PL_BUF, PL_SEG, PL_BAD_SEG, PL_DROP, PL_NMODES };


static uint64_t got, next_seq[4096], echoed;

/* args: seq, len, checksum */
static void check_msg(const rq_msg_t *m)
{
    CHECK_EQ(m->nargs, 3);
    CHECK_EQ(m->len, m->args[1]);
    CHECK(m->len == 0 || m->data != NULL);
    CHECK_EQ(m->args[0], next_seq[m->src]); /* FIFO per source, no loss, no duplicate */
    next_seq[m->src]++;
    if (payload_fnv(m->data, m->len) != m->args[2]) {
        fprintf(stderr, "payload of %zu bytes from %d (seq %llu) corrupt\n", m->len, m->src,
                (unsigned long long)m->args[0]);
        exit(1);
    }
}

static void on_big(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    check_msg(m);
    got++;
}

/* Answer with the same payload, from inside the handler. */
static void on_echo(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    CHECK_EQ(payload_fnv(m->data, m->len), m->args[2]);
    CHECK_EQ(rq_reply(c, m, H_ECHOED, m->args, 3, m->data, m->len, 0), 0);
}

static void on_echoed(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->len, m->args[1]);
    CHECK_EQ(payload_fnv(m->data, m->len), m->args[2]);
    echoed++;
}

/* Placement: args = mode, len, checksum, segment offset. */
static volatile uint64_t placed_done;
static uint64_t place_cbs, place_seen, place_small, place_bad;
static unsigned char *place_buf[64];
static uint64_t place_sum[64], place_len[64];
static unsigned place_n;
static int place_own[64]; /* place_buf[i] was malloc'd (else: our segment) */
static rq_ctx_t *g_ctx;

static void on_placed(rq_ctx_t *c, void *arg, int status)
{
    CHECK(c == g_ctx);
    CHECK_EQ(status, 0);
    CHECK(arg == &place_cbs);
    place_cbs++;
}

static void on_place(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    place_seen++;
    if (m->len <= rq_medium_max(c)) { /* small: in place as usual */
        CHECK(m->len == 0 || m->data != NULL);
        CHECK_EQ(payload_fnv(m->data, m->len), m->args[2]);
        place_small++;
        return;
    }
    CHECK(m->data == NULL);
    CHECK_EQ(m->len, m->args[1]);
    void *seg;
    size_t segsz;
    rq_segment(c, &seg, &segsz);
    switch (m->args[0]) {
    case PL_BUF: {
        CHECK(place_n < 64);
        unsigned char *b = malloc(m->len);
        CHECK(b != NULL);
        place_own[place_n] = 1;
        place_buf[place_n] = b;
        place_sum[place_n] = m->args[2];
        place_len[place_n++] = m->len;
        CHECK_EQ(rq_place(c, m, b, &placed_done, on_placed, &place_cbs), 0);
        CHECK_EQ(rq_place(c, m, b, NULL, NULL, NULL), RQ_EINVAL); /* once only */
        break;
    }
    case PL_BAD_SEG:
        CHECK_EQ(rq_place_segment(c, m, segsz - m->len + 1, NULL, NULL, NULL), RQ_ERANGE);
        CHECK_EQ(rq_place_segment(c, m, UINT64_MAX - 7, NULL, NULL, NULL), RQ_ERANGE);
        place_bad += 2;
        /* then a valid offset */
        __attribute__((fallthrough));
    case PL_SEG:
        CHECK_EQ(rq_place_segment(c, m, m->args[3], &placed_done, NULL, NULL), 0);
        /* checked once the counter says it is there (over UCX it is
         * pulled after rq_place returns) */
        CHECK(place_n < 64);
        place_own[place_n] = 0;
        place_buf[place_n] = (unsigned char *)seg + m->args[3];
        place_sum[place_n] = m->args[2];
        place_len[place_n++] = m->len;
        break;
    case PL_DROP:
        break; /* discarded */
    }
}

int main(int argc, char **argv)
{
    int small = argc > 1 && strcmp(argv[1], "small") == 0;
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    int me = rq_rank(ctx), n = rq_size(ctx);
    size_t mm = rq_medium_max(ctx);
    rq_handler_register(ctx, H_BIG, on_big, NULL, 0);
    rq_handler_register(ctx, H_ECHO, on_echo, NULL, 0);
    rq_handler_register(ctx, H_ECHOED, on_echoed, NULL, 0);
    rq_handler_register(ctx, H_PLACE, on_place, NULL, RQ_HF_PLACE);
    g_ctx = ctx;
    CHECK_EQ(rq_queue_open(ctx, QID), 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    const size_t big = 64u << 20;
    const size_t sizes[] = {0, 1, mm - 1, mm, mm + 1, 64u << 10, 1u << 20};
    const size_t nsz = sizeof sizes / sizeof sizes[0];
    unsigned char *buf = malloc(small ? 1u << 20 : big);
    CHECK(buf != NULL);
    uint64_t seq[4096] = {0}, expect = 0;

    /* 1. every size to every rank; the buffer is scribbled on at once */
    for (size_t s = 0; s < nsz; s++)
        for (int k = 0; k < n; k++) {
            int dst = (me + k) % n;
            pattern_fill(buf, sizes[s], me, seq[dst]);
            uint64_t a[3] = {seq[dst]++, sizes[s], payload_fnv(buf, sizes[s])};
            CHECK_EQ(rq_request(ctx, dst, H_BIG, a, 3, buf, sizes[s], 0), 0);
            memset(buf, 0xee, sizes[s]); /* reuse at the documented moment */
            rq_poll(ctx);
        }
    expect += (uint64_t)n * nsz;
    if (!small) {
        int dst = (me + 1) % n;
        pattern_fill(buf, big, me, seq[dst]);
        uint64_t a[3] = {seq[dst]++, big, payload_fnv(buf, big)};
        CHECK_EQ(rq_request(ctx, dst, H_BIG, a, 3, buf, big, 0), 0);
        memset(buf, 0xee, big);
        expect++;
    }
    CHECK_EQ(rq_wait_until(ctx, &got, expect), 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    /* 2. storm: large payloads echoed from handlers, many in flight */
    const int rounds = small ? 8 : 16;
    for (int r = 0; r < rounds; r++)
        for (int k = 1; k <= n; k++) {
            size_t len = mm + 1 + (size_t)(r * 4099 + k * 517) % (3 * mm);
            pattern_fill(buf, len, me, (uint64_t)r);
            uint64_t a[3] = {0, len, payload_fnv(buf, len)};
            CHECK_EQ(rq_request(ctx, (me + k) % n, H_ECHO, a, 3, buf, len, 0), 0);
        }
    CHECK_EQ(rq_wait_until(ctx, &echoed, (uint64_t)rounds * n), 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    /* 3. named queue: rank r sends to r + 1; read in place, then popped */
    int to = (me + 1) % n, from = (me + n - 1) % n;
    const size_t qsizes[] = {mm + 1, 64u << 10, 1, mm};
    uint64_t qseq = 0;
    for (int i = 0; i < 4; i++) {
        pattern_fill(buf, qsizes[i], me, qseq);
        uint64_t a[3] = {qseq++, qsizes[i], payload_fnv(buf, qsizes[i])};
        CHECK_EQ(rq_enqueue(ctx, to, QID, 7, a, 3, buf, qsizes[i], 0), 0);
    }
    for (int i = 0; i < 4; i++) {
        rq_msg_t v;
        int rc;
        while ((rc = rq_peek(ctx, QID, &v)) == 0)
            rq_poll(ctx);
        CHECK_EQ(rc, 1);
        CHECK_EQ(v.src, from);
        CHECK_EQ(v.args[0], (uint64_t)i);
        CHECK_EQ(v.len, qsizes[i]);
        CHECK_EQ(payload_fnv(v.data, v.len), v.args[2]);
        CHECK_EQ(rq_pop(ctx, QID), 1);
    }

    CHECK_EQ(rq_barrier(ctx), 0);

    /* 4. receiver-placed: rank r sends to r + 1 */
    rq_msg_t fake = {0};
    CHECK_EQ(rq_place(ctx, &fake, buf, NULL, NULL, NULL), RQ_EINVAL); /* not in its handler */
    const size_t psizes[] = {mm + 1, 64u << 10, 1u << 20, mm, 1};
    uint64_t expect_done = 0, expect_cbs = 0, expect_small = 0, expect_seen = 0;
    uint64_t seg_off = 4096;
    for (int mode = 0; mode < PL_NMODES; mode++)
        for (size_t s = 0; s < sizeof psizes / sizeof psizes[0]; s++) {
            size_t len = psizes[s];
            pattern_fill(buf, len, me, (uint64_t)mode * 16 + s);
            uint64_t a[4] = {(uint64_t)mode, len, payload_fnv(buf, len), seg_off};
            CHECK_EQ(rq_request(ctx, to, H_PLACE, a, 4, buf, len, 0), 0);
            seg_off += (len + 4095) & ~(size_t)4095;
            expect_seen++;
            if (len <= mm)
                expect_small++;
            else if (mode != PL_DROP)
                expect_done++;
            if (len > mm && mode == PL_BUF)
                expect_cbs++;
        }
    if (!small) {
        pattern_fill(buf, big, me, 999);
        uint64_t a[4] = {PL_BUF, big, payload_fnv(buf, big), 0};
        CHECK_EQ(rq_request(ctx, to, H_PLACE, a, 4, buf, big, 0), 0);
        expect_seen++;
        expect_done++;
        expect_cbs++;
    }
    CHECK_EQ(rq_wait_until(ctx, &place_seen, expect_seen), 0);
    CHECK_EQ(rq_wait_until(ctx, &placed_done, expect_done), 0);
    CHECK_EQ(rq_wait_until(ctx, &place_cbs, expect_cbs), 0);
    CHECK_EQ(place_small, expect_small);
    for (unsigned i = 0; i < place_n; i++) {
        CHECK_EQ(payload_fnv(place_buf[i], place_len[i]), place_sum[i]);
        if (place_own[i])
            free(place_buf[i]);
    }

    rq_stats_t st;
    rq_stats(ctx, &st);
    CHECK_EQ(st.rejected, place_bad); /* the invalid offsets, nothing else */
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("large_payloads: %d ranks, medium max %zu: ok\n", n, mm);
    free(buf);
    return 0;
}
