/* lane-send-2026-11-28.c - the context lock's cost per message between
 * two threads of one rank, kept for docs/benchmarks-log.md: one rank sends
 * to itself in thread-safe mode, (1) one thread sends 64 requests then
 * polls them, (2) thread B (CPU 0) sends while thread A (CPU 1) polls and
 * runs the handlers (B keeps at most 256 in flight).  In (2) every send
 * took the context lock that A's polls hold: the lock's line, and its
 * bias, went from core to core per message.  ns a message, medians of
 * 7 x N (default 400 000).
 *
 *   cc -O2 -I include -I build/include lane-send-2026-11-28.c -L build -lrq \
 *      -lpthread -Wl,-rpath,$PWD/build -o lane-send
 *   RQ_THREAD_SAFE=1 rqrun -n 1 ./lane-send [N]
 */
#define _GNU_SOURCE
#include <rq.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static _Atomic uint64_t got;
static atomic_int stop;
static rq_ctx_t *ctx;
static void on_am(rq_ctx_t *c, const rq_msg_t *m, void *a){(void)c,(void)m,(void)a; atomic_store_explicit(&got, atomic_load_explicit(&got, memory_order_relaxed)+1, memory_order_release);}
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static void *poller(void *a){(void)a; cpu_set_t s; CPU_ZERO(&s); CPU_SET(1,&s); pthread_setaffinity_np(pthread_self(),sizeof s,&s);
  while(!atomic_load(&stop)) rq_poll(ctx); return NULL;}
int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &ctx) != 0) return 1;
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(0,&s); pthread_setaffinity_np(pthread_self(),sizeof s,&s);
    rq_handler_register(ctx, 40, on_am, NULL, 0);
    const int n = argc > 1 ? atoi(argv[1]) : 400000, reps = 7; double one[16], two[16];
    for (int r = 0; r < reps; r++) {
        double t0 = now(); uint64_t base = atomic_load(&got);
        for (int i = 0; i < n; i += 64) { for (int j = 0; j < 64; j++) rq_request(ctx, 0, 40, NULL, 0, NULL, 0, 0);
            while (atomic_load(&got) < base + i + 64) rq_poll(ctx); }
        one[r] = (now() - t0) / n;
        pthread_t th; atomic_store(&stop, 0); pthread_create(&th, NULL, poller, NULL);
        base = atomic_load(&got); t0 = now();
        for (int i = 0; i < n; i++) { rq_request(ctx, 0, 40, NULL, 0, NULL, 0, 0);
            while ((int64_t)(base + i + 1 - atomic_load_explicit(&got, memory_order_acquire)) > 256) ; }
        while (atomic_load(&got) < base + n) ;
        two[r] = (now() - t0) / n; 
        atomic_store(&stop, 1); pthread_join(th, NULL);
    }
    qsort(one, reps, sizeof one[0], cmpd); qsort(two, reps, sizeof two[0], cmpd);
    printf("one thread send+poll %.1f ns/msg; sender + poller threads %.1f ns/msg (ratio %.2f)\n", one[reps/2], two[reps/2], one[reps/2]/two[reps/2]);
    rq_finalize(ctx); return 0;
}
