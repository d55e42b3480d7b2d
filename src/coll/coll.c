/* coll.c - barrier, broadcast and allreduce on system active messages
 * (the CM-5 control network's job, done in software).
 *
 * Barrier: dissemination (ceil(log2 N) rounds; in round k rank r signals
 * r + 2^k).  Each round's arrivals are a 64-bit counter: round k of
 * barrier e is complete when counter[k] >= e.  Per-pair FIFO makes this
 * exact: round k's messages always come from the same rank, in order.
 * Broadcast / allreduce: binomial trees; payloads travel as system medium
 * AMs (fragmented when large) tagged with the collective's sequence number
 * and kept in a mailbox until the receiving call asks for them, since a
 * fast sender may run ahead into the next collective. */
#include <stdlib.h>
#include <string.h>

#include "am/am.h"
#include "coll/coll.h"
#include "deliver/deliver.h"
#include "progress/promote.h"

/* Packets that a system message of len bytes between us and peer takes,
 * the way rqi_send cuts it. */
static uint64_t sys_packets(const rq_ctx_t *ctx, int peer, size_t len)
{
    if (rqi_medium_one_packet(ctx, peer, len))
        return 1;
    return (len + ctx->medium_max - 1) / ctx->medium_max;
}

static int sys_send(rq_ctx_t *ctx, int to, unsigned id, uint64_t arg, const void *buf, size_t len)
{
    int rc = rqi_send(ctx, to, RQ_AM_QUEUE, id, RQI_PF_SYSTEM, &arg, 1, buf, len, 0);
    if (rc == 0)
        ctx->sys_sent += sys_packets(ctx, to, len);
    return rc;
}

static void barrier_handler(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)arg;
    ctx->sys_received += sys_packets(ctx, m->src, m->len);
    if (m->nargs == 1 && m->args[0] < RQI_BARRIER_ROUNDS)
        ctx->barrier_arrived[m->args[0]]++;
    else
        ctx->stats.rejected++;
}

static void data_handler(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)arg;
    ctx->sys_received += sys_packets(ctx, m->src, m->len);
    if (m->nargs != 1) {
        ctx->stats.rejected++;
        return;
    }
    struct rqi_mail *mail = malloc(sizeof *mail + m->len);
    if (mail == NULL) {
        rqi_fail(ctx, "out of memory for a collective payload");
        return;
    }
    mail->seq = m->args[0];
    mail->src = m->src;
    mail->len = m->len;
    if (m->len != 0)
        memcpy(mail->data, m->data, m->len);
    /* Append, so that lookups find the oldest first. */
    struct rqi_mail **pp = &ctx->mail;
    while (*pp != NULL)
        pp = &(*pp)->next;
    mail->next = NULL;
    *pp = mail;
}

void rqi_coll_init(rq_ctx_t *ctx)
{
    ctx->sys[RQI_SYS_BARRIER].fn = barrier_handler;
    ctx->sys[RQI_SYS_COLL_DATA].fn = data_handler;
}

void rqi_coll_fini(rq_ctx_t *ctx)
{
    while (ctx->mail != NULL) {
        struct rqi_mail *n = ctx->mail->next;
        free(ctx->mail);
        ctx->mail = n;
    }
}

struct round_wait { unsigned round; uint64_t epoch; };
static int round_done(rq_ctx_t *ctx, const void *a)
{
    const struct round_wait *w = a;
    return ctx->barrier_arrived[w->round] >= w->epoch;
}

int rqi_barrier(rq_ctx_t *ctx)
{
    uint64_t epoch = ++ctx->barrier_epoch;
    unsigned round = 0;
    for (int dist = 1; dist < ctx->size; dist <<= 1, round++) {
        uint64_t arg = round;
        int to = (ctx->rank + dist) % ctx->size;
        int rc = sys_send(ctx, to, RQI_SYS_BARRIER, arg, NULL, 0);
        if (rc != 0)
            return rc;
        struct round_wait w = {round, epoch};
        if ((rc = rqi_poll_until(ctx, round_done, &w)) != 0)
            return rc;
    }
    return 0;
}

