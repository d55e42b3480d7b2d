/* splitc.c - rqbench splitc: the basic Split-C operations of the Split-C
 * paper's Table 1, 8-byte operands, K = 1024 operations per repetition.
 *   RT latency   AM (request, reply from the handler), rq_read, rq_write:
 *                each waits for its completion before the next.
 *   overhead     time to issue K rq_get / rq_put / rq_store (completion
 *                awaited outside the timed part).
 *   gap          time to issue K and complete them (rq_sync; for stores
 *                the target's rq_store_sync and an ack), per operation.
 *   gap (to 2)   the same alternating between ranks 1 and 2 (3+ ranks).
 *   gap (exchange) ranks 0 and 1 do it to each other at once.
 * The global-address operations return RQ_ENOTSUP until they are
 * implemented; their rows then read "not available". */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

static double round_trip(struct rqb *b, void *arg)
{
    int kind = *(const int *)arg;
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < K; i++) {
            if (kind == RT_AM) {
                rq_request(b->ctx, 1, H_ECHO, NULL, 0, NULL, 0, 0);
                rq_wait_until(b->ctx, &back, ++back_due);
            } else if (kind == RT_READ) {
                check(rq_read(b->ctx, &word[0], 1, remote_off(i), 8));
            } else {
                check(rq_write(b->ctx, 1, remote_off(i), &word[0], 8));
            }
        }
        r = rqb_elapsed_ns(t0) / K;
    }
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
    return 0;
}
