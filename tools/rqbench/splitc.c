/* splitc.c - rqbench splitc: the basic Split-C operations of the Split-C
 * paper's Table 1, 8-byte operands, K = 1024 operations per repetition.
 *   RT latency   AM (request, reply from the handler), rq_read, rq_write:
 *                each waits for its completion before the next; reads
 *                chase pointers through lines rank 1 keeps rewriting.
 *   overhead     time to issue K rq_get / rq_put / rq_store (completion
 *                awaited outside the timed part).
 *   gap          time to issue K and complete them (rq_sync; for stores
 *                the target's rq_store_sync and an ack), per operation.
 *   gap (to 2)   the same alternating between ranks 1 and 2 (3+ ranks).
 *   gap (exchange) ranks 0 and 1 do it to each other at once.
 *   bulk           bandwidth of one get / put / store of 4 KiB .. 16 MiB,
 *                  completed by rq_sync, beside single-core memcpy measured
 *                  in the same run.
 *   poll grain     the Split-C paper's section 5.3: rank 1 computes for a
 *                  grain g between polls while rank 0 does blocking 8-byte
 *                  reads from it; the read latency against g shows who
 *                  serves requests (flat: direct and np; ~g/2: proc).
 * The strategy is the job's RQ_GAS_STRATEGY (run rqbench once per
 * strategy to compare them).  If an operation fails, its row reads "not
 * available" with the error. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { H_ECHO = 40, H_BACK = 41, H_ACK = 42 };
enum { K = 1024 };
enum { OP_GET, OP_PUT, OP_STORE, NOPS };
static const char *const op_name[NOPS] = {"get", "put", "store"};

static volatile uint64_t back, acked;
static uint64_t back_due, acked_due;
static int first_err; /* first error an operation returned on this rank */
static uint64_t word[2 * K];

static void on_echo(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    rq_reply(c, m, H_BACK, NULL, 0, NULL, 0, 0);
}
static void on_back(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; back++; }
static void on_ack(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; acked++; }

static void check(int rc)
{
    if (rc < 0 && first_err == 0)
        first_err = rc;
}

static uint64_t remote_off(int i) { return RQB_DATA_OFF + 8 * (uint64_t)(i % K); }

static void issue(struct rqb *b, int op, int dst, int i)
{
    switch (op) {
    case OP_GET: check(rq_get(b->ctx, &word[i % K], dst, remote_off(i), 8, 0)); break;
    case OP_PUT: check(rq_put(b->ctx, dst, remote_off(i), &word[i % K], 8, 0)); break;
    default: check(rq_store(b->ctx, dst, remote_off(i), &word[i % K], 8, 0)); break;
    }
}

enum { RT_AM, RT_READ, RT_WRITE };

/* Read latency is measured by pointer chasing, so that no two reads
 * overlap (under the direct strategy a read is a load, and independent
 * loads would run in parallel): CHASE words, one per cache line, form one
 * random cycle in rank 1's segment, and each read's offset is the value the
 * previous one returned.  Rank 1 keeps rewriting the cycle (same values)
 * and polls in between, so every read finds its line modified in rank 1's
 * cache (a remote value being updated, never a local cache hit) and the
 * proc strategy gets its service.  A write goes to a word rank 1 rewrites. */
enum { CHASE = 1024 };

static void chase_setup(struct rqb *b, uint64_t *next)
{
    /* Sattolo's shuffle: one cycle through all CHASE lines. */
    uint64_t perm[CHASE], x = 88172645463325252ull;
    for (int i = 0; i < CHASE; i++)
        perm[i] = (uint64_t)i;
    for (int i = CHASE - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int j = (int)(x % (uint64_t)i);
        uint64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < CHASE; i++)
        next[perm[i]] = RQB_DATA_OFF + 64 * perm[(i + 1) % CHASE];
    (void)b;
}

