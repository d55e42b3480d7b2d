/* pdq-help-stamp-2026-11-27.c - what an idle rq_pdq_help costs beside an
 * idle rq_poll, kept for docs/pdq.md (a helper reads the cycle counter
 * only every few calls while its calls are dense).  One rank opens a
 * multiplexed PDQ with one fallback thread, then three times: 5 M
 * rq_pdq_help(pdq, 16) calls in a row, then 5 M rq_poll calls; ns a call.
 * A/B: run the same binary with LD_LIBRARY_PATH at each librq build.
 *
 *   cc -O2 -I include -I build/include pdq-help-stamp-2026-11-27.c \
 *      -L build -lrq -Wl,-rpath,$PWD/build -o help-stamp
 *   rqrun -n 1 ./help-stamp
 */
#include <rq.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(int argc, char **argv)
{
    rq_ctx_t *ctx; rq_pdq_t *pq;
    if (rq_init(&argc, &argv, &ctx) != 0) return 1;
    rq_pdq_attr_t at = {1, RQ_PDQ_MULTIPLEXED, 0};
    if (rq_pdq_open(ctx, 1, &at, &pq) != 0) return 2;
    const int n = 5000000;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        for (int i = 0; i < n; i++) rq_pdq_help(pq, 16);
        double t1 = now();
        for (int i = 0; i < n; i++) rq_poll(ctx);
        double t2 = now();
        if (rq_rank(ctx) == 0) printf("empty help %.1f ns, empty poll %.1f ns\n", (t1-t0)/n, (t2-t1)/n);
    }
    rq_barrier(ctx);
    rq_pdq_close(pq);
    rq_finalize(ctx);
    return 0;
}
