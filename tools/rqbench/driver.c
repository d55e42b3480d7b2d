/* driver.c - see driver.h. */
#define _GNU_SOURCE
#include "driver.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The directory of this executable (tools are installed side by side). */
void rqb_self_dir(char *dir, size_t cap, char *self, size_t scap)
{
    ssize_t n = readlink("/proc/self/exe", self, scap - 1);
    self[n > 0 ? n : 0] = '\0';
    snprintf(dir, cap, "%s", self);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
}

static int executable(const char *p) { return access(p, X_OK) == 0; }

int rqb_run_cmd(char *const *argv)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "rqbench: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 127;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

const char *rqb_rqrun_path(const char *dir, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/rqrun", dir);
    return executable(buf) ? buf : "rqrun";
}

int rqb_relaunch(int argc, char **argv, int ranks)
{
    char self[PATH_MAX], dir[PATH_MAX], rr[PATH_MAX + 8], n[16];
    rqb_self_dir(dir, sizeof dir, self, sizeof self);
    snprintf(n, sizeof n, "%d", ranks);
    char **av = calloc((size_t)argc + 8, sizeof *av);
    if (av == NULL)
        return 1;
    int k = 0;
    av[k++] = (char *)rqb_rqrun_path(dir, rr, sizeof rr);
    av[k++] = "-n";
    av[k++] = n;
    av[k++] = "--bind";
    av[k++] = "core";
    av[k++] = self;
    for (int i = 1; i < argc; i++)
        av[k++] = argv[i];
    int rc = rqb_run_cmd(av);
    free(av);
    return rc;
}

static int has_flag(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], flag) == 0)
            return 1;
    return 0;
}

void rqb_report_placement(struct rqb_report *r)
{
    const struct rqb_row *L =
        rqb_report_find(r, "limits", "limit", "cache-line one-way latency L", NAN);
    if (L != NULL) {
        r->line_ns = L->s.median;
        snprintf(r->placement, sizeof r->placement, "%s", L->s.median < 100 ? "near" : "far");
    }
}

int rqb_drive_compare(int argc, char **argv, const struct rqb_opts *o)
{
    char self[PATH_MAX], dir[PATH_MAX], rr[PATH_MAX + 8], tmp[] = "/tmp/rqbench.XXXXXX";
    rqb_self_dir(dir, sizeof dir, self, sizeof self);
    if (mkdtemp(tmp) == NULL) {
        perror("rqbench: mkdtemp");
        return 1;
    }
    char out[3][PATH_MAX + 32];
    snprintf(out[0], sizeof out[0], "%s/librq.csv", tmp);
    snprintf(out[1], sizeof out[1], "%s/mpi.csv", tmp);
    snprintf(out[2], sizeof out[2], "%s/ucx.csv", tmp);
    const char *speed = o->smoke ? "--smoke" : o->quick ? "--quick" : NULL;

    /* librq: the caller's subcommands and options, minus the outputs. */
    char **av = calloc((size_t)argc + 12, sizeof *av);
    if (av == NULL)
        return 1;
    int k = 0;
    av[k++] = (char *)rqb_rqrun_path(dir, rr, sizeof rr);
    av[k++] = "-n";
    av[k++] = "2";
    av[k++] = "--bind";
    av[k++] = "core";
    av[k++] = self;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--compare") == 0)
            continue;
        if (strcmp(argv[i], "--csv") == 0 || strcmp(argv[i], "--json") == 0 ||
            strcmp(argv[i], "--plot") == 0 || strcmp(argv[i], "-n") == 0) {
            i++;
            continue;
        }
        av[k++] = argv[i];
    }
    if (!has_flag(argc, argv, "compare") && !has_flag(argc, argv, "all"))
        av[k++] = "compare";
    av[k++] = "--emit";
    av[k++] = out[0];
    fprintf(stderr, "rqbench: measuring librq (rqrun -n 2 --bind core)\n");
    int rc = rqb_run_cmd(av);
    free(av);
    if (rc != 0) {
        fprintf(stderr, "rqbench: the librq run failed (status %d)\n", rc);
        return 1;
    }

    char peer[PATH_MAX + 16];
    snprintf(peer, sizeof peer, "%s/rqbench-mpi", dir);
    if (executable(peer)) {
        fprintf(stderr, "rqbench: measuring MPI (mpirun -n 2 --bind-to core, shared memory)\n");
        /* Open MPI refuses root without these; CI and containers run as root. */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
        char *mv[] = {"mpirun", "-n", "2", "--bind-to", "core", "--mca", "btl", "self,vader",
                      peer, "--emit", out[1], (char *)speed, NULL};
        if (rqb_run_cmd(mv) != 0)
            fprintf(stderr, "rqbench: the MPI peer failed; its column stays empty\n");
    } else {
        fprintf(stderr, "rqbench: rqbench-mpi not built (no MPI at configure time)\n");
    }
    snprintf(peer, sizeof peer, "%s/rqbench-ucx", dir);
    if (executable(peer)) {
        fprintf(stderr, "rqbench: measuring UCX UCP (2 processes, cores of the librq run)\n");
        char *uv[] = {peer, "--emit", out[2], (char *)speed, NULL};
        if (rqb_run_cmd(uv) != 0)
            fprintf(stderr, "rqbench: the UCX peer failed; its column stays empty\n");
    } else {
        fprintf(stderr, "rqbench: rqbench-ucx not built (no UCX at configure time)\n");
    }

    struct rqb_report rep = {0};
    for (int i = 0; i < 3; i++) {
        if (rqb_report_read_csv(out[i], &rep) != 0 && i == 0) {
            fprintf(stderr, "rqbench: cannot read %s\n", out[i]);
            rc = 1;
        }
        unlink(out[i]);
    }
    rmdir(tmp);
    rqb_report_placement(&rep);
    rep.ranks = 2;
    if (rc == 0)
        rc = rqb_write_outputs(&rep, o, NULL);
    rqb_report_free(&rep);
    return rc;
}