static double round_trip(struct rqb *b, void *arg)
{
    int kind = *(const int *)arg;
    static uint64_t round, next[CHASE];
    volatile uint64_t *stop = rqb_flag(b, 3);
    double r = 0;
    round++;
    if (round == 1)
        chase_setup(b, next);
    volatile uint64_t *w = (volatile uint64_t *)((char *)rq_segment_peer(b->ctx, 1) + RQB_DATA_OFF);
    if (b->me == 1)
        for (int j = 0; j < CHASE; j++)
            w[8 * j] = next[j];
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t off = RQB_DATA_OFF;
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < K; i++) {
            if (kind == RT_AM) {
                rq_request(b->ctx, 1, H_ECHO, NULL, 0, NULL, 0, 0);
                rq_wait_until(b->ctx, &back, ++back_due);
            } else if (kind == RT_READ) {
                check(rq_read(b->ctx, &off, 1, off, 8));
            } else {
                check(rq_write(b->ctx, 1, RQB_DATA_OFF, &word[0], 8));
            }
        }
        r = rqb_elapsed_ns(t0) / K;
        if (kind == RT_READ && (off < RQB_DATA_OFF || off >= RQB_DATA_OFF + 64 * CHASE))
            check(RQ_EINVAL); /* the chase went astray */
        *stop = round;
    } else if (b->me == 1 && kind != RT_AM) {
        for (int j = 0; *stop < round; j = (j + 1) % CHASE) {
            w[8 * j] = next[j];
            if ((j & 15) == 0)
                rq_poll(b->ctx);
        }
    }
    rq_barrier(b->ctx);
    return r;
}

/* shape: 0 one target, 1 alternating two targets, 2 exchange.
 * timed_issue: overhead (issue only) rather than gap (issue + complete). */
struct op_arg { int op, shape, overhead; };

static double op_run(struct rqb *b, void *argp)
{
    const struct op_arg *a = argp;
    int sender = b->me == 0 || (a->shape == 2 && b->me == 1);
    int target = (a->shape == 1 && b->me >= 1 && b->me <= 2) || (a->shape != 1 && b->me == 1) ||
                 (a->shape == 2 && b->me == 0);
    int stores_in = a->op != OP_STORE ? 0 : a->shape == 1 ? K / 2 : K;
    double r = 0;
    rq_barrier(b->ctx);
    if (sender) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < K; i++)
            issue(b, a->op, a->shape == 1 ? 1 + (i & 1) : 1 - b->me, i);
        if (a->overhead)
            r = rqb_elapsed_ns(t0) / K;
        if (a->op != OP_STORE) {
            check(rq_sync(b->ctx));
        } else if (a->shape == 2) {
            check(rq_store_sync(b->ctx, 8 * (uint64_t)stores_in));
            target = 0; /* done below already */
            rq_request(b->ctx, 1 - b->me, H_ACK, NULL, 0, NULL, 0, 0);
            rq_wait_until(b->ctx, &acked, ++acked_due);
        } else {
            acked_due += a->shape == 1 ? 2 : 1;
            rq_wait_until(b->ctx, &acked, acked_due);
        }
        if (!a->overhead)
            r = rqb_elapsed_ns(t0) / K;
    }
    if (target && a->op == OP_STORE) {
        check(rq_store_sync(b->ctx, 8 * (uint64_t)stores_in));
        rq_request(b->ctx, 0, H_ACK, NULL, 0, NULL, 0, 0);
    }
    return r;
}

static void row(struct rqb *b, const char *name, const struct rqb_summary *s, const char *note);

/* ---- bulk transfers ---- */
struct bulk_arg { int op; size_t len; };
static char *bulk_buf;

static int bulk_rounds(size_t len) { return len >= (8u << 20) ? 2 : (int)((16u << 20) / len); }

static double bulk_run(struct rqb *b, void *argp)
{
    const struct bulk_arg *a = argp;
    const int rounds = bulk_rounds(a->len);
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < rounds; i++) {
            if (a->op == OP_GET)
                check(rq_get(b->ctx, bulk_buf, 1, RQB_DATA_OFF, a->len, 0));
            else if (a->op == OP_PUT)
                check(rq_put(b->ctx, 1, RQB_DATA_OFF, bulk_buf, a->len, 0));
            else
                check(rq_store(b->ctx, 1, RQB_DATA_OFF, bulk_buf, a->len, 0));
            check(rq_sync(b->ctx));
        }
        r = (double)a->len * rounds / rqb_elapsed_ns(t0) * 1e3;
    } else if (b->me == 1 && a->op == OP_STORE) {
        /* consume the stores, so that later store_sync counts start at 0 */
        check(rq_store_sync(b->ctx, (uint64_t)a->len * (uint64_t)rounds));
    }
    rq_barrier(b->ctx);
    return r;
}

