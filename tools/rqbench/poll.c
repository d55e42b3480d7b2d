/* poll.c - rqbench poll: the cost of receiving by polling (Liu & Culler,
 * section 6.1).
 *   unsuccessful poll  rank 0 times 100k calls of each poll-like call
 *                      while nobody sends (Liu & Culler Table 9):
 *                      rq_poll, rq_peek, rq_peek_n, rq_dequeue on an
 *                      empty named queue, rq_wait_until on a word
 *                      already at its target.
 *   successful poll    rank 1 sends K = 2048 requests with a delay of d ns
 *                      between sends; rank 0 polls until all have run,
 *                      counting its rq_poll calls.  Time per message and
 *                      time per poll are plotted against d; where the two
 *                      curves cross, every poll received exactly one
 *                      message: that is the cost of a successful poll
 *                      (handler included). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>

#include "bench.h"

enum { H_COUNT = 30 };
enum { K = 2048 };

static volatile uint64_t counted;
static uint64_t counted_due;

static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a) { (void)c; (void)m; (void)a; counted++; }

/* Liu & Culler Table 9: the unsuccessful cost of every poll-like call,
 * rank 0 calling it n times while nobody sends (a named queue open and
 * empty; for rq_wait_until, a word already at its target: the call checks
 * it and returns, the paper's CMAML_wait). */
enum { E_POLL, E_PEEK, E_PEEK_N, E_DEQUEUE, E_WAIT, E_COUNT };
enum { QID = 3 };
static volatile uint64_t ready_word = 1;

static double empty_call(struct rqb *b, void *arg)
{
    const int which = *(const int *)arg;
    const long n = b->o.smoke ? 10000 : 100000;
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        rq_msg_t v[4];
        uint64_t a;
        uint64_t t0 = rqb_now_ns();
        switch (which) {
        case E_POLL:
            for (long i = 0; i < n; i++)
                rq_poll(b->ctx);
            break;
        case E_PEEK:
            for (long i = 0; i < n; i++)
                rq_peek(b->ctx, QID, v);
            break;
        case E_PEEK_N:
            for (long i = 0; i < n; i++)
                rq_peek_n(b->ctx, QID, v, 4);
            break;
        case E_DEQUEUE:
            for (long i = 0; i < n; i++)
                rq_dequeue(b->ctx, QID, &a, 1, NULL, 0);
            break;
        default:
            for (long i = 0; i < n; i++)
                rq_wait_until(b->ctx, &ready_word, 1);
            break;
        }
        r = rqb_elapsed_ns(t0) / (double)n;
    }
    return r;
}

struct succ_arg { uint64_t delay_ns; int per_poll; };

static double successful(struct rqb *b, void *argp)
{
    const struct succ_arg *a = argp;
    double r = 0;
    uint64_t x = 1;
    rq_barrier(b->ctx);
    volatile uint64_t *go = rqb_flag(b, 2);
    static uint64_t round;
    round++;
    if (b->me == 0) {
        long polls = 0;
        counted_due += K;
        uint64_t t0 = rqb_now_ns();
        /* Rank 1 starts sending only now: nothing can have been delivered
         * untimed (in the barrier), so every message is counted here. */
        __atomic_store_n(go, round, __ATOMIC_RELEASE);
        while (counted < counted_due) {
            rq_poll(b->ctx);
            polls++;
        }
        double t = rqb_elapsed_ns(t0);
        r = a->per_poll ? t / (double)polls : t / K;
    } else if (b->me == 1) {
        rqb_spin_until(go, round);
        for (int i = 0; i < K; i++) {
            rq_request(b->ctx, 0, H_COUNT, &x, 1, NULL, 0, 0);
            if (a->delay_ns)
                rqb_delay_ns(a->delay_ns);
        }
    }
    return r;
}

int rqb_fam_poll(struct rqb *b)
{
    rq_handler_register(b->ctx, H_COUNT, on_count, NULL, 0);
    rq_queue_open(b->ctx, QID);
    static const char *const what[E_COUNT] = {
        "unsuccessful rq_poll", "unsuccessful rq_peek", "unsuccessful rq_peek_n",
        "unsuccessful rq_dequeue", "rq_wait_until, word already there"};
    static const char *const paper[E_COUNT] = {
        "nothing arrives; L&C CMAML_poll 42.6 cycles 1.33 us, CMAM_poll 0.85 us",
        "named queue empty; closest: L&C CMAML_request_poll 0.87 us, CMAM 0.35 us",
        "named queue empty, up to 4 views; no L&C analog",
        "named queue empty; no L&C analog (CMAML has no named queues)",
        "checks the word, returns; L&C CMAML_wait 13.4 cycles 0.42 us, CMAM 0.69 us"};
    struct rqb_summary s;
    for (int e = 0; e < E_COUNT; e++) {
        rqb_measure(b, what[e], empty_call, &e, &s);
        rqb_row(b, what[e], NAN, "ns", &s, paper[e]);
    }

    /* Fine steps where the curves cross (a successful poll costs about
     * one cache-line transfer plus the handler), coarse beyond. */
    static const unsigned full[] = {0,   25,  50,  75,  100, 125, 150, 175, 200, 225, 250,
                                    275, 300, 350, 400, 500, 600, 800, 1200, 1600};
    static const unsigned quick[] = {0, 50, 100, 150, 200, 250, 300, 400, 800, 1600};
    const unsigned *d = b->o.quick || b->o.smoke ? quick : full;
    int nd = b->o.quick || b->o.smoke ? 10 : 20;
    double xs[20], per_msg[20], per_poll[20];
    for (int i = 0; i < nd; i++) {
        struct succ_arg a = {d[i], 0};
        rqb_measure(b, "per message", successful, &a, &s);
        rqb_row(b, "time per message", d[i], "ns", &s, "x = send interval (delay, ns)");
        per_msg[i] = s.median;
        a.per_poll = 1;
        rqb_measure(b, "per poll", successful, &a, &s);
        rqb_row(b, "time per poll", d[i], "ns", &s, "x = send interval (delay, ns)");
        per_poll[i] = s.median;
        xs[i] = d[i];
    }
    if (b->me == 0) {
        double xi, yi;
        if (rqb_intersect(xs, per_msg, per_poll, nd, &xi, &yi) == 0) {
            char note[112];
            snprintf(note, sizeof note, "curves cross at a send delay of %.0f ns", xi);
            rqb_row_derived(b, "successful poll (intersection)", NAN, "ns", yi, note);
        } else {
            rqb_report_na(&b->rep, b->family, "librq", "successful poll (intersection)", NAN,
                          "ns", "the curves did not cross in the swept range");
        }
    }
    return 0;
}
