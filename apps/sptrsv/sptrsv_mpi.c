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
#include "matrix.h"
#include "solver.h"

enum { WINDOW = 64 };

struct value {
    int64_t j;
    double  x;
};

static int solve(struct sp_solver *s, int rep, struct value *sbuf, MPI_Request *sreq,
                 double *recv_s)
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
        double t = rqa_now();
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
        *recv_s += rqa_now() - t;
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
    const char *bs_opt = rqa_take_opt(&argc, argv, "block");
    const char *reps_opt = rqa_take_opt(&argc, argv, "reps");
    int levels = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--levels") == 0) {
            levels = 1;
            memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof *argv);
            argc--;
            break;
        }
    uint64_t bs = 8, reps = 5;
    struct sp_csr L;
    char note[256], err[256] = "";
    if ((bs_opt != NULL && (rqa_parse_u64(bs_opt, &bs) != 0 || bs < 1 || bs > (1u << 26))) ||
        (reps_opt != NULL && (rqa_parse_u64(reps_opt, &reps) != 0 || reps < 1 || reps > 10000)))
        snprintf(err, sizeof err, "--block must be in 1..2^26, --reps in 1..10000");
    else if (argc != 2)
        snprintf(err, sizeof err, "usage: sptrsv-mpi [--block BS] [--levels] [--reps R] MATRIX");
    else if (sp_load(argv[1], &L, note, sizeof note, err, sizeof err) != 0)
        ;
    else if (levels && sp_permute_levels(&L) != 0)
        snprintf(err, sizeof err, "out of memory");
    if (err[0] != '\0') {
        if (me == 0)
            fprintf(stderr, "sptrsv-mpi: %s\n", err);
        MPI_Finalize();
        return 1;
    }
    double *b = malloc((size_t)L.n * sizeof *b), *ref = malloc((size_t)L.n * sizeof *ref);
    struct sp_solver s;
    if (b == NULL || ref == NULL || sp_solver_init(&s, &L, b, me, np, (int)bs) != 0) {
        fprintf(stderr, "sptrsv-mpi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    sp_rhs_ones(&L, b);
    double ts[16];
    int nts = reps < 16 ? (int)reps : 16;
    for (int r = 0; r < nts; r++) {
        double t = rqa_now();
        sp_serial_solve(&L, b, ref);
        ts[r] = rqa_now() - t;
    }
    double t_serial = rqa_median(ts, nts);
    struct value *sbuf = malloc((s.sends ? s.sends : 1) * sizeof *sbuf);
    MPI_Request *sreq = malloc((s.sends ? s.sends : 1) * sizeof *sreq);
    double *times = malloc(reps * sizeof *times), *recv = malloc(reps * sizeof *recv);
    if (sbuf == NULL || sreq == NULL || times == NULL || recv == NULL) {
        fprintf(stderr, "sptrsv-mpi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int bad = 0;
    for (uint64_t r = 0; r < reps && !bad; r++) {
        sp_solver_reset(&s);
        double recv_s = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        double t = rqa_now();
        bad = solve(&s, (int)(r % 30000), sbuf, sreq, &recv_s);
        double mine = rqa_now() - t, fr = mine > 0 ? recv_s / mine : 0;
        MPI_Allreduce(&mine, &times[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&fr, &recv[r], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        recv[r] /= np;
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    double maxref, e = sp_rel_error(&s, ref, &maxref), emax, mref;
    MPI_Allreduce(&e, &emax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&maxref, &mref, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    unsigned long long sends = s.sends, tot;
    MPI_Allreduce(&sends, &tot, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    const double rel = emax / (mref > 0 ? mref : 1), bound = 1e-10;
    int ok = !bad && rel <= bound;
    if (me == 0) {
        double t = rqa_median(times, (int)reps), f = rqa_median(recv, (int)reps);
        printf("sptrsv: %s\n", note);
        printf("sptrsv: rows %d, nonzeros %lld, level sets %d%s, block %llu\n", L.n,
               (long long)L.nnz, sp_levels(&L), levels ? " (rows ordered by level)" : "",
               (unsigned long long)bs);
        printf("sptrsv: mpi mode=isend ranks=%d time_s=%.9f serial_s=%.9f speedup=%.3f "
               "msgs_per_rank=%.1f recv_fraction=%.3f rel_error=%.3e\n",
               np, t, t_serial, t > 0 ? t_serial / t : 0, (double)tot / np, f, rel);
        if (bad)
            printf("ERROR: malformed messages\n");
        printf(ok ? "Solution validates (relative error %.3e <= %.0e)\n"
                  : "ERROR: relative error %.3e exceeds %.0e\n",
               rel, bound);
    }
    sp_solver_free(&s);
    sp_free(&L);
    free(b);
    free(ref);
    free(sbuf);
    free(sreq);
    free(times);
    free(recv);
    MPI_Finalize();
    return ok ? 0 : 1;
}
