/* async_bulk - non-blocking transfers (rq_put_nb, rq_get_nb,
 * rq_request_long_nb) with completion counters, on any number of ranks.
 *   many    1500 puts and 1200 gets outstanding at once per rank (more
 *           than any internal limit: the 1024 global-address slots, a
 *           ring's slots), each with its own counter, waited for in
 *           reverse order, plus one of 8 MiB; sizes 1 .. 9000 bytes;
 *   reuse   the initiator scribbles every source buffer once its counter
 *           moved: the target must still hold the original bytes;
 *   long    long requests to every rank (self included) of 0, 1, 64 KiB
 *           - 1, 64 KiB, 64 KiB + 1 and 1 MiB, checksums in the args; each
 *           64 KiB + 1 handler answers with a long request of its own
 *           (from a handler);
 *   alone   on one node: a 16 MiB put and an 8 MiB long request complete,
 *           and the long request's handler runs at the target, while the
 *           initiator spins on its counter without calling librq;
 *   sync    300 puts without counters, then rq_sync;
 *   final   puts and long requests still pending at rq_finalize complete
 *           within it: counters moved and handlers ran at the targets.
 *   intr    (argument "intr") every rank has interrupts on for every
 *           packet: long requests go through the copy thread and the
 *           progress thread's announcement, handlers run on the progress
 *           thread while the application computes; the waiting rank of
 *           "alone" spins in atomicity sections (no handler runs inside
 *           one) between its looks at the counter.
 * Run under any RQ_ASYNC_MIN (0: everything through the copy engine). */
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "check.h"

#define MiB (1024u * 1024u)
enum { H_LONG = 1, H_ECHOED = 2, H_FINAL = 3 };
enum { N_PUT = 1500, N_GET = 1200, N_SYNC = 300, N_FINAL_PUT = 20, N_FINAL_LONG = 10 };
/* segment layout (64 MiB) */
#define OFF_PUT   (0u)          /* puts from the previous rank (16 MiB) */
#define OFF_LONG  (16u * MiB)   /* long requests: 2 MiB per source */
#define OFF_ECHO  (32u * MiB)   /* echoes: 128 KiB per answering rank */
#define OFF_BIG   (34u * MiB)   /* the 8 MiB long request "alone" */
#define OFF_GET   (48u * MiB)   /* what the next rank gets (16 MiB) */

static const size_t long_sizes[] = {0, 1, 65535, 65536, 65537, 1u * MiB};
#define N_LONG_SIZES (sizeof long_sizes / sizeof long_sizes[0])
static uint64_t got_long, echoed, echo_done, final_got;
static int me, n;
static unsigned char *echo_buf; /* one 64 KiB + 1 source per answered rank */


/* The first differing byte, reported: 0 if equal. */
static int differs(const unsigned char *a, const unsigned char *b, size_t len, const char *what)
{
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i]) {
            fprintf(stderr, "async_bulk: rank %d: %s: byte %zu of %zu is %#x, want %#x\n", me,
                    what, i, len, a[i], b[i]);
            return 1;
        }
    return 0;
}

static size_t op_size(int i) { return (size_t)((i * 37) % 9000) + 1; }

/* args: len, checksum */
static void on_long(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    CHECK_EQ(m->nargs, 2);
    CHECK_EQ(m->len, m->args[0]);
    CHECK(m->len == 0 || m->data != NULL);
    CHECK_EQ(payload_fnv(m->data, m->len), m->args[1]);
    __atomic_fetch_add(&got_long, 1, __ATOMIC_RELEASE); /* read while the progress thread runs us */
    if (m->len == 65537) { /* answer from the handler, non-blocking */
        /* Its own buffer: it belongs to the transfer until echo_done moves. */
        unsigned char *echo = echo_buf + (size_t)m->src * 65537u;
        memcpy(echo, m->data, 65537);
        uint64_t args[2] = {65537, payload_fnv(echo, 65537)};
        CHECK_EQ(rq_request_long_nb(c, m->src, H_ECHOED, args, 2, echo, 65537,
                                    OFF_ECHO + (uint64_t)me * 131072u, &echo_done, 0), 0);
    }
}

static void on_echoed(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->len, 65537);
    CHECK_EQ(payload_fnv(m->data, m->len), m->args[1]);
    echoed++;
}

static void on_final(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(payload_fnv(m->data, m->len), m->args[1]);
    final_got++;
}

