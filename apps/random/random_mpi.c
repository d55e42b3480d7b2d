/* random-mpi - RandomAccess with MPI, as the HPCC and PRK MPI codes do
 * it: each round every rank generates one number per stream
 * (GUPS_STREAMS), buckets them by owner, and MPI_Alltoall (counts) +
 * MPI_Alltoallv (numbers) deliver them; the owner applies what it got.
 * Same updates, table and output as the librq version (gups.h).
 *
 * Usage: random-mpi <update ratio> <log2 table size> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "gups.h"
#include "fail.h"
#include "placement.h"

struct state {
    int              me, np;
    struct gups_args a;
    uint64_t        *T, first, nloc;
    uint64_t        *send, *recv;    /* np buckets of GUPS_STREAMS; the receive area */
    int             *scount, *rcount, *sdispl, *rdispl;
    uint64_t         bad;
};

static uint64_t x0[GUPS_STREAMS], len[GUPS_STREAMS]; /* this rank's streams */
static int nstreams;

static void pass(struct state *S)
{
    static uint64_t x[GUPS_STREAMS];
    const int s = nstreams;
    memcpy(x, x0, sizeof x);
    /* Every rank runs the same number of rounds (the longest stream of
     * any rank); a rank whose streams are done sends nothing. */
    uint64_t rounds = s > 0 ? len[0] : 0, max_rounds;
    MPI_Allreduce(&rounds, &max_rounds, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    for (uint64_t i = 0; i < max_rounds; i++) {
        memset(S->scount, 0, (size_t)S->np * sizeof(int));
        for (int j = 0; j < s && i < len[j]; j++) {
            uint64_t v = x[j] = gups_next(x[j]);
            int o = gups_owner(&S->a, v & S->a.mask);
            S->send[(size_t)o * GUPS_STREAMS + (size_t)S->scount[o]++] = v;
        }
        MPI_Alltoall(S->scount, 1, MPI_INT, S->rcount, 1, MPI_INT, MPI_COMM_WORLD);
        S->rdispl[0] = 0;
        for (int p = 1; p < S->np; p++)
            S->rdispl[p] = S->rdispl[p - 1] + S->rcount[p - 1];
        MPI_Alltoallv(S->send, S->scount, S->sdispl, MPI_UINT64_T, S->recv, S->rcount, S->rdispl,
                      MPI_UINT64_T, MPI_COMM_WORLD);
        const int total = S->rdispl[S->np - 1] + S->rcount[S->np - 1];
        S->bad += gups_apply(S->T, S->first, S->nloc, S->a.mask, S->recv, (size_t)total);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct state S = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &S.me);
    MPI_Comm_size(MPI_COMM_WORLD, &S.np);
    const double line_ns = rqa_placement_mpi();
    char err[200];
    if (gups_parse(argc, argv, S.np, &S.a, err, sizeof err) != 0)
        return rqa_mpi_fail(err);
    S.first = S.a.blk * (uint64_t)S.me;
    S.nloc = gups_local_words(&S.a, S.me);
    S.T = gups_alloc_table(S.a.blk);
    S.send = malloc((size_t)S.np * GUPS_STREAMS * sizeof(uint64_t));
    S.recv = malloc((size_t)S.np * GUPS_STREAMS * sizeof(uint64_t));
    S.scount = malloc(4 * (size_t)S.np * sizeof(int));
    if (S.T == NULL || S.send == NULL || S.recv == NULL || S.scount == NULL) {
        printf("ERROR: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    S.rcount = S.scount + S.np;
    S.sdispl = S.rcount + S.np;
    S.rdispl = S.sdispl + S.np;
    for (int p = 0; p < S.np; p++)
        S.sdispl[p] = p * GUPS_STREAMS;
    gups_init(S.T, &S.a, S.me);
    nstreams = gups_streams(&S.a, S.me, S.np, x0, len); /* jump-ahead, untimed */
    if (S.me == 0) {
        gups_header("MPI random access", S.np, &S.a, "alltoallv (HPCC/PRK buckets)");
        rqa_placement_print(line_ns);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    pass(&S);
    MPI_Barrier(MPI_COMM_WORLD);
    double mine = MPI_Wtime() - t0, t;
    MPI_Allreduce(&mine, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    pass(&S); /* untimed: restores T[i] = i */
    uint64_t mine_e[2] = {gups_errors(S.T, &S.a, S.me), S.bad}, tot_e[2];
    MPI_Reduce(mine_e, tot_e, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    int bad = 0;
    if (S.me == 0) {
        if (tot_e[1] != 0) {
            printf("ERROR: %llu malformed updates\n", (unsigned long long)tot_e[1]);
            bad = 1;
        } else {
            bad = gups_result(tot_e[0], t, &S.a);
        }
    }
    free(S.T);
    free(S.send);
    free(S.recv);
    free(S.scount);
    fflush(stdout);
    MPI_Finalize();
    return bad;
}
