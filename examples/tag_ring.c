/* tag_ring - tagged two-sided messages with rqtag: every rank sends a
 * token around the ring (tag = the lap), and receives from any source the
 * token of the lap it expects; rank 0 checks the sum after the last lap.
 *   rqrun -n 4 ./tag_ring */
#include <stdint.h>
#include <stdio.h>

#include <rq.h>
#include <rqtag.h>

#define LAPS 100

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    rq_tag_t *t;
    if (rq_init(&argc, &argv, &ctx) != 0 || rq_tag_open(ctx, 0, &t) != 0)
        return 1;
    const int me = rq_rank(ctx), n = rq_size(ctx);
    uint64_t token = 0;
    for (uint64_t lap = 0; lap < LAPS; lap++) {
        if (me == 0) { /* rank 0 starts each lap and gets it back */
            token += 1;
            if (rq_tsend(t, 1 % n, lap, &token, sizeof token) != 0)
                return 1;
        }
        rq_tstatus_t st;
        if (rq_trecv(t, RQ_TAG_ANY_SOURCE, lap, RQ_TAG_ALL, &token, sizeof token, &st) != 0 ||
            st.source != (me + n - 1) % n)
            return 1;
        if (me != 0) {
            token += (uint64_t)me;
            if (rq_tsend(t, (me + 1) % n, lap, &token, sizeof token) != 0)
                return 1;
        }
    }
    /* Each lap adds 1 + (1 + ... + n-1). */
    const uint64_t want = (uint64_t)LAPS * (1 + (uint64_t)n * (uint64_t)(n - 1) / 2);
    if (me == 0)
        printf("tag_ring: %d ranks, token %llu (expected %llu): %s\n", n, (unsigned long long)token,
               (unsigned long long)want, token == want ? "ok" : "WRONG");
    int ok = me != 0 || token == want;
    rq_tag_close(t);
    rq_finalize(ctx);
    return ok ? 0 : 1;
}
