/* rqrun - start N ranks of a librq program on this node.
 *
 *   rqrun -n N [--bind core|none] [--] prog [args...]
 *
 * Creates the job segment (a memfd: nothing ever appears in /dev/shm),
 * forks N children that inherit it (RQ_JOB_FD, RQ_RANK, RQ_SIZE), forwards
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 to them, and when one rank
 * fails (non-zero exit or a signal) marks the job failed, sends SIGTERM to
 * the others and SIGKILL after RQ_KILL_GRACE_MS.  Exits with the first
 * failing status (128 + signal for a signal), else 0.  Children get
 * PR_SET_PDEATHSIG(SIGKILL), so killing rqrun itself kills the job.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/internal.h"

static const int fwd_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define NFWD (int)(sizeof fwd_signals / sizeof fwd_signals[0])

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rqrun -n N [--bind core|none] [--] program [args...]\n"
        "  -n, --np N        number of ranks (1..%u)\n"
        "  --bind core|none  pin rank i to the i-th allowed CPU (modulo their count);\n"
        "                    default none\n"
        "  -h, --help        this text\n"
        "Environment: RQ_* variables configure the job (see rqinfo);\n"
        "RQ_KILL_GRACE_MS is the grace between SIGTERM and SIGKILL after a failure.\n",
        RQI_MAX_RANKS);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The i-th CPU of our allowed set, or -1. */
static int nth_cpu(int i)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int n = CPU_COUNT(&set);
    if (n == 0)
        return -1;
    int want = i % n;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set) && want-- == 0)
            return c;
    return -1;
}

static void child(int rank, int n, int job_fd, int bind, const sigset_t *oldmask,
                  char **prog_argv, pid_t parent)
{
    /* Die with rqrun; and if it is already gone, do not start at all. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    int fd = dup(job_fd); /* without close-on-exec */
    if (fd < 0)
        _exit(127);
    char buf[32];
    snprintf(buf, sizeof buf, "%d", fd);
    setenv(RQI_ENV_JOB_FD, buf, 1);
    snprintf(buf, sizeof buf, "%d", rank);
    setenv(RQI_ENV_RANK, buf, 1);
    snprintf(buf, sizeof buf, "%d", n);
    setenv(RQI_ENV_SIZE, buf, 1);
#if defined(__SANITIZE_THREAD__)
    /* A ThreadSanitizer build: UCX's memory hooks (libucm, loaded with
     * librq whether or not a job crosses nodes) crash under TSan's
     * interceptors at thread start.  librq needs no hooks; the user's own
     * settings win (docs/ucx.md). */
    setenv("UCX_MEM_EVENTS", "no", 0);
    setenv("UCX_MEM_MALLOC_HOOKS", "no", 0);
    setenv("UCX_MEM_MMAP_HOOK_MODE", "none", 0);
#endif
    if (bind) {
        int cpu = nth_cpu(rank);
        if (cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            sched_setaffinity(0, sizeof set, &set);
        }
    }
    execvp(prog_argv[0], prog_argv);
    fprintf(stderr, "rqrun: cannot run %s: %s\n", prog_argv[0], strerror(errno));
    _exit(127);
}

