/* promote.c - handlers that become threads (rq_handler_promote) from a
 * user's side.  promote MODE [K]:
 *   basic  every rank sends K requests to every rank (itself included),
 *          payloads of varying length (up to a staged one above
 *          rq_medium_max()); each handler promotes itself; the part, on a
 *          pool thread, checks its copied args and payload, reads a word
 *          of the sender's segment (rq_read), adds to a counter there
 *          (rq_amo), waits with rq_wait_until for a gate this rank opens
 *          only once all its parts have arrived, then replies.  Checked:
 *          every reply, every counter, the pool's threads within
 *          RQ_PROMOTE_THREADS (argv[3] when given), rq_stats().promoted.
 *          Before any of it, the error paths: outside a handler, NULL
 *          arguments, a context not yet thread-safe, RQ_HF_PROMOTE
 *          registered from a handler then, rq_finalize and a second
 *          promotion from a pool thread.
 *   pdq    the same requests to a 2-thread PDQ (keys = sequence % 7):
 *          its handlers promote, the parts read and add as above.
 *   intr   basic with interrupts on (RQ_INTR_ALL) and the main thread
 *          waiting outside librq: the progress thread runs the handlers
 *          that promote (and the parts' own polls do).
 *   die    rank 0 is the victim: every other rank's parts wait on rank
 *          0 (a gate it never opens, then an rq_read of it); rank 0 kills
 *          itself once they wait; each survivor's parts see RQ_EPEER, its
 *          rq_finalize returns RQ_EPEER and it prints "promote die: ok".
 *          Run with RQ_KILL_GRACE_MS large (survivors live to check). */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rq.h"

enum { H_PLAIN = 1, H_WORK = 2, H_REPLY = 3, H_LATE = 4, QID = 5 };
/* Segment words: [0] the rank's own word read by others, [1] the amo
 * counter, [2] the gate parts wait for. */
enum { OFF_WORD = 0, OFF_COUNT = 8, OFF_GATE = 16 };

static rq_ctx_t *ctx;
static int me, np;
static uint64_t *seg;
static volatile uint64_t replies, arrived, parts_done;
static _Atomic uint64_t part_errors, peer_errors;
static int mode_pdq, mode_die, mode_intr;
static size_t big;

static size_t len_of(uint64_t seq) { return seq % 5 == 4 ? big : (size_t)(seq * 37 % 1000); }

static void fill(unsigned char *b, size_t len, int src, uint64_t seq)
{
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)(src * 31 + seq * 7 + i);
}

static int same(const unsigned char *b, size_t len, int src, uint64_t seq)
{
    for (size_t i = 0; i < len; i++)
        if (b[i] != (unsigned char)(src * 31 + seq * 7 + i))
            return 0;
    return 1;
}

/* The promoted part: on a pool thread, outside any handler. */
static void part(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)arg;
    const uint64_t seq = m->args[0];
    int ok = m->nargs == 2 && m->args[1] == (uint64_t)m->src * 1000003u + seq &&
             m->len == len_of(seq) && (m->len == 0 || same(m->data, m->len, m->src, seq));
    /* A second promotion here is refused: this is not a handler. */
    ok = ok && rq_handler_promote(c, m, part, NULL) == RQ_EPERM;
    ok = ok && rq_finalize(c) == RQ_EPERM;
    /* Wait for this rank's gate (a word of its own segment that the main
     * thread raises once every part has arrived): a wait no barrier
     * stands behind. */
    int target = mode_die ? 0 : me;
    int rc = rq_wait_until(c, &seg[OFF_GATE / 8], 1);
    if (mode_die) {
        /* Rank 0 never opens our gate: it dies, and every wait says so. */
        uint64_t w = 0;
        int r2 = rq_read(c, &w, target, OFF_WORD, sizeof w);
        if (rc == RQ_EPEER && (r2 == RQ_EPEER || r2 == 0))
            atomic_fetch_add(&peer_errors, 1);
        else
            atomic_fetch_add(&part_errors, 1);
        __atomic_fetch_add(&parts_done, 1, __ATOMIC_RELEASE);
        return;
    }
    uint64_t w = 0, old = 0;
    ok = ok && rc == 0 && rq_read(c, &w, m->src, OFF_WORD, sizeof w) == 0 &&
         w == 0xabc000u + (uint64_t)m->src;
    ok = ok && rq_amo(c, m->src, OFF_COUNT, RQ_AMO_FADD, 1, 0, &old) == 0;
    uint64_t back[2] = {seq, ok};
    if (rq_reply(c, m, H_REPLY, back, 2, NULL, 0, 0) != 0 || !ok)
        atomic_fetch_add(&part_errors, 1);
    __atomic_fetch_add(&parts_done, 1, __ATOMIC_RELEASE);
}

