/* sptrsv-mpi - the same triangular solve with MPI, as an MPI user writes
 * it: each solved value goes out with MPI_Isend to every rank that needs
 * it; a window of MPI_Irecv (any source) is kept posted and tested with
 * MPI_Testsome between row computations.  Same input, plan and output as
 * sptrsv, run in the same invocation by apps/run.sh.
 *
 * Usage: sptrsv-mpi [--block BS] [--levels] [--reps R] MATRIX */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "input.h"
#include "placement.h"
#include "solver.h"

enum { WINDOW = 64 };

struct value {
    int64_t j;
    double  x;
};

static int solve(struct sp_solver *s, int rep, struct value *sbuf, MPI_Request *sreq,
                 uint64_t *recv_ticks)
{
    struct value rbuf[WINDOW];
    MPI_Request rreq[WINDOW];
    int idx[WINDOW];
    MPI_Status st[WINDOW];
    uint64_t posted = 0, nsent = 0;
    int nwin = s->expect < WINDOW ? (int)s->expect : WINDOW;
    for (int w = 0; w < nwin; w++, posted++)
        MPI_Irecv(&rbuf[w], sizeof rbuf[w], MPI_BYTE, MPI_ANY_SOURCE, rep, MPI_COMM_WORLD,
                  &rreq[w]);
    for (int w = nwin; w < WINDOW; w++)
        rreq[w] = MPI_REQUEST_NULL;
    int bad = 0;
    while (s->solved < s->nown) {
        if (sp_ready_any(s)) {
            int i = sp_solve_next(s);
            for (int64_t k = s->optr[i]; k < s->optr[i + 1]; k++, nsent++) {
                sbuf[nsent] = (struct value){i, s->x[i]};
                MPI_Isend(&sbuf[nsent], sizeof sbuf[nsent], MPI_BYTE, s->orank[k], rep,
                          MPI_COMM_WORLD, &sreq[nsent]);
            }
            if (s->solved == s->nown)
                break;
        }
        uint64_t t = recv_ticks != NULL ? rqa_ticks() : 0;
        int out = 0;
        MPI_Testsome(WINDOW, rreq, &out, idx, st);
        for (int k = 0; k < out && out != MPI_UNDEFINED; k++) {
            const struct value *v = &rbuf[idx[k]];
            if (v->j < 0 || v->j >= s->L->n || sp_owner(s, (int)v->j) != st[k].MPI_SOURCE) {
                bad = 1;
                continue;
            }
            s->x[v->j] = v->x;
            sp_learn(s, (int)v->j, v->x);
            if (posted < s->expect) {
                MPI_Irecv(&rbuf[idx[k]], sizeof rbuf[idx[k]], MPI_BYTE, MPI_ANY_SOURCE, rep,
                          MPI_COMM_WORLD, &rreq[idx[k]]);
                posted++;
            }
        }
        if (recv_ticks != NULL)
            *recv_ticks += rqa_ticks() - t;
        if (bad)
            break;
    }
    MPI_Waitall((int)nsent, sreq, MPI_STATUSES_IGNORE);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const double line_ns = rqa_placement_mpi();
    struct sp_input in;
    char err[256];
    if (sp_input_setup(&in, &argc, argv,
                       "usage: sptrsv-mpi [--block BS] [--levels] [--reps R] MATRIX", err,
                       sizeof err) != 0) {
        if (me == 0)
            fprintf(stderr, "sptrsv-mpi: %s\n", err);
        MPI_Finalize();
        return 1;
    }
    const uint64_t reps = in.reps;
    struct sp_solver s;
    if (sp_solver_init(&s, &in.L, in.b, me, np, (int)in.bs) != 0) {
        fprintf(stderr, "sptrsv-mpi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    struct value *sbuf = malloc((s.sends ? s.sends : 1) * sizeof *sbuf);
    MPI_Request *sreq = malloc((s.sends ? s.sends : 1) * sizeof *sreq);
    double *times = malloc(reps * sizeof *times), *recv = malloc(reps * sizeof *recv);
    if (sbuf == NULL || sreq == NULL || times == NULL || recv == NULL) {
        fprintf(stderr, "sptrsv-mpi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int bad = 0;
    /* As the librq version: reps solves for the time, then reps with their
     * receives timed for the receive fraction. */
    for (uint64_t r = 0; r < 2 * reps && !bad; r++) {
        sp_solver_reset(&s);
        uint64_t recv_ticks = 0;
        const int timed = r >= reps;
        MPI_Barrier(MPI_COMM_WORLD);
        double t = rqa_now();
        bad = solve(&s, (int)(r % 30000), sbuf, sreq, timed ? &recv_ticks : NULL);
        double mine = rqa_now() - t, fr = mine > 0 ? rqa_ticks_to_s(recv_ticks) / mine : 0;
        double maxt, sumfr;
        MPI_Allreduce(&mine, &maxt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&fr, &sumfr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (timed)
            recv[r - reps] = sumfr / np;
        else
            times[r] = maxt;
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    double maxref, e = sp_rel_error(&s, in.ref, &maxref), emax, mref;
    MPI_Allreduce(&e, &emax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&maxref, &mref, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    unsigned long long sends = s.sends, tot;
    MPI_Allreduce(&sends, &tot, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    const double rel = emax / (mref > 0 ? mref : 1);
    int ok = !bad && rel <= SP_REL_BOUND;
    if (me == 0) {
        if (bad)
            printf("ERROR: malformed messages\n");
        rqa_placement_print(line_ns);
        sp_report(&in, "mpi mode=isend", np, rqa_median(times, (int)reps),
                  rqa_median(recv, (int)reps), (double)tot / np, rel, ok);
    }
    sp_solver_free(&s);
    sp_input_free(&in);
    free(sbuf);
    free(sreq);
    free(times);
    free(recv);
    MPI_Finalize();
    return ok ? 0 : 1;
}