static const struct rqb_row *limit_for(const struct rqb_report *r, const struct rqb_row *w,
                                       double *scale)
{
    *scale = 1;
    if (strcmp(w->name, "latency 8B one-way") == 0)
        return rqb_report_find(r, "limits", "limit", "cache-line one-way latency L", NAN);
    /* put 8B + flush: on one node a put is a store into the mapped segment
     * and the flush a fence, so no line has to cross: no limit to show
     * (a round trip, 2L, was shown and librq beat it). */
    if (strcmp(w->name, "message rate 8B") == 0)
        return rqb_report_find(r, "limits", "limit", "raw SPSC ring, 64-byte slots", NAN);
    if (strcmp(w->name, "bandwidth") == 0) /* one core's memcpy of the same size */
        return rqb_report_find(r, "limits", "limit", "memcpy bandwidth, one core", w->param);
    return NULL;
}

/* Whether librq's figure w is better than the limit lim (a limit that a
 * measurement beats is not one for that shape: it is flagged). */
static int beats(const struct rqb_row *w, double lim)
{
    return strncmp(w->unit, "ns", 2) == 0 ? w->s.median < lim : w->s.median > lim;
}

/* How many times better librq is than the peer (>1: librq ahead). */
static double speedup(const struct rqb_row *lib, const struct rqb_row *peer)
{
    if (lib == NULL || peer == NULL || lib->s.n == 0 || peer->s.n == 0)
        return NAN;
    /* Times (ns, ns/B): lower is better; rates and fractions: higher. */
    return strncmp(lib->unit, "ns", 2) == 0 ? peer->s.median / lib->s.median
                                            : lib->s.median / peer->s.median;
}

/* A run's placement: its cache-line latency at start and end (the
 * "cache-line one-way latency L, start / end" rows; librq's limits row
 * stands in for a start it lacks).  0 when unknown. */
#define PLACEMENT_ROW "cache-line one-way latency L"

struct placement {
    double lo, hi;
};

static struct placement placement_of(const struct rqb_report *r, const char *impl)
{
    struct placement p = {0, 0};
    const struct rqb_row *a = rqb_report_find(r, "compare", impl, PLACEMENT_ROW ", start", NAN);
    const struct rqb_row *b = rqb_report_find(r, "compare", impl, PLACEMENT_ROW ", end", NAN);
    if (a == NULL && strcmp(impl, "librq") == 0)
        a = rqb_report_find(r, "limits", "limit", PLACEMENT_ROW, NAN);
    const struct rqb_row *w[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (w[i] == NULL || w[i]->s.n == 0 || !(w[i]->s.median > 0))
            continue;
        const double v = w[i]->s.median;
        p.lo = p.lo == 0 || v < p.lo ? v : p.lo;
        p.hi = v > p.hi ? v : p.hi;
    }
    return p;
}

/* Two runs placed alike: every L of both within 1.5x (the host moves the
 * CPUs between runs: near ~30-50 ns, far 150-900). */
static int placed_alike(struct placement a, struct placement b)
{
    if (a.lo == 0 || b.lo == 0)
        return 1; /* unknown: nothing to say */
    const double lo = a.lo < b.lo ? a.lo : b.lo, hi = a.hi > b.hi ? a.hi : b.hi;
    return hi <= 1.5 * lo;
}

static void placement_cell(FILE *f, const char *who, struct placement p)
{
    if (p.lo == 0)
        fprintf(f, " %s ?", who);
    else
        fprintf(f, " %s %.0f-%.0f", who, p.lo, p.hi);
}