static void on_work(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)arg;
    __atomic_fetch_add(&arrived, 1, __ATOMIC_RELEASE);
    if (rq_handler_promote(c, m, part, NULL) != 0)
        atomic_fetch_add(&part_errors, 1);
}

static void on_reply(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)c;
    (void)arg;
    if (m->nargs != 2 || m->args[1] != 1)
        atomic_fetch_add(&part_errors, 1);
    __atomic_fetch_add(&replies, 1, __ATOMIC_RELEASE);
}

/* Before any context is thread-safe: a handler's promotion and an
 * RQ_HF_PROMOTE registration there are refused. */
static volatile uint64_t plain_checked;
static void on_plain(rq_ctx_t *c, const rq_msg_t *m, void *arg)
{
    (void)arg;
    CHECK_EQ(rq_handler_promote(c, m, part, NULL), RQ_EPERM);
    CHECK_EQ(rq_handler_register(c, H_LATE, on_plain, NULL, RQ_HF_PROMOTE), RQ_EPERM);
    CHECK_EQ(rq_handler_promote(c, m, NULL, NULL), RQ_EINVAL);
    CHECK_EQ(rq_handler_promote(c, NULL, part, NULL), RQ_EINVAL);
    plain_checked++;
}

static void errors_first(void)
{
    rq_msg_t fake = {0};
    CHECK_EQ(rq_handler_promote(ctx, &fake, part, NULL), RQ_EPERM); /* not in a handler */
    CHECK_EQ(rq_handler_promote(NULL, &fake, part, NULL), RQ_EINVAL);
    CHECK_EQ(rq_handler_register(ctx, H_PLAIN, on_plain, NULL, 0x80u), RQ_EINVAL);
    CHECK_EQ(rq_handler_register(ctx, H_PLAIN, on_plain, NULL, 0), 0);
    CHECK_EQ(rq_request(ctx, me, H_PLAIN, NULL, 0, NULL, 0, 0), 0);
    CHECK_EQ(rq_wait_until(ctx, &plain_checked, 1), 0);
}

static void on_pdq(rq_ctx_t *c, const rq_msg_t *m, void *arg) { on_work(c, m, arg); }

