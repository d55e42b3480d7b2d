/* pdq.c - rqbench pdq: the parallel dispatch queue beside locks in the
 * handler, on the fetch-and-add protocol of the PDQ paper's code example
 * (Falsafi & Wood, Figure 2 (left): a table of counters keyed by address).
 * Figure 2 measures nothing; the paper's measurements (Figures 7-11) are
 * DSM applications under the Stache protocol, not this micro-benchmark.
 *
 * Rank 0 queues N messages to itself, each naming one of NKEYS counters
 * (uniform, Zipf(0.99) or a single hot key), behind a RQ_KEY_SEQUENTIAL
 * gate message whose handler sleeps until they are all in, then opens the
 * gate: the figure is dispatch plus handler, from the first handler's
 * start to the last one's end (the network's part is the same for all and
 * not timed).  The PDQ stays open through a configuration's repetitions
 * (threads created per repetition would start on their parent's CPU and
 * share it for milliseconds).  For (a) the messages wait in the virtual
 * buffer until rq_poll runs them.  The handler adds to its counter and read-modify-writes `touch`
 * bytes of its key's state (64 B; the occupancy sweep goes to 4 KiB).
 *   (a) one thread    AM handlers run by rq_poll on the application thread;
 *   (b) spinlock      a DEDICATED PDQ of T threads, every message
 *                     RQ_KEY_NOSYNC, the handler takes its key's spinlock
 *                     (test-and-test-and-set, backoff, yield after 1024
 *                     pauses);
 *   (c) PDQ           the same PDQ, the key is the counter: no lock.
 * Besides throughput, the CPU the process used while the messages ran,
 * in cores (getrusage over the wall time): the single-hot-key case must
 * stay near one core with the PDQ (no thread busy-waits) where spinning
 * threads burn T.  The PDQ threads may run on every CPU (rank 0's pin is
 * widened while they start); the other ranks sleep meanwhile. */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "bench.h"

enum { H_FAA = 70, H_GATE = 71, QID = 6, AUXQ = 7 };
enum { NKEYS = 1024, MAX_STATE = 4096 };
enum { V_POLL, V_SPIN, V_PDQ };
enum { D_UNIFORM, D_ZIPF, D_HOT, D_COUNT };

struct spin { _Alignas(64) _Atomic int held; };

static uint64_t *state;        /* NKEYS x MAX_STATE bytes; word 0 = the counter */
static struct spin locks[NKEYS];
static uint32_t *keys;         /* the key of message i */
static size_t touch_words = 8; /* words of state a handler touches */
static int use_lock;

static void spin_lock(struct spin *l)
{
    unsigned spins = 0, backoff = 1;
    for (;;) {
        if (atomic_load_explicit(&l->held, memory_order_relaxed) == 0 &&
            atomic_exchange_explicit(&l->held, 1, memory_order_acquire) == 0)
            return;
        for (unsigned i = 0; i < backoff; i++)
            __builtin_ia32_pause();
        backoff = backoff < 64 ? backoff * 2 : 64;
        if ((spins += backoff) >= 1024) {
            sched_yield();
            spins = 0;
        }
    }
}

static void spin_unlock(struct spin *l) { atomic_store_explicit(&l->held, 0, memory_order_release); }

/* Per-thread completion counts: one shared counter would bounce its line
 * between the cores on every message and cap every variant at 1 / L. */
enum { MAX_SLOTS = 64 };
struct slot { _Alignas(64) _Atomic uint64_t done; };
static struct slot slots[MAX_SLOTS];
static _Atomic unsigned nslots;
static _Atomic uint64_t t_first, round_no;
static _Thread_local int my_slot = -1;
static _Thread_local uint64_t my_round;

