/* dsm_counter - fine-grain shared memory with rqdsm: rank 0 creates a
 * region holding one counter, every rank maps it and adds its rank + 1
 * under a write section, 100 times; rank 0 then reads the sum in a read
 * section and checks it.
 *   rqrun -n 4 ./dsm_counter */
#include <stdio.h>

#include <rq.h>
#include <rqdsm.h>

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    rqdsm_t *dsm;
    if (rq_init(&argc, &argv, &ctx) != 0 || rqdsm_init(ctx, NULL, &dsm) != 0)
        return 1;
    const int me = rq_rank(ctx), n = rq_size(ctx);
    rqdsm_rid_t rid = 0;
    if (me == 0 && rqdsm_create(dsm, sizeof(uint64_t), &rid) != 0)
        return 1;
    rq_broadcast(ctx, 0, &rid, sizeof rid); /* the region's name, to everyone */
    rqdsm_region_t *r;
    if (rqdsm_map(dsm, rid, &r) != 0)
        return 1;
    uint64_t *counter = rqdsm_ptr(r);
    for (int i = 0; i < 100; i++) {
        rqdsm_start_write(r, 0, sizeof *counter); /* fetches the block, exclusive */
        *counter += (uint64_t)me + 1;
        rqdsm_end_write(r, 0, sizeof *counter);
    }
    rq_barrier(ctx);
    int ok = 1;
    if (me == 0) {
        rqdsm_start_read(r, 0, sizeof *counter);
        const uint64_t want = 100ull * (uint64_t)n * (uint64_t)(n + 1) / 2;
        ok = *counter == want;
        printf("dsm_counter: %d ranks, counter %llu (expected %llu): %s\n", n,
               (unsigned long long)*counter, (unsigned long long)want, ok ? "ok" : "WRONG");
        rqdsm_end_read(r, 0, sizeof *counter);
    }
    rqdsm_unmap(r);
    rqdsm_finalize(dsm);
    rq_finalize(ctx);
    return ok ? 0 : 1;
}