int main(int argc, char **argv)
{
    signal(SIGTERM, SIG_IGN); /* die: survivors live to check */
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    me = rq_rank(ctx);
    np = rq_size(ctx);
    const char *mode = argc > 1 ? argv[1] : "basic";
    mode_pdq = strcmp(mode, "pdq") == 0;
    mode_die = strcmp(mode, "die") == 0;
    mode_intr = strcmp(mode, "intr") == 0;
    uint64_t k = argc > 2 ? strtoull(argv[2], NULL, 10) : 200;
    uint64_t limit = argc > 3 ? strtoull(argv[3], NULL, 10) : 32;
    big = rq_medium_max(ctx) + 100; /* staged: copied out of the staging area */
    size_t seg_size;
    void *base;
    CHECK_EQ(rq_segment(ctx, &base, &seg_size), 0);
    seg = base;
    seg[OFF_WORD / 8] = 0xabc000u + (uint64_t)me;
    seg[OFF_COUNT / 8] = 0;
    seg[OFF_GATE / 8] = 0;

    errors_first();
    rq_pdq_t *q = NULL;
    if (mode_pdq) {
        rq_pdq_attr_t attr = {.mode = RQ_PDQ_DEDICATED, .threads = 2};
        CHECK_EQ(rq_handler_register(ctx, H_WORK, on_pdq, NULL, 0), 0);
        CHECK_EQ(rq_pdq_open(ctx, QID, &attr, &q), 0);
    } else {
        CHECK_EQ(rq_handler_register(ctx, H_WORK, on_work, NULL, RQ_HF_PROMOTE), 0);
    }
    CHECK_EQ(rq_handler_register(ctx, H_REPLY, on_reply, NULL, 0), 0);
    if (mode_intr)
        CHECK_EQ(rq_interrupts(ctx, RQ_INTR_ALL), 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    unsigned char *out = malloc(big > 1000 ? big : 1000); /* len_of's most */
    uint64_t sent = 0;
    if (mode_die) {
        if (me != 0) /* parts that will wait on rank 0 */
            for (uint64_t s = 0; s < k; s++) {
                uint64_t a[2] = {s, (uint64_t)me * 1000003u + s};
                fill(out, len_of(s), me, s);
                CHECK_EQ(rq_request(ctx, me, H_WORK, a, 2, out, len_of(s), 0), 0);
            }
        if (me != 0)
            CHECK_EQ(rq_wait_until(ctx, &arrived, k), 0);
        CHECK_EQ(rq_barrier(ctx), 0);
        if (me == 0) {
            usleep(200000); /* the survivors' parts wait now */
            kill(getpid(), SIGKILL);
        }
        /* Every part's wait ends with RQ_EPEER; the finalize says so too. */
        while (__atomic_load_n(&parts_done, __ATOMIC_ACQUIRE) < k)
            (void)rq_poll(ctx);
        CHECK_EQ(atomic_load(&part_errors), 0);
        CHECK_EQ(atomic_load(&peer_errors), k);
        CHECK_EQ(rq_finalize(ctx), RQ_EPEER);
        free(out);
        printf("promote die: ok (rank %d: %llu parts saw RQ_EPEER)\n", me,
               (unsigned long long)k);
        fflush(stdout);
        return 0;
    }
    for (uint64_t s = 0; s < k; s++)
        for (int d = 0; d < np; d++) {
            int to = (me + d) % np;
            uint64_t a[2] = {s, (uint64_t)me * 1000003u + s};
            fill(out, len_of(s), me, s);
            if (mode_pdq)
                CHECK_EQ(rq_pdq_enqueue(ctx, to, QID, s % 7, H_WORK, a, 2, out, len_of(s), 0), 0);
            else
                CHECK_EQ(rq_request(ctx, to, H_WORK, a, 2, out, len_of(s), 0), 0);
            sent++;
        }
    /* Every part addressed to this rank has arrived (and waits at the
     * gate, or queues for a thread): open it.  With interrupts on, wait
     * outside librq: the progress thread runs the handlers. */
    if (mode_intr)
        while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < k * (uint64_t)np)
            sched_yield();
    CHECK_EQ(rq_wait_until(ctx, &arrived, k * (uint64_t)np), 0);
    __atomic_store_n(&seg[OFF_GATE / 8], 1, __ATOMIC_RELEASE);
    if (mode_intr)
        while (__atomic_load_n(&replies, __ATOMIC_ACQUIRE) < sent)
            sched_yield();
    CHECK_EQ(rq_wait_until(ctx, &replies, sent), 0);
    CHECK_EQ(rq_wait_until(ctx, &parts_done, k * (uint64_t)np), 0);
    CHECK_EQ(atomic_load(&part_errors), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(__atomic_load_n(&seg[OFF_COUNT / 8], __ATOMIC_ACQUIRE), k * (uint64_t)np);
    rq_stats_t st;
    CHECK_EQ(rq_stats(ctx, &st), 0);
    CHECK_EQ(st.promoted, k * (uint64_t)np);
    CHECK(st.promote_threads >= 1 && st.promote_threads <= limit);
    if (mode_intr) /* the progress thread ran handlers: some promoted there */
        CHECK(st.interrupts > 0);
    if (q != NULL)
        CHECK_EQ(rq_pdq_close(q), 0);
    free(out);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("promote %s: ok (%d ranks, %llu parts each, %llu pool threads on rank 0)\n", mode,
               np, (unsigned long long)(k * (uint64_t)np), (unsigned long long)st.promote_threads);
    return 0;
}
