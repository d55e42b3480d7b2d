/* dsmapp.c - the rqdsm programs' shared start, barrier and report. */
#define _GNU_SOURCE
#include "dsmapp.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "finegrain.h"

enum { H_BARRIER = 199 };

/* Arrivals at the job-wide barrier, by epoch parity: added to by the
 * handler (on whichever thread polls: with --app-threads, any of the
 * team's), read and taken from by the thread in rqa_dsm_barrier.  Atomic:
 * the handler and the barrier's thread are different threads. */
static _Atomic uint64_t arrived[2];
static uint64_t epoch;
static int app_threads = 1;

static void on_arrive(rq_ctx_t *ctx, const rq_msg_t *m, void *a)
{
    (void)ctx;
    (void)a;
    if (m->nargs == 1)
        atomic_fetch_add_explicit(&arrived[m->args[0] & 1], 1, memory_order_release);
}

static const char *const protos[] = {"pdq", "multiplexed", "poll", "spinlock", "auto"};
enum { P_PDQ, P_MULTIPLEXED, P_POLL, P_SPINLOCK, P_AUTO };

/* --protocol auto: dedicated PDQ threads need CPUs of their own; where the
 * ranks and their threads outnumber the CPUs they may run on, they take
 * them from the application threads, and the polling organisation is the
 * fastest (lu 256 16 on 2 ranks on 2 cores: 5.0 ms polling against 8.4-11
 * ms on the PDQ; docs/apps.md).  A rank bound to a subset of the machine
 * counts that subset for itself; an unbound one counts the machine for
 * every rank on it (the ranks whose segment it maps).  Collective: every
 * rank takes the same choice. */
static int auto_protocol(rq_ctx_t *ctx, unsigned threads)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    long allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : online;
    int here = 0;
    for (int r = 0; r < rq_size(ctx); r++)
        here += rq_segment_peer(ctx, r) != NULL;
    int64_t pdq_fits = online > 0 && allowed < online
                           ? allowed >= 1 + (long)threads
                           : (long)here * (1 + (long)threads) <= online;
    int64_t all = 0;
    if (rq_allreduce(ctx, &pdq_fits, &all, 1, RQ_INT64, RQ_MIN) != 0)
        return P_POLL;
    return all ? P_PDQ : P_POLL;
}

int rqa_dsm_start(rq_ctx_t *ctx, int *argc, char **argv, rqdsm_t **dsm, char *org, size_t orgn)
{
    int me = rq_rank(ctx);
    (void)rqa_ticks(); /* start the tick clock: the report converts with it */
    int p = rqa_variant(argc, argv, "protocol", protos, 5, "auto");
    double threads = 1, block = 128, apps = 1;
    if (p < 0 || rqa_take_double(argc, argv, "threads", 1, 1, &threads) != 0 ||
        rqa_take_double(argc, argv, "app-threads", 1, 1, &apps) != 0 ||
        rqa_take_double(argc, argv, "dsm-block", 128, RQDSM_BLOCK_MIN, &block) != 0 ||
        threads > 1024 || apps > 64 || apps != (int)apps || block > RQDSM_BLOCK_MAX ||
        ((unsigned)block & ((unsigned)block - 1))) {
        if (me == 0)
            fprintf(stderr, "%s: --protocol auto|pdq|multiplexed|poll|spinlock, --threads 1..1024, "
                            "--app-threads 1..64, --dsm-block a power of two in 32..4096\n",
                    argv[0]);
        return -1;
    }
    app_threads = (int)apps;
    if (p == P_AUTO)
        p = auto_protocol(ctx, (unsigned)threads);
    rqdsm_attr_t a = {.block = (unsigned)block, .threads = (unsigned)threads,
                      .app_threads = (unsigned)app_threads};
    a.protocol = p == P_POLL ? RQDSM_PROTO_POLL : p == P_SPINLOCK ? RQDSM_PROTO_SPINLOCK
                                                                : RQDSM_PROTO_PDQ;
    a.pdq_mode = p == P_MULTIPLEXED ? RQ_PDQ_MULTIPLEXED : RQ_PDQ_DEDICATED;
    if (rq_handler_register(ctx, H_BARRIER, on_arrive, NULL, 0) != 0 ||
        rqdsm_init(ctx, &a, dsm) != 0) {
        if (me == 0)
            fprintf(stderr, "%s: rqdsm_init failed\n", argv[0]);
        return -1;
    }
    char nodes[32];
    snprintf(nodes, sizeof nodes, "%d app thread%s, ", app_threads, app_threads == 1 ? "" : "s");
    if (a.protocol == RQDSM_PROTO_POLL)
        snprintf(org, orgn, "%spoll, %u B blocks", nodes, a.block);
    else
        snprintf(org, orgn, "%s%s, %u thread%s, %u B blocks", nodes,
                 p == P_PDQ ? "pdq dedicated" : p == P_MULTIPLEXED ? "pdq multiplexed" : "spinlock",
                 a.threads, a.threads == 1 ? "" : "s", a.block);
    return 0;
}

int rqa_app_threads(void) { return app_threads; }

struct team_arg {
    void (*fn)(int, void *);
    void *arg;
    int   t;
};

static void *team_main(void *p)
{
    struct team_arg *a = p;
    a->fn(a->t, a->arg);
    return NULL;
}