static void bulk_rows(struct rqb *b, const char *note)
{
    static const size_t sizes[] = {4096, 65536, 1u << 20, 16u << 20};
    size_t seg;
    void *base;
    rq_segment(b->ctx, &base, &seg);
    if (bulk_buf == NULL && (bulk_buf = malloc(16u << 20)) != NULL)
        memset(bulk_buf, 3, 16u << 20);
    for (int op = 0; op < NOPS; op++) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            struct bulk_arg a = {op, sizes[i]};
            char name[48];
            snprintf(name, sizeof name, "bulk %s bandwidth", op_name[op]);
            if (bulk_buf == NULL || RQB_DATA_OFF + sizes[i] > seg || (b->o.smoke && i > 1)) {
                rqb_row_na(b, name, (double)sizes[i], "MB/s",
                           bulk_buf == NULL ? "out of memory" : b->o.smoke ? "smoke run"
                                                                          : "segment too small");
                continue;
            }
            struct rqb_summary s;
            rqb_measure(b, name, bulk_run, &a, &s);
            double e = first_err, worst = 0;
            rq_allreduce(b->ctx, &e, &worst, 1, RQ_DOUBLE, RQ_MIN);
            first_err = 0;
            if (worst < 0) {
                rqb_row_na(b, name, (double)sizes[i], "MB/s", rq_strerror((int)worst));
                continue;
            }
            rqb_row(b, name, (double)sizes[i], "MB/s", &s, note);
            if (op == OP_PUT && sizes[i] >= (1u << 20)) {
                /* the target: at least 80% of one core's memcpy, same run */
                struct rqb_summary m;
                size_t len = sizes[i];
                rqb_measure(b, "memcpy", rqb_memcpy_bw, &len, &m);
                rqb_row(b, "memcpy bandwidth, one core", (double)len, "MB/s", &m,
                        "private buffers on rank 0, this run");
                if (b->me == 0)
                    rqb_row_derived(b, "bulk put / memcpy", (double)len, "ratio",
                                    s.median / m.median, "target >= 0.8");
            }
        }
    }
}

/* ---- polling granularity (Split-C paper, section 5.3) ---- */
static double grain_run(struct rqb *b, void *argp)
{
    const uint64_t grain = *(const uint64_t *)argp;
    static uint64_t round;
    volatile uint64_t *stop = rqb_flag(b, 3);
    const int n = b->o.smoke ? 20 : grain >= 100000 ? 100 : 1000;
    double r = 0;
    round++;
    rq_barrier(b->ctx);
    if (b->me == 1) {
        while (*stop < round) {
            rqb_delay_ns(grain);
            rq_poll(b->ctx);
        }
    } else if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < n; i++)
            check(rq_read(b->ctx, &word[0], 1, RQB_DATA_OFF, 8));
        r = rqb_elapsed_ns(t0) / n;
        *stop = round;
    }
    rq_barrier(b->ctx);
    return r;
}

static void grain_rows(struct rqb *b, const char *note)
{
    static const uint64_t grains[] = {0, 1000, 10000, 100000, 1000000};
    for (size_t i = 0; i < sizeof grains / sizeof grains[0]; i++) {
        if (b->o.smoke && i > 2)
            break;
        struct rqb_summary s;
        rqb_measure(b, "poll grain", grain_run, (void *)&grains[i], &s);
        char name[64];
        snprintf(name, sizeof name, "read RT, target polls every %g us", grains[i] / 1e3);
        row(b, name, &s, note);
    }
}

/* The paper's experiment (Figures 7, 8): ranks take turns being busy.
 * The busy rank computes W in chunks of g, polling after each; every
 * other rank first reads one word from it (it needs the datum to go on),
 * then computes W itself.  Served at once (by polling often, by the NP
 * thread, or by a direct load), all ranks compute together and a turn
 * takes W; served only when the busy rank stops (g = W: no poll till
 * the end), the others idle and a turn takes 2W.  Time per iteration =
 * one turn per rank. */
enum { TURN_WORK_NS = 1000000 };
static double work_per_iter; /* ns, this rank's core */
static void compute_polling(struct rqb *b, uint64_t grain)
{
    const uint64_t iters = (uint64_t)((double)grain / work_per_iter);
    for (uint64_t done = 0; done < TURN_WORK_NS; done += grain) {
        rqb_work(iters);
        if (b != NULL)
            rq_poll(b->ctx);
    }
}

static double turns_run(struct rqb *b, void *argp)
{
    const uint64_t grain = *(const uint64_t *)argp;
    rq_barrier(b->ctx);
    uint64_t t0 = rqb_now_ns();
    for (int busy = 0; busy < b->np; busy++) {
        if (b->me != busy)
            check(rq_read(b->ctx, &word[0], busy, RQB_DATA_OFF, 8));
        compute_polling(b, grain);
        rq_barrier(b->ctx);
    }
    return rqb_elapsed_ns(t0) / 1e3;
}

