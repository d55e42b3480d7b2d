/* stencil-mpi - the star stencil with MPI, as the PRK MPI1 code does it:
 * per iteration, MPI_Irecv of every halo strip, pack and MPI_Isend of
 * ours, MPI_Waitall, unpack.  Same grid, tiles and output as the librq
 * version (grid.h).
 *
 * Usage: stencil-mpi <iterations> <grid size> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "grid.h"
#include "fail.h"
#include "placement.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const double line_ns = rqa_placement_mpi();
    struct st_args a;
    struct st_tile t;
    char err[200];
    if (st_parse(argc, argv, np, &a, err, sizeof err) != 0)
        return rqa_mpi_fail(err);
    if (st_tile_init(&t, &a, me, np) != 0) {
        printf("ERROR: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const size_t slot = st_strip_max(&t);
    double *sbuf = malloc(2 * ST_DIRS * (slot ? slot : 1) * sizeof(double));
    if (sbuf == NULL) {
        printf("ERROR: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *rbuf = sbuf + ST_DIRS * slot;
    if (me == 0) {
        st_header("MPI stencil execution on 2D grid", np, &t, &a, "isend/irecv halos");
        rqa_placement_print(line_ns);
    }
    double t0 = 0;
    for (int k = 0; k <= a.iterations; k++) {
        if (k == 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        MPI_Request req[2 * ST_DIRS];
        int n = 0;
        for (int d = 0; d < ST_DIRS; d++)
            if (t.nbr[d] >= 0)
                MPI_Irecv(rbuf + (size_t)d * slot, (int)t.strip[d], MPI_DOUBLE, t.nbr[d], 99,
                          MPI_COMM_WORLD, &req[n++]);
        for (int d = 0; d < ST_DIRS; d++)
            if (t.nbr[d] >= 0) {
                st_pack(&t, d, sbuf + (size_t)d * slot);
                MPI_Isend(sbuf + (size_t)d * slot, (int)t.strip[d], MPI_DOUBLE, t.nbr[d], 99,
                          MPI_COMM_WORLD, &req[n++]);
            }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        for (int d = 0; d < ST_DIRS; d++)
            if (t.nbr[d] >= 0)
                st_unpack(&t, d, rbuf + (size_t)d * slot);
        st_compute(&t, &a);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* as the librq version: until every rank is done */
    double local = MPI_Wtime() - t0, total;
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double norm = st_local_norm(&t, &a), norm_sum;
    MPI_Reduce(&norm, &norm_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int bad = 0;
    if (me == 0)
        bad = st_result(norm_sum, total, &a);
    st_tile_free(&t);
    free(sbuf);
    fflush(stdout);
    MPI_Finalize();
    return bad;
}
