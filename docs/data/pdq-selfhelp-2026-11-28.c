/* pdq-selfhelp-2026-11-28.c - the serial cost of one PDQ message through a multiplexed
 * helper's path on one rank (no line crosses cores): send to self, then
 * rq_pdq_help(q, 1) runs it; beside rq_request to self + rq_poll.  ns per message, medians of 9.
 *   cc -O2 -I include -I build/include docs/data/pdq-selfhelp-2026-11-28.c -L build -lrq \
 *      -Wl,-rpath,$PWD/build -o selfhelp;  RQ_PDQ_FALLBACK_US=60000000 rqrun -n 1 ./selfhelp 300000 */
#define _GNU_SOURCE
#include <rq.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
enum { QID = 6, H = 70 };
static volatile uint64_t sink;
static void on_msg(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c, (void)m, (void)a; sink++; }
static uint64_t now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
  rq_ctx_t *ctx; if (rq_init(&argc, &argv, &ctx)) return 1;
  const size_t n = argc > 1 ? strtoul(argv[1], 0, 0) : 200000;
  rq_handler_register(ctx, H, on_msg, NULL, 0);
  rq_pdq_t *q = NULL; rq_pdq_attr_t at = {1, RQ_PDQ_MULTIPLEXED, 0};
  if (rq_pdq_open(ctx, QID, &at, &q)) return 1;
  rq_pdq_help(q, 0); /* announce a helper: the fallback holds off */
  double res[2][9];
  for (int rep = 0; rep < 18; rep++) {
    const int pdq = rep % 2; uint64_t t0 = now();
    for (size_t i = 0; i < n; i++) { uint64_t a[1] = {i};
      const uint64_t want = sink + 1;
      if (pdq) { rq_pdq_enqueue(ctx, rq_rank(ctx), QID, i & 1023, H, a, 1, NULL, 0, 0); while (sink != want) rq_pdq_help(q, 1); }
      else { rq_request(ctx, rq_rank(ctx), H, a, 1, NULL, 0, 0); while (sink != want) rq_poll(ctx); } }
    res[pdq][rep / 2] = (double)(now() - t0) / (double)n; }
  qsort(res[0], 9, sizeof(double), cmp); qsort(res[1], 9, sizeof(double), cmp);
  printf("self: request+poll %.1f ns, pdq_enqueue+help %.1f ns, extra %.1f\n", res[0][4], res[1][4], res[1][4] - res[0][4]);
  rq_pdq_close(q); return rq_finalize(ctx) ? 1 : 0; }
