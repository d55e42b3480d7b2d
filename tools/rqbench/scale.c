/* scale.c - rqbench scale: fine-grain traffic from every rank to every
 * rank, and from every rank to one, at the job's rank count; started
 * alone, one job per rank count from 2 up to the CPUs (and 3 and 4 beyond
 * them, marked oversubscribed), the rows merged with the rank count as
 * their parameter (issue 36).
 *
 * All-to-all shapes: each rank issues M operations, the i-th to rank
 * me + 1 + i mod (n - 1) (every rank sends and receives the same number),
 * then waits for completion:
 *   request/k   a short rq_request (one argument; the handler counts it),
 *               rq_poll after every k sends (k = 1, 8, 64), then polling
 *               until its own M arrived; also the fraction of the received
 *               packets that went through the virtual buffer
 *   enqueue/k   rq_enqueue, the queue drained in place (rq_peek_n /
 *               rq_pop_n) after every k sends, then until M arrived
 *   put, store, get  8 bytes, then rq_sync (store: rq_all_store_sync)
 *   amo         fetch-and-add, blocking (a round trip each)
 * Many-to-one: every rank but 0 sends M short requests (or 8-byte
 * stores) to rank 0, which polls (rq_store_sync); the whole job's rate.
 * The limit, measured in the same job: the all-to-all request shape on
 * raw rings with no librq code, one ring of 64-byte slots per (source,
 * destination) pair in the destination's segment, each rank polling its
 * own rings after every k sends.
 * Rates in millions of operations per second per rank (many-to-one: for
 * the job), the mean over the ranks of M / the rank's time. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "driver.h"

enum { H_COUNT = 40, Q_SCALE = 7 };
#define RAW_SLOTS 512u /* per raw ring: 32 KiB, a lane's worth at the default 256 KiB / 8 */

static volatile uint64_t got;     /* requests this rank's handler counted */
static uint64_t got_due;
static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    got++;
}

enum op { OP_REQUEST, OP_ENQUEUE, OP_PUT, OP_STORE, OP_GET, OP_AMO, OP_RAW };

struct scale_arg {
    enum op  op;
    unsigned k;      /* receive poll every k sends (request, enqueue, raw) */
    uint64_t m;      /* operations per rank */
    int      to_one; /* into rank 0 instead of all-to-all ... */
    int      senders; /* ... from ranks 1 .. senders */
    double   buffered; /* out (request): fraction of received packets buffered */
    int      asleep;  /* into rank 0, which sleeps until the senders are done */
};

static int dest(const struct rqb *b, uint64_t i)
{
    return (int)((b->me + 1 + (int)(i % (uint64_t)(b->np - 1))) % b->np);
}

/* ---- the raw-ring limit ------------------------------------------------
 * In the destination's segment at RQB_DATA_OFF: for each source s a ring
 * of RAW_SLOTS slots, then one 64-byte line per source holding the
 * destination's consumed count.  The source alone writes slots (payload,
 * then seq with release); the destination alone writes its consumed count
 * (release, every RAW_SLOTS / 4 slots), which the source reads (acquire)
 * only when its cached copy says the ring is full. */
struct raw_slot {
    _Atomic uint64_t seq;
    uint64_t         payload[7];
};
struct raw_line {
    _Atomic uint64_t consumed;
    char             pad[56];
};
static uint64_t *raw_tail, *raw_head_cache, *raw_head; /* per peer, persistent */

static struct raw_slot *raw_ring(struct rqb *b, int owner, int src)
{
    char *seg = rq_segment_peer(b->ctx, owner);
    return (struct raw_slot *)(seg + RQB_DATA_OFF) + (size_t)src * RAW_SLOTS;
}

static struct raw_line *raw_line(struct rqb *b, int owner, int src)
{
    char *seg = rq_segment_peer(b->ctx, owner);
    return (struct raw_line *)(seg + RQB_DATA_OFF +
                               (size_t)b->np * RAW_SLOTS * sizeof(struct raw_slot)) + src;
}

