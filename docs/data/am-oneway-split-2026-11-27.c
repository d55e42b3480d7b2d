/* am-oneway-split-2026-11-27.c - where a short active message's one-way
 * time goes, kept for docs/tag.md ("what is not met").  A ping-pong of
 * 8-byte requests between ranks 0 and 1 (each waits by rq_poll, then
 * sends the next), timed with the TSC (2.1 GHz on the host measured; one
 * clock for both cores): send -> handler is from the sender's clock read
 * before rq_request to the handler's first instruction on the other rank;
 * handler -> next send from there to the clock read before the reply's
 * rq_request.  5 repetitions of 20 000 round trips.
 *
 *   cc -O2 -I include -I build/include am-oneway-split-2026-11-27.c \
 *      -L build -lrq -Wl,-rpath,$PWD/build -o split
 *   rqrun -n 2 --bind core ./split
 */
#define _GNU_SOURCE
#include <rq.h>
#include <stdio.h>
#include <x86intrin.h>

#define TSC_GHZ 2.1

static volatile uint64_t counted;
static uint64_t send_to_handler, handler_to_send, handlers, t_handler;

static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)a;
    const uint64_t t = __rdtsc();
    send_to_handler += t - m->args[0];
    handlers++;
    t_handler = t;
    __atomic_store_n(&counted, counted + 1, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0 || rq_size(ctx) < 2)
        return 1;
    const int me = rq_rank(ctx), n = 20000;
    rq_handler_register(ctx, 40, on_count, NULL, 0);
    uint64_t due = 0;
    for (int rep = 0; rep < 5; rep++) {
        rq_barrier(ctx);
        send_to_handler = handler_to_send = handlers = 0;
        const uint64_t t0 = __rdtsc();
        for (int i = 0; i < n && me <= 1; i++) {
            if (me == 0) {
                uint64_t x = __rdtsc();
                rq_request(ctx, 1, 40, &x, 1, NULL, 0, 0);
            }
            ++due;
            while (__atomic_load_n(&counted, __ATOMIC_ACQUIRE) < due)
                rq_poll(ctx);
            uint64_t x = __rdtsc();
            handler_to_send += x - t_handler;
            if (me == 1)
                rq_request(ctx, 0, 40, &x, 1, NULL, 0, 0);
        }
        if (me <= 1 && handlers != 0)
            printf("rank %d: one-way %.1f ns; send -> handler %.1f ns; handler -> next send %.1f ns\n",
                   me, (double)(__rdtsc() - t0) / n / 2 / TSC_GHZ,
                   (double)send_to_handler / (double)handlers / TSC_GHZ,
                   (double)handler_to_send / n / TSC_GHZ);
    }
    return rq_finalize(ctx) == 0 ? 0 : 1;
}
