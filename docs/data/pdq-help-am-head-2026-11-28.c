/* pdq-help-am-head-2026-11-28.c - what rq_pdq_help costs while an active
 * message waits unpolled at the head of a lane, kept for docs/pdq.md.  Two
 * ranks open a multiplexed PDQ; rank 0 calls rq_pdq_help(pdq, 16) 7 x 2 M
 * times with the lanes empty, then again after rank 1 sent it an active
 * message it does not poll for.  Medians, ns a call.
 *
 *   cc -O2 -I include -I build/include pdq-help-am-head-2026-11-28.c \
 *      -L build -lrq -Wl,-rpath,$PWD/build -o pdq-help-am-head
 *   rqrun -n 2 --bind core ./pdq-help-am-head
 */
#define _GNU_SOURCE
#include <rq.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile int got;
static void on_am(rq_ctx_t *c, const rq_msg_t *m, void *a){(void)c,(void)m,(void)a; got++;}
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc, char **argv)
{
    rq_ctx_t *ctx; rq_pdq_t *pq;
    if (rq_init(&argc, &argv, &ctx) != 0) return 1;
    rq_handler_register(ctx, 40, on_am, NULL, 0);
    rq_pdq_attr_t at = {1, RQ_PDQ_MULTIPLEXED, 0};
    if (rq_pdq_open(ctx, 1, &at, &pq) != 0) return 2;
    rq_barrier(ctx);
    const int n = 2000000, reps = 7; double idle[8], head[8];
    if (rq_rank(ctx) == 0) {
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            for (int i = 0; i < n; i++) rq_pdq_help(pq, 16);
            idle[r] = (now() - t0) / n;
        }
    }
    rq_barrier(ctx);
    if (rq_rank(ctx) == 1) rq_request(ctx, 0, 40, NULL, 0, NULL, 0, 0);
    if (rq_rank(ctx) == 0) {
        double t = now(); while (now() - t < 2e6) ;  /* let it land */
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            for (int i = 0; i < n; i++) rq_pdq_help(pq, 16);
            head[r] = (now() - t0) / n;
        }
        qsort(idle, reps, sizeof idle[0], cmpd); qsort(head, reps, sizeof head[0], cmpd);
        printf("rq_pdq_help: lanes empty %.1f ns, an active message at a head %.1f ns (handled %d)\n", idle[reps/2], head[reps/2], got);
        while (!got) rq_poll(ctx);
    }
    rq_barrier(ctx);
    rq_pdq_close(pq); rq_finalize(ctx); return 0;
}