/* Consume what this rank's rings hold: how many. */
static uint64_t raw_poll(struct rqb *b)
{
    uint64_t n = 0;
    for (int s = 0; s < b->np; s++) {
        if (s == b->me)
            continue;
        struct raw_slot *ring = raw_ring(b, b->me, s);
        for (;;) {
            uint64_t h = raw_head[s];
            if (atomic_load_explicit(&ring[h % RAW_SLOTS].seq, memory_order_acquire) != h + 1)
                break;
            raw_head[s] = h + 1;
            n++;
            if ((h + 1) % (RAW_SLOTS / 4) == 0)
                atomic_store_explicit(&raw_line(b, b->me, s)->consumed, h + 1,
                                      memory_order_release);
        }
    }
    return n;
}

static void raw_send(struct rqb *b, int dst, uint64_t v, uint64_t *received)
{
    uint64_t t = raw_tail[dst];
    unsigned spins = 0;
    while (t - raw_head_cache[dst] >= RAW_SLOTS) {
        raw_head_cache[dst] =
            atomic_load_explicit(&raw_line(b, dst, b->me)->consumed, memory_order_acquire);
        if (t - raw_head_cache[dst] >= RAW_SLOTS) {
            *received += raw_poll(b); /* the destination may wait for us */
            if (++spins > 256) /* oversubscribed: let the destination run */
                sched_yield();
        }
    }
    struct raw_slot *sl = &raw_ring(b, dst, b->me)[t % RAW_SLOTS];
    sl->payload[0] = v;
    atomic_store_explicit(&sl->seq, t + 1, memory_order_release);
    raw_tail[dst] = t + 1;
}

/* ---- the empty poll -------------------------------------------------------
 * Rank 0 times rq_poll on an idle job (every inbound lane looked at, nothing
 * there) while every other rank sleeps, so a machine with fewer cores than
 * ranks still gives rank 0 a core: what more lanes cost a receiver. */
enum { IDLE_POLLS = 20000 };
static double idle_poll_once(struct rqb *b, void *argp)
{
    (void)argp;
    static uint64_t round;
    volatile uint64_t *asleep = rqb_flag(b, 9), *done = rqb_flag(b, 10);
    double ns = 0;
    round++;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        rqb_spin_until(asleep, (uint64_t)(b->np - 1) * round);
        const uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < IDLE_POLLS; i++)
            rq_poll(b->ctx);
        ns = rqb_elapsed_ns(t0) / IDLE_POLLS;
        __atomic_store_n(done, round, __ATOMIC_RELEASE);
    } else {
        __atomic_fetch_add(asleep, 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < round) {
            struct timespec d = {0, 2000000};
            nanosleep(&d, NULL);
        }
    }
    return ns;
}

/* ---- one measurement ---------------------------------------------------- */