static void turns_rows(struct rqb *b, const char *strategy)
{
    static const uint64_t grains[] = {100, 1000, 10000, 100000, TURN_WORK_NS};
    work_per_iter = rqb_work_ns_per_iter();
    for (size_t i = 0; i < sizeof grains / sizeof grains[0]; i++) {
        if (b->o.smoke && (i == 0 || i == 3))
            continue;
        /* ideal: the same chunks with no poll and nobody waiting, on rank 0 */
        double ideal = 0;
        if (b->me == 0) {
            uint64_t t0 = rqb_now_ns();
            compute_polling(NULL, grains[i]);
            ideal = b->np * rqb_elapsed_ns(t0) / 1e3;
        }
        ideal = rqb_from(b, 0, ideal);
        struct rqb_summary s;
        rqb_measure(b, "turns", turns_run, (void *)&grains[i], &s);
        char note[192];
        snprintf(note, sizeof note, "%s; %d turns of %d us; ideal (no polls, no waits) %.0f us; "
                 "param = g (ns)", strategy, b->np, TURN_WORK_NS / 1000, ideal);
        double e = first_err, worst = 0;
        rq_allreduce(b->ctx, &e, &worst, 1, RQ_DOUBLE, RQ_MIN);
        first_err = 0;
        if (worst < 0)
            rqb_row_na(b, "poll granularity: time per iteration", (double)grains[i], "us",
                       rq_strerror((int)worst));
        else
        {
            rqb_row(b, "poll granularity: time per iteration", (double)grains[i], "us", &s, note);
            rqb_row_derived(b, "poll granularity: over ideal", (double)grains[i], "ratio",
                            s.median / ideal, "1 = every read served at once, 2 = at turn's end");
        }
    }
}

static int gas_available(struct rqb *b)
{
    int64_t rc = 0;
    if (b->me == 0)
        rc = rq_read(b->ctx, &word[0], 1, RQB_DATA_OFF, 8);
    rq_broadcast(b->ctx, 0, &rc, sizeof rc);
    return rc != RQ_ENOTSUP;
}

/* Record s, or "not available" if an operation failed on some rank. */
static void row(struct rqb *b, const char *name, const struct rqb_summary *s, const char *note)
{
    double e = first_err, worst = 0;
    rq_allreduce(b->ctx, &e, &worst, 1, RQ_DOUBLE, RQ_MIN);
    first_err = 0;
    if (worst < 0)
        rqb_row_na(b, name, NAN, "ns", rq_strerror((int)worst));
    else
        rqb_row(b, name, NAN, "ns", s, note);
}

int rqb_fam_splitc(struct rqb *b)
{
    rq_handler_register(b->ctx, H_ECHO, on_echo, NULL, 0);
    rq_handler_register(b->ctx, H_BACK, on_back, NULL, 0);
    rq_handler_register(b->ctx, H_ACK, on_ack, NULL, 0);
    const char *strategy = getenv("RQ_GAS_STRATEGY");
    char note[112];
    snprintf(note, sizeof note, "strategy %s", strategy ? strategy : "default");
    struct rqb_summary s;
    int kind = RT_AM;
    rqb_measure(b, "RT latency AM", round_trip, &kind, &s);
    row(b, "RT latency: AM", &s, "null handler, reply from it");

    const int gas = gas_available(b);
    const char *why = "global-address operations not implemented yet (RQ_ENOTSUP)";
    static const char *const rt_names[] = {"", "RT latency: read", "RT latency: write"};
    for (kind = RT_READ; kind <= RT_WRITE; kind++) {
        if (!gas) {
            rqb_row_na(b, rt_names[kind], NAN, "ns", why);
            continue;
        }
        rqb_measure(b, rt_names[kind], round_trip, &kind, &s);
        row(b, rt_names[kind], &s, note);
        if (kind == RT_READ && b->me == 0 && b->rep.line_ns > 0)
            rqb_row_derived(b, "RT read / cache-line RT", NAN, "ratio",
                            s.median / (2 * b->rep.line_ns), "target < 3; L measured this run");
    }
    static const char *const shape_name[] = {"gap", "gap (to 2)", "gap (exchange)"};
    for (int shape = -1; shape < 3; shape++) {
        for (int op = 0; op < NOPS; op++) {
            char name[48];
            struct op_arg a = {op, shape < 0 ? 0 : shape, shape < 0};
            snprintf(name, sizeof name, "%s: %s", shape < 0 ? "overhead" : shape_name[shape],
                     op_name[op]);
            if (!gas) {
                rqb_row_na(b, name, NAN, "ns", why);
            } else if (a.shape == 1 && b->np < 3) {
                rqb_row_na(b, name, NAN, "ns", "needs 3 ranks");
            } else {
                rqb_measure(b, name, op_run, &a, &s);
                row(b, name, &s, note);
            }
        }
    }
    if (gas) {
        bulk_rows(b, note);
        grain_rows(b, note);
        turns_rows(b, note);
    }
    return 0;
}
