/* pdq-help-spaced-2026-11-28.c - rq_pdq_help called between short
 * stretches of work, as rqdsm's multiplexed thread calls it between
 * sections, kept for docs/pdq.md: one rank, a multiplexed PDQ with
 * nothing to run; 7 x 2 M iterations of W steps of integer work, alone
 * and with an rq_pdq_help(pdq, 16) after each; the help's cost is the
 * difference.  Medians, ns.
 *
 *   cc -O2 -I include -I build/include pdq-help-spaced-2026-11-28.c \
 *      -L build -lrq -Wl,-rpath,$PWD/build -o pdq-help-spaced
 *   rqrun -n 1 --bind core ./pdq-help-spaced W   (40: ~70 ns of work, 100: ~170)
 */
#define _GNU_SOURCE
#include <rq.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static volatile unsigned sink;
static void work(unsigned n){ unsigned x = sink; for (unsigned i = 0; i < n; i++) x = x * 1103515245u + 12345u; sink = x; }
int main(int argc, char **argv)
{
    rq_ctx_t *ctx; rq_pdq_t *pq;
    if (rq_init(&argc, &argv, &ctx) != 0) return 1;
    unsigned w = argc > 1 ? (unsigned)atoi(argv[1]) : 40;
    rq_pdq_attr_t at = {1, RQ_PDQ_MULTIPLEXED, 0};
    if (rq_pdq_open(ctx, 1, &at, &pq) != 0) return 2;
    const int n = 2000000, reps = 7; double a[8], b[8];
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int i = 0; i < n; i++) work(w);
        a[r] = (now() - t0) / n;
        t0 = now();
        for (int i = 0; i < n; i++) { work(w); rq_pdq_help(pq, 16); }
        b[r] = (now() - t0) / n;
    }
    qsort(a, reps, sizeof a[0], cmpd); qsort(b, reps, sizeof b[0], cmpd);
    printf("work %u: alone %.1f ns, with a help after each %.1f ns: the help %.1f ns\n", w, a[reps/2], b[reps/2], b[reps/2] - a[reps/2]);
    rq_pdq_close(pq); rq_finalize(ctx); return 0;
}
