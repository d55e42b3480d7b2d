/* am-after-delivery-2026-11-27.c - the one-way time of an 8-byte active
 * message and of an rqtag message beside the two-line floor, alternated
 * in one run, kept for docs/tag.md and src/progress/poll.c (the lane's
 * next packet looked for in a branch of its own after a delivery).  Each
 * of 9 repetitions: 20 000 round trips of (1) two plain lines in rank 1's
 * segment, one per direction (no librq code: the floor of any pair of
 * queues), (2) rq_request ping-pong, each side waiting by rq_poll, (3)
 * rq_tsend / rq_trecv ping-pong; medians of the 9, ns one-way.  A/B:
 * run the same binary with LD_LIBRARY_PATH at each librq build.
 *
 *   cc -O2 -I include -I build/include -I tag/include \
 *      am-after-delivery-2026-11-27.c -L build -L build/tag -lrqtag -lrq \
 *      -Wl,-rpath,$PWD/build:$PWD/build/tag -o after
 *   rqrun -n 2 --bind core ./after
 */
#define _GNU_SOURCE
#include <rq.h>
#include <rqtag.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile uint64_t counted;
static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a)
{ (void)c, (void)m, (void)a; __atomic_store_n(&counted, counted + 1, __ATOMIC_RELEASE); }
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc, char **argv)
{
    rq_ctx_t *ctx; rq_tag_t *tg;
    if (rq_init(&argc, &argv, &ctx) != 0 || rq_size(ctx) < 2) return 1;
    const int me = rq_rank(ctx), n = 20000, reps = argc > 1 ? atoi(argv[1]) : 9;
    rq_handler_register(ctx, 40, on_count, NULL, 0);
    if (rq_tag_open(ctx, 100, &tg) != 0) return 1;
    char *seg = rq_segment_peer(ctx, 1);
    volatile uint64_t *A = (volatile uint64_t *)(seg + 8192), *B = (volatile uint64_t *)(seg + 16384);
    double fl[64], am[64], tg_[64]; uint64_t due = 0, x = 1;
    for (int rep = 0; rep < reps; rep++) {
        rq_barrier(ctx);
        *A = 0; *B = 0;
        rq_barrier(ctx);
        double t0 = now();
        for (uint64_t i = 1; i <= (uint64_t)n; i++) {
            if (me == 0) { __atomic_store_n(A, i, __ATOMIC_RELEASE); while (__atomic_load_n(B, __ATOMIC_ACQUIRE) != i) ; }
            else if (me == 1) { while (__atomic_load_n(A, __ATOMIC_ACQUIRE) != i) ; __atomic_store_n(B, i, __ATOMIC_RELEASE); }
        }
        fl[rep] = (now() - t0) / n / 2;
        rq_barrier(ctx);
        t0 = now();
        for (int i = 0; i < n && me <= 1; i++) {
            if (me == 0) rq_request(ctx, 1, 40, NULL, 0, NULL, 0, 0);
            ++due;
            while (__atomic_load_n(&counted, __ATOMIC_ACQUIRE) < due) rq_poll(ctx);
            if (me == 1) rq_request(ctx, 0, 40, NULL, 0, NULL, 0, 0);
        }
        am[rep] = (now() - t0) / n / 2;
        rq_barrier(ctx);
        t0 = now();
        for (int i = 0; i < n && me <= 1; i++) {
            if (me == 0) rq_tsend(tg, 1, 1, &x, 8);
            rq_trecv(tg, 1 - me, 1, RQ_TAG_ALL, &x, 8, NULL);
            if (me == 1) rq_tsend(tg, 0, 1, &x, 8);
        }
        tg_[rep] = (now() - t0) / n / 2;
    }
    if (me == 0) {
        qsort(fl, reps, 8, cmpd); qsort(am, reps, 8, cmpd); qsort(tg_, reps, 8, cmpd);
        printf("MEDIAN floor %.1f am %.1f tag %.1f\n", fl[reps/2], am[reps/2], tg_[reps/2]);
    }
    rq_tag_close(tg);
    rq_finalize(ctx);
    return 0;
}