static int barrier_body(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    if (rqi_in_handler(ctx))
        return RQ_EPERM;
    return rqi_barrier(ctx);
}

struct mail_wait { uint64_t seq; int src; };
static int mail_here(rq_ctx_t *ctx, const void *a)
{
    const struct mail_wait *w = a;
    for (struct rqi_mail *m = ctx->mail; m != NULL; m = m->next)
        if (m->seq == w->seq && m->src == w->src)
            return 1;
    return 0;
}

/* Wait for the payload of collective seq from src; unlink and return it. */
static int mail_take(rq_ctx_t *ctx, uint64_t seq, int src, struct rqi_mail **out)
{
    struct mail_wait w = {seq, src};
    int rc = rqi_poll_until(ctx, mail_here, &w);
    if (rc != 0)
        return rc;
    for (struct rqi_mail **pp = &ctx->mail; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->seq == seq && (*pp)->src == src) {
            *out = *pp;
            *pp = (*pp)->next;
            return 0;
        }
    }
    return RQ_EINVAL; /* unreachable: mail_here found it */
}

static int send_data(rq_ctx_t *ctx, int to, uint64_t seq, const void *buf, size_t len)
{
    return sys_send(ctx, to, RQI_SYS_COLL_DATA, seq, buf, len);
}

/* Binomial-tree broadcast of len bytes from root, for collective seq. */
static int bcast(rq_ctx_t *ctx, uint64_t seq, int root, void *buf, size_t len)
{
    int n = ctx->size, vr = (ctx->rank - root + n) % n;
    int mask = 1;
    while (mask < n) {
        if (vr & mask) {
            struct rqi_mail *m;
            int rc = mail_take(ctx, seq, (vr - mask + root) % n, &m);
            if (rc != 0)
                return rc;
            if (m->len != len) {
                free(m);
                return RQ_EINVAL; /* ranks disagree on len */
            }
            if (len != 0)
                memcpy(buf, m->data, len);
            free(m);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vr + mask < n) {
            int rc = send_data(ctx, (vr + mask + root) % n, seq, buf, len);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

static int broadcast_body(rq_ctx_t *ctx, int root, void *buf, size_t len)
{
    if (ctx == NULL || root < 0 || root >= ctx->size || (len != 0 && buf == NULL))
        return RQ_EINVAL;
    if (rqi_in_handler(ctx))
        return RQ_EPERM;
    return bcast(ctx, ctx->coll_seq++, root, buf, len);
}

static void combine(void *acc, const void *in, size_t count, int dtype, int op)
{
    for (size_t i = 0; i < count; i++) {
        if (dtype == RQ_DOUBLE) {
            double *a = (double *)acc + i, b = ((const double *)in)[i];
            *a = op == RQ_SUM ? *a + b : op == RQ_MIN ? (b < *a ? b : *a) : (b > *a ? b : *a);
        } else if (dtype == RQ_INT64) {
            int64_t *a = (int64_t *)acc + i, b = ((const int64_t *)in)[i];
            /* Sum wraps like unsigned arithmetic instead of overflowing. */
            *a = op == RQ_SUM ? (int64_t)((uint64_t)*a + (uint64_t)b)
               : op == RQ_MIN ? (b < *a ? b : *a) : (b > *a ? b : *a);
        } else {
            uint64_t *a = (uint64_t *)acc + i, b = ((const uint64_t *)in)[i];
            *a = op == RQ_SUM ? *a + b : op == RQ_MIN ? (b < *a ? b : *a) : (b > *a ? b : *a);
        }
    }
}

static int allreduce_body(rq_ctx_t *ctx, const void *in, void *out, size_t count, int dtype, int op)
{
    if (ctx == NULL || (count != 0 && (in == NULL || out == NULL)) ||
        (dtype != RQ_INT64 && dtype != RQ_UINT64 && dtype != RQ_DOUBLE) ||
        (op != RQ_SUM && op != RQ_MIN && op != RQ_MAX) || count > ctx->large_max / 8)
        return RQ_EINVAL;
    if (rqi_in_handler(ctx))
        return RQ_EPERM;
    size_t len = count * 8;
    uint64_t seq = ctx->coll_seq++;
    if (len != 0 && out != in)
        memmove(out, in, len);
    int n = ctx->size, r = ctx->rank;
    /* Reduce to rank 0: children r + mask combine into r, in mask order,
     * so every run combines in the same order. */
    for (int mask = 1; mask < n; mask <<= 1) {
        if (r & mask) {
            int rc = send_data(ctx, r - mask, seq, out, len);
            if (rc != 0)
                return rc;
            break;
        }
        if (r + mask < n) {
            struct rqi_mail *m;
            int rc = mail_take(ctx, seq, r + mask, &m);
            if (rc != 0)
                return rc;
            if (m->len != len) {
                free(m);
                return RQ_EINVAL;
            }
            combine(out, m->data, count, dtype, op);
            free(m);
        }
    }
    return bcast(ctx, seq, 0, out, len);
}

/* Run every handler that can run now and send every parked packet: after
 * this, nothing of ours waits to be sent or run. */
static int settle(rq_ctx_t *ctx)
{
    unsigned spins = 0;
    for (;;) {
        int rc = 0;
        /* Promoted parts queued once the pool stopped (rq_finalize) run
         * here, outside any handler. */
        while (rc == 0 && (rqi_poll(ctx) > 0 || rqi_promote_run_queued(ctx) > 0))
            rc = rqi_busy_step(ctx, &spins);
        if (rc == 0 && ctx->ob.records == 0)
            return 0;
        if (rc == 0)
            rc = rqi_wait_step(ctx, &spins);
        if (rc != 0)
            return rc;
    }
}

/* Termination detection (Mattern's counting method): each wave sums, over
 * the ranks, the application's packets sent and received, taken when the
 * rank has nothing left to run or send.  Two waves in a row that agree,
 * with sent == received, prove that nothing is in flight and nothing can
 * be sent any more: a packet still moving would show as sent but not
 * received, and a handler's send after the first wave would change the
 * second.  Handlers run while the waves wait (they poll), so their sends
 * are delivered before anyone leaves.  A forged packet that passed
 * validation (a well-formed one for a handler nobody registered) counts as
 * received with no send behind it: received >= sent, not ==, so that a
 * hostile sender cannot keep rq_finalize waiting; the worst it can do is
 * mask as many packets still in flight. */
int rqi_quiesce(rq_ctx_t *ctx)
{
    uint64_t prev[2] = {UINT64_MAX, 0};
    for (;;) {
        int rc = settle(ctx);
        if (rc != 0)
            return rc;
        uint64_t c[2] = {rqi_sent(ctx) - ctx->sys_sent, ctx->stats.received - ctx->sys_received};
        if ((rc = allreduce_body(ctx, c, c, 2, RQ_UINT64, RQ_SUM)) != 0)
            return rc;
        if (c[1] >= c[0] && c[0] == prev[0] && c[1] == prev[1])
            return 0;
        prev[0] = c[0];
        prev[1] = c[1];
    }
}

/* Public entry points: each bracketed against the progress thread
 * (src/vni/vni.h). */

int rq_barrier(rq_ctx_t *ctx)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, barrier_body(ctx));
}

int rq_broadcast(rq_ctx_t *ctx, int root, void *buf, size_t len)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, broadcast_body(ctx, root, buf, len));
}

int rq_allreduce(rq_ctx_t *ctx, const void *in, void *out, size_t count, int dtype, int op)
{
    if (ctx == NULL)
        return RQ_EINVAL;
    RQI_GUARDED(ctx, allreduce_body(ctx, in, out, count, dtype, op));
}
