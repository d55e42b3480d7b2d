/* pdq-self-2026-11-28.c - the serial part of one PDQ message on one
 * core, kept for docs/pdq.md: one rank sends to itself and waits, 7 x
 * 200 000 times, (1) an rq_request whose handler rq_poll runs, (2) an
 * rq_pdq_enqueue (keys 0..63) that rq_pdq_help runs (a helper's direct
 * run: the intake, the key's claim and release, the done count).  No
 * line crosses a core: what is left is instructions and locked ones.
 * Medians, ns a message.
 *
 *   cc -O2 -I include -I build/include pdq-self-2026-11-28.c \
 *      -L build -lrq -Wl,-rpath,$PWD/build -o pdq-self
 *   rqrun -n 1 --bind core ./pdq-self MODE THREADS   (MODE 1 dedicated, 2 multiplexed)
 */
#define _GNU_SOURCE
#include <rq.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile uint64_t got;
static void on_am(rq_ctx_t *c, const rq_msg_t *m, void *a){(void)c,(void)m,(void)a; got++;}
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc, char **argv)
{
    rq_ctx_t *ctx; rq_pdq_t *pq;
    if (rq_init(&argc, &argv, &ctx) != 0) return 1;
    int mode = atoi(argv[1]), th = atoi(argv[2]), which = argc > 3 ? atoi(argv[3]) : 3;
    rq_handler_register(ctx, 40, on_am, NULL, 0);
    rq_pdq_attr_t at = {th, mode, 0};
    if (rq_pdq_open(ctx, 1, &at, &pq) != 0) return 2;
    const int n = 200000, reps = 7; double am[16], pd[16];
    for (int r = 0; r < reps; r++) {
        double t0 = now(); uint64_t base = got;
        if (which & 1) for (int i = 0; i < n; i++) { rq_request(ctx, 0, 40, NULL, 0, NULL, 0, 0); while (got < base + i + 1) rq_poll(ctx); }
        am[r] = (now() - t0) / n;
        t0 = now(); base = got;
        if (which & 2) for (int i = 0; i < n; i++) { rq_pdq_enqueue(ctx, 0, 1, (uint64_t)i & 63, 40, NULL, 0, NULL, 0, 0); while (got < base + i + 1) rq_pdq_help(pq, 64); }
        pd[r] = (now() - t0) / n;
    }
    qsort(am, reps, sizeof am[0], cmpd); qsort(pd, reps, sizeof pd[0], cmpd);
    printf("mode %d threads %d: AM self %.1f ns, PDQ self %.1f ns\n", mode, th, am[reps/2], pd[reps/2]);
    rq_pdq_close(pq); rq_finalize(ctx); return 0;
}
