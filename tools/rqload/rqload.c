/* rqload - the interactive load of FUGU's mixed-workload experiments
 * (thesis section 7.2: a server answering clients whose requests arrive
 * with exponentially distributed gaps).  One server process per CPU,
 * pinned there, answers requests from its client: each request costs it
 * --service-us microseconds of busy work.  The clients (threads of this
 * process, asleep between requests) send open-loop arrivals at the rate
 * that makes the server take the fraction F of its CPU (rate = F /
 * service time, an M/D/1 queue of utilisation F): requests that find the
 * server busy queue in its pipe.  At the end each server's CPU time is
 * read from the kernel (requests still queued at the end are dropped)
 * and the fraction it achieved is printed, so a run
 * beside a parallel program shows what the load actually took.
 *
 * Usage: rqload [--fraction F] [--service-us S] [--cpus N|all] [--duration SEC]
 *               [--seed N] [--nice N]
 *   F in [0, 1) (default 0.25); S > 0 (default 200); N: the first N CPUs
 *   this process may run on (default all of them; more than there are is
 *   refused); SEC > 0 runs that long, 0 (default) until SIGINT or SIGTERM;
 *   --nice: the servers' niceness (default 0: plain Linux).  A request
 *   that finds its server's queue (a pipe) full is dropped and counted:
 *   the arrivals stay open-loop and the run ends on time however far
 *   behind the servers are.
 * Output: one line per server, then
 *   rqload: fraction F requested, A achieved (mean over N cpus), R requests
 * Exit status 0, or 2 on bad arguments. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 1024

struct server {
    pid_t     pid;
    int       cpu;
    int       wfd;       /* requests go here */
    int       rfd;       /* the server's count comes back here */
    pthread_t client;
    uint64_t  sent;
    uint64_t  dropped;   /* arrivals that found the queue full */
    uint64_t  seed;
};

/* Set by the signal handler, read by the client threads: a lock-free C11
 * atomic (async-signal-safe), not a volatile sig_atomic_t, which only
 * orders a handler against its own thread. */
static _Atomic int stop;
static double rate_per_s;       /* arrivals per second per server */
static double service_us = 200;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void spin_us(double us)
{
    double end = now_s() + us * 1e-6;
    while (now_s() < end)
        ;
}

/* The server: pinned, blocks in read, works service_us per request. */
static void serve(int rfd, int wfd, int cpu, int niceness)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)sched_setaffinity(0, sizeof set, &set);
    if (niceness != 0 && setpriority(PRIO_PROCESS, 0, niceness) != 0)
        perror("rqload: setpriority");
    /* The parent ends us with SIGUSR1 (what is still queued is dropped:
     * the run is over) or by closing the pipe. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGUSR1, &sa, NULL);
    uint64_t n = 0, buf[64];
    while (!stop) {
        ssize_t r = read(rfd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r / 8 && !stop; i++, n++)
            spin_us(service_us);
    }
    if (write(wfd, &n, sizeof n) != (ssize_t)sizeof n)
        _exit(1);
    _exit(0);
}

/* A client: open-loop exponential arrivals until stop. */
static void *client(void *arg)
{
    struct server *s = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!stop) {
        double u = (double)(splitmix(&s->seed) >> 11) * 0x1p-53;
        double gap = -log(1.0 - u) / rate_per_s;
        uint64_t ns = (uint64_t)(gap * 1e9);
        next.tv_nsec += (long)(ns % 1000000000u);
        next.tv_sec += (time_t)(ns / 1000000000u) + next.tv_nsec / 1000000000;
        next.tv_nsec %= 1000000000;
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR && !stop)
            ;
        if (stop)
            break;
        /* Non-blocking: a client blocked on a full pipe would miss the
         * stop signal (delivered before it blocked) and never return. */
        uint64_t req = s->sent;
        ssize_t w = write(s->wfd, &req, sizeof req);
        if (w == (ssize_t)sizeof req)
            s->sent++;
        else if (w < 0 && (errno == EAGAIN || errno == EINTR))
            s->dropped++;
        else
            break;
    }
    return NULL;
}

static int usage(const char *why)
{
    fprintf(stderr, "rqload: %s\nusage: rqload [--fraction F] [--service-us S] [--cpus N|all] "
                    "[--duration SEC] [--seed N] [--nice N]\n", why);
    return 2;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return errno != 0 || end == s || *end != '\0' || !isfinite(*out) ? -1 : 0;
}

