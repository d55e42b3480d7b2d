/* sptrsv - sparse triangular solve L x = b on librq: the RQ paper's
 * application (Figures 9 and 11).  Rows are dealt block-cyclically; every
 * off-rank dependency is one short message carrying a solved value
 * (solver.h).  The receive mode is the paper's comparison
 * (--mode NAME or RQAPP_VARIANT):
 *
 *   intr     interrupts: RQ_INTR_ALL, the handler runs on the progress
 *            thread; the solver never polls, and brackets its own updates
 *            with rq_atomic_begin/end
 *   poll     rq_poll between row computations; handlers run there
 *   inlined  a named queue drained in the compute loop with rq_peek_n /
 *            rq_pop_n: no handler dispatch
 *
 * Usage: sptrsv [--mode M] [--block BS] [--levels] [--reps R] MATRIX
 * MATRIX: a Matrix Market file or a generator spec (matrix.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "input.h"
#include "placement.h"
#include "solver.h"

enum { M_INTR, M_POLL, M_INLINED, NMODES };
static const char *const mode_names[NMODES] = {"intr", "poll", "inlined"};
enum { H_VALUE = 1, QID = 1 };

static struct {
    rq_ctx_t        *ctx;
    int              me, np, mode;
    struct sp_solver s;
    uint64_t         got, bad;     /* values received (this solve), malformed */
    int              timed;        /* this solve times its receives */
    uint64_t         recv_ticks;   /* time spent receiving (rqa_ticks) */
} G;

static void take(int src, const uint64_t *args, unsigned nargs)
{
    int j = (int)args[0];
    if (nargs != 2 || args[0] >= (uint64_t)G.s.L->n || src < 0 || src >= G.np ||
        sp_owner(&G.s, j) != src) {
        __atomic_fetch_add(&G.bad, 1, __ATOMIC_RELAXED); /* the spinning solver reads it */
        return;
    }
    double xj;
    memcpy(&xj, &args[1], sizeof xj);
    G.s.x[j] = xj;
    sp_learn(&G.s, j, xj);
    G.got++;
}

static void on_value(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    if (G.mode == M_INTR) {
        uint64_t t = G.timed ? rqa_ticks() : 0;
        take(m->src, m->args, m->nargs);
        if (G.timed)
            G.recv_ticks += rqa_ticks() - t; /* handlers never overlap each other */
    } else {
        take(m->src, m->args, m->nargs);
    }
}

static void receive(void)
{
    uint64_t t = G.timed ? rqa_ticks() : 0;
    if (G.mode == M_POLL) {
        rq_poll(G.ctx);
    } else if (G.mode == M_INLINED) {
        rq_msg_t v[RQ_PEEK_MAX];
        int n = rq_peek_n(G.ctx, QID, v, RQ_PEEK_MAX);
        for (int i = 0; i < n; i++)
            take(v[i].src, v[i].args, v[i].nargs);
        if (n > 0)
            rq_pop_n(G.ctx, QID, (unsigned)n);
    }
    if (G.timed)
        G.recv_ticks += rqa_ticks() - t;
}

static int send_value(int dst, int i)
{
    uint64_t a[2] = {(uint64_t)i, 0};
    memcpy(&a[1], &G.s.x[i], sizeof a[1]);
    if (G.mode == M_INLINED)
        return rq_enqueue(G.ctx, dst, QID, 0, a, 2, NULL, 0, 0);
    return rq_request(G.ctx, dst, H_VALUE, a, 2, NULL, 0, 0);
}

/* One solve.  0 or a negative RQ_E*. */
static int solve(void)
{
    struct sp_solver *s = &G.s;
    int rc = 0;
    while (rc == 0 && __atomic_load_n(&G.bad, __ATOMIC_RELAXED) == 0) {
        if (G.mode == M_INTR)
            rq_atomic_begin(G.ctx);
        int i = -1;
        if (sp_ready_any(s))
            i = sp_solve_next(s);
        int done = s->solved == s->nown;
        if (G.mode == M_INTR)
            rq_atomic_end(G.ctx);
        if (i >= 0) {
            for (int64_t k = s->optr[i]; k < s->optr[i + 1] && rc == 0; k++)
                rc = send_value(s->orank[k], i);
        }
        if (done)
            break;
        if (G.mode != M_INTR)
            receive();
        else if (i < 0) {
            unsigned spins = 0; /* no librq call: interrupts deliver */
            while (!sp_ready_any(s) && __atomic_load_n(&G.bad, __ATOMIC_RELAXED) == 0)
                rqa_spin_turn(&spins);
        }
    }
    return rc != 0 ? rc : __atomic_load_n(&G.bad, __ATOMIC_RELAXED) != 0 ? RQ_EINVAL : 0;
}

