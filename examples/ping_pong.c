#define _POSIX_C_SOURCE 200809L
/* ping_pong - rank 0 and rank 1 bounce a short active message; prints the
 * one-way latency (round trip / 2).
 *   rqrun -n 2 --bind core ./ping_pong [iterations] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rq.h>

enum { H_PING };
static volatile uint64_t got;

static void ping(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)m;
    (void)arg;
    got++;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    if (rq_size(ctx) != 2) {
        if (rq_rank(ctx) == 0)
            fprintf(stderr, "ping_pong needs 2 ranks: rqrun -n 2 ./ping_pong\n");
        rq_finalize(ctx);
        return 1;
    }
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    int me = rq_rank(ctx), peer = 1 - me;
    rq_handler_register(ctx, H_PING, ping, NULL, 0);
    rq_barrier(ctx);
    double t0 = now();
    for (long i = 0; i < iters; i++) {
        if (me == 0) {
            rq_request(ctx, peer, H_PING, NULL, 0, NULL, 0, 0);
            rq_wait_until(ctx, &got, (uint64_t)i + 1);
        } else {
            rq_wait_until(ctx, &got, (uint64_t)i + 1);
            rq_request(ctx, peer, H_PING, NULL, 0, NULL, 0, 0);
        }
    }
    double t = now() - t0;
    if (me == 0)
        printf("short AM one-way latency: %.1f ns (%ld round trips)\n", t / (double)iters / 2 * 1e9,
               iters);
    rq_finalize(ctx);
    return 0;
}