int main(int argc, char **argv)
{
    double fraction = 0.25, duration = 0;
    /* The CPUs we may run on, in order: servers are pinned to the first N. */
    cpu_set_t allowed;
    int cpus[MAX_CPUS];
    long navail = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return perror("rqload: sched_getaffinity"), 1;
    for (int c = 0; c < CPU_SETSIZE && navail < MAX_CPUS; c++)
        if (CPU_ISSET(c, &allowed))
            cpus[navail++] = c;
    long ncpu = navail;
    uint64_t seed = 1;
    int niceness = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            printf("usage: rqload [--fraction F] [--service-us S] [--cpus N|all] [--duration SEC] "
                   "[--seed N] [--nice N]\n(see rqload(1))\n");
            return 0;
        }
        if (v == NULL)
            return usage("an option needs a value");
        if (strcmp(a, "--fraction") == 0) {
            if (parse_double(v, &fraction) != 0 || fraction < 0 || fraction >= 1)
                return usage("--fraction must be in [0, 1)");
        } else if (strcmp(a, "--service-us") == 0) {
            if (parse_double(v, &service_us) != 0 || service_us <= 0 || service_us > 1e7)
                return usage("--service-us must be in (0, 1e7]");
        } else if (strcmp(a, "--cpus") == 0) {
            if (strcmp(v, "all") != 0 &&
                (parse_double(v, &d) != 0 || d < 1 || d > MAX_CPUS || d != (long)d))
                return usage("--cpus must be a count of CPUs (1..1024) or all");
            if (strcmp(v, "all") != 0)
                ncpu = (long)d;
            if (ncpu > navail) {
                fprintf(stderr, "rqload: --cpus %ld: this process may run on %ld CPUs\n", ncpu,
                        navail);
                return usage("--cpus must not exceed the CPUs available");
            }
        } else if (strcmp(a, "--duration") == 0) {
            if (parse_double(v, &duration) != 0 || duration < 0 || duration > 1e9)
                return usage("--duration must be in [0, 1e9] seconds");
        } else if (strcmp(a, "--seed") == 0) {
            if (parse_double(v, &d) != 0 || d < 0 || d != (double)(uint64_t)d)
                return usage("--seed must be a whole number >= 0");
            seed = (uint64_t)d;
        } else if (strcmp(a, "--nice") == 0) {
            if (parse_double(v, &d) != 0 || d < -20 || d > 19 || d != (int)d)
                return usage("--nice must be in -20..19");
            niceness = (int)d;
        } else {
            return usage("unknown option");
        }
        i++;
    }
    rate_per_s = fraction / (service_us * 1e-6);
    struct server *sv = calloc((size_t)ncpu, sizeof *sv);
    if (sv == NULL)
        return 1;
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    double t0 = now_s();
    for (long c = 0; c < ncpu; c++) {
        int req[2], back[2];
        if (pipe(req) != 0 || pipe(back) != 0) {
            perror("rqload: pipe");
            return 1;
        }
        pid_t p = fork();
        if (p < 0) {
            perror("rqload: fork");
            return 1;
        }
        if (p == 0) {
            close(req[1]);
            close(back[0]);
            for (long k = 0; k < c; k++) {
                close(sv[k].wfd);
                close(sv[k].rfd);
            }
            serve(req[0], back[1], cpus[c], niceness);
        }
        close(req[0]);
        close(back[1]);
        (void)fcntl(req[1], F_SETFL, O_NONBLOCK);
        sv[c] = (struct server){.pid = p, .cpu = cpus[c], .wfd = req[1], .rfd = back[0],
                                .seed = seed * 1000003u + (uint64_t)c};
    }
    /* With F = 0 no client runs: the servers only wait. */
    for (long c = 0; c < ncpu && fraction > 0; c++)
        pthread_create(&sv[c].client, NULL, client, &sv[c]);
    while (!stop && (duration == 0 || now_s() - t0 < duration))
        usleep(10000);
    stop = 1;
    for (long c = 0; c < ncpu && fraction > 0; c++) {
        pthread_kill(sv[c].client, SIGINT); /* out of its sleep */
        pthread_join(sv[c].client, NULL);
    }
    double wall = now_s() - t0, sum = 0;
    uint64_t total = 0;
    for (long c = 0; c < ncpu; c++) {
        kill(sv[c].pid, SIGUSR1);
        close(sv[c].wfd);
        uint64_t served = 0;
        if (read(sv[c].rfd, &served, sizeof served) != (ssize_t)sizeof served)
            served = 0;
        close(sv[c].rfd);
        struct rusage ru;
        int st;
        while (wait4(sv[c].pid, &st, 0, &ru) < 0 && errno == EINTR)
            ;
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
        double f = cpu / wall;
        sum += f;
        total += served;
        printf("rqload: cpu %d: %llu requests sent, %llu served, %llu dropped (queue full), "
               "cpu time %.3f s of %.3f s: fraction %.3f\n",
               sv[c].cpu, (unsigned long long)sv[c].sent, (unsigned long long)served,
               (unsigned long long)sv[c].dropped, cpu, wall, f);
    }
    printf("rqload: fraction %.3f requested, %.3f achieved (mean over %ld cpus), %llu requests\n",
           fraction, sum / (double)ncpu, ncpu, (unsigned long long)total);
    free(sv);
    return 0;
}
