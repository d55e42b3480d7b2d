/* dead_transfers MODE [COUNT [BYTES [LIMIT_MS]]] - a rank dies while
 * non-blocking bulk transfers to or from it are pending (issue 33).
 *
 * Rank 0 is the victim.  Every other rank queues COUNT transfers of BYTES
 * (MODE put: rq_put_nb into rank 0's segment; get: rq_get_nb from it;
 * long: rq_request_long_nb to it) on one counter and waits for them in
 * rq_wait_until.  Rank 0 lets them run 0.3 s, writes its clock into a file
 * for each survivor (named by their common parent, rqrun or mpirun's
 * daemon, and the rank) and kills itself.  Each survivor
 * checks that its wait returned RQ_EPEER (never 0: the transfers did not
 * all land), within LIMIT_MS of the death, and that its counter did not
 * move afterwards while it went on calling librq.  Run with
 * RQ_KILL_GRACE_MS large and SIGTERM ignored, so survivors live to check;
 * under mpirun with recovery on (orte_enable_recovery). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rq.h>

#include "check.h"

enum { H_SINK = 1 };

static void on_sink(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static unsigned long parse(const char *s, unsigned long lo, unsigned long hi, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "dead_transfers: %s must be %lu..%lu\n", what, lo, hi);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    signal(SIGTERM, SIG_IGN);
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    const char *mode = argc > 1 ? argv[1] : "put";
    if (strcmp(mode, "put") != 0 && strcmp(mode, "get") != 0 && strcmp(mode, "long") != 0) {
        fprintf(stderr, "usage: dead_transfers put|get|long [COUNT [BYTES [LIMIT_MS]]]\n");
        return 2;
    }
    const unsigned long count = argc > 2 ? parse(argv[2], 1, 100000, "COUNT") : 200;
    const size_t bytes = argc > 3 ? parse(argv[3], 8, 1ul << 30, "BYTES") : 64ul << 20;
    const uint64_t limit_ms = argc > 4 ? parse(argv[4], 1, 600000, "LIMIT_MS") : 2000;
    int me = rq_rank(ctx), n = rq_size(ctx);
    CHECK(n >= 2);
    CHECK_EQ(rq_handler_register(ctx, H_SINK, on_sink, NULL, 0), 0);
    void *seg;
    size_t seg_size;
    CHECK_EQ(rq_segment(ctx, &seg, &seg_size), 0);
    CHECK(seg_size >= bytes);
    char clock_file[64];
    char *buf = malloc(bytes);
    CHECK(buf != NULL);
    memset(buf, 0x5a, bytes);
    CHECK_EQ(rq_barrier(ctx), 0);

    if (me == 0) {
        struct timespec d = {0, 300000000};
        nanosleep(&d, NULL);
        const unsigned long long t = now_ns();
        for (int r = 1; r < n; r++) {
            snprintf(clock_file, sizeof clock_file, "/tmp/rq-dead-transfers.%ld.%d",
                     (long)getppid(), r);
            FILE *f = fopen(clock_file, "w");
            CHECK(f != NULL);
            fprintf(f, "%llu\n", t);
            CHECK(fclose(f) == 0);
        }
        raise(SIGKILL);
    }

    volatile uint64_t done = 0;
    for (unsigned long i = 0; i < count; i++) {
        int rc;
        if (mode[0] == 'p')
            rc = rq_put_nb(ctx, 0, 0, buf, bytes, &done, 0);
        else if (mode[0] == 'g')
            rc = rq_get_nb(ctx, buf, 0, 0, bytes, &done, 0);
        else
            rc = rq_request_long_nb(ctx, 0, H_SINK, NULL, 0, buf, bytes, 0, &done, 0);
        if (rc == RQ_EPEER) /* the victim died before we queued them all */
            break;
        CHECK_EQ(rc, 0);
    }
    int rc = rq_wait_until(ctx, &done, count);
    const uint64_t returned = now_ns();
    const uint64_t at_return = __atomic_load_n(&done, __ATOMIC_ACQUIRE);
    /* Keep calling librq and give any copier time to move the counter. */
    for (int i = 0; i < 30; i++) {
        (void)rq_poll(ctx);
        (void)rq_test(ctx, &done, count);
        struct timespec d = {0, 10000000};
        nanosleep(&d, NULL);
    }
    const uint64_t later = __atomic_load_n(&done, __ATOMIC_ACQUIRE);
    unsigned long long t_kill = 0;
    snprintf(clock_file, sizeof clock_file, "/tmp/rq-dead-transfers.%ld.%d", (long)getppid(), me);
    FILE *f = fopen(clock_file, "r");
    CHECK(f != NULL);
    CHECK(fscanf(f, "%llu", &t_kill) == 1);
    fclose(f);
    unlink(clock_file);
    const double after_ms = (double)(int64_t)(returned - t_kill) / 1e6;
    printf("dead_transfers: rank %d: %s: rq_wait_until %s %.1f ms after the death; counter %llu "
           "of %lu, %llu later\n",
           me, mode, rq_strerror(rc), after_ms, (unsigned long long)at_return, count,
           (unsigned long long)later);
    CHECK_EQ(rc, RQ_EPEER);
    CHECK(at_return < count);
    CHECK_EQ(later, at_return);
    CHECK(after_ms < (double)limit_ms);
    CHECK_EQ(rq_finalize(ctx), RQ_EPEER);
    printf("dead_transfers: rank %d: %s: RQ_EPEER, counter stayed: ok\n", me, mode);
    fflush(stdout);
    free(buf);
    return 0;
}
