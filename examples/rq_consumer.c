/* rq_consumer - the RQ paper's "inlined polling" (Figure 10): rank 0
 * dequeues from a named queue in a tight loop and processes each item
 * inline, with no handler dispatch; the other ranks enqueue into it.
 *   rqrun -n 3 ./rq_consumer [items-per-producer] */
#include <stdio.h>
#include <stdlib.h>

#include <rq.h>

#define WORK_Q 1

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    long items = argc > 1 ? atol(argv[1]) : 100000;
    int me = rq_rank(ctx), n = rq_size(ctx);
    int rc = 0;
    if (me == 0) {
        rq_queue_open(ctx, WORK_Q);
        uint64_t expect = (uint64_t)items * (uint64_t)(n - 1), done = 0, sum = 0;
        while (done < expect) {
            uint64_t a[2];
            int got = rq_dequeue(ctx, WORK_Q, a, 2, NULL, 0); /* inline: no handler */
            if (got == 1) {
                sum += a[1];
                done++;
            } else if (got == 0) {
                rq_poll(ctx); /* nothing queued: let other traffic through */
            } else {
                rc = 1;
                break;
            }
        }
        uint64_t want = (uint64_t)(n - 1) * (uint64_t)items * (uint64_t)(items - 1) / 2;
        printf("consumer: %llu items, checksum %s\n", (unsigned long long)done,
               sum == want ? "ok" : "WRONG");
        rc |= sum != want;
    } else {
        for (long i = 0; i < items; i++) {
            uint64_t a[2] = {(uint64_t)me, (uint64_t)i};
            if (rq_enqueue(ctx, 0, WORK_Q, 7, a, 2, NULL, 0, 0) != 0) {
                rc = 1;
                break;
            }
        }
    }
    rq_finalize(ctx);
    return rc;
}
