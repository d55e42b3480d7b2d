/* pdq-hop-2026-11-28.c - one message's trip through a PDQ to a waiting
 * helper, beside an active message's, kept for docs/pdq.md.  Two ranks
 * open a PDQ (mode and threads from argv); 9 repetitions of 20 000 round
 * trips of (1) rq_request ping-pong, the replying handler on rank 1, each
 * side waiting by rq_poll, (2) rq_pdq_enqueue ping-pong (keys 0..63), the
 * replying PDQ handler on rank 1; rank 0 waits for the reply, rank 1
 * serves until told to stop, both by the loop `help` names: 1 = as
 * rqdsm_wait_step (rq_pdq_help, rq_poll when it ran nothing), 2 = helping
 * only (rq_poll one empty help in 64), 0 = rq_poll only.  Medians, ns
 * one-way.
 *
 *   cc -O2 -I include -I build/include pdq-hop-2026-11-28.c \
 *      -L build -lrq -Wl,-rpath,$PWD/build -o pdq-hop
 *   rqrun -n 2 --bind core ./pdq-hop MODE THREADS HELP   (MODE 1 dedicated, 2 multiplexed)
 */
#define _GNU_SOURCE
#include <rq.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile uint64_t got;
static rq_pdq_t *pq;
static volatile uint64_t stop;
static void on_stop(rq_ctx_t *c, const rq_msg_t *m, void *a){(void)c,(void)m,(void)a; __atomic_store_n(&stop, stop+1, __ATOMIC_RELEASE);}
static void on_am(rq_ctx_t *c, const rq_msg_t *m, void *a)
{ (void)a; if (rq_rank(c) == 1) rq_request(c, m->src, 40, NULL, 0, NULL, 0, 0); else __atomic_store_n(&got, got + 1, __ATOMIC_RELEASE); }
static void on_pdq(rq_ctx_t *c, const rq_msg_t *m, void *a)
{ (void)a; if (rq_rank(c) == 1) rq_pdq_enqueue(c, m->src, 1, m->key, 41, NULL, 0, NULL, 0, 0);
  else __atomic_store_n(&got, got + 1, __ATOMIC_RELEASE); }
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0) return 1;
    int mode = atoi(argv[1]), th = atoi(argv[2]), help = atoi(argv[3]);
    const int me = rq_rank(ctx), n = 20000, reps = 9;
    rq_handler_register(ctx, 40, on_am, NULL, 0);
    rq_handler_register(ctx, 41, on_pdq, NULL, 0);
    rq_handler_register(ctx, 42, on_stop, NULL, 0);
    rq_pdq_attr_t at = {th, mode, 0};
    if (rq_pdq_open(ctx, 1, &at, &pq) != 0) return 2;
    double am[16], pd[16]; unsigned spin = 0;
    for (int r = 0; r < reps; r++) {
        rq_barrier(ctx);
        uint64_t base = got; double t0 = now();
        if (me == 0) for (int i = 0; i < n; i++) {
            rq_request(ctx, 1, 40, NULL, 0, NULL, 0, 0);
            while (__atomic_load_n(&got, __ATOMIC_ACQUIRE) < base + i + 1) rq_poll(ctx);
        }
        am[r] = (now() - t0) / n / 2;
        rq_barrier(ctx);
        base = got; t0 = now();
        if (me == 0) for (int i = 0; i < n; i++) {
            rq_pdq_enqueue(ctx, 1, 1, (uint64_t)i & 63, 41, NULL, 0, NULL, 0, 0);
            while (__atomic_load_n(&got, __ATOMIC_ACQUIRE) < base + i + 1) {
                if (help == 2) { if (rq_pdq_help(pq, 64) == 0 && (++spin & 63) == 0) rq_poll(ctx); } else if (!help || rq_pdq_help(pq, 64) == 0) rq_poll(ctx);
            }
        }
        if (me == 0) rq_request(ctx, 1, 42, NULL, 0, NULL, 0, 0);
        if (me == 1) {
            while (__atomic_load_n(&stop, __ATOMIC_ACQUIRE) <= (uint64_t)r) {
                if (help == 2) { if (rq_pdq_help(pq, 64) == 0 && (++spin & 63) == 0) rq_poll(ctx); } else if (!help || rq_pdq_help(pq, 64) == 0) rq_poll(ctx);
            }
        }
        pd[r] = (now() - t0) / n / 2;
        rq_barrier(ctx);
    }
    qsort(am, reps, sizeof *am, cmpd); qsort(pd, reps, sizeof *pd, cmpd);
    if (me == 0) printf("mode %d threads %d help %d: AM %.0f ns one-way, PDQ %.0f ns one-way\n", mode, th, help, am[reps/2], pd[reps/2]);
    rq_pdq_close(pq);
    rq_finalize(ctx);
    return 0;
}
