/* gas_np_progress - under the np strategy a rank that computes outside
 * librq still has its global-address requests served: by its network
 * processor, whether that thread has a core of its own (woken by the
 * requests) or shares its rank's (RQ_NP_CORE=shared: it wakes on its
 * tick).  Every rank but 0 spins on a word of its own segment without
 * calling librq until rank 0 has, for each of them and ITER rounds, put
 * the round number there (rq_sync waits for the target's ack), read it
 * back with rq_get and added 1 to a counter beside it with rq_amo; then
 * every value is checked.  A network processor that never serves hangs
 * the job (the test's timeout), one that serves wrongly fails a check.
 *
 *   gas_np_progress [ITER]     default 50 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "check.h"

enum { WORD = 0, COUNTER = 64 };

int main(int argc, char **argv)
{
    rq_ctx_t *ctx = NULL;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    const long iter = argc > 1 ? strtol(argv[1], NULL, 10) : 50;
    CHECK(iter > 0 && iter < 1000000);
    const int me = rq_rank(ctx), n = rq_size(ctx);
    char *seg;
    size_t size;
    CHECK_EQ(rq_segment(ctx, (void **)&seg, &size), 0);
    memset(seg, 0, 128);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 0) {
        for (uint64_t i = 1; i <= (uint64_t)iter; i++) {
            for (int r = 1; r < n; r++) {
                uint64_t back = 0, old = 0;
                CHECK_EQ(rq_put(ctx, r, WORD, &i, 8, 0), 0);
                CHECK_EQ(rq_sync(ctx), 0);
                CHECK_EQ(rq_get(ctx, &back, r, WORD, 8, 0), 0);
                CHECK_EQ(rq_sync(ctx), 0);
                CHECK_EQ(back, i);
                CHECK_EQ(rq_amo(ctx, r, COUNTER, RQ_AMO_FADD, 1, 0, &old), 0);
                CHECK_EQ(old, i - 1);
            }
        }
    } else {
        /* Computing: no librq call until the last round's word is here
         * (the put, then the get and the AMO that follow it). */
        volatile uint64_t *word = (volatile uint64_t *)(seg + WORD);
        volatile uint64_t *counter = (volatile uint64_t *)(seg + COUNTER);
        while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != (uint64_t)iter ||
               __atomic_load_n(counter, __ATOMIC_ACQUIRE) != (uint64_t)iter)
            ; /* a computing rank: no librq call */
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me != 0) {
        uint64_t w, c;
        memcpy(&w, seg + WORD, 8);
        memcpy(&c, seg + COUNTER, 8);
        CHECK_EQ(w, iter);
        CHECK_EQ(c, iter);
    }
    rq_stats_t st;
    CHECK_EQ(rq_stats(ctx, &st), 0);
    CHECK_EQ(st.rejected, 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("gas_np_progress: %d ranks, %ld rounds: ok\n", n, iter);
    return 0;
}
