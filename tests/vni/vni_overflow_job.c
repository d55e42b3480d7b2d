/* vni_overflow_job - overflow control is job-wide (FUGU thesis, eq. 5.2 /
 * 5.3): a STOP raised by one rank holds the runaway senders of every node,
 * and the job leaves overflow when the buffer drains or when free memory
 * rises above the high-water mark.
 *
 * The last rank receives; every other rank floods it with count 1 KiB
 * packets on queue Q.  The receiver polls (which takes arrivals into its
 * virtual buffer) but does not dequeue, so its buffer grows without bound
 * unless overflow control holds the senders.  Senders count themselves
 * done with an atomic add on the receiver's segment, which works across
 * nodes (run under tests/two_nodes.sh, pairs across the halves use UCX).
 *
 *   stop  RQ_OVERFLOW_FREE_BYTES huge (the node is always low on memory):
 *         the buffer stops near the threshold, no sender finishes while it
 *         is held; then the receiver dequeues, the job resumes, everything
 *         arrives once and in order per sender.
 *   stop-nb  the same with RQ_NONBLOCK sends retried after rq_poll: a
 *         send during STOP returns RQ_EAGAIN unsent, and nothing is lost
 *         or doubled by the retries.
 *   high  the node's memory as overflow control sees it comes from a file
 *         of this rank's (RQ_OVERFLOW_MEMINFO), so that the test does not
 *         depend on what other processes of the machine allocate (it did:
 *         marks taken from MemAvailable at the start moved with the
 *         machine's other load, the STOP came late or never lifted).  The
 *         receiver starts below the low-water mark: STOP is raised and
 *         holds; its file then says memory rose above the high-water
 *         mark: the STOP is lifted with the buffer still full
 *         (overflow_high_exits), the senders finish with nothing dequeued,
 *         no second STOP.
 *
 *   bad-marks  (1 rank) a high-water mark below the low-water mark:
 *         rq_init refuses it with RQ_EINVAL.
 *   bad-meminfo PATH  (1 rank) RQ_OVERFLOW_MEMINFO=PATH, a missing file or
 *         one without a MemAvailable line: rq_init refuses it, RQ_EINVAL.
 *
 * argv: MODE [count] [slack]: slack is the bytes over the threshold the
 * peak may reach; by default two lanes (RQ_RING_BYTES) per sender of this
 * node (what its lane held when STOP was raised, and the receiver's poll
 * in progress) and, per sender of another node, what the network itself buffers once
 * STOP is raised (the thesis's M_network, eq. 5.4: the largest TCP send
 * and receive socket buffers) plus the sends before it looks. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rq.h>

#include "check.h"

enum { Q = 3 };
#define PAYLOAD   1024
#define THRESHOLD (1u << 20)
#define GiB       (1ull << 30)

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* The third (largest) field of a tcp_wmem / tcp_rmem sysctl. */
static uint64_t tcp_buf_max(const char *path)
{
    unsigned long long lo, def, max;
    FILE *f = fopen(path, "r");
    int ok = f != NULL && fscanf(f, "%llu %llu %llu", &lo, &def, &max) == 3;
    if (f != NULL)
        fclose(f);
    return ok ? max : 16u << 20;
}

/* Say MemAvailable is kib KiB in path, atomically (write, then rename). */
static void write_meminfo(const char *path, uint64_t kib)
{
    char tmp[96];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "w");
    CHECK(f != NULL);
    fprintf(f, "MemTotal:       %llu kB\nMemFree:        %llu kB\nMemAvailable:   %llu kB\n",
            (unsigned long long)(64ull << 20), (unsigned long long)kib,
            (unsigned long long)kib);
    CHECK(fclose(f) == 0);
    CHECK(rename(tmp, path) == 0);
}

static void set_bytes(const char *name, uint64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    CHECK_EQ(setenv(name, s, 1), 0);
}

/* Poll (taking arrivals into the buffer) for ms milliseconds. */
static void poll_for(rq_ctx_t *ctx, uint64_t ms)
{
    uint64_t t0 = now_ms();
    while (now_ms() - t0 < ms) {
        CHECK(rq_poll(ctx) >= 0);
        usleep(1000); /* our lanes fill meanwhile: senders of this node reach their slow path */
    }
}

