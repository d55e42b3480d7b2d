/* vni_revoke - revocable atomicity and two-case delivery.
 *   (1) Rank 1 stays in one atomicity section, never polling, while rank 0
 *       sends far more than its lanes hold: rank 0 must finish anyway (the
 *       atomicity timer moves the packets into rank 1's virtual buffer),
 *       and rank 1 then reads them all, in order, from the buffer, after
 *       which the buffer's memory is given back.
 *   (2) Soak under injected descheduling: rank 0 streams payloads with
 *       checksums to rank 1 while a thread of rank 0 SIGSTOPs and SIGCONTs
 *       rank 1 at random, and rank 1 alternates polling with atomicity
 *       sections that outlast the timer; rank 1's handlers reply now and
 *       then.  Nothing is lost, nothing duplicated, FIFO holds, payloads
 *       are intact, across every switch between the two cases.
 * Needs 2 ranks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rq.h>

#include "check.h"

enum { H_SEQ = 1, H_SOAK = 2, H_ACK = 3 };
#define FLOOD 100000

static uint64_t got, next_seq, soak_got, acks, checksum;

static void on_seq(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->args[0], next_seq++);
    got++;
}

static void on_soak(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    uint64_t i = m->args[0];
    CHECK_EQ(i, soak_got); /* FIFO, no loss, no duplicate */
    CHECK_EQ(m->len, i % 97);
    const unsigned char *d = m->data;
    for (size_t k = 0; k < m->len; k++) {
        CHECK(d[k] == pattern_byte(0, i, k));
        checksum += d[k];
    }
    soak_got++;
    if (i % 100 == 0)
        CHECK_EQ(rq_reply(c, m, H_ACK, &i, 1, NULL, 0, 0), 0);
}

static void on_ack(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->args[0], acks * 100);
    acks++;
}

static uint64_t now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static _Atomic int stop_injector;
static pid_t victim;
static _Atomic uint64_t stops;

/* Rank 0's injector: deschedule rank 1 at random for 0.2-3 ms. */
static void *injector(void *arg)
{
    (void)arg;
    unsigned r = 777;
    while (!atomic_load(&stop_injector)) {
        r = r * 1103515245u + 12345u;
        usleep(200 + (r >> 16) % 3000);
        CHECK_EQ(kill(victim, SIGSTOP), 0);
        usleep(200 + (r >> 8) % 3000);
        CHECK_EQ(kill(victim, SIGCONT), 0);
        atomic_fetch_add(&stops, 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_size(ctx), 2);
    int me = rq_rank(ctx);
    uint64_t soak_n = argc > 1 ? strtoull(argv[1], NULL, 0) : 200000;
    rq_handler_register(ctx, H_SEQ, on_seq, NULL, 0);
    rq_handler_register(ctx, H_SOAK, on_soak, NULL, 0);
    rq_handler_register(ctx, H_ACK, on_ack, NULL, 0);
    _Atomic uint64_t *w = rq_segment_peer(ctx, 1); /* words in rank 1's segment */
    if (me == 1)
        atomic_store(&w[2], (uint64_t)getpid());
    CHECK_EQ(rq_barrier(ctx), 0);

    /* (1) */
    if (me == 1) {
        CHECK_EQ(rq_atomic_begin(ctx), 0);
        atomic_store(&w[0], 1); /* in the section, not polling */
        uint64_t t0 = now_us();
        while (atomic_load(&w[1]) == 0 && now_us() - t0 < 60000000u)
            ;
        CHECK_EQ(rq_atomic_end(ctx), 0);
        CHECK(atomic_load(&w[1]) == 1); /* rank 0 finished while we were atomic */
        CHECK_EQ(rq_wait_until(ctx, &got, FLOOD), 0);
        rq_stats_t st;
        CHECK_EQ(rq_stats(ctx, &st), 0);
        CHECK(st.revocations > 0);
        CHECK(st.buffered > 0);
        CHECK(st.mode_switches >= 2);
        CHECK_EQ(st.buffer_bytes_now, 0); /* drained: memory given back */
        printf("vni_revoke: %d packets sent into an atomicity section: %llu revocations, "
               "%llu buffered, peak %llu bytes\n",
               FLOOD, (unsigned long long)st.revocations, (unsigned long long)st.buffered,
               (unsigned long long)st.buffer_bytes_max);
    } else {
        while (atomic_load(&w[0]) == 0)
            ;
        for (uint64_t i = 0; i < FLOOD; i++)
            CHECK_EQ(rq_request(ctx, 1, H_SEQ, &i, 1, NULL, 0, 0), 0);
        atomic_store(&w[1], 1);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    /* (2) */
    if (me == 0) {
        victim = (pid_t)atomic_load(&w[2]);
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, injector, NULL), 0);
        unsigned char buf[97];
        uint64_t sum = 0;
        for (uint64_t i = 0; i < soak_n; i++) {
            size_t len = i % 97;
            for (size_t k = 0; k < len; k++) {
                buf[k] = pattern_byte(0, i, k);
                sum += buf[k];
            }
            CHECK_EQ(rq_request(ctx, 1, H_SOAK, &i, 1, buf, len, 0), 0);
        }
        CHECK_EQ(rq_wait_until(ctx, &acks, (soak_n + 99) / 100), 0);
        atomic_store(&stop_injector, 1);
        CHECK_EQ(pthread_join(th, NULL), 0);
        checksum = sum;
        printf("vni_revoke: soak of %llu packets through %llu SIGSTOP/SIGCONT: ok\n",
               (unsigned long long)soak_n, (unsigned long long)atomic_load(&stops));
    } else {
        unsigned r = 99;
        while (soak_got < soak_n) {
            r = r * 1103515245u + 12345u;
            if ((r >> 16) % 8 == 0) {
                /* An atomicity section that outlasts the timer. */
                CHECK_EQ(rq_atomic_begin(ctx), 0);
                uint64_t t0 = now_us(), d = 500 + (r >> 8) % 2000;
                while (now_us() - t0 < d)
                    ;
                CHECK_EQ(rq_atomic_end(ctx), 0);
            }
            for (int k = 0; k < 100; k++)
                CHECK(rq_poll(ctx) >= 0);
        }
    }
    /* Both ranks agree on the checksum. */
    uint64_t sums[2] = {me == 0 ? checksum : 0, me == 1 ? checksum : 0};
    CHECK_EQ(rq_allreduce(ctx, sums, sums, 2, RQ_UINT64, RQ_SUM), 0);
    CHECK_EQ(sums[0], sums[1]);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
