/* p2p-mpi - the pipeline with MPI, as the PRK MPI1 code does it: per row,
 * MPI_Recv of the left neighbour's value, the row segment, MPI_Send to the
 * right neighbour; the corner goes back to rank 0 the same way.  Same
 * grid, layout and output as the librq version (pipeline.h).
 *
 * Usage: p2p-mpi <iterations> <m> <n> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>

#include "app.h"
#include "pipeline.h"
#include "fail.h"
#include "placement.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const double line_ns = rqa_placement_mpi();
    struct pl_args a;
    struct pl_local L;
    char err[200];
    if (pl_parse(argc, argv, np, &a, err, sizeof err) != 0)
        return rqa_mpi_fail(err);
    if (pl_local_init(&L, &a, me, np, NULL) != 0) {
        printf("ERROR: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (me == 0) {
        pl_header("MPI pipeline execution on 2D grid", np, &a, "send/recv per row");
        rqa_placement_print(line_ns);
    }
    double t0 = 0;
    for (int k = 0; k <= a.iterations; k++) {
        if (k == 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (me == 0 && k > 0) {
            if (np == 1)
                PL(&L, 0, 1) = -PL(&L, a.m - 1, L.w);
            else
                MPI_Recv(&PL(&L, 0, 1), 1, MPI_DOUBLE, np - 1, 888, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        }
        for (long i = 1; i < a.m; i++) {
            if (me > 0)
                MPI_Recv(&PL(&L, i, 0), 1, MPI_DOUBLE, me - 1, (int)(i % 32768), MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            pl_row(&L, i);
            if (me < np - 1)
                MPI_Send(&PL(&L, i, L.w), 1, MPI_DOUBLE, me + 1, (int)(i % 32768),
                         MPI_COMM_WORLD);
        }
        if (me == np - 1 && np > 1) {
            double c = -PL(&L, a.m - 1, L.w);
            MPI_Send(&c, 1, MPI_DOUBLE, 0, 888, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD); /* as the librq version: until every rank is done */
    double local = MPI_Wtime() - t0, total;
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double corner = me == np - 1 ? PL(&L, a.m - 1, L.w) : 0;
    MPI_Bcast(&corner, 1, MPI_DOUBLE, np - 1, MPI_COMM_WORLD);
    int bad = 0;
    if (me == 0)
        bad = pl_result(corner, total, &a);
    pl_local_free(&L);
    fflush(stdout);
    MPI_Finalize();
    return bad;
}