static void on_faa(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    uint64_t k = m->args[0] % NKEYS;
    if (my_round != atomic_load_explicit(&round_no, memory_order_relaxed)) {
        my_round = atomic_load_explicit(&round_no, memory_order_relaxed);
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&t_first, &zero, rqb_now_ns());
        if (my_slot < 0)
            my_slot = (int)(atomic_fetch_add(&nslots, 1) % MAX_SLOTS);
    }
    if (use_lock)
        spin_lock(&locks[k]);
    uint64_t *s = state + k * (MAX_STATE / 8);
    s[0] += m->args[1];
    for (size_t i = 1; i < touch_words; i++)
        s[i] = s[i] * 3 + 1;
    if (use_lock)
        spin_unlock(&locks[k]);
    atomic_fetch_add_explicit(&slots[my_slot].done, 1, memory_order_release);
}

static uint64_t done_total(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < MAX_SLOTS; i++)
        n += atomic_load_explicit(&slots[i].done, memory_order_acquire);
    return n;
}

/* ---- key streams ---------------------------------------------------- */

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void make_keys(int dist, size_t n)
{
    static double cdf[NKEYS];
    double h = 0;
    for (unsigned k = 0; k < NKEYS; k++)
        cdf[k] = h += 1.0 / pow(k + 1, 0.99);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = xorshift(&s);
        if (dist == D_UNIFORM) {
            keys[i] = (uint32_t)(r % NKEYS);
        } else if (dist == D_ZIPF) {
            double u = (double)(r >> 11) / 9007199254740992.0 * h;
            unsigned lo = 0, hi = NKEYS - 1;
            while (lo < hi) { /* first k with cdf[k] >= u */
                unsigned mid = (lo + hi) / 2;
                if (cdf[mid] < u)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            /* Scatter the ranks over the table: hot keys are not neighbours. */
            keys[i] = (uint32_t)((lo * 577u) % NKEYS);
        } else {
            keys[i] = 0;
        }
    }
}

/* ---- one repetition ---------------------------------------------------- */

struct cfg {
    int      variant, dist;
    unsigned threads;
    size_t   n, touch;
    double   cores[RQB_MAX_SAMPLES]; /* per repetition, rank 0 */
    int      ncores;
    int      bad; /* a counter total came out wrong */
    rq_pdq_t *pdq; /* variants (b) and (c): open for all repetitions */
};

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