static double run_once(struct rqb *b, void *argp)
{
    struct scale_arg *a = argp;
    rq_ctx_t *ctx = b->ctx;
    const int np = b->np;
    const uint64_t m = a->m - a->m % (uint64_t)(np - 1); /* as many to each */
    uint64_t v = 0, received = 0;
    rq_stats_t st0, st1;
    rq_stats(ctx, &st0);
    const int sender = !a->to_one || (b->me != 0 && b->me <= a->senders);
    const uint64_t due_here = a->to_one ? (b->me == 0 ? m * (uint64_t)a->senders : 0) : m;
    /* A sleeping receiver: on a machine with fewer cores than ranks the
     * senders then have the cores, and what they share is all that slows
     * them.  They start once rank 0 said it goes to sleep, and 20 us
     * later (it is asleep by then). */
    const int asleep = a->to_one && a->asleep;
    static uint64_t sleep_round;
    volatile uint64_t *sleeping = rqb_flag(b, 11);
    rq_barrier(ctx);
    if (asleep) {
        sleep_round++;
        if (b->me == 0) {
            __atomic_store_n(sleeping, sleep_round, __ATOMIC_RELEASE);
        } else if (sender) {
            rqb_spin_until(sleeping, sleep_round);
            const uint64_t w = rqb_now_ns();
            while (rqb_now_ns() - w < 20000)
                __builtin_ia32_pause();
        }
    }
    const uint64_t t0 = rqb_now_ns();
    rq_msg_t views[RQ_PEEK_MAX];
    for (uint64_t i = 0; sender && i < m; i++) {
        const int dst = a->to_one ? 0 : dest(b, i);
        switch (a->op) {
        case OP_REQUEST:
            rq_request(ctx, dst, H_COUNT, &i, 1, NULL, 0, 0);
            if ((i + 1) % a->k == 0)
                rq_poll(ctx);
            break;
        case OP_ENQUEUE:
            rq_enqueue(ctx, dst, Q_SCALE, 0, &i, 1, NULL, 0, 0);
            if ((i + 1) % a->k == 0) {
                int n = rq_peek_n(ctx, Q_SCALE, views, RQ_PEEK_MAX);
                if (n > 0) {
                    received += (uint64_t)n;
                    rq_pop_n(ctx, Q_SCALE, (unsigned)n);
                }
            }
            break;
        case OP_PUT:
            rq_put(ctx, dst, RQB_DATA_OFF + 64u * (uint64_t)b->me, &i, 8, 0);
            break;
        case OP_STORE:
            rq_store(ctx, dst, RQB_DATA_OFF + 64u * (uint64_t)b->me, &i, 8, 0);
            break;
        case OP_GET:
            rq_get(ctx, &v, dst, RQB_DATA_OFF, 8, 0);
            break;
        case OP_AMO:
            rq_amo(ctx, dst, RQB_DATA_OFF, RQ_AMO_FADD, 1, 0, &v);
            break;
        case OP_RAW:
            raw_send(b, dst, i, &received);
            if ((i + 1) % a->k == 0)
                received += raw_poll(b);
            break;
        }
    }
    /* Completion: what this rank is owed, and its own operations.  Into a
     * sleeping rank 0: each sender, its operations issued (stores:
     * landed, rq_sync), counts itself done; rank 0 wakes rarely until all
     * are, then takes what arrived (stores: checks every byte landed). */
    if (asleep) {
        static uint64_t done_due;
        volatile uint64_t *done = rqb_flag(b, 8);
        done_due += (uint64_t)a->senders;
        if (sender) {
            if (a->op == OP_STORE)
                rq_sync(ctx);
            __atomic_fetch_add(done, 1, __ATOMIC_RELEASE);
        } else if (b->me == 0) {
            while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < done_due) {
                struct timespec d = {0, 500000}; /* rare wake-ups: the cores are the senders' */
                nanosleep(&d, NULL);
            }
            if (a->op == OP_STORE)
                rq_store_sync(ctx, 8 * due_here);
        }
    }
    switch (a->op) {
    case OP_REQUEST:
        rq_wait_until(ctx, &got, got_due += due_here);
        break;
    case OP_ENQUEUE:
        while (received < due_here) {
            int n = rq_peek_n(ctx, Q_SCALE, views, RQ_PEEK_MAX);
            if (n > 0) {
                received += (uint64_t)n;
                rq_pop_n(ctx, Q_SCALE, (unsigned)n);
            } else {
                rq_poll(ctx);
            }
        }
        break;
    case OP_STORE:
        if (!a->to_one)
            rq_all_store_sync(ctx);
        else if (!asleep && sender)
            rq_sync(ctx);
        else if (!asleep && b->me == 0)
            rq_store_sync(ctx, 8 * due_here); /* serving the stores (np, proc) */
        break;
    case OP_RAW: {
        unsigned spins = 0;
        while (received < due_here) {
            uint64_t n = raw_poll(b);
            received += n;
            if (n == 0 && ++spins > 256)
                sched_yield();
        }
        break;
    }
    default:
        rq_sync(ctx);
        break;
    }
    double ns = rqb_elapsed_ns(t0);
    rq_stats(ctx, &st1);
    rq_barrier(ctx);
    const uint64_t recv = st1.received - st0.received;
    a->buffered = rqb_mean(b, recv ? (double)(st1.buffered - st0.buffered) / (double)recv : 0);
    if (a->to_one) {
        /* The job's rate: everything sent over the job's window, from the
         * first sender's start to the last end (one clock for the node:
         * with more ranks than cores the senders may run one after the
         * other, and each one's own time would overstate the rate).
         * Into a sleeping rank 0, only the senders' windows count (a
         * store sender's includes its rq_sync: its stores landed). */
        const int counts = sender || !asleep;
        double start = counts ? (double)t0 : 1e300, end = counts ? (double)t0 + ns : 0;
        double first, last;
        rq_allreduce(ctx, &start, &first, 1, RQ_DOUBLE, RQ_MIN);
        rq_allreduce(ctx, &end, &last, 1, RQ_DOUBLE, RQ_MAX);
        return (double)(m * (uint64_t)a->senders) / (last - first) * 1e3;
    }
    return rqb_mean(b, (double)m / ns * 1e3);
}

