/* em3d-mpi - the same relaxation (graph.h) with MPI, as an MPI user writes
 * it: the ghost lists exchanged once (MPI_Alltoall of the counts,
 * MPI_Alltoallv of the indices); per half-step, after updating kind K,
 * one MPI_Irecv per owner straight into the ghosts of K, one packed
 * MPI_Isend per reader, MPI_Waitall.  No barrier: MPI's matching keeps
 * half-steps apart (messages of one pair and tag do not overtake).  Same
 * graph, check and output as the librq version.
 *
 * Usage: em3d-mpi [--reps R] <nodes per rank> <degree> <remote fraction>
 *                 <iterations> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "fail.h"
#include "graph.h"
#include "placement.h"

struct side {             /* who reads my values of one kind */
    int      *ints;          /* one allocation: what I need, then count and displ */
    int      *count, *displ; /* per reader: how many, where in idx/pack */
    uint32_t *idx;
    double   *pack;
};

static struct {
    int            me, np;
    struct em_args a;
    struct em_part part[2];
    double        *val[2];   /* [n values | ghosts] of each kind */
    struct side    send[2];
    MPI_Request   *req;
} S;

static int build_side(int k)
{
    const struct em_part *p = &S.part[k ^ 1]; /* my ghosts of kind k */
    int *need = malloc(4 * (size_t)S.np * sizeof(int));
    if (need == NULL)
        return -1;
    S.send[k].ints = need;
    int *ndispl = need + S.np, *count = ndispl + S.np, *displ = count + S.np;
    for (int o = 0; o < S.np; o++) {
        need[o] = (int)(p->gstart[o + 1] - p->gstart[o]);
        ndispl[o] = (int)p->gstart[o];
    }
    MPI_Alltoall(need, 1, MPI_INT, count, 1, MPI_INT, MPI_COMM_WORLD);
    uint64_t tot = 0;
    for (int r = 0; r < S.np; r++) {
        displ[r] = (int)tot;
        tot += (uint64_t)count[r];
    }
    S.send[k].idx = malloc((tot ? tot : 1) * sizeof(uint32_t));
    S.send[k].pack = malloc((tot ? tot : 1) * sizeof(double));
    if (S.send[k].idx == NULL || S.send[k].pack == NULL)
        return -1;
    MPI_Alltoallv(p->gidx, need, ndispl, MPI_UINT32_T, S.send[k].idx, count, displ, MPI_UINT32_T,
                  MPI_COMM_WORLD);
    S.send[k].ints = need;
    S.send[k].count = count;
    S.send[k].displ = displ;
    return 0;
}

/* After updating kind k: its values to every reader, its ghosts from
 * every owner. */
static void exchange(int k)
{
    const struct em_part *p = &S.part[k ^ 1];
    const struct side *s = &S.send[k];
    double *ghost = S.val[k] + S.a.n;
    int nr = 0;
    for (int o = 0; o < S.np; o++) {
        const int c = (int)(p->gstart[o + 1] - p->gstart[o]);
        if (o != S.me && c > 0)
            MPI_Irecv(ghost + p->gstart[o], c, MPI_DOUBLE, o, k, MPI_COMM_WORLD, &S.req[nr++]);
    }
    for (int i = 1; i < S.np; i++) {
        const int r = (S.me + i) % S.np;
        if (s->count[r] == 0)
            continue;
        double *out = s->pack + s->displ[r];
        const uint32_t *idx = s->idx + s->displ[r];
        for (int j = 0; j < s->count[r]; j++)
            out[j] = S.val[k][idx[j]];
        MPI_Isend(out, s->count[r], MPI_DOUBLE, r, k, MPI_COMM_WORLD, &S.req[nr++]);
    }
    MPI_Waitall(nr, S.req, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &S.me);
    MPI_Comm_size(MPI_COMM_WORLD, &S.np);
    const double line_ns = rqa_placement_mpi();
    char err[200];
    if (em_parse(argc, argv, &S.a, err, sizeof err) != 0)
        return rqa_mpi_fail(err);
    const uint64_t n = S.a.n;
    if (em_part_build(&S.a, S.me, S.np, EM_E, &S.part[EM_E]) != 0 ||
        em_part_build(&S.a, S.me, S.np, EM_H, &S.part[EM_H]) != 0)
        return rqa_mpi_fail("ERROR: out of memory");
    for (int k = 0; k < 2; k++) {
        S.val[k] = malloc((n + S.part[k ^ 1].ng) * sizeof(double));
        if (S.val[k] == NULL || build_side(k) != 0)
            return rqa_mpi_fail("ERROR: out of memory");
    }
    S.req = malloc(2 * (size_t)S.np * sizeof *S.req);
    double *times = malloc((size_t)S.a.reps * sizeof *times);
    if (S.req == NULL || times == NULL)
        return rqa_mpi_fail("ERROR: out of memory");
    if (S.me == 0) {
        printf("Split-C em3d, MPI version (isend/irecv)\n");
        printf("Number of ranks      = %d\n", S.np);
        printf("Nodes per rank       = %llu (E and H each)\n", (unsigned long long)n);
        printf("Degree               = %u\n", S.a.degree);
        printf("Remote fraction      = %g\n", S.a.remote);
        printf("Iterations           = %u\n", S.a.iters);
        rqa_placement_print(line_ns);
    }
    for (int rep = 0; rep < S.a.reps; rep++) {
        for (int k = 0; k < 2; k++)
            for (uint64_t i = 0; i < n; i++)
                S.val[k][i] = em_initial(S.me, k, i);
        exchange(EM_H);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (unsigned it = 0; it < S.a.iters; it++)
            for (int k = 0; k < 2; k++) {
                em_update(&S.part[k], S.val[k ^ 1], S.val[k]);
                exchange(k);
            }
        double mine = MPI_Wtime() - t0;
        MPI_Allreduce(&mine, &times[rep], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    /* Rank 0 checks every value against the serial relaxation. */
    const uint64_t tot = (uint64_t)S.np * n;
    double *all[2] = {NULL, NULL}, *want[2] = {NULL, NULL}, maxerr = 0;
    int failed = 0;
    if (S.me == 0) {
        for (int k = 0; k < 2; k++) {
            all[k] = malloc(tot * sizeof(double));
            want[k] = malloc(tot * sizeof(double));
        }
        if (!all[0] || !all[1] || !want[0] || !want[1] || em_serial(&S.a, S.np, want[0], want[1]))
            failed = 1;
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (failed)
        return rqa_mpi_fail("ERROR: out of memory for the serial check");
    for (int k = 0; k < 2; k++) {
        MPI_Gather(S.val[k], (int)n, MPI_DOUBLE, all[k], (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (S.me == 0) {
            const double e = em_max_error(all[k], want[k], tot);
            maxerr = e > maxerr ? e : maxerr;
        }
    }
    if (S.me == 0)
        failed = em_result("em3d-mpi", maxerr, S.np, &S.a, rqa_median(times, S.a.reps));
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int k = 0; k < 2; k++) {
        free(all[k]);
        free(want[k]);
        free(S.val[k]);
        free(S.send[k].idx);
        free(S.send[k].pack);
        free(S.send[k].ints);
        em_part_free(&S.part[k]);
    }
    free(S.req);
    free(times);
    fflush(stdout);
    MPI_Finalize();
    return failed;
}
