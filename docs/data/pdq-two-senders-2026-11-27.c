/* pdq-two-senders-2026-11-27.c - two senders into one rank: ranks 1 and 2 stream n keyed messages each to rank 0;
 * rank 0 runs them with rq_poll (AM) or a dedicated PDQ of T threads. Mmsg/s, medians of 5.
 *   cc -O2 -I include -I build/include pdq-two-senders-2026-11-27.c -L build -lrq \
 *      -Wl,-rpath,$PWD/build -o two2one;  rqrun -n 3 ./two2one T 100000
 * (docs/benchmarks-log.md, "Neighbouring lines"). */
#define _GNU_SOURCE
#include <rq.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
enum { NK = 1024, QID = 6, H = 70 };
static uint64_t state[NK * 32] __attribute__((aligned(4096)));
static struct { _Alignas(256) _Atomic uint64_t n; } cnt[64];
static _Atomic unsigned ns; static _Thread_local int me = -1;
static void on_faa(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c, (void)a;
  if (me < 0) me = (int)atomic_fetch_add(&ns, 1) % 64;
  state[(m->args[0] % NK) * 32] += m->args[1];
  atomic_store_explicit(&cnt[me].n, atomic_load_explicit(&cnt[me].n, memory_order_relaxed) + 1, memory_order_release); }
static uint64_t total(void) { uint64_t t = 0; for (int i = 0; i < 64; i++) t += atomic_load(&cnt[i].n); return t; }
static uint64_t now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
  rq_ctx_t *ctx; if (rq_init(&argc, &argv, &ctx)) return 1;
  const int r = rq_rank(ctx); const unsigned T = (unsigned)atoi(argv[1]); const size_t n = strtoul(argv[2], 0, 0);
  rq_handler_register(ctx, H, on_faa, NULL, 0);
  rq_pdq_t *q = NULL; if (r == 0) { rq_pdq_attr_t at = {T, RQ_PDQ_DEDICATED, 0}; if (rq_pdq_open(ctx, QID, &at, &q)) return 1; }
  double res[2][5];
  for (int rep = 0; rep < 10; rep++) {
    const int pdq = rep % 2; uint64_t base = total();
    rq_barrier(ctx); uint64_t t0 = now();
    if (r > 0) { uint64_t x = 88172645463325252ull * (uint64_t)r;
      for (size_t i = 0; i < n; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; uint64_t a[2] = {x % NK, 1};
        if (pdq) rq_pdq_enqueue(ctx, 0, QID, a[0], H, a, 2, NULL, 0, 0); else rq_request(ctx, 0, H, a, 2, NULL, 0, 0); } }
    else if (pdq) { while (total() - base < 2 * n) { struct timespec ts = {0, 100000}; nanosleep(&ts, 0); } }
    else { while (total() - base < 2 * n) rq_poll(ctx); }
    if (r == 0) res[pdq][rep / 2] = 2.0 * n / (double)(now() - t0) * 1e3;
    rq_barrier(ctx); }
  if (r == 0) { qsort(res[0], 5, sizeof(double), cmp); qsort(res[1], 5, sizeof(double), cmp);
    printf("T%u: rq_poll %.1f Mmsg/s, PDQ %.1f, PDQ/rq_poll %.2f\n", T, res[0][2], res[1][2], res[1][2] / res[0][2]); rq_pdq_close(q); }
  return rq_finalize(ctx) ? 1 : 0; }
