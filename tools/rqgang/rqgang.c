/* rqgang - a gang scheduler for FUGU's multiprogramming experiments
 * (thesis Figures 7-5 and 7-17), made of SIGSTOP and SIGCONT.
 *
 * It starts a parallel job A (normally `rqrun -n N --bind core prog ...`)
 * and, optionally, a competing program B (a second job, or rqload), finds
 * their processes (A's ranks are the children of its launcher, ordered by
 * RQ_RANK; B's are its children, or B itself, ordered by pid), and cuts
 * time into slices of --slice ms, in pairs:
 *
 *   --policy gang      slice 1: A runs, B stopped; slice 2: B runs, A
 *                      stopped (fixed-timeslice gang scheduling; A alone
 *                      is held to half the machine).
 *   --policy cosched   slice 1: A runs, B stopped; slice 2: both run, as
 *                      Linux schedules them (FUGU's Figure 7-5: half the
 *                      time is A's, the other half shared).
 *
 * --skew S (0 <= S < 1) moves process i's slice boundaries by
 * S * slice * i / n (n: the number of A's processes), so that the ranks
 * are deliberately mis-scheduled for a window around each switch
 * (Figure 7-17): rank i and B's process i switch together, rank j's
 * switch comes later.  B's leader (rqload's clients live there) stops
 * and continues with B's process 0: B is descheduled whole.
 *
 * Discovery never holds the schedule up: slices start at once, with a
 * program that has no children yet scheduled as itself; every 2 ms its
 * children are looked for again, and once there are some and their number
 * has held for 50 ms (or, for B, reached A's count) they replace it, for
 * good.  A program that never forks (sleep, a serial code) is scheduled as
 * itself throughout.
 *
 * Scheduling stops when either program ends.  A ends: B is continued and
 * sent SIGTERM.  B ends first: A is continued and runs on unscheduled
 * until it exits.  Exit status is A's.  Prints how many switches it made
 * and the time A was stopped.
 *
 * Usage: rqgang [--slice MS] [--policy gang|cosched] [--skew S] -- A... [--also B...]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 4096

struct group {
    pid_t  leader;            /* what we started */
    int    leader_stopped;    /* B's leader stops with B's process 0 */
    pid_t  pid[MAX_PROCS];    /* the processes we schedule */
    int    n;
    int    stopped[MAX_PROCS];
    int    settled;           /* pid[] are the leader's children, for good */
    int    seen;              /* children counted at the last look */
    double seen_since, next_look;
};

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The children of pid (from /proc/PID/task/TID/children), up to max. */
static int children_of(pid_t pid, pid_t *out, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
        if (e->d_name[0] == '.')
            continue;
        char cp[600];
        snprintf(cp, sizeof cp, "%s/%s/children", path, e->d_name);
        FILE *f = fopen(cp, "r");
        if (f == NULL)
            continue;
        int c;
        while (n < max && fscanf(f, "%d", &c) == 1)
            out[n++] = (pid_t)c;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* A process's RQ_RANK, or -1. */
static long rank_of(pid_t pid)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
        if (strncmp(buf + i, "RQ_RANK=", 8) == 0)
            return strtol(buf + i + 8, NULL, 10);
    return -1;
}

static int cmp_rank(const void *a, const void *b)
{
    long ra = rank_of(*(const pid_t *)a), rb = rank_of(*(const pid_t *)b);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    return *(const pid_t *)a < *(const pid_t *)b ? -1 : *(const pid_t *)a > *(const pid_t *)b;
}

static void set_running(struct group *g, int i, int run, uint64_t *switches)
{
    if (i >= g->n || g->stopped[i] == !run)
        return;
    if (kill(g->pid[i], run ? SIGCONT : SIGSTOP) == 0)
        (*switches)++;
    g->stopped[i] = !run;
}

/* B is descheduled whole: its leader too (rqload's clients live there),
 * on process 0's clock, unless the leader is itself one of B's processes. */
static void set_leader_running(struct group *g, int run)
{
    if (g->leader == 0 || g->pid[0] == g->leader || g->leader_stopped == !run)
        return;
    kill(g->leader, run ? SIGCONT : SIGSTOP);
    g->leader_stopped = !run;
}

/* Look for g's processes again (every 2 ms until settled): the leader's
 * children once there are some and their number has held for 50 ms, or
 * has reached want; until then the leader itself.  On settling, what was
 * stopped under the old membership is continued first. */
static void refresh(struct group *g, int want, double t, uint64_t *switches)
{
    if (g->leader == 0 || g->settled || t < g->next_look)
        return;
    g->next_look = t + 0.002;
    static pid_t kids[MAX_PROCS];
    int k = children_of(g->leader, kids, MAX_PROCS);
    if (k != g->seen) {
        g->seen = k;
        g->seen_since = t;
    }
    if (k == 0 || !((want > 0 && k >= want) || t - g->seen_since > 0.05)) {
        if (g->n == 0) { /* meanwhile: the leader is the process */
            g->pid[0] = g->leader;
            g->n = 1;
        }
        return;
    }
    for (int i = 0; i < g->n; i++)
        set_running(g, i, 1, switches);
    set_leader_running(g, 1);
    memcpy(g->pid, kids, (size_t)k * sizeof kids[0]);
    memset(g->stopped, 0, sizeof g->stopped);
    g->n = k;
    qsort(g->pid, (size_t)g->n, sizeof g->pid[0], cmp_rank);
    g->settled = 1;
}