int main(int argc, char **argv)
{
    CHECK(argc > 1);
    if (strcmp(argv[1], "bad-marks") == 0) {
        rq_ctx_t *ctx;
        set_bytes("RQ_OVERFLOW_FREE_BYTES", 2 * GiB);
        set_bytes("RQ_OVERFLOW_HIGH_BYTES", GiB);
        CHECK_EQ(rq_init(&argc, &argv, &ctx), RQ_EINVAL);
        printf("vni_overflow_job bad-marks: refused\n");
        return 0;
    }
    if (strcmp(argv[1], "bad-meminfo") == 0) {
        rq_ctx_t *ctx;
        CHECK(argc > 2);
        CHECK_EQ(setenv("RQ_OVERFLOW_MEMINFO", argv[2], 1), 0);
        CHECK_EQ(rq_init(&argc, &argv, &ctx), RQ_EINVAL);
        printf("vni_overflow_job bad-meminfo: refused\n");
        return 0;
    }
    const int high = strcmp(argv[1], "high") == 0, nb = strcmp(argv[1], "stop-nb") == 0;
    CHECK(high || nb || strcmp(argv[1], "stop") == 0);
    const uint64_t count = argc > 2 ? strtoull(argv[2], NULL, 0) : 20000;

    /* The receiver's thresholds must be in its environment before rq_init;
     * which rank receives is known only after it, so every rank sets them
     * (only the receiver's buffer ever passes the threshold). */
    char meminfo[64];
    snprintf(meminfo, sizeof meminfo, "/tmp/rq-ovf-meminfo.%ld", (long)getpid());
    set_bytes("RQ_OVERFLOW_BYTES", THRESHOLD);
    if (high) {
        /* Low on memory (1 GiB available against a 2 GiB low-water mark)
         * until the receiver says otherwise. */
        write_meminfo(meminfo, GiB >> 10);
        CHECK_EQ(setenv("RQ_OVERFLOW_MEMINFO", meminfo, 1), 0);
        set_bytes("RQ_OVERFLOW_FREE_BYTES", 2 * GiB);
        set_bytes("RQ_OVERFLOW_HIGH_BYTES", 4 * GiB);
    } else {
        set_bytes("RQ_OVERFLOW_FREE_BYTES", UINT64_MAX / 2);
        set_bytes("RQ_OVERFLOW_HIGH_BYTES", UINT64_MAX);
    }

    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    const int me = rq_rank(ctx), n = rq_size(ctx), rx = n - 1;
    CHECK(n >= 2);
    void *base;
    size_t segsz;
    CHECK_EQ(rq_segment(ctx, &base, &segsz), 0);
    _Atomic uint64_t *done = base; /* the receiver's word 0: senders finished */
    CHECK_EQ(rq_queue_open(ctx, Q), 0);

    if (me != rx && high)
        CHECK_EQ(unlink(meminfo), 0); /* only the receiver's view matters */
    CHECK_EQ(rq_barrier(ctx), 0);

    if (me != rx) {
        unsigned char buf[PAYLOAD];
        for (uint64_t i = 0; i < count; i++) {
            pattern_fill(buf, sizeof buf, me, i);
            if (!nb) {
                CHECK_EQ(rq_enqueue(ctx, rx, Q, (unsigned)me, &i, 1, buf, sizeof buf, 0), 0);
                continue;
            }
            int rc;
            while ((rc = rq_enqueue(ctx, rx, Q, (unsigned)me, &i, 1, buf, sizeof buf,
                                    RQ_NONBLOCK)) == RQ_EAGAIN)
                CHECK(rq_poll(ctx) >= 0);
            CHECK_EQ(rc, 0);
        }
        uint64_t old;
        CHECK_EQ(rq_amo(ctx, rx, 0, RQ_AMO_FADD, 1, 0, &old), 0);
        CHECK_EQ(rq_finalize(ctx), 0);
        return 0;
    }

    /* The receiver.  Senders of another node: what the network buffers
     * gets through after STOP (socket buffers), so they get more slack. */
    const int nsend = n - 1;
    int remote = 0;
    for (int r = 0; r < nsend; r++)
        remote += rq_segment_peer(ctx, r) == NULL; /* mapped here only on this node */
    const uint64_t net = tcp_buf_max("/proc/sys/net/ipv4/tcp_wmem") +
                         tcp_buf_max("/proc/sys/net/ipv4/tcp_rmem") + 256u * PAYLOAD;
    const char *rb = getenv("RQ_RING_BYTES");
    const uint64_t lane = rb != NULL ? strtoull(rb, NULL, 0) : 262144u; /* rqinfo's default */
    uint64_t slack = (uint64_t)(nsend - remote) * 2 * lane + (uint64_t)remote * net;
    if (argc > 3)
        slack = strtoull(argv[3], NULL, 0);

    rq_stats_t st;
    uint64_t t0 = now_ms(), held_since = 0;
    for (;;) {
        CHECK(now_ms() - t0 < 60000);
        poll_for(ctx, 1);
        CHECK_EQ(rq_stats(ctx, &st), 0);
        if (st.overflow_stops > 0 && held_since == 0)
            held_since = now_ms();
        if (held_since != 0 && now_ms() - held_since >= 300)
            break; /* stopped for 300 ms */
    }
    CHECK_EQ(atomic_load(done), 0); /* every runaway sender is held, on every node */
    CHECK_EQ(st.overflow_stops, 1);
    CHECK_EQ(st.overflow_high_exits, 0);
    const uint64_t held_peak = st.buffer_bytes_max;
    CHECK(held_peak < THRESHOLD + slack);

    if (high) {
        /* Memory comes back: the STOP is lifted, drained or not. */
        write_meminfo(meminfo, 8 * (GiB >> 10));
        t0 = now_ms();
        while (atomic_load(done) < (uint64_t)nsend) {
            CHECK(now_ms() - t0 < 60000);
            poll_for(ctx, 1);
        }
        /* Everything arrives with nothing dequeued: buffered whole. */
        do {
            poll_for(ctx, 5);
            CHECK_EQ(rq_stats(ctx, &st), 0);
        } while (st.received < (uint64_t)nsend * count && now_ms() - t0 < 60000);
        CHECK_EQ(st.overflow_high_exits, 1);
        CHECK_EQ(st.overflow_stops, 1);
        CHECK(st.buffer_bytes_now >= (uint64_t)nsend * count * PAYLOAD);
    }

    /* Consume: in order per sender, each packet once, intact. */
    uint64_t *next = calloc((size_t)nsend, sizeof *next);
    CHECK(next != NULL);
    uint64_t got = 0, total = (uint64_t)nsend * count;
    unsigned char buf[PAYLOAD];
    t0 = now_ms();
    while (got < total) {
        CHECK(now_ms() - t0 < 60000);
        rq_msg_t v;
        int rc = rq_peek(ctx, Q, &v);
        CHECK(rc >= 0);
        if (rc == 0) {
            CHECK(rq_poll(ctx) >= 0);
            continue;
        }
        CHECK((unsigned)v.src < (unsigned)nsend && v.handler == (unsigned)v.src);
        CHECK_EQ(v.nargs, 1);
        CHECK_EQ(v.len, PAYLOAD);
        CHECK_EQ(v.args[0], next[v.src]);
        pattern_fill(buf, sizeof buf, v.src, next[v.src]);
        CHECK(memcmp(buf, v.data, PAYLOAD) == 0);
        next[v.src]++;
        got++;
        CHECK_EQ(rq_pop(ctx, Q), 1);
    }
    while (atomic_load(done) < (uint64_t)nsend)
        CHECK(rq_poll(ctx) >= 0);
    CHECK_EQ(rq_stats(ctx, &st), 0);
    CHECK_EQ(st.buffer_bytes_now, 0);
    printf("vni_overflow_job %s: %d senders (%d on another node), threshold %u: peak %llu "
           "bytes while held (slack %llu), STOPs %llu, high-water exits %llu\n",
           argv[1], nsend, remote, THRESHOLD, (unsigned long long)held_peak,
           (unsigned long long)slack, (unsigned long long)st.overflow_stops,
           (unsigned long long)st.overflow_high_exits);
    free(next);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (high)
        CHECK_EQ(unlink(meminfo), 0);
    return 0;
}