int rqa_team_run(void (*fn)(int t, void *arg), void *arg)
{
    int n = app_threads;
    pthread_t th[64];
    struct team_arg ta[64];
    for (int t = 1; t < n; t++) {
        ta[t] = (struct team_arg){fn, arg, t};
        if (pthread_create(&th[t], NULL, team_main, &ta[t]) != 0) {
            fprintf(stderr, "rqa_team_run: thread %d could not start\n", t);
            return -1; /* the started ones wait at their first barrier: fatal */
        }
    }
    fn(0, arg);
    for (int t = 1; t < n; t++)
        pthread_join(th[t], NULL);
    return 0;
}

/* The rank's team barrier: a count and a sense word (the last to arrive
 * resets the count, then releases the sense; the waiters acquire it). */
static _Atomic unsigned team_count, team_sense;
static int team_rc;

/* Wait until *sense moves past s, serving the protocol. */
static int team_wait(rqdsm_t *dsm, _Atomic unsigned *sense, unsigned s)
{
    unsigned spins = 0;
    while (atomic_load_explicit(sense, memory_order_acquire) == s) {
        int rc = rqdsm_poll(dsm); /* idle: run the protocol's handlers */
        if (rc < 0)
            return rc;
        if (rc == 0)
            rqa_spin_turn(&spins);
    }
    return 0;
}

static _Atomic unsigned sync_count, sync_sense;

void rqa_team_sync(rqdsm_t *dsm)
{
    if (app_threads == 1)
        return;
    unsigned s = atomic_load_explicit(&sync_sense, memory_order_acquire);
    if (atomic_fetch_add_explicit(&sync_count, 1, memory_order_acq_rel) ==
        (unsigned)app_threads - 1) {
        atomic_store_explicit(&sync_count, 0, memory_order_relaxed);
        atomic_store_explicit(&sync_sense, s + 1, memory_order_release);
        return;
    }
    (void)team_wait(dsm, &sync_sense, s);
}

int rqa_team_barrier(rq_ctx_t *ctx, rqdsm_t *dsm)
{
    if (app_threads == 1)
        return rqa_dsm_barrier(ctx, dsm);
    unsigned s = atomic_load_explicit(&team_sense, memory_order_acquire);
    if (atomic_fetch_add_explicit(&team_count, 1, memory_order_acq_rel) ==
        (unsigned)app_threads - 1) {
        team_rc = rqa_dsm_barrier(ctx, dsm); /* the job-wide one, for all */
        atomic_store_explicit(&team_count, 0, memory_order_relaxed);
        atomic_store_explicit(&team_sense, s + 1, memory_order_release);
        return team_rc;
    }
    int rc = team_wait(dsm, &team_sense, s);
    return rc < 0 ? rc : team_rc;
}

int rqa_dsm_barrier(rq_ctx_t *ctx, rqdsm_t *dsm)
{
    int me = rq_rank(ctx), np = rq_size(ctx);
    uint64_t e = epoch++, a = e;
    for (int r = 0; r < np; r++)
        if (r != me) {
            int rc = rq_request(ctx, r, H_BARRIER, &a, 1, NULL, 0, 0);
            if (rc != 0)
                return rc;
        }
    unsigned spins = 0;
    while (atomic_load_explicit(&arrived[e & 1], memory_order_acquire) < (uint64_t)(np - 1)) {
        int rc = rqdsm_poll(dsm);
        if (rc < 0)
            return rc;
        if (rc == 0)
            rqa_spin_turn(&spins);
    }
    atomic_fetch_sub_explicit(&arrived[e & 1], (uint64_t)(np - 1), memory_order_relaxed);
    return 0;
}

int rqa_dsm_report(rq_ctx_t *ctx, rqdsm_t *dsm, const char *name, double secs)
{
    rqdsm_stats_t s;
    rqdsm_stats(dsm, &s);
    (void)rqa_ticks();
    double tick_ns = rqa_ticks_to_s(1000000000ull); /* ns per tick */
    struct rqa_fg c = {.sent = s.messages,
                       .received = s.handlers,
                       .handlers = s.handlers,
                       .handler_ticks = tick_ns > 0 ? (uint64_t)((double)s.handler_ns / tick_ns) : 0},
                  tot;
    int rc = rqa_fg_sum_rq(ctx, &c, &tot);
    uint64_t mine[7] = {s.read_misses, s.write_misses, s.upgrades, s.invalidations, s.recalls,
                        s.deferred, s.read_hits + s.write_hits},
             all[7];
    if (rc == 0)
        rc = rq_allreduce(ctx, mine, all, 7, RQ_UINT64, RQ_SUM);
    double slowest = 0;
    if (rc == 0)
        rc = rq_allreduce(ctx, &secs, &slowest, 1, RQ_DOUBLE, RQ_MAX);
    if (rc == 0 && rq_rank(ctx) == 0) {
        rqa_fg_print(name, rq_size(ctx), slowest, &tot);
        printf("%s protocol: %llu read misses, %llu write misses (%llu upgrades), "
               "%llu invalidations, %llu recalls, %llu deferred, %llu hits\n",
               name, (unsigned long long)all[0], (unsigned long long)all[1],
               (unsigned long long)all[2], (unsigned long long)all[3],
               (unsigned long long)all[4], (unsigned long long)all[5],
               (unsigned long long)all[6]);
    }
    return rc;
}