static pid_t start(char **argv)
{
    pid_t p = fork();
    if (p == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "rqgang: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return p;
}

static int usage(const char *why)
{
    fprintf(stderr, "rqgang: %s\nusage: rqgang [--slice MS] [--policy gang|cosched] [--skew S] "
                    "-- A... [--also B...]\n", why);
    return 2;
}

int main(int argc, char **argv)
{
    double slice_ms = 20, skew = 0;
    int cosched = 0, i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: rqgang [--slice MS] [--policy gang|cosched] [--skew S] "
                   "-- A... [--also B...]\n(see rqgang(1))\n");
            return 0;
        }
        if (i + 1 >= argc)
            return usage("an option needs a value");
        char *end;
        if (strcmp(argv[i], "--slice") == 0) {
            slice_ms = strtod(argv[i + 1], &end);
            if (*end != '\0' || !(slice_ms >= 1 && slice_ms <= 60000))
                return usage("--slice must be in [1, 60000] ms");
        } else if (strcmp(argv[i], "--skew") == 0) {
            skew = strtod(argv[i + 1], &end);
            if (*end != '\0' || !(skew >= 0 && skew < 1))
                return usage("--skew must be in [0, 1)");
        } else if (strcmp(argv[i], "--policy") == 0) {
            if (strcmp(argv[i + 1], "cosched") == 0)
                cosched = 1;
            else if (strcmp(argv[i + 1], "gang") != 0)
                return usage("--policy must be gang or cosched");
        } else {
            return usage("unknown option");
        }
    }
    if (i >= argc - 1)
        return usage("no job after --");
    char **a_argv = &argv[i + 1], **b_argv = NULL;
    for (int k = i + 1; k < argc; k++)
        if (strcmp(argv[k], "--also") == 0) {
            argv[k] = NULL;
            b_argv = &argv[k + 1];
            if (*b_argv == NULL)
                return usage("nothing after --also");
            break;
        }
    if (a_argv[0] == NULL)
        return usage("no job after --");
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    static struct group A, B;
    A.leader = start(a_argv);
    if (b_argv != NULL)
        B.leader = start(b_argv);
    const double slice = slice_ms * 1e-3, period = 2 * slice;
    uint64_t switches = 0;
    double a_stopped = 0, t0 = now_s(), last = t0;
    int status = 0, a_done = 0, b_done = b_argv == NULL;
    for (;;) {
        if (waitpid(A.leader, &status, WNOHANG) == A.leader) {
            a_done = 1;
            break;
        }
        int bs;
        if (!b_done && waitpid(B.leader, &bs, WNOHANG) == B.leader)
            b_done = 1;
        if (b_done && b_argv != NULL)
            break; /* B ended first: A runs on, unscheduled */
        if (interrupted)
            break;
        double t = now_s(), dt = t - last;
        last = t;
        refresh(&A, 0, t, &switches);
        if (b_argv != NULL)
            refresh(&B, A.settled ? A.n : 0, t, &switches);
        const int n = A.n;
        for (int k = 0; k < n; k++)
            a_stopped += A.stopped[k] ? dt / n : 0;
        for (int k = 0; k < n; k++) {
            /* Process k's own clock: shifted by its share of the skew. */
            double local = t - t0 - skew * slice * k / n;
            double phase = local - period * (double)(long)(local / period);
            if (phase < 0)
                phase += period;
            int first = phase < slice;
            set_running(&A, k, first || cosched, &switches);
            set_running(&B, k, !first, &switches);
            if (k == 0 && B.n > 0)
                set_leader_running(&B, !first);
        }
        /* The next boundary of any process, polled at a 20th of a slice. */
        usleep((useconds_t)(slice * 1e6 / 20));
    }
    for (int k = 0; k < A.n; k++)
        set_running(&A, k, 1, &switches);
    if (b_argv != NULL && !b_done) {
        for (int k = 0; k < B.n; k++)
            set_running(&B, k, 1, &switches);
        set_leader_running(&B, 1);
        kill(B.leader, SIGTERM);
        for (int k = 0; k < B.n; k++)
            kill(B.pid[k], SIGCONT);
        int bs;
        waitpid(B.leader, &bs, 0);
    }
    if (interrupted && !a_done)
        kill(A.leader, SIGTERM);
    while (!a_done && waitpid(A.leader, &status, 0) < 0 && errno == EINTR)
        if (interrupted)
            kill(A.leader, SIGTERM);
    const double wall = now_s() - t0;
    fprintf(stderr, "rqgang: %s, slice %.1f ms, skew %.2f: %d + %d processes, %llu switches, "
                    "A stopped %.1f%% of %.3f s%s\n",
            cosched ? "cosched" : "gang", slice_ms, skew, A.n, B.n,
            (unsigned long long)switches, 100 * a_stopped / wall, wall,
            a_done || interrupted ? "" : " (B ended first: A ran unscheduled after that)");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