static void cell(FILE *f, const struct rqb_row *w)
{
    if (w == NULL || w->s.n == 0)
        fprintf(f, " %9s", "n/a");
    else
        fprintf(f, " %9.4g", w->s.median);
}

/* A speedup; `apart` marks one between runs placed differently. */
static void ratio(FILE *f, double x, int apart)
{
    if (isnan(x))
        fprintf(f, " %8s", "-");
    else if (apart)
        fprintf(f, " %7.2f~", x);
    else
        fprintf(f, " %8.2f", x);
}

void rqb_compare_table(FILE *f, const struct rqb_report *r)
{
    int any = 0, flagged = 0;
    const struct placement pl = placement_of(r, "librq"), pm = placement_of(r, "mpi"),
                           pu = placement_of(r, "ucx");
    const int m_apart = !placed_alike(pl, pm), u_apart = !placed_alike(pl, pu);
    for (int i = 0; i < r->n; i++) {
        const struct rqb_row *w = &r->rows[i];
        if (strcmp(w->family, "compare") != 0 || strcmp(w->impl, "librq") != 0 ||
            strncmp(w->name, PLACEMENT_ROW, strlen(PLACEMENT_ROW)) == 0)
            continue;
        if (!any++) {
            fprintf(f, "\n[comparison] same two cores, one invocation; speedup = how many times "
                       "librq is better\n  placement, L at start-end of each run (ns):");
            placement_cell(f, "librq", pl);
            placement_cell(f, "MPI", pm);
            placement_cell(f, "UCX", pu);
            fprintf(f, "\n  %-22s %6s %-5s %9s %9s %8s %9s %8s %9s\n", "benchmark", "param",
                    "unit", "librq", "MPI", "speedup", "UCX", "speedup", "limit");
        }
        const struct rqb_row *m = rqb_report_find(r, "compare", "mpi", w->name, w->param);
        const struct rqb_row *u = rqb_report_find(r, "compare", "ucx", w->name, w->param);
        char p[16];
        rqb_fmt_param(p, sizeof p, w->param);
        fprintf(f, "  %-22s %6s %-5s", w->name, p, w->unit);
        cell(f, w);
        cell(f, m);
        ratio(f, speedup(w, m), m_apart);
        cell(f, u);
        ratio(f, speedup(w, u), u_apart);
        double sc;
        const struct rqb_row *lim = limit_for(r, w, &sc);
        if (lim != NULL && lim->s.n > 0) {
            const int beaten = beats(w, lim->s.median * sc);
            fprintf(f, " %9.4g%s", lim->s.median * sc, beaten ? "!" : "");
            flagged += beaten;
        }
        fputc('\n', f);
    }
    if (any && (m_apart || u_apart))
        fprintf(f, "  (~: that peer ran at another placement than librq, its L more than 1.5x "
                   "apart: the speedup compares two placements, not two libraries; rerun)\n");
    if (flagged)
        fprintf(f, "  (!: librq measured better than this limit, which is then not a limit for "
                   "this shape: the two were measured differently, e.g. a cache-resident "
                   "stream against a copy between private buffers)\n");
}

int rqb_write_outputs(struct rqb_report *r, const struct rqb_opts *o, const char *emit)
{
    int rc = 0;
    if (emit != NULL) {
        if (rqb_report_csv(emit, r) != 0) {
            fprintf(stderr, "rqbench: %s: %s\n", emit, strerror(errno));
            return 1;
        }
        return 0;
    }
    printf("rqbench: %d ranks; placement %s (L = %.0f ns)", r->ranks,
           r->placement[0] ? r->placement : "?", r->line_ns);
    if (r->tsc_ghz > 0) /* known in the measuring run, not in a merged one */
        printf("; ranks 0,1 on cpus %d,%d; TSC %.2f GHz; clock read %.1f ns (subtracted)",
               r->cpu0, r->cpu1, r->tsc_ghz, r->timer_ns);
    printf("\n");
    printf("median [min .. max]; ci90%% = half-width of the median's 90%% confidence "
           "interval, %% of the median\n");
    rqb_report_text(stdout, r);
    rqb_compare_table(stdout, r);
    fflush(stdout);
    if (o->csv != NULL && rqb_report_csv(o->csv, r) != 0) {
        fprintf(stderr, "rqbench: %s: %s\n", o->csv, strerror(errno));
        rc = 1;
    }
    if (o->json != NULL && rqb_report_json(o->json, r) != 0) {
        fprintf(stderr, "rqbench: %s: %s\n", o->json, strerror(errno));
        rc = 1;
    }
    if (o->plot_dir != NULL)
        rqb_plots(r, o->plot_dir);
    return rc;
}