/* Spin on *w without calling librq, for at most 30 s. */
static int reached_alone(const uint64_t *w, uint64_t v)
{
    for (long i = 0; i < 3000000000L; i++)
        if (__atomic_load_n(w, __ATOMIC_ACQUIRE) >= v)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    const int intr = argc > 1 && strcmp(argv[1], "intr") == 0;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    if (intr)
        CHECK_EQ(rq_interrupts(ctx, RQ_INTR_ALL), 0);
    me = rq_rank(ctx);
    n = rq_size(ctx);
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    unsigned char *seg;
    size_t seg_bytes;
    CHECK_EQ(rq_segment(ctx, (void **)&seg, &seg_bytes), 0);
    CHECK(seg_bytes >= 64u * MiB);
    CHECK_EQ(rq_handler_register(ctx, H_LONG, on_long, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_ECHOED, on_echoed, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_FINAL, on_final, NULL, 0), 0);
    unsigned char *src = malloc(16u * MiB), *dst = malloc(16u * MiB);
    uint64_t *done = calloc(N_PUT + N_GET + 2, sizeof *done);
    echo_buf = malloc((size_t)n * 65537u);
    CHECK(src != NULL && dst != NULL && done != NULL && echo_buf != NULL);

    /* many: puts to the next rank, all outstanding, reverse-order waits */
    pattern_fill(src, 16u * MiB, me, 1);
    pattern_fill(seg + OFF_GET, 16u * MiB, me, 2);
    CHECK_EQ(rq_barrier(ctx), 0);
    uint64_t off = 0;
    for (int i = 0; i < N_PUT; i++) {
        CHECK_EQ(rq_put_nb(ctx, next, OFF_PUT + off, src + off, op_size(i), &done[i], 0), 0);
        off += op_size(i);
    }
    const uint64_t big_at = 8u * MiB;
    CHECK(off <= big_at);
    CHECK_EQ(rq_put_nb(ctx, next, OFF_PUT + big_at, src + big_at, 8u * MiB, &done[N_PUT], 0), 0);
    for (int i = N_PUT; i >= 0; i--)
        CHECK_EQ(rq_wait_until(ctx, &done[i], 1), 0);
    for (int i = 0; i <= N_PUT; i++)
        CHECK_EQ(done[i], 1); /* exactly once */
    memset(src, 0xA5, 16u * MiB); /* reuse: the counters moved */
    /* gets from the next rank, all outstanding */
    off = 0;
    uint64_t *gdone = done + N_PUT + 1;
    for (int i = 0; i < N_GET; i++) {
        CHECK_EQ(rq_get_nb(ctx, dst + off, next, OFF_GET + off, op_size(i), &gdone[i], 0), 0);
        off += op_size(i);
    }
    CHECK_EQ(rq_get_nb(ctx, dst + big_at, next, OFF_GET + big_at, 8u * MiB, &gdone[N_GET], 0), 0);
    for (int i = N_GET; i >= 0; i--)
        CHECK_EQ(rq_wait_until(ctx, &gdone[i], 1), 0);
    for (int i = 0; i <= N_GET; i++)
        CHECK_EQ(gdone[i], 1);
    unsigned char *want = malloc(16u * MiB);
    CHECK(want != NULL);
    pattern_fill(want, 16u * MiB, next, 2);
    CHECK(!differs(dst, want, off, "check 1"));
    CHECK(!differs(dst + big_at, want + big_at, 8u * MiB, "check 2"));
    CHECK_EQ(rq_barrier(ctx), 0);
    /* what the previous rank put here */
    pattern_fill(want, 16u * MiB, prev, 1);
    off = 0;
    for (int i = 0; i < N_PUT; i++)
        off += op_size(i);
    CHECK(!differs(seg + OFF_PUT, want, off, "check 3"));
    CHECK(!differs(seg + OFF_PUT + big_at, want + big_at, 8u * MiB, "check 4"));

    /* long: to every rank, checksums; the 64 KiB + 1 ones are echoed */
    CHECK_EQ(rq_barrier(ctx), 0);
    pattern_fill(src, 16u * MiB, me, 3);
    uint64_t long_done = 0, nlong = 0;
    for (int t = 0; t < n; t++) {
        uint64_t at = OFF_LONG + (uint64_t)me * (2u * MiB), o = 0;
        for (size_t k = 0; k < N_LONG_SIZES; k++) {
            size_t len = long_sizes[k];
            uint64_t args[2] = {len, payload_fnv(src + o, len)};
            CHECK_EQ(rq_request_long_nb(ctx, t, H_LONG, args, 2, src + o, len, at + o,
                                        &long_done, 0), 0);
            o += len;
            nlong++;
        }
    }
    CHECK_EQ(rq_wait_until(ctx, &long_done, nlong), 0);
    memset(src, 0x5A, 16u * MiB);
    CHECK_EQ(rq_wait_until(ctx, &got_long, (uint64_t)n * N_LONG_SIZES), 0);
    CHECK_EQ(rq_wait_until(ctx, &echoed, (uint64_t)n), 0);
    CHECK_EQ(rq_wait_until(ctx, &echo_done, (uint64_t)n), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(got_long, (uint64_t)n * N_LONG_SIZES);
    CHECK_EQ(echoed, (uint64_t)n);

    /* alone: the initiator does not call librq while its transfers finish
     * (one node: the copy thread and the progress thread do it all) */
    /* Ranks 0 and 1 on one node: rank 0 knows, everyone follows it. */
    int64_t same_node = n >= 2 && rq_segment_peer(ctx, 1) != NULL;
    CHECK_EQ(rq_broadcast(ctx, 0, &same_node, sizeof same_node), 0);
    if (same_node) {
        if (me == 0) {
            uint64_t d1 = 0, d2 = 0;
            pattern_fill(src, 16u * MiB, me, 4);
            CHECK_EQ(rq_put_nb(ctx, 1, OFF_PUT, src, 16u * MiB, &d1, 0), 0);
            CHECK(reached_alone(&d1, 1));
            uint64_t args[2] = {8u * MiB, payload_fnv(src, 8u * MiB)};
            CHECK_EQ(rq_request_long_nb(ctx, 1, H_LONG, args, 2, src, 8u * MiB, OFF_BIG, &d2, 0),
                     0);
            CHECK(reached_alone(&d2, 1));
        } else if (me == 1) {
            const uint64_t want_long = (uint64_t)n * N_LONG_SIZES + 1;
            if (intr) { /* the progress thread runs it, between our sections */
                for (long i = 0; __atomic_load_n(&got_long, __ATOMIC_ACQUIRE) < want_long; i++) {
                    CHECK(i < 3000000000L);
                    if ((i & 1023) == 0) {
                        CHECK_EQ(rq_atomic_begin(ctx), 0);
                        uint64_t before = __atomic_load_n(&got_long, __ATOMIC_ACQUIRE);
                        for (volatile int k = 0; k < 2000; k++) {
                        }
                        /* no handler ran inside the section */
                        CHECK_EQ(__atomic_load_n(&got_long, __ATOMIC_ACQUIRE), before);
                        CHECK_EQ(rq_atomic_end(ctx), 0);
                    }
                }
            }
            CHECK_EQ(rq_wait_until(ctx, &got_long, want_long), 0);
            pattern_fill(want, 16u * MiB, 0, 4);
            CHECK(!differs(seg + OFF_PUT, want, 16u * MiB, "check 5"));
        }
        CHECK_EQ(rq_barrier(ctx), 0);
    }

    /* sync: no counters, rq_sync completes them */
    pattern_fill(src, 16u * MiB, me, 5);
    off = 0;
    for (int i = 0; i < N_SYNC; i++) {
        CHECK_EQ(rq_put_nb(ctx, next, OFF_PUT + off, src + off, op_size(i) * 7, NULL, 0), 0);
        off += op_size(i) * 7;
    }
    CHECK(off <= 16u * MiB);
    CHECK_EQ(rq_sync(ctx), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    pattern_fill(want, 16u * MiB, prev, 5);
    CHECK(!differs(seg + OFF_PUT, want, off, "check 6"));
    CHECK_EQ(rq_test(ctx, &done[0], 1), 1);
    CHECK_EQ(rq_test(ctx, &done[0], 2), 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    /* final: pending at rq_finalize */
    pattern_fill(src, 16u * MiB, me, 6);
    uint64_t fin_done = 0;
    for (int i = 0; i < N_FINAL_PUT; i++)
        CHECK_EQ(rq_put_nb(ctx, next, OFF_PUT + (uint64_t)i * 512u * 1024u,
                           src + (size_t)i * 512u * 1024u, 512u * 1024u, &fin_done, 0), 0);
    for (int i = 0; i < N_FINAL_LONG; i++) {
        size_t len = 256u * 1024u, at = 12u * MiB + (size_t)i * len;
        uint64_t args[2] = {len, payload_fnv(src + at, len)};
        CHECK_EQ(rq_request_long_nb(ctx, next, H_FINAL, args, 2, src + at, len,
                                    OFF_LONG + (uint64_t)i * len, &fin_done, 0), 0);
    }
    CHECK_EQ(rq_finalize(ctx), 0);
    CHECK_EQ(fin_done, (uint64_t)(N_FINAL_PUT + N_FINAL_LONG));
    CHECK_EQ(final_got, (uint64_t)N_FINAL_LONG);
    printf("async_bulk: rank %d of %d: ok\n", me, n);
    free(src);
    free(dst);
    free(want);
    free(done);
    free(echo_buf);
    return 0;
}
