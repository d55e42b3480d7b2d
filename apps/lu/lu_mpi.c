/* lu-mpi - the same blocked LU as lu, as an MPI user would write it with
 * explicit data movement (ScaLAPACK-style panel broadcasts): blocks are
 * owned 2-D cyclically and kept in private memory; at step k the owner of
 * the diagonal block factors it and broadcasts it, the owners of the
 * row and column panels update theirs and broadcast each panel block
 * down its grid column / across its grid row (non-blocking broadcasts on
 * row and column communicators, one wait per step), then every owner
 * updates its trailing blocks.  Checked against the serial run.
 *
 * Usage: lu-mpi <n> <b>      (b divides n) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "finegrain.h"
#include "kernel.h"
#include "placement.h"

static int fail(int me, const char *msg)
{
    if (me == 0)
        fprintf(stderr, "%s\n", msg);
    MPI_Finalize();
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    double line = rqa_placement_mpi();
    uint64_t n, b;
    if (argc != 3 || rqa_parse_u64(argv[1], &n) != 0 || rqa_parse_u64(argv[2], &b) != 0)
        return fail(me, "Usage: lu-mpi <n> <b>");
    if (b < 1 || n < b || n % b != 0 || n > 16384)
        return fail(me, "ERROR: need 1 <= b <= n <= 16384 with b dividing n");
    const size_t nb = n / b, bb = b * b;
    int pr = (int)sqrt((double)np);
    while (pr > 1 && np % pr != 0)
        pr--;
    const int pc = np / pr, myr = me / pc, myc = me % pc;
    MPI_Comm row, col; /* ranks of my grid row (ordered by column), of my grid column */
    MPI_Comm_split(MPI_COMM_WORLD, myr, myc, &row);
    MPI_Comm_split(MPI_COMM_WORLD, myc, myr, &col);

    /* every block slot exists everywhere (simple indexing); only owned
     * blocks and received panels are filled */
    double *blk = calloc(nb * nb * bb, sizeof(double));
    MPI_Request *req = malloc((2 * nb + 2) * sizeof *req);
    if (blk == NULL || req == NULL)
        return fail(me, "ERROR: out of memory");
#define B(i, j) (blk + ((i) * nb + (j)) * bb)
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < nb; j++)
            if (lu_owner(i, j, np) == me)
                lu_input_block(B(i, j), n, b, i, j);
    struct rqa_fg fg = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        printf("MPI lu: %llu x %llu matrix, %llu x %llu blocks, %d ranks (%d x %d grid)\n",
               (unsigned long long)n, (unsigned long long)n, (unsigned long long)b,
               (unsigned long long)b, np, pr, pc);
    double t0 = rqa_now();
    for (size_t k = 0; k < nb; k++) {
        const int kr = (int)(k % (size_t)pr), kc = (int)(k % (size_t)pc);
        const int dk = kr * pc + kc;
        if (me == dk)
            lu_diag(B(k, k), b);
        /* the diagonal block to its grid row and grid column */
        int nr = 0;
        if (myr == kr)
            MPI_Ibcast(B(k, k), (int)bb, MPI_DOUBLE, kc, row, &req[nr++]);
        if (myc == kc) /* the diagonal's owner is root of both */
            MPI_Ibcast(B(k, k), (int)bb, MPI_DOUBLE, kr, col, &req[nr++]);
        MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
        if (myr == kr || myc == kc)
            fg.received += me != dk;
        if (me == dk)
            fg.sent += (uint64_t)(pc - 1 + pr - 1);
        /* panels: (k, j) down grid column j % pc; (i, k) across grid row i % pr */
        nr = 0;
        for (size_t x = k + 1; x < nb; x++) {
            if (lu_owner(k, x, np) == me)
                lu_row(B(k, k), B(k, x), b);
            if (lu_owner(x, k, np) == me)
                lu_col(B(k, k), B(x, k), b);
        }
        for (size_t x = k + 1; x < nb; x++) {
            if ((int)(x % (size_t)pc) == myc) {
                MPI_Ibcast(B(k, x), (int)bb, MPI_DOUBLE, kr, col, &req[nr++]);
                if (myr == kr)
                    fg.sent += (uint64_t)(pr - 1);
                else
                    fg.received++;
            }
            if ((int)(x % (size_t)pr) == myr) {
                MPI_Ibcast(B(x, k), (int)bb, MPI_DOUBLE, kc, row, &req[nr++]);
                if (myc == kc)
                    fg.sent += (uint64_t)(pc - 1);
                else
                    fg.received++;
            }
        }
        MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
        for (size_t i = k + 1; i < nb; i++)
            for (size_t j = k + 1; j < nb; j++)
                if (lu_owner(i, j, np) == me)
                    lu_update(B(i, j), B(i, k), B(k, j), b);
    }
    double secs = rqa_now() - t0, slowest = 0;
    MPI_Reduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    struct rqa_fg tot;
    rqa_fg_sum_mpi(&fg, &tot);
    if (me == 0) {
        rqa_placement_print(line);
        printf("Time (s)             = %.6f\n", slowest);
        rqa_fg_print("lu-mpi", np, slowest, &tot);
    }

    /* gather the owned blocks on rank 0 and compare with the serial run */
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < nb; j++) {
            int o = lu_owner(i, j, np);
            if (o == 0)
                continue;
            if (me == o)
                MPI_Send(B(i, j), (int)bb, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
            else if (me == 0)
                MPI_Recv(B(i, j), (int)bb, MPI_DOUBLE, o, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    if (me == 0) {
        double *ref = malloc(nb * nb * bb * sizeof(double));
        if (ref == NULL)
            return fail(me, "ERROR: out of memory");
        lu_serial(ref, n, b);
        for (size_t e = 0; e < nb * nb * bb; e++) {
            double d = fabs(blk[e] - ref[e]);
            worst = d > worst ? d : worst;
        }
        free(ref);
        bad = !(worst <= 1e-9 * (double)n);
        printf("Max |LU - serial|    = %.3g\n", worst);
        printf(bad ? "ERROR: the factors differ from the serial run\n" : "Solution validates\n");
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(blk);
    free(req);
    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
    MPI_Finalize();
    return bad;
}