static void nap(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* Open the PDQ with its threads free to run on every CPU. */
static int open_unpinned(rq_ctx_t *ctx, const rq_pdq_attr_t *at, rq_pdq_t **pdq)
{
    cpu_set_t mine, all;
    int have = sched_getaffinity(0, sizeof mine, &mine) == 0;
    CPU_ZERO(&all);
    for (int i = 0; i < get_nprocs() && i < CPU_SETSIZE; i++)
        CPU_SET(i, &all);
    sched_setaffinity(0, sizeof all, &all);
    int rc = rq_pdq_open(ctx, QID, at, pdq);
    if (have)
        sched_setaffinity(0, sizeof mine, &mine);
    return rc;
}

/* The gate: a RQ_KEY_SEQUENTIAL handler that holds dispatch (sleeping)
 * while rank 0 queues a repetition's messages behind it. */
static _Atomic int gate_in, gate_open;

static void on_gate(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c, (void)m, (void)a;
    atomic_store(&gate_in, 1);
    while (!atomic_load(&gate_open))
        nap(10000);
}

static double rank0_run(struct rqb *b, struct cfg *c)
{
    rq_ctx_t *ctx = b->ctx;
    uint64_t before = 0;
    for (unsigned k = 0; k < NKEYS; k++)
        before += state[k * (MAX_STATE / 8)];
    if (c->pdq != NULL) {
        atomic_store(&gate_in, 0);
        atomic_store(&gate_open, 0);
        if (rq_pdq_enqueue(ctx, 0, QID, RQ_KEY_SEQUENTIAL, H_GATE, NULL, 0, NULL, 0, 0) != 0)
            return NAN;
        while (!atomic_load(&gate_in))
            nap(10000);
    }
    for (size_t i = 0; i < c->n; i++) {
        uint64_t a[2] = {keys[i], 1};
        int rc = c->variant == V_POLL ? rq_request(ctx, 0, H_FAA, a, 2, NULL, 0, 0)
                 : rq_pdq_enqueue(ctx, 0, QID, c->variant == V_PDQ ? keys[i] : RQ_KEY_NOSYNC,
                                  H_FAA, a, 2, NULL, 0, 0);
        if (rc != 0)
            return NAN;
    }
    rq_msg_t v;
    rq_peek(ctx, AUXQ, &v); /* the lanes' packets into the buffer / the PDQ */
    for (unsigned i = 0; i < MAX_SLOTS; i++)
        atomic_store(&slots[i].done, 0);
    atomic_store(&t_first, 0);
    atomic_fetch_add(&round_no, 1);
    const uint64_t due = c->n;
    touch_words = c->touch / 8;
    use_lock = c->variant == V_SPIN;
    double cpu0 = cpu_s();
    uint64_t w0 = rqb_now_ns(), t_end;
    if (c->pdq == NULL) {
        while (done_total() < due)
            rq_poll(ctx);
        t_end = rqb_now_ns();
    } else {
        atomic_store(&gate_open, 1);
        /* Few wake-ups (each one steals a CPU from the threads measured);
         * the end is placed between the last two looks: +-50 us, < 0.5%
         * of a 100k-message run. */
        uint64_t last_look = rqb_now_ns();
        while (done_total() < due) {
            last_look = rqb_now_ns();
            nap(100000);
        }
        uint64_t seen = rqb_now_ns(), first = atomic_load(&t_first);
        uint64_t lo = first > last_look ? first : last_look; /* it ended in [lo, seen] */
        t_end = lo + (seen - lo) / 2;
    }
    if (c->ncores < RQB_MAX_SAMPLES)
        c->cores[c->ncores++] = (cpu_s() - cpu0) / ((double)(t_end - w0) * 1e-9);
    uint64_t after = 0;
    for (unsigned k = 0; k < NKEYS; k++)
        after += state[k * (MAX_STATE / 8)];
    if (after - before != c->n)
        c->bad = 1;
    uint64_t t0 = atomic_load(&t_first), span = t_end > t0 ? t_end - t0 : 0;
    return span != 0 ? (double)c->n / (double)span * 1e3 : NAN; /* Mmsg/s */
}

static double run(struct rqb *b, void *arg)
{
    struct cfg *c = arg;
    volatile uint64_t *phase = rqb_flag(b, 3);
    static uint64_t round;
    double r = 0;
    rq_barrier(b->ctx);
    round++;
    if (b->me == 0) {
        r = rank0_run(b, c);
        __atomic_store_n(phase, round, __ATOMIC_RELEASE);
    } else {
        while (__atomic_load_n(phase, __ATOMIC_ACQUIRE) < round)
            nap(1000000); /* off the CPUs the PDQ threads run on */
    }
    return rqb_from(b, 0, r);
}

static const char *const dist_name[D_COUNT] = {"uniform", "Zipf(0.99)", "single hot key"};
static const char *const var_name[] = {"(a) one thread, rq_poll", "(b) spinlock in handler",
                                       "(c) PDQ, keyed"};

/* Measure one configuration; rows for throughput and cores.  Returns the
 * median throughput. */
static double measure(struct rqb *b, struct cfg *c)
{
    char name[160], note[160];
    snprintf(name, sizeof name, "%s, %zu B: %s", dist_name[c->dist], c->touch,
             var_name[c->variant]);
    c->ncores = 0;
    c->bad = 0;
    c->pdq = NULL;
    /* The PDQ's threads live through every repetition, so the scheduler
     * has spread them over the CPUs by the timed ones. */
    int failed = 0;
    if (c->variant != V_POLL && b->me == 0) {
        rq_pdq_attr_t at = {c->threads, RQ_PDQ_DEDICATED, 0};
        failed = open_unpinned(b->ctx, &at, &c->pdq) != 0;
    }
    if (rqb_from(b, 0, failed) != 0) {
        rqb_row_na(b, name, c->threads, "Mmsg/s", "rq_pdq_open failed");
        return NAN;
    }
    struct rqb_summary s;
    rqb_measure(b, name, run, c, &s);
    if (c->pdq != NULL)
        rq_pdq_close(c->pdq);
    c->pdq = NULL;
    double threads = c->variant == V_POLL ? 1 : c->threads;
    snprintf(note, sizeof note, "threads = param; %zu messages, %s", c->n,
             c->bad ? "COUNTER TOTAL WRONG" : "counter total checked");
    rqb_row(b, name, threads, "Mmsg/s", &s, note);
    if (b->me == 0) {
        struct rqb_summary cs;
        rqb_summarize(c->cores, c->ncores, 0.9, &cs);
        snprintf(name + strlen(name), sizeof name - strlen(name), ": CPU");
        rqb_row(b, name, threads, "cores", &cs, "process CPU time / wall time while running");
    }
    return s.median;
}

int rqb_fam_pdq(struct rqb *b)
{
    const size_t n = b->o.smoke ? 2000 : b->o.quick ? 20000 : 100000;
    state = aligned_alloc(64, (size_t)NKEYS * MAX_STATE);
    keys = malloc(n * sizeof *keys);
    if (state == NULL || keys == NULL) {
        free(state);
        free(keys);
        rqb_row_na(b, "pdq", NAN, "Mmsg/s", "out of memory");
        return 0;
    }
    memset(state, 0, (size_t)NKEYS * MAX_STATE);
    rq_handler_register(b->ctx, H_FAA, on_faa, NULL, 0);
    rq_handler_register(b->ctx, H_GATE, on_gate, NULL, 0);
    rq_queue_open(b->ctx, AUXQ);
    if (b->np >= 2) {
        double L = rqb_from(b, 0, rqb_cacheline_oneway_ns(b, b->o.quick ? 20000 : 100000));
        rqb_row_derived(b, "cache line one-way (limit L)", NAN, "ns", L,
                        "the physical limit between ranks 0 and 1, this run");
        rqb_pdq_round_trips(b);
    }
    static const unsigned tfull[] = {1, 2, 4}, tsmoke[] = {1, 2};
    const unsigned *ts = b->o.smoke ? tsmoke : tfull;
    const int nt = b->o.smoke ? 2 : 3;

    /* Key distributions, 64 B of state per key. */
    for (int d = 0; d < D_COUNT; d++) {
        make_keys(d, n);
        struct cfg c = {.variant = V_POLL, .dist = d, .threads = 1, .n = n, .touch = 64};
        measure(b, &c);
        double spin2 = NAN, pdq2 = NAN;
        for (int i = 0; i < nt; i++) {
            c.threads = ts[i];
            c.variant = V_SPIN;
            double sp = measure(b, &c);
            c.variant = V_PDQ;
            double pq = measure(b, &c);
            if (ts[i] == 2)
                spin2 = sp, pdq2 = pq;
        }
        char name[96];
        snprintf(name, sizeof name, "%s: PDQ / spinlock, 2 threads", dist_name[d]);
        rqb_row_derived(b, name, 2, "x", pdq2 / spin2, "same run; > 1: the PDQ is faster");
    }

    /* Handler occupancy: 64 B .. 4 KiB of per-key state, Zipf keys, 2 threads. */
    static const size_t occ_full[] = {64, 256, 1024, 4096}, occ_smoke[] = {64, 4096};
    const size_t *occ = b->o.smoke ? occ_smoke : occ_full;
    const int nocc = b->o.smoke ? 2 : 4;
    make_keys(D_ZIPF, n);
    for (int i = 0; i < nocc; i++) {
        struct cfg c = {.variant = V_POLL, .dist = D_ZIPF, .threads = 2, .n = n, .touch = occ[i]};
        measure(b, &c);
        c.variant = V_SPIN;
        double sp = measure(b, &c);
        c.variant = V_PDQ;
        double pq = measure(b, &c);
        char name[96];
        snprintf(name, sizeof name, "occupancy %zu B: PDQ / spinlock, 2 threads", occ[i]);
        rqb_row_derived(b, name, 2, "x", pq / sp, "Zipf(0.99) keys, same run");
    }
    free(state);
    free(keys);
    state = NULL;
    keys = NULL;
    return 0;
}
