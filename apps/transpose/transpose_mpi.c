/* transpose-mpi - the same transpose with MPI, as an MPI user writes it,
 * for the comparison run in the same invocation as the librq version.
 *
 *   alltoall  MPI_Alltoall of the blocks, then the local transposes
 *             (the PRK MPI1 code's structure)
 *   isend     every block's MPI_Irecv and MPI_Isend posted at once, blocks
 *             added as they arrive (MPI_Waitany): the permutation loop
 *             without a step barrier
 *
 * Usage: transpose-mpi [--variant V] <iterations> <matrix order> [tile] */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "kernel.h"
#include "fail.h"
#include "placement.h"

enum { V_ALLTOALL, V_ISEND, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"alltoall", "isend"};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const double line_ns = rqa_placement_mpi();
    int variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, "isend");
    struct tp_args a;
    char err[200];
    if (variant < 0)
        return rqa_mpi_fail(NULL); /* rqa_variant said why */
    if (tp_parse(argc, argv, np, &a, err, sizeof err) != 0)
        return rqa_mpi_fail(err);
    const size_t colblock = (size_t)a.order * (size_t)a.bo;
    const size_t blk = (size_t)a.bo * (size_t)a.bo;
    if (blk > (size_t)INT32_MAX) {
        if (me == 0)
            printf("ERROR: a block of %zu doubles exceeds an MPI count\n", blk);
        MPI_Finalize();
        return 1;
    }
    double *A = malloc(colblock * sizeof(double)), *B = malloc(colblock * sizeof(double));
    double *T = malloc(colblock * sizeof(double));
    MPI_Request *req = malloc(2 * (size_t)np * sizeof *req);
    if (A == NULL || B == NULL || T == NULL || req == NULL) {
        printf("ERROR: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    tp_init(A, B, &a, me);
    if (me == 0) {
        tp_header("MPI matrix transpose", np, &a, variant_names[variant]);
        rqa_placement_print(line_ns);
    }

    double t0 = 0;
    for (int iter = 0; iter <= a.iterations; iter++) {
        if (iter == 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (variant == V_ALLTOALL) {
            MPI_Alltoall(A, (int)blk, MPI_DOUBLE, T, (int)blk, MPI_DOUBLE, MPI_COMM_WORLD);
            for (int q = 0; q < np; q++)
                tp_add_block(B, T + blk * (size_t)q, &a, q);
            tp_inc(A, &a);
        } else {
            int n = 0;
            for (int k = 1; k < np; k++) {
                int src = (me - k + np) % np;
                MPI_Irecv(T + blk * (size_t)src, (int)blk, MPI_DOUBLE, src, 0, MPI_COMM_WORLD,
                          &req[n++]);
            }
            for (int k = 1; k < np; k++) {
                int dst = (me + k) % np;
                MPI_Isend(A + blk * (size_t)dst, (int)blk, MPI_DOUBLE, dst, 0, MPI_COMM_WORLD,
                          &req[n++]);
            }
            /* Overlaps the transfers; our own block is not sent, so its
             * A += 1 goes in the same pass. */
            tp_add_block_inc(B, A + blk * (size_t)me, &a, me);
            for (int k = 1; k < np; k++) {
                int idx;
                MPI_Status st;
                MPI_Waitany(np - 1, req, &idx, &st);
                tp_add_block(B, T + blk * (size_t)st.MPI_SOURCE, &a, st.MPI_SOURCE);
            }
            MPI_Waitall(np - 1, req + np - 1, MPI_STATUSES_IGNORE);
            for (int q = 0; q < np; q++) /* the sent blocks are free again */
                if (q != me)
                    tp_inc_block(A, &a, q);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD); /* as the librq version: until every rank is done */
    double local = MPI_Wtime() - t0, total;
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double abserr = tp_abserr(B, &a, me), abserr_total;
    MPI_Reduce(&abserr, &abserr_total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int bad = 0;
    if (me == 0)
        bad = tp_result(abserr_total, total, &a);
    free(A);
    free(B);
    free(T);
    free(req);
    MPI_Finalize();
    return bad;
}