int main(int argc, char **argv)
{
    long n = -1;
    int bind = 0, i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if ((strcmp(a, "-n") == 0 || strcmp(a, "--np") == 0 || strcmp(a, "-np") == 0) &&
                   i + 1 < argc) {
            char *end;
            n = strtol(argv[++i], &end, 10);
            if (*end != '\0' || n < 1 || n > (long)RQI_MAX_RANKS) {
                fprintf(stderr, "rqrun: bad rank count '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--bind") == 0 && i + 1 < argc) {
            const char *b = argv[++i];
            if (strcmp(b, "core") == 0)
                bind = 1;
            else if (strcmp(b, "none") == 0)
                bind = 0;
            else {
                fprintf(stderr, "rqrun: --bind takes core or none, not '%s'\n", b);
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "rqrun: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            break;
        }
    }
    if (n < 1 || i >= argc) {
        usage(stderr);
        return 2;
    }
    char **prog_argv = &argv[i];

    struct rqi_config cfg;
    char err[256];
    if (rqi_config_load(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "rqrun: %s\n", err);
        return 2;
    }
    int job_fd = rqi_shm_create(&cfg, (uint32_t)n, (uint32_t)n, 0, err, sizeof err);
    if (job_fd < 0) {
        fprintf(stderr, "rqrun: cannot create the job segment: %s\n", err);
        return 1;
    }
    struct rqi_job_hdr *hdr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, job_fd, 0);
    if (hdr == MAP_FAILED) {
        fprintf(stderr, "rqrun: mmap: %s\n", strerror(errno));
        return 1;
    }

    /* A job started with & by a shell without job control inherits SIGINT
     * and SIGQUIT ignored; so would its ranks, and a forwarded ^C or
     * SIGQUIT would do nothing.  Those two go back to their defaults (for
     * us the signal is blocked and read from the signalfd).  SIGHUP keeps
     * what it had: nohup's SIG_IGN is meant for the ranks too. */
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    sigset_t mask, oldmask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    for (int s = 0; s < NFWD; s++)
        sigaddset(&mask, fwd_signals[s]);
    sigprocmask(SIG_BLOCK, &mask, &oldmask);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (sfd < 0) {
        fprintf(stderr, "rqrun: signalfd: %s\n", strerror(errno));
        return 1;
    }

    pid_t *pids = calloc((size_t)n, sizeof *pids);
    int *codes = calloc((size_t)n, sizeof *codes);
    if (pids == NULL || codes == NULL)
        return 1;
    pid_t self = getpid();
    int live = 0, status_out = 0, failed = 0;
    uint64_t kill_at = 0;
    for (int r = 0; r < n; r++) {
        pid_t p = fork();
        if (p == 0)
            child(r, (int)n, job_fd, bind, &oldmask, prog_argv, self);
        if (p < 0) {
            fprintf(stderr, "rqrun: fork: %s\n", strerror(errno));
            failed = 1;
            status_out = 1;
            break;
        }
        pids[r] = p;
        live++;
    }
    close(job_fd); /* the ranks hold it now; it dies with the last of them */
    uint64_t grace = cfg.v[RQI_CFG_KILL_GRACE_MS];
    if (failed) {
        rqi_store_release(&hdr->failed, 1u);
        for (int r = 0; r < n; r++)
            if (pids[r] > 0)
                kill(pids[r], SIGTERM);
        kill_at = now_ms() + grace;
    }

    while (live > 0) {
        int timeout = -1;
        if (kill_at != 0) {
            uint64_t t = now_ms();
            timeout = t >= kill_at ? 0 : (int)(kill_at - t);
        }
        struct pollfd pfd = {.fd = sfd, .events = POLLIN};
        int pr = poll(&pfd, 1, timeout);
        if (pr == 0 && kill_at != 0) {
            for (int r = 0; r < n; r++)
                if (pids[r] > 0)
                    kill(pids[r], SIGKILL);
            kill_at = 0;
            continue;
        }
        if (pr > 0) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGCHLD)
                    break;
                for (int r = 0; r < n; r++)
                    if (pids[r] > 0)
                        kill(pids[r], (int)si.ssi_signo);
                break;
            }
        }
        /* Reap whatever has exited. */
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            int r;
            for (r = 0; r < n && pids[r] != p; r++)
                ;
            if (r == n)
                continue;
            pids[r] = 0;
            live--;
            int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
            codes[r] = code;
            if (code != 0)
                rqi_shm_note_dead(hdr, (uint32_t)r);
            /* A rank gone while the others still wait for every rank to
             * attach can never join: fail them now (RQ_EPEER from rq_init)
             * instead of letting them wait out RQ_INIT_TIMEOUT_MS.  Its own
             * status stays what it was. */
            if (code == 0 && !failed && rqi_load_acquire(&hdr->attached) < hdr->nlocal) {
                fprintf(stderr,
                        "rqrun: rank %d exited before every rank had joined the job; failing "
                        "the ranks waiting for it\n",
                        r);
                rqi_shm_note_dead(hdr, (uint32_t)r);
                rqi_store_release(&hdr->failed, 1u);
            }
            if (code != 0 && !failed) {
                failed = 1;
                status_out = code;
                if (WIFSIGNALED(st))
                    fprintf(stderr, "rqrun: rank %d killed by signal %d (%s); stopping the job\n",
                            r, WTERMSIG(st), strsignal(WTERMSIG(st)));
                else
                    fprintf(stderr, "rqrun: rank %d exited with status %d; stopping the job\n",
                            r, code);
                /* Ranks blocked in librq see this at once and return RQ_EPEER. */
                rqi_store_release(&hdr->failed, 1u);
                for (int q = 0; q < n; q++)
                    if (pids[q] > 0)
                        kill(pids[q], SIGTERM);
                kill_at = now_ms() + grace;
            }
        }
    }
    /* Two ranks can be reaped in either order when one dies and another
     * notices and exits before we wake: the first rank seen dead, by us or
     * by a peer's liveness check, is the failure we report. */
    uint32_t first = rqi_load_acquire(&hdr->first_dead);
    if (first != 0 && first <= (uint32_t)n && codes[first - 1] != 0)
        status_out = codes[first - 1];
    munmap(hdr, 4096);
    free(pids);
    free(codes);
    return status_out;
}
