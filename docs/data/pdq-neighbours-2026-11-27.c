/* pdq-neighbours-2026-11-27.c - the backlog shape of `rqbench pdq` (0 ns,
 * uniform keys) with the handlers' per-key state laid out in three ways,
 * kept for docs/pdq.md, "Neighbouring lines".
 *
 * One rank queues n keyed messages to itself behind a RQ_KEY_SEQUENTIAL
 * gate, then T PDQ threads drain them; each handler adds to its key's
 * counter and updates the key's 64 B of state, at STRIDE words apart
 * (8: neighbours, the old rqbench layout; 32: 256 B apart).  SPLIT=1
 * puts the keys of the PDQ's two shards (bucket mod 2) in two halves
 * instead.  Prints ns per message of each repetition.
 *
 *   cc -O2 -DSTRIDE=8 -I include -I build/include pdq-neighbours-2026-11-27.c \
 *      -L build -lrq -Wl,-rpath,$PWD/build -pthread -o nb8
 *   ./nb8 2 20000 20      (threads, messages, repetitions)
 */
#define _GNU_SOURCE
#include <rq.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef STRIDE
#define STRIDE 8
#endif
enum { NK = 1024, QID = 6, H_FAA = 70, H_GATE = 71 };

static uint64_t state[NK * 64] __attribute__((aligned(4096)));
static unsigned place[NK];
static _Atomic int gate_in, gate_open;
static struct { _Alignas(256) _Atomic uint64_t done; } slots[64];
static _Atomic unsigned nslots;
static _Thread_local int me = -1;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void on_faa(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)a;
    if (me < 0)
        me = (int)atomic_fetch_add(&nslots, 1) % 64;
    uint64_t *s = state + place[m->args[0] % NK] * STRIDE;
    s[0] += m->args[1];
    for (int i = 1; i < 8; i++)
        s[i] = s[i] * 3 + 1;
    atomic_store_explicit(&slots[me].done, atomic_load_explicit(&slots[me].done, memory_order_relaxed) + 1,
                          memory_order_release);
}

static void on_gate(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)m, (void)a;
    atomic_store(&gate_in, 1);
    while (!atomic_load(&gate_open))
        sched_yield();
}

static uint64_t total(void)
{
    uint64_t n = 0;
    for (int i = 0; i < 64; i++)
        n += atomic_load(&slots[i].done);
    return n;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (argc < 3 || rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    const unsigned threads = (unsigned)atoi(argv[1]);
    const size_t n = strtoul(argv[2], NULL, 0);
    const int reps = argc > 3 ? atoi(argv[3]) : 5;
    unsigned half[2] = {0, NK / 2};
    for (unsigned k = 0; k < NK; k++) /* the PDQ's bucket of k, mod 2 */
        place[k] = getenv("SPLIT") ? half[((k * 0x9E3779B97F4A7C15ull) >> 54) % 2]++ : k;
    rq_handler_register(ctx, H_FAA, on_faa, NULL, 0);
    rq_handler_register(ctx, H_GATE, on_gate, NULL, 0);
    rq_pdq_attr_t at = {threads, RQ_PDQ_DEDICATED, 0};
    rq_pdq_t *q;
    if (rq_pdq_open(ctx, QID, &at, &q) != 0)
        return 1;
    uint64_t x = 88172645463325252ull;
    for (int r = 0; r < reps; r++) {
        atomic_store(&gate_in, 0);
        atomic_store(&gate_open, 0);
        rq_pdq_enqueue(ctx, 0, QID, RQ_KEY_SEQUENTIAL, H_GATE, NULL, 0, NULL, 0, 0);
        while (!atomic_load(&gate_in))
            sched_yield();
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint64_t a[2] = {x % NK, 1};
            while (rq_pdq_enqueue(ctx, 0, QID, a[0], H_FAA, a, 2, NULL, 0, 0) != 0)
                rq_poll(ctx);
        }
        rq_poll(ctx);
        const uint64_t base = total(), t0 = now_ns();
        atomic_store(&gate_open, 1);
        while (total() - base < n) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
        printf("T%u stride %d%s: %.1f ns/msg\n", threads, STRIDE, getenv("SPLIT") ? " split" : "",
               (double)(now_ns() - t0) / (double)n);
    }
    rq_pdq_close(q);
    return rq_finalize(ctx) == 0 ? 0 : 1;
}
