/* pdq_bind.c - where a PDQ's threads run (RQ_PDQ_BIND, rq.h, docs/pdq.md).
 * Each rank opens a PDQ of `threads` threads from a thread whose allowed
 * set is `set` (all: every CPU of the process; one: its current CPU only),
 * finds its threads by name (rq-pdq6.<i> in /proc/self/task) and checks
 * their affinity:
 *   spread, several CPUs: each thread on exactly one CPU of the set, thread
 *     i of the node's k-th rank at place k * threads + i round the set (so
 *     with threads <= CPUs the rank's threads are on distinct CPUs);
 *   spread with one CPU, or none: each thread may run where the opener may.
 * Every thread then runs handlers (the PDQ works wherever it is placed).
 * argv: threads, all|one, spread|none (the RQ_PDQ_BIND the test sets). */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "check.h"
#include "rq.h"

#define QID 6
#define H_RUN 20

static _Atomic unsigned ran;

static void on_run(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)m, (void)a;
    atomic_fetch_add(&ran, 1);
}

/* The affinity of this process's thread named `name`; 0 if found. */
static int affinity_of(const char *name, cpu_set_t *set)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    int found = -1;
    for (struct dirent *de; found != 0 && (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof comm, f) != NULL)
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
        if (strcmp(comm, name) == 0) {
            CHECK_EQ(sched_getaffinity((pid_t)atoi(de->d_name), sizeof *set, set), 0);
            found = 0;
        }
    }
    closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK(argc == 4);
    const unsigned threads = (unsigned)atoi(argv[1]);
    const int one = strcmp(argv[2], "one") == 0, spread = strcmp(argv[3], "spread") == 0;
    const int me = rq_rank(ctx), np = rq_size(ctx);
    CHECK_EQ(rq_handler_register(ctx, H_RUN, on_run, NULL, 0), 0);

    /* The opener's allowed set: the process's, or its current CPU. */
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    if (one) {
        int cpu = sched_getcpu();
        CHECK(cpu >= 0);
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        CHECK_EQ(sched_setaffinity(0, sizeof set, &set), 0);
    }
    const int count = CPU_COUNT(&set);
    int places[CPU_SETSIZE], k = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            places[k++] = c;

    rq_pdq_attr_t at = {threads, RQ_PDQ_DEDICATED, 0};
    rq_pdq_t *pdq;
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    cpu_set_t seen_union;
    CPU_ZERO(&seen_union);
    for (unsigned i = 0; i < threads; i++) {
        char name[32];
        snprintf(name, sizeof name, "rq-pdq%u.%u", QID, i);
        cpu_set_t t;
        int tries = 0;
        while (affinity_of(name, &t) != 0 && tries++ < 1000) /* named as it starts */
            sched_yield();
        CHECK(tries <= 1000);
        if (spread && count > 1) {
            CHECK_EQ(CPU_COUNT(&t), 1);
            /* Every rank here runs on this host (rqrun): it is the node's
             * me-th rank. */
            const int want = places[((unsigned)me * threads + i) % (unsigned)k];
            if (!CPU_ISSET(want, &t)) {
                fprintf(stderr, "rank %d thread %u: not on CPU %d\n", me, i, want);
                return 1;
            }
            CPU_OR(&seen_union, &seen_union, &t);
        } else {
            CHECK(CPU_EQUAL(&t, &set));
        }
    }
    if (spread && count > 1) /* distinct CPUs while they fit */
        CHECK_EQ(CPU_COUNT(&seen_union), (int)(threads < (unsigned)count ? threads : (unsigned)count));

    /* The PDQ runs handlers on every thread, wherever placed. */
    const unsigned n = 2000;
    for (unsigned i = 0; i < n; i++) {
        uint64_t a = i;
        CHECK_EQ(rq_pdq_enqueue(ctx, (me + 1) % np, QID, i % 64, H_RUN, &a, 1, NULL, 0, 0), 0);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_pdq_drain(pdq), 0);
    CHECK_EQ(atomic_load(&ran), n);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
