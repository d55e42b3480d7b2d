/* lu - blocked LU factorisation of an n x n matrix on rqdsm (SPLASH-2 LU,
 * as FUGU runs it on CRL, thesis section 7.1): one region per b x b block,
 * homed on the block's owner (2-D cyclic); step k factors the diagonal
 * block, then its row and column, then updates the trailing blocks, each
 * owner reading the blocks it needs through read sections (the misses are
 * the program's messages).  The result is compared with a serial run of
 * the same kernels on rank 0.
 *
 * --app-threads A runs A application threads per rank (a rank is an
 * A-processor SMP node sharing one copy of each block): each takes every
 * A-th of its rank's blocks in each phase, and the threads idle at a
 * barrier run the protocol's handlers.
 *
 * Usage: lu [--protocol pdq|multiplexed|poll|spinlock] [--threads T]
 *           [--app-threads A] [--dsm-block B] <n> <b>      (b divides n) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>
#include <rqdsm.h>

#include "app.h"
#include "dsmapp.h"
#include "fail.h"
#include "kernel.h"
#include "placement.h"

/* One run: what the rank's application threads share.  Thread t of A
 * takes every A-th of the blocks its rank owns, in a fixed order. */
struct lu_run {
    rq_ctx_t        *ctx;
    rqdsm_t         *dsm;
    rqdsm_region_t **reg;
    size_t           n, b, nb;
    int              me, np;
    int              rc;     /* a barrier's failure (thread 0 keeps it) */
};
#define R(i, j) L->reg[(i) * nb + (j)]
#define P(i, j) ((double *)rqdsm_ptr(R(i, j)))

/* Whether thread t takes this rank's next owned block (*k counts them). */
static int mine_of(const struct lu_run *L, size_t i, size_t j, size_t *k, int t)
{
    if (lu_owner(i, j, L->np) != L->me)
        return 0;
    return (int)((*k)++ % (size_t)rqa_app_threads()) == t;
}

static void lu_init_blocks(int t, void *arg)
{
    struct lu_run *L = arg;
    const size_t nb = L->nb;
    size_t k = 0;
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < nb; j++)
            if (mine_of(L, i, j, &k, t)) {
                rqdsm_start_write(R(i, j), 0, 0);
                lu_input_block(P(i, j), L->n, L->b, i, j);
                rqdsm_end_write(R(i, j), 0, 0);
            }
    int rc = rqa_team_barrier(L->ctx, L->dsm);
    if (t == 0)
        L->rc = rc;
}

static void lu_factor(int t, void *arg)
{
    struct lu_run *L = arg;
    const size_t nb = L->nb, b = L->b;
    int rc = 0;
    for (size_t k = 0; k < nb && rc == 0; k++) {
        if (lu_owner(k, k, L->np) == L->me && t == 0) {
            rqdsm_start_write(R(k, k), 0, 0);
            lu_diag(P(k, k), b);
            rqdsm_end_write(R(k, k), 0, 0);
        }
        rc = rqa_team_barrier(L->ctx, L->dsm);
        size_t c = 0;
        for (size_t x = k + 1; x < nb && rc == 0; x++) {
            if (mine_of(L, k, x, &c, t)) {
                rqdsm_start_read(R(k, k), 0, 0);
                rqdsm_start_write(R(k, x), 0, 0);
                lu_row(P(k, k), P(k, x), b);
                rqdsm_end_write(R(k, x), 0, 0);
                rqdsm_end_read(R(k, k), 0, 0);
            }
            if (mine_of(L, x, k, &c, t)) {
                rqdsm_start_read(R(k, k), 0, 0);
                rqdsm_start_write(R(x, k), 0, 0);
                lu_col(P(k, k), P(x, k), b);
                rqdsm_end_write(R(x, k), 0, 0);
                rqdsm_end_read(R(k, k), 0, 0);
            }
        }
        if (rc == 0)
            rc = rqa_team_barrier(L->ctx, L->dsm);
        c = 0;
        for (size_t i = k + 1; i < nb && rc == 0; i++)
            for (size_t j = k + 1; j < nb; j++)
                if (mine_of(L, i, j, &c, t)) {
                    rqdsm_start_read(R(i, k), 0, 0);
                    rqdsm_start_read(R(k, j), 0, 0);
                    rqdsm_start_write(R(i, j), 0, 0);
                    lu_update(P(i, j), P(i, k), P(k, j), b);
                    rqdsm_end_write(R(i, j), 0, 0);
                    rqdsm_end_read(R(k, j), 0, 0);
                    rqdsm_end_read(R(i, k), 0, 0);
                }
        if (rc == 0)
            rc = rqa_team_barrier(L->ctx, L->dsm);
    }
    if (t == 0)
        L->rc = rc;
}
#undef R
#undef P