/* Measure, record the rate (and the fraction buffered); the median on
 * every rank. */
static double measure(struct rqb *b, const char *name, struct scale_arg *a, const char *note)
{
    struct rqb_summary s = {0};
    rqb_measure(b, name, run_once, a, &s);
    char full[64];
    snprintf(full, sizeof full, "%s: %s", name, a->to_one ? "job rate" : "rate per rank");
    rqb_row(b, full, (double)b->np, "M/s", &s, note);
    if (a->op == OP_REQUEST || a->op == OP_ENQUEUE) {
        snprintf(full, sizeof full, "%s: buffered", name);
        rqb_row_derived(b, full, (double)b->np, "frac", a->buffered,
                        "received packets delivered from the virtual buffer, last repetition");
    }
    return rqb_from(b, 0, s.median);
}

int rqb_fam_scale(struct rqb *b)
{
    if (b->np < 2) {
        rqb_row_na(b, "request a2a poll/64: rate per rank", 1, "M/s", "needs 2 ranks or more");
        return 0;
    }
    rq_handler_register(b->ctx, H_COUNT, on_count, NULL, 0);
    rq_queue_open(b->ctx, Q_SCALE);
    const uint64_t m = b->o.smoke ? 2000 : b->o.quick ? 100000 : 400000;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    char over[64];
    snprintf(over, sizeof over, "%s", b->np > ncpu ? "oversubscribed: ranks > CPUs" : "");
    /* The raw-ring limit needs every rank's segment mapped here. */
    int raw_ok = 1;
    for (int r = 0; r < b->np; r++)
        raw_ok &= rq_segment_peer(b->ctx, r) != NULL;
    void *seg;
    size_t seg_size = 0;
    rq_segment(b->ctx, &seg, &seg_size);
    const size_t raw_bytes =
        (size_t)b->np * (RAW_SLOTS * sizeof(struct raw_slot) + sizeof(struct raw_line));
    raw_ok &= seg_size >= RQB_DATA_OFF + raw_bytes;
    if (raw_ok) {
        memset((char *)seg + RQB_DATA_OFF, 0, raw_bytes);
        raw_tail = calloc((size_t)b->np, 8);
        raw_head = calloc((size_t)b->np, 8);
        raw_head_cache = calloc((size_t)b->np, 8);
        raw_ok = raw_tail && raw_head && raw_head_cache;
    }
    rq_barrier(b->ctx);
    {
        struct rqb_summary s = {0};
        char note[128];
        const char *lanes = getenv("RQ_LANES"), *yield = getenv("RQ_YIELD_IDLE");
        snprintf(note, sizeof note, "rank 0 alone awake, every lane looked at (RQ_LANES=%s)%s",
                 lanes != NULL ? lanes : "default",
                 b->np > ncpu && (yield == NULL || strcmp(yield, "never") != 0)
                     ? "; oversubscribed: RQ_YIELD_IDLE yields" : "");
        rqb_measure(b, "empty rq_poll", idle_poll_once, NULL, &s);
        rqb_row(b, "empty rq_poll", (double)b->np, "ns", &s, note);
    }
    static const unsigned ks[] = {1, 8, 64};
    double a2a64 = NAN;
    for (int i = 0; i < 3; i++) {
        char name[48];
        unsigned k = ks[i];
        if (raw_ok) {
            struct scale_arg a = {.op = OP_RAW, .k = k, .m = m};
            snprintf(name, sizeof name, "raw ring a2a poll/%u", k);
            measure(b, name, &a, "limit: 64-byte slots, a ring per pair, no librq code");
        }
        struct scale_arg r = {.op = OP_REQUEST, .k = k, .m = m};
        snprintf(name, sizeof name, "request a2a poll/%u", k);
        double rate = measure(b, name, &r, over);
        if (k == 64)
            a2a64 = rate;
        struct scale_arg q = {.op = OP_ENQUEUE, .k = k, .m = m};
        snprintf(name, sizeof name, "enqueue a2a poll/%u", k);
        measure(b, name, &q, over);
        if (b->o.smoke)
            break;
    }
    static const struct { enum op op; const char *name; } gas[] = {
        {OP_PUT, "put 8B a2a"}, {OP_STORE, "store 8B a2a"},
        {OP_GET, "get 8B a2a"}, {OP_AMO, "amo fadd a2a"}};
    for (int i = 0; i < 4; i++) {
        struct scale_arg a = {.op = gas[i].op, .k = 1,
                              .m = gas[i].op == OP_AMO ? m / 4 : m};
        measure(b, gas[i].name, &a, over);
    }
    /* Into rank 0: from rank 1 alone, then from every other rank, in the
     * same job, and their ratio (the two-senders-into-a-third proxy on a
     * small machine: the aggregate should grow with the senders).  Into a
     * sleeping receiver, requests are only published (SLEEP_M each: a
     * quarter of a 256 KiB lane's slots, so up to four senders sharing
     * one lane never fill it); what the senders share is then all that
     * slows them: one lane's tail (RQ_LANES=1) against a lane each. */
    enum { SLEEP_M = 1000 };
    /* Stores land without the target only under the direct strategy; under
     * np and proc rank 0 serves them, in rq_store_sync. */
    const char *strategy = getenv("RQ_GAS_STRATEGY");
    const int direct = strategy == NULL || strcmp(strategy, "direct") == 0 ||
                       strcmp(strategy, "0") == 0;
    const struct { enum op op; int asleep; const char *name, *how; } one[] = {
        {OP_REQUEST, 0, "request", "which polls"},
        {OP_REQUEST, 1, "request to sleeper", "asleep until the senders are done"},
        {OP_STORE, direct, "store 8B",
         direct ? "asleep, then rq_store_sync" : "in rq_store_sync (serving them)"}};
    for (int i = 0; i < 3; i++) {
        char name[64], note[96];
        const uint64_t mi = one[i].asleep && one[i].op == OP_REQUEST ? SLEEP_M : m;
        struct scale_arg a1 = {.op = one[i].op, .k = 64, .m = mi, .to_one = 1, .senders = 1,
                                .asleep = one[i].asleep};
        snprintf(name, sizeof name, "%s one-to-one", one[i].name);
        snprintf(note, sizeof note, "rank 1 into rank 0, %s", one[i].how);
        double single = measure(b, name, &a1, note);
        if (i == 0 && !isnan(a2a64))
            rqb_row_derived(b, "request a2a poll/64 / one-way", (double)b->np, "x",
                            single > 0 ? a2a64 / single : NAN,
                            "a rank that sends and receives, over one pair streaming one "
                            "way (target >= 0.5 at 2 ranks)");
        struct scale_arg an = {.op = one[i].op, .k = 64, .m = mi, .to_one = 1,
                                .senders = b->np - 1, .asleep = one[i].asleep};
        snprintf(name, sizeof name, "%s many-to-one", one[i].name);
        snprintf(note, sizeof note, "every other rank into rank 0, %s: the job's rate", one[i].how);
        double many = measure(b, name, &an, note);
        snprintf(name, sizeof name, "%s many-to-one / one-to-one", one[i].name);
        rqb_row_derived(b, name, (double)b->np, "x", single > 0 ? many / single : NAN,
                        "aggregate of n - 1 senders over one sender's, same job");
    }
    free(raw_tail);
    free(raw_head);
    free(raw_head_cache);
    raw_tail = raw_head = raw_head_cache = NULL;
    return 0;
}

