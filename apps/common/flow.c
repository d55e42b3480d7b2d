/* flow.c - flow-control building blocks (see flow.h). */
#define _POSIX_C_SOURCE 200809L
#include "flow.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_credits(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    struct rqa_credits *c = arg;
    if (m->nargs == 1 && m->src >= 0 && m->src < rq_size(ctx))
        c->avail[m->src] += (uint32_t)m->args[0];
}

int rqa_credits_init(struct rqa_credits *c, rq_ctx_t *ctx, unsigned handler, uint32_t window)
{
    int n = rq_size(ctx);
    if (c == NULL || n <= 0 || window < 2 || handler >= RQ_MAX_HANDLERS)
        return RQ_EINVAL;
    c->ctx = ctx;
    c->handler = handler;
    c->window = window;
    c->batch = window / 2;
    c->waits = 0;
    c->avail = malloc((size_t)n * sizeof *c->avail);
    c->owed = calloc((size_t)n, sizeof *c->owed);
    if (c->avail == NULL || c->owed == NULL) {
        free(c->avail);
        free(c->owed);
        return RQ_ENOMEM;
    }
    for (int i = 0; i < n; i++)
        c->avail[i] = window;
    return rq_handler_register(ctx, handler, on_credits, c, 0);
}

/* c initialized and r one of its ranks. */
static int credits_rank_ok(const struct rqa_credits *c, int r)
{
    return c != NULL && c->ctx != NULL && c->avail != NULL && c->owed != NULL && r >= 0 &&
           r < rq_size(c->ctx);
}

int rqa_credits_acquire(struct rqa_credits *c, int dst, rqa_drain_fn drain, void *arg)
{
    if (!credits_rank_ok(c, dst))
        return RQ_EINVAL;
    if (c->avail[dst] == 0) {
        c->waits++;
        while (c->avail[dst] == 0) {
            int rc = rq_poll(c->ctx);
            if (rc < 0)
                return rc;
            if (drain != NULL && (rc = drain(arg)) < 0)
                return rc;
        }
    }
    c->avail[dst]--;
    return 0;
}

int rqa_credits_consumed(struct rqa_credits *c, int src)
{
    if (!credits_rank_ok(c, src))
        return RQ_EINVAL;
    if (++c->owed[src] < c->batch)
        return 0;
    uint64_t n = c->owed[src];
    c->owed[src] = 0;
    return rq_request(c->ctx, src, c->handler, &n, 1, NULL, 0, 0);
}

void rqa_credits_fini(struct rqa_credits *c)
{
    if (c == NULL || c->ctx == NULL)
        return;
    rq_handler_register(c->ctx, c->handler, NULL, NULL, 0);
    free(c->avail);
    free(c->owed);
    c->avail = c->owed = NULL;
}

int rqa_pace_match(struct rqa_pace *p, rq_ctx_t *ctx, double consume_ns)
{
    if (p == NULL || ctx == NULL)
        return RQ_EINVAL;
    /* A bad value still joins the reduction (the others would wait for
     * it), as a flag every rank sees: {time, bad}. */
    const int bad = !isfinite(consume_ns) || consume_ns > RQA_PACE_MAX_NS;
    double v[2] = {bad || consume_ns < 0 ? 0 : consume_ns, bad ? 1 : 0};
    int rc = rq_allreduce(ctx, v, v, 2, RQ_DOUBLE, RQ_MAX);
    if (rc != 0)
        return rc;
    if (v[1] != 0)
        return RQ_EINVAL;
    p->interval_ns = (uint64_t)v[0];
    p->next_ns = 0;
    return 0;
}

void rqa_pace_wait(struct rqa_pace *p, rqa_drain_fn drain, void *arg)
{
    if (p->interval_ns == 0)
        return;
    uint64_t t = now_ns();
    while (t < p->next_ns) {
        if (drain != NULL)
            drain(arg);
        t = now_ns();
    }
    /* Keep the schedule when a little late; a sender that fell more than
     * a slot behind does not bank slots for a burst. */
    uint64_t slot = p->next_ns + p->interval_ns > t ? p->next_ns : t;
    p->next_ns = slot + p->interval_ns;
}

void rqa_alt_turn(struct rqa_alt *a, rqa_drain_fn drain, void *arg)
{
    while (a->sent > a->received + a->slack && a->received < a->expected)
        drain(arg);
    a->sent++;
}