#define LU_USAGE "Usage: lu [--protocol P] [--threads T] [--app-threads A] [--dsm-block B] <n> <b>"

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    double line = rqa_placement_rq(ctx);
    rqdsm_t *dsm;
    char org[96];
    if (rqa_dsm_start(ctx, &argc, argv, &dsm, org, sizeof org) != 0)
        return rqa_fail(ctx, LU_USAGE);
    uint64_t n, b;
    if (argc != 3 || rqa_parse_u64(argv[1], &n) != 0 || rqa_parse_u64(argv[2], &b) != 0)
        return rqa_fail(ctx, LU_USAGE);
    if (b < 1 || n < b || n % b != 0 || n > 16384)
        return rqa_fail(ctx, "ERROR: need 1 <= b <= n <= 16384 with b dividing n");
    const int me = rq_rank(ctx), np = rq_size(ctx);
    const size_t nb = n / b, bb = b * b, bytes = bb * sizeof(double);

    /* one region per block, created by its owner; every rank maps all */
    uint64_t *mine = calloc(nb * nb, 8), *rid = calloc(nb * nb, 8);
    rqdsm_region_t **reg = calloc(nb * nb, sizeof *reg);
    if (!mine || !rid || !reg)
        return rqa_fail(ctx, "ERROR: out of memory");
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < nb; j++)
            if (lu_owner(i, j, np) == me && rqdsm_create(dsm, bytes, &mine[i * nb + j]) != 0)
                return rqa_fail(ctx, "ERROR: rqdsm_create failed");
    if (rq_allreduce(ctx, mine, rid, nb * nb, RQ_UINT64, RQ_SUM) != 0)
        return rqa_fail(ctx, "ERROR: allreduce failed");
    for (size_t g = 0; g < nb * nb; g++)
        if (rqdsm_map(dsm, rid[g], &reg[g]) != 0)
            return rqa_fail(ctx, "ERROR: rqdsm_map failed");
    struct lu_run L = {ctx, dsm, reg, n, b, nb, me, np, 0};
    if (rqa_team_run(lu_init_blocks, &L) != 0)
        return rqa_fail(ctx, "ERROR: an application thread did not start");
    int rc = L.rc;
    if (me == 0)
        printf("librq lu: %llu x %llu matrix, %llu x %llu blocks, %d ranks, %s\n",
               (unsigned long long)n, (unsigned long long)n, (unsigned long long)b,
               (unsigned long long)b, np, org);
    double t0 = rqa_now();
    if (rc == 0 && rqa_team_run(lu_factor, &L) != 0)
        return rqa_fail(ctx, "ERROR: an application thread did not start");
    rc = rc != 0 ? rc : L.rc;
    double secs = rqa_now() - t0;
    if (rc != 0)
        return rqa_fail(ctx, "ERROR: a barrier failed");
    if (me == 0) {
        rqa_placement_print(line);
        printf("Time (s)             = %.6f\n", secs);
    }
    rqa_dsm_report(ctx, dsm, "lu", secs);

    /* the serial run of the same kernels, compared block by block */
    int bad = 0;
    double worst = 0;
    if (me == 0) {
        double *ref = malloc(nb * nb * bytes);
        if (ref == NULL)
            return rqa_fail(ctx, "ERROR: out of memory");
        lu_serial(ref, n, b);
        for (size_t g = 0; g < nb * nb; g++) {
            rqdsm_start_read(reg[g], 0, 0);
            const double *p = rqdsm_ptr(reg[g]);
            for (size_t e = 0; e < bb; e++) {
                double d = fabs(p[e] - ref[g * bb + e]);
                worst = d > worst ? d : worst;
            }
            rqdsm_end_read(reg[g], 0, 0);
        }
        free(ref);
        bad = !(worst <= 1e-9 * (double)n);
    }
    rqa_dsm_barrier(ctx, dsm);
    if (me == 0) {
        printf("Max |LU - serial|    = %.3g\n", worst);
        printf(bad ? "ERROR: the factors differ from the serial run\n" : "Solution validates\n");
    }
    for (size_t g = 0; g < nb * nb; g++)
        rqdsm_unmap(reg[g]);
    rc = rqdsm_finalize(dsm);
    free(mine);
    free(rid);
    free(reg);
    rq_finalize(ctx);
    return bad || rc != 0;
}
