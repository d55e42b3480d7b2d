/* pdq_sleep_unpolled - a dedicated PDQ's thread sleeps while an active
 * message waits unpolled at the head of a lane.  Only rq_poll takes an
 * active message; a PDQ's intake stops at it.  A PDQ thread that went to
 * sleep with one there rang its own doorbell for it, woke, found nothing
 * it could take, spun RQ_PDQ_SPIN_US and slept again: thousands of
 * context switches a second for as long as the application did not poll.
 * Rank 1 sends rank 0 an active message; rank 0, making no librq call,
 * has its PDQ run a message it sends itself (so the thread goes to sleep
 * after the active message landed), then counts the PDQ thread's context
 * switches over 200 ms (/proc/self/task: few, not thousands), then polls:
 * the active message runs, and the PDQ still takes messages. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "rq.h"

#define QID    5
#define H_AM   30
#define H_PDQ  31

static _Atomic unsigned am_ran, pdq_ran;

static void on_am(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)m, (void)a;
    atomic_fetch_add(&am_ran, 1);
}

static void on_pdq(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)m, (void)a;
    atomic_fetch_add(&pdq_ran, 1);
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Context switches (voluntary and not) of this process's PDQ threads. */
static long pdq_switches(void)
{
    long sum = 0;
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[320], comm[32] = "", line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof comm, f) == NULL)
            comm[0] = '\0';
        fclose(f);
        if (strncmp(comm, "rq-pdq", 6) != 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        while (fgets(line, sizeof line, f) != NULL) {
            long v;
            if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
                sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1)
                sum += v;
        }
        fclose(f);
    }
    closedir(d);
    return sum;
}

static void wait_for(_Atomic unsigned *c, unsigned n)
{
    const double t0 = check_now_s();
    while (atomic_load(c) < n && check_now_s() - t0 < 30)
        nap_ms(1);
    CHECK_EQ(atomic_load(c), n);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_size(ctx), 2);
    CHECK_EQ(rq_handler_register(ctx, H_AM, on_am, NULL, 0), 0);
    CHECK_EQ(rq_handler_register(ctx, H_PDQ, on_pdq, NULL, 0), 0);
    rq_pdq_t *pdq;
    rq_pdq_attr_t at = {1, RQ_PDQ_DEDICATED, 0};
    CHECK_EQ(rq_pdq_open(ctx, QID, &at, &pdq), 0);
    const int me = rq_rank(ctx);
    CHECK_EQ(rq_barrier(ctx), 0);
    if (me == 1) {
        nap_ms(50); /* rank 0 is out of the barrier (whose polls would run it) */
        CHECK_EQ(rq_request(ctx, 0, H_AM, NULL, 0, NULL, 0, 0), 0);
    } else {
        nap_ms(150); /* the active message lands; nobody polls */
        CHECK_EQ(atomic_load(&am_ran), 0u);
        CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, 1, H_PDQ, NULL, 0, NULL, 0, 0), 0);
        wait_for(&pdq_ran, 1); /* the PDQ thread ran it, and goes to sleep */
        nap_ms(50);
        const long before = pdq_switches();
        nap_ms(200);
        const long switches = pdq_switches() - before;
        printf("pdq_sleep_unpolled: %ld context switches of the PDQ thread in 200 ms\n", switches);
        CHECK(switches < 40);
        CHECK_EQ(atomic_load(&am_ran), 0u);
        const double t0 = check_now_s();
        while (atomic_load(&am_ran) == 0 && check_now_s() - t0 < 30)
            CHECK(rq_poll(ctx) >= 0);
        CHECK_EQ(atomic_load(&am_ran), 1u);
        CHECK_EQ(rq_pdq_enqueue(ctx, 0, QID, 2, H_PDQ, NULL, 0, NULL, 0, 0), 0);
        wait_for(&pdq_ran, 2);
    }
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rq_pdq_close(pdq), 0);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
