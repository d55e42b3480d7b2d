/* promote.c - rqbench am: what it costs a handler to become a thread
 * (rq_handler_promote), beside a plain handler and a hand-off to an
 * application thread, in the same run.
 *
 * Rank 0 sends K requests to itself, one at a time, and waits for each
 * (rq_wait_until on a counter, polling: its handler runs there):
 *   plain handler       the handler adds to the counter;
 *   promoted            the handler promotes itself; the part, on a pool
 *                       thread, adds to the counter;
 *   hand-off            the handler posts the message's source into a
 *                       one-slot mailbox; an application thread spinning
 *                       on it (started for the row) adds to the counter.
 * One rank and at most two threads, so two cores measure it without
 * sharing one: rank 1 sleeps meanwhile (it polls every 200 us), and rank
 * 0 is unpinned for these rows (its pool and hand-off threads inherit
 * its CPU set; bound to one core they would take turns on it).  The
 * promotion's cost is the promoted row minus the plain one. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include <stdatomic.h>
#include <unistd.h>

#include "bench.h"

enum { H_PR_PLAIN = 76, H_PR_PROMOTE = 77, H_PR_HANDOFF = 78, H_PR_WAKE = 79, PR_K = 512 };
enum { PR_PLAIN, PR_PROMOTE, PR_HANDOFF };

static volatile uint64_t done;       /* rank 0: messages completed */
static uint64_t due;
static _Atomic uint64_t posted;      /* hand-off mailbox: messages posted ... */
static uint64_t taken;               /* ... and taken by the application thread */
static _Atomic int handoff_stop;
static volatile uint64_t woken;      /* rank 1: rows ended (wakes may come early) */
static uint64_t woken_due;

static void bump(void) { __atomic_fetch_add(&done, 1, __ATOMIC_RELEASE); }

static void on_plain(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    bump();
}

static void part(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    bump();
}

static void on_promote(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    if (rq_handler_promote(c, m, part, NULL) != 0)
        bump(); /* counted anyway; the row's note would be wrong, not hung */
}

static void on_handoff(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    atomic_fetch_add_explicit(&posted, 1, memory_order_release);
}

static void on_wake(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    woken++;
}

static void *handoff_main(void *arg)
{
    (void)arg;
    unsigned spins = 0;
    while (!atomic_load_explicit(&handoff_stop, memory_order_relaxed)) {
        if (atomic_load_explicit(&posted, memory_order_acquire) > taken) {
            taken++;
            bump();
        } else if (++spins % 1024 == 0) {
            sched_yield(); /* as the pool's threads look: yielding */
        } else {
            __builtin_ia32_pause();
        }
    }
    return NULL;
}

static double self_requests(struct rqb *b, void *arg)
{
    const int how = *(const int *)arg;
    static const unsigned handler[] = {H_PR_PLAIN, H_PR_PROMOTE, H_PR_HANDOFF};
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        uint64_t t0 = rqb_now_ns();
        for (int i = 0; i < PR_K; i++) {
            rq_request(b->ctx, 0, handler[how], NULL, 0, NULL, 0, 0);
            rq_wait_until(b->ctx, &done, ++due);
        }
        r = rqb_elapsed_ns(t0) / PR_K;
        if (b->np > 1)
            rq_request(b->ctx, 1, H_PR_WAKE, NULL, 0, NULL, 0, 0);
    } else if (b->me == 1) {
        woken_due++; /* counted, not sampled: the wake may run inside the barrier */
        while (woken < woken_due) {
            rq_poll(b->ctx);
            usleep(200);
        }
    }
    return r;
}

void rqb_promote_rows(struct rqb *b)
{
    rq_handler_register(b->ctx, H_PR_PLAIN, on_plain, NULL, 0);
    rq_handler_register(b->ctx, H_PR_HANDOFF, on_handoff, NULL, 0);
    rq_handler_register(b->ctx, H_PR_WAKE, on_wake, NULL, 0);
    /* Switches the context to thread-safe mode: these rows come last. */
    if (rq_handler_register(b->ctx, H_PR_PROMOTE, on_promote, NULL, RQ_HF_PROMOTE) != 0) {
        rqb_row_na(b, "promotion: promoted part", NAN, "ns", "RQ_HF_PROMOTE refused");
        return;
    }
    cpu_set_t saved, all;
    int pinned = b->me == 0 && sched_getaffinity(0, sizeof saved, &saved) == 0;
    if (pinned) {
        CPU_ZERO(&all);
        for (int i = 0; i < get_nprocs() && i < CPU_SETSIZE; i++)
            CPU_SET(i, &all);
        sched_setaffinity(0, sizeof all, &all);
    }
    rq_barrier(b->ctx);
    struct rqb_summary plain, promoted, handoff;
    int how = PR_PLAIN;
    rqb_measure(b, "promotion: plain handler", self_requests, &how, &plain);
    rqb_row(b, "promotion: plain handler", NAN, "ns", &plain,
            "a request to self, its handler counts; one at a time");
    how = PR_PROMOTE;
    rqb_measure(b, "promotion: promoted part", self_requests, &how, &promoted);
    rq_stats_t st = {0};
    rq_stats(b->ctx, &st);
    char note[128];
    snprintf(note, sizeof note,
             "the handler promotes itself; the part counts on a pool thread (%llu started)",
             (unsigned long long)st.promote_threads);
    rqb_row(b, "promotion: promoted part", NAN, "ns", &promoted, note);
    pthread_t t;
    int started = b->me == 0 && pthread_create(&t, NULL, handoff_main, NULL) == 0;
    how = PR_HANDOFF;
    rqb_measure(b, "promotion: hand-off", self_requests, &how, &handoff);
    rqb_row(b, "promotion: hand-off to an application thread", NAN, "ns", &handoff,
            "the handler posts into a mailbox; a spinning thread counts");
    if (started) {
        atomic_store(&handoff_stop, 1);
        pthread_join(t, NULL);
    }
    if (pinned)
        sched_setaffinity(0, sizeof saved, &saved);
    rqb_row_derived(b, "promotion: cost over a plain handler", NAN, "ns",
                    promoted.median - plain.median, "same run: promoted - plain");
    rqb_row_derived(b, "promotion: cost over a hand-off", NAN, "ns",
                    promoted.median - handoff.median, "same run: promoted - hand-off");
}