/* Every rank fails the same way (same input); rank 0 says why.  Output is
 * flushed before the exit: rqrun stops the job at the first non-zero
 * exit, which may be another rank's. */
static int fail(const char *msg)
{
    if (G.me == 0)
        fprintf(stderr, "sptrsv: %s\n", msg);
    fflush(stdout);
    rq_finalize(G.ctx);
    return 1;
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, "sptrsv: rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx);
    G.mode = rqa_variant(&argc, argv, "mode", mode_names, NMODES, "poll");
    if (G.mode < 0)
        return fail("unknown mode");
    struct sp_input in;
    char err[256];
    if (sp_input_setup(&in, &argc, argv,
                       "usage: sptrsv [--mode intr|poll|inlined] [--block BS] [--levels] "
                       "[--reps R] MATRIX (a .mtx file, grid2d:K, grid3d:K, power:ROWS:EDGES, "
                       "pwr05, pwr06, pwr10)",
                       err, sizeof err) != 0)
        return fail(err);
    const uint64_t reps = in.reps;
    if (sp_solver_init(&G.s, &in.L, in.b, G.me, G.np, (int)in.bs) != 0)
        return fail("out of memory");

    rq_handler_register(G.ctx, H_VALUE, on_value, NULL, 0);
    rq_queue_open(G.ctx, QID);
    if (G.mode == M_INTR && rq_interrupts(G.ctx, RQ_INTR_ALL) != 0)
        return fail("interrupts unavailable");
    double *times = malloc(reps * sizeof *times), *recv = malloc(reps * sizeof *recv);
    if (times == NULL || recv == NULL)
        return fail("out of memory");
    int rc = 0;
    /* reps solves for the time, then reps with their receives timed for
     * the receive fraction (timing them costs as much as a receive). */
    for (uint64_t r = 0; r < 2 * reps && rc == 0; r++) {
        if (G.mode == M_INTR)
            rq_atomic_begin(G.ctx);
        sp_solver_reset(&G.s);
        G.got = 0;
        G.recv_ticks = 0;
        G.timed = r >= reps;
        if (G.mode == M_INTR)
            rq_atomic_end(G.ctx);
        rq_barrier(G.ctx); /* every rank reset before any value travels */
        double t = rqa_now();
        rc = solve();
        double mine = rqa_now() - t;
        if (G.mode == M_INTR) /* values still due: all arrive before the barrier ends */
            rq_atomic_begin(G.ctx);
        double fr = mine > 0 ? rqa_ticks_to_s(G.recv_ticks) / mine : 0;
        if (G.mode == M_INTR)
            rq_atomic_end(G.ctx);
        double maxt, sumfr;
        rq_allreduce(G.ctx, &mine, &maxt, 1, RQ_DOUBLE, RQ_MAX);
        rq_allreduce(G.ctx, &fr, &sumfr, 1, RQ_DOUBLE, RQ_SUM);
        if (G.timed)
            recv[r - reps] = sumfr / G.np;
        else
            times[r] = maxt;
    }
    if (G.mode == M_INTR)
        rq_interrupts(G.ctx, RQ_INTR_OFF);
    rq_barrier(G.ctx);
    double maxref, e = sp_rel_error(&G.s, in.ref, &maxref), emax, mref;
    rq_allreduce(G.ctx, &e, &emax, 1, RQ_DOUBLE, RQ_MAX);
    rq_allreduce(G.ctx, &maxref, &mref, 1, RQ_DOUBLE, RQ_MAX);
    uint64_t msgs[2] = {G.s.sends, G.bad}, tot[2];
    rq_allreduce(G.ctx, msgs, tot, 2, RQ_UINT64, RQ_SUM);
    const double rel = emax / (mref > 0 ? mref : 1);
    int ok = rc == 0 && tot[1] == 0 && rel <= SP_REL_BOUND;
    if (G.me == 0) {
        if (rc != 0)
            printf("ERROR: communication failed: %s\n", rq_strerror(rc));
        if (tot[1] != 0)
            printf("ERROR: %llu malformed messages\n", (unsigned long long)tot[1]);
        char what[64];
        snprintf(what, sizeof what, "librq mode=%s", mode_names[G.mode]);
        rqa_placement_print(line_ns);
        sp_report(&in, what, G.np, rqa_median(times, (int)reps), rqa_median(recv, (int)reps),
                  (double)tot[0] / G.np, rel, ok);
    }
    sp_solver_free(&G.s);
    sp_input_free(&in);
    free(times);
    free(recv);
    fflush(stdout); /* before any rank's exit status can stop the job */
    if (rq_finalize(G.ctx) != 0)
        ok = 0;
    return ok ? 0 : 1;
}
