/* cannon-mpi / mm-mpi - the same schedules (mat.h) with MPI, as an MPI user
 * writes them: every rank knows the whole schedule, so at each step the
 * owner of a block sends it to each rank that needs it (MPI_Isend) and
 * the reader posts the matching MPI_Irecv; the next step's messages are
 * posted before this step's multiply and completed after it (MPI_Waitall),
 * so they overlap.  Messages of one pair arrive in the order both sides
 * enumerate them (the reader's blocks in slot order, A then B).  Same
 * data, check and output as the librq version.
 *
 * Usage: cannon-mpi [--reps R] <matrix order>
 *        mm-mpi     [--reps R] [--block B] <matrix order> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "fail.h"
#include "mat.h"
#include "placement.h"

#ifdef MM_CANNON
#define MM_PROGRAM "cannon-mpi"
#define MM_SKEW 1
#else
#define MM_PROGRAM "mm-mpi"
#define MM_SKEW 0
#endif

static struct {
    int            me, np;
    struct mm_plan p;
    size_t         bs;
    double        *own[2];       /* my blocks of A and B, by slot */
    double        *buf[2][2];    /* [parity][A or B] */
    double        *c;
    MPI_Request   *req[2];       /* per parity */
    int            nreq[2];
} S;

/* The source block of A (w 0) or B (w 1) that block v needs at step s. */
static uint64_t source(uint64_t v, unsigned s, int w)
{
    const uint64_t k = mm_k(&S.p, v, s), i = v / S.p.nb, j = v % S.p.nb;
    return w == 0 ? i * S.p.nb + k : k * S.p.nb + j;
}

/* Post step s's receives and sends into/for buf[par]. */
static void post(unsigned s, int par)
{
    const int cnt = (int)S.bs;
    MPI_Request *rq = S.req[par];
    int n = 0;
    for (unsigned slot = 0; slot < S.p.nslots; slot++) {
        const uint64_t v = mm_block(&S.p, S.me, slot);
        if (v == UINT64_MAX)
            break;
        for (int w = 0; w < 2; w++) {
            const uint64_t src = source(v, s, w);
            double *dst = S.buf[par][w] + (size_t)slot * S.bs;
            if (mm_owner(&S.p, src) == S.me)
                memcpy(dst, S.own[w] + (size_t)mm_slot(&S.p, src) * S.bs, S.bs * sizeof *dst);
            else
                MPI_Irecv(dst, cnt, MPI_DOUBLE, mm_owner(&S.p, src), w, MPI_COMM_WORLD, &rq[n++]);
        }
    }
    for (int i = 1; i < S.np; i++) {
        const int r = (S.me + i) % S.np;
        for (unsigned slot = 0; slot < S.p.nslots; slot++) {
            const uint64_t v = mm_block(&S.p, r, slot);
            if (v == UINT64_MAX)
                break;
            for (int w = 0; w < 2; w++) {
                const uint64_t src = source(v, s, w);
                if (mm_owner(&S.p, src) == S.me)
                    MPI_Isend(S.own[w] + (size_t)mm_slot(&S.p, src) * S.bs, cnt, MPI_DOUBLE, r, w,
                              MPI_COMM_WORLD, &rq[n++]);
            }
        }
    }
    S.nreq[par] = n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &S.me);
    MPI_Comm_size(MPI_COMM_WORLD, &S.np);
    const double line_ns = rqa_placement_mpi();
    char err[200];
    if (mm_parse(argc, argv, S.np, MM_SKEW, &S.p, err, sizeof err) != 0)
        return rqa_mpi_fail(err);
    S.bs = (size_t)S.p.b * S.p.b;
    if (S.bs > INT32_MAX)
        return rqa_mpi_fail("ERROR: a block has more elements than an MPI count");
    const size_t mine = S.p.nslots * S.bs;
    const size_t maxreq = 2 * (size_t)S.p.nslots + 2 * (size_t)S.p.nb * S.p.nb;
    double *all = malloc(7 * mine * sizeof *all);
    S.req[0] = malloc(2 * maxreq * sizeof(MPI_Request));
    double *times = malloc((size_t)S.p.reps * sizeof *times);
    if (all == NULL || S.req[0] == NULL || times == NULL)
        return rqa_mpi_fail("ERROR: out of memory");
    S.req[1] = S.req[0] + maxreq;
    S.own[0] = all;
    S.own[1] = all + mine;
    for (int k = 0; k < 4; k++)
        S.buf[k / 2][k % 2] = all + (size_t)(2 + k) * mine;
    S.c = all + 6 * mine;
    for (unsigned slot = 0; slot < S.p.nslots; slot++) {
        const uint64_t v = mm_block(&S.p, S.me, slot);
        if (v == UINT64_MAX)
            break;
        for (int w = 0; w < 2; w++)
            mm_fill(&S.p, w, v, S.own[w] + (size_t)slot * S.bs);
    }
    if (S.me == 0) {
        printf("Split-C %s matrix multiply, MPI version (isend/irecv)\n",
               MM_SKEW ? "Cannon" : "blocked");
        printf("Number of ranks      = %d\n", S.np);
        printf("Matrix order         = %llu\n", (unsigned long long)S.p.N);
        printf("Blocks               = %ux%u of order %u\n", S.p.nb, S.p.nb, S.p.b);
        rqa_placement_print(line_ns);
    }
    for (int rep = 0; rep < S.p.reps; rep++) {
        memset(S.c, 0, mine * sizeof *S.c);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        int par = 0;
        post(0, 0);
        MPI_Waitall(S.nreq[0], S.req[0], MPI_STATUSES_IGNORE);
        for (unsigned s = 0; s < S.p.nb; s++) {
            if (s + 1 < S.p.nb)
                post(s + 1, par ^ 1);
            for (unsigned slot = 0; slot < S.p.nslots; slot++) {
                if (mm_block(&S.p, S.me, slot) == UINT64_MAX)
                    break;
                const size_t at = (size_t)slot * S.bs;
                mm_block_fma(S.p.b, S.buf[par][0] + at, S.buf[par][1] + at, S.c + at);
            }
            if (s + 1 < S.p.nb)
                MPI_Waitall(S.nreq[par ^ 1], S.req[par ^ 1], MPI_STATUSES_IGNORE);
            par ^= 1;
        }
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(&t, &times[rep], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    int ok = 1, all_ok;
    for (unsigned slot = 0; slot < S.p.nslots; slot++) {
        const uint64_t v = mm_block(&S.p, S.me, slot);
        if (v != UINT64_MAX)
            ok &= mm_check_block(&S.p, v, S.c + (size_t)slot * S.bs);
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int failed = all_ok != 1;
    if (S.me == 0)
        failed = mm_result(MM_PROGRAM, all_ok == 1, &S.p, rqa_median(times, S.p.reps));
    free(all);
    free(S.req[0]);
    free(times);
    fflush(stdout);
    MPI_Finalize();
    return failed;
}