/* ---- the sweep: one job per rank count ---------------------------------- */

int rqb_drive_scale(const struct rqb_opts *o, int max_ranks)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int counts[32], nc = 0;
    int top = max_ranks > 0 ? max_ranks : (int)(ncpu > 4 ? ncpu : 4);
    for (int n = 2; n <= top && nc < 30; n = n < 4 ? n + 1 : n * 2)
        counts[nc++] = n;
    if (counts[nc - 1] != top && nc < 31)
        counts[nc++] = top;
    if (o->smoke)
        nc = 1;
    char self[PATH_MAX], dir[PATH_MAX], rr[PATH_MAX + 8], tmp[] = "/tmp/rqbench-scale.XXXXXX";
    rqb_self_dir(dir, sizeof dir, self, sizeof self);
    char *rqrun = (char *)rqb_rqrun_path(dir, rr, sizeof rr);
    if (mkdtemp(tmp) == NULL) {
        perror("rqbench: mkdtemp");
        return 1;
    }
    struct rqb_report rep = {0};
    int rc = 0;
    for (int i = 0; i < nc && rc == 0; i++) {
        char nr[16], csv[PATH_MAX + 32];
        snprintf(nr, sizeof nr, "%d", counts[i]);
        snprintf(csv, sizeof csv, "%s/n%d.csv", tmp, counts[i]);
        char *av[] = {rqrun, "-n", nr, "--bind", "core", self, "scale", "--emit", csv,
                      o->smoke ? "--smoke" : o->quick ? "--quick" : NULL, NULL};
        fprintf(stderr, "rqbench: scale, %d ranks%s\n", counts[i],
                counts[i] > ncpu ? " (oversubscribed)" : "");
        struct rqb_report one = {0};
        if (rqb_run_cmd(av) != 0 || rqb_report_read_csv(csv, &one) != 0) {
            fprintf(stderr, "rqbench: the scale run at %d ranks failed\n", counts[i]);
            rc = 1;
        }
        /* The first job's limits, then every job's scale rows. */
        for (int k = 0; k < one.n && rc == 0; k++) {
            const struct rqb_row *w = &one.rows[k];
            if (strcmp(w->family, "scale") != 0 && i != 0)
                continue;
            struct rqb_row *c = rqb_report_add(&rep, w->family, w->impl, w->name, w->param,
                                               w->unit, &w->s, w->note);
            if (c == NULL)
                rc = 1;
            else
                c->cycles = w->cycles;
        }
        rqb_report_free(&one);
        unlink(csv);
    }
    rmdir(tmp);
    rep.ranks = counts[nc - 1];
    rqb_report_placement(&rep);
    if (rc == 0)
        rc = rqb_write_outputs(&rep, o, NULL);
    rqb_report_free(&rep);
    return rc;
}
