/* after_death - the results after a rank died are the same under every
 * strategy and transport: every global-address operation returns
 * RQ_EPEER, on live ranks and on one's own segment too.  Also the thread
 * rules: rq_store_sync from a handler returns RQ_EPERM.
 * The last rank exits with status 3 once the others have left a barrier;
 * they ignore rqrun's SIGTERM long enough to check (RQ_KILL_GRACE_MS). */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <rq.h>

#include "check.h"

enum { H_PROBE = 1, H_LEFT = 2 };
static uint64_t probed, left;

static void on_left(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    left++;
}

static void on_probe(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)m;
    (void)a;
    CHECK_EQ(rq_store_sync(c, 0), RQ_EPERM);
    CHECK_EQ(rq_store_sync(c, 8), RQ_EPERM);
    CHECK_EQ(rq_all_store_sync(c), RQ_EPERM);
    probed++;
}

int main(int argc, char **argv)
{
    signal(SIGTERM, SIG_IGN);
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    int me = rq_rank(ctx), n = rq_size(ctx);
    CHECK(n >= 3);
    CHECK_EQ(rq_handler_register(ctx, H_PROBE, on_probe, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_LEFT, on_left, NULL, 0), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_request(ctx, me, H_PROBE, NULL, 0, NULL, 0, 0), 0);
    CHECK_EQ(rq_wait_until(ctx, &probed, 1), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    /* A barrier's return on one rank does not mean every rank has left it:
     * a rank may still wait for its last round's message from a live peer
     * and would see the death first.  The last rank dies only once every
     * other rank has said it is out. */
    if (me == n - 1) {
        CHECK_EQ(rq_wait_until(ctx, &left, (uint64_t)(n - 1)), 0);
        _exit(3);
    }
    CHECK_EQ(rq_request(ctx, n - 1, H_LEFT, NULL, 0, NULL, 0, 0), 0);
    uint64_t never = 0, v = 0;
    CHECK_EQ(rq_wait_until(ctx, &never, 1), RQ_EPEER);
    int peers[2] = {me, (me + 1) % (n - 1)}; /* ourselves, a live rank */
    for (int i = 0; i < 2; i++) {
        int r = peers[i];
        CHECK_EQ(rq_put(ctx, r, 0, &v, 8, 0), RQ_EPEER);
        CHECK_EQ(rq_get(ctx, &v, r, 0, 8, 0), RQ_EPEER);
        CHECK_EQ(rq_store(ctx, r, 0, &v, 8, 0), RQ_EPEER);
        CHECK_EQ(rq_read(ctx, &v, r, 0, 8), RQ_EPEER);
        CHECK_EQ(rq_write(ctx, r, 0, &v, 8), RQ_EPEER);
        CHECK_EQ(rq_put_strided(ctx, r, 0, 16, &v, 8, 8, 1, 0), RQ_EPEER);
        CHECK_EQ(rq_get_strided(ctx, &v, 8, r, 0, 16, 8, 1, 0), RQ_EPEER);
        CHECK_EQ(rq_amo(ctx, r, 0, RQ_AMO_FADD, 1, 0, &v), RQ_EPEER);
        /* arguments are still checked first */
        CHECK_EQ(rq_amo(ctx, r, 3, RQ_AMO_FADD, 1, 0, &v), RQ_EINVAL);
    }
    CHECK_EQ(rq_sync(ctx), RQ_EPEER);
    CHECK_EQ(rq_store_sync(ctx, 8), RQ_EPEER);
    printf("after_death: rank %d: every global-address operation RQ_EPEER: ok\n", me);
    fflush(stdout);
    CHECK_EQ(rq_finalize(ctx), RQ_EPEER);
    return 0;
}
