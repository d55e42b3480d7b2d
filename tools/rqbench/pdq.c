/* pdq.c - rqbench pdq: what parallel dispatch buys, measured the way the
 * PDQ paper argues it (Falsafi & Wood): handlers that keep a processor
 * busy for a given time (the occupancy), run on 1, 2, 4, 8, 16 threads
 * (up to the CPUs), serialized per key by the queue, on the fetch-and-add
 * protocol of the paper's Figure 2 code example (a table of counters keyed
 * by address).  Every handler adds to its key's counter and then works on
 * its key's 64 B of state for the occupancy (0, 250 ns, 1 us, 4 us, timed
 * with the clock), so the figure is the handler's work plus what the
 * queue costs around it.  The keys' states lie 256 B apart: side by side,
 * two cores running neighbouring keys took each other's lines through
 * the prefetchers, and two threads of 0 ns handlers (the PDQ's, and the
 * limit's plain ones too) ran no faster than one (docs/pdq.md,
 * "Neighbouring lines").
 *
 * Two shapes:
 *   backlog  rank 0 queues n messages to itself behind a RQ_KEY_SEQUENTIAL
 *            gate message whose handler sleeps until they are all in, then
 *            opens the gate: T threads drain the backlog with no sender
 *            competing for the CPUs (the shape 2 cores can measure).  The
 *            figure runs from the first handler's start to the last one's
 *            end.  Beside each PDQ figure: the speedup over one PDQ thread
 *            and the ideal min(T, the parallelism the keys allow: n / the
 *            messages of the most frequent key).
 *   stream   rank 1 sends n keyed messages to rank 0, whose application
 *            thread either runs them with rq_poll (active-message
 *            handlers) or sleeps while a dedicated PDQ of T threads takes
 *            them in and runs them: the receive path's cost per message.
 * Variants:
 *   (a) one thread    AM handlers run by rq_poll on the application thread
 *                     (backlog: the messages wait in the virtual buffer);
 *   (b) spinlock      a dedicated PDQ, every message RQ_KEY_NOSYNC, the
 *                     handler takes its key's spinlock (test-and-test-and-
 *                     set, backoff, yield after 1024 pauses): 0 ns only;
 *   (c) PDQ           the same PDQ, the key is the counter: no lock.
 * Besides throughput, the CPU the process used while the messages ran, in
 * cores (getrusage over the wall time): the single hot key must stay near
 * one core with the PDQ (no thread busy-waits) where spinning threads burn
 * T.  The backlog starts in the shared L3 for every variant (evict_l2).
 * The PDQ stays open through a configuration's repetitions (threads
 * created per repetition would start on their parent's CPU and share it
 * for milliseconds), and its threads may run on every CPU (rank 0's pin
 * is widened while they start); other ranks sleep meanwhile. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
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
enum { NKEYS = 1024, STATE_WORDS = 8, STATE_STRIDE = 32 };
enum { V_POLL, V_SPIN, V_PDQ };
enum { D_UNIFORM, D_ZIPF, D_HOT, D_COUNT };
enum { S_BACKLOG, S_STREAM };

struct spin { _Alignas(64) _Atomic int held; };

static uint64_t *state;      /* NKEYS x 64 B, 256 B apart; word 0 = the counter */
static struct spin locks[NKEYS];
static uint32_t *keys;       /* the key of message i */
static uint64_t occ_ns;      /* handler occupancy */
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
struct slot { _Alignas(64) _Atomic uint64_t done, t_last; /* t_last: with an occupancy */ };
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
    uint64_t *s = state + k * STATE_STRIDE;
    s[0] += m->args[1];
    uint64_t t0 = occ_ns != 0 ? rqb_now_ns() : 0, t = t0;
    do
        for (size_t i = 1; i < STATE_WORDS; i++)
            s[i] = s[i] * 3 + 1;
    while (occ_ns != 0 && (t = rqb_now_ns()) - t0 < occ_ns);
    if (use_lock)
        spin_unlock(&locks[k]);
    /* The handler's end: exact with an occupancy (the clock is read
     * anyway); without, at every 64th handler of the thread (one clock
     * read per 64, about 0.3 ns each; the end is then at most 63 handlers
     * late in the figure, ~2 us of a 4 ms repetition). */
    uint64_t d = atomic_fetch_add_explicit(&slots[my_slot].done, 1, memory_order_release) + 1;
    if (occ_ns != 0)
        atomic_store_explicit(&slots[my_slot].t_last, t, memory_order_relaxed);
    else if ((d & 63) == 0)
        atomic_store_explicit(&slots[my_slot].t_last, rqb_now_ns(), memory_order_relaxed);
}

static uint64_t done_total(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < MAX_SLOTS; i++)
        n += atomic_load_explicit(&slots[i].done, memory_order_acquire);
    return n;
}

static void reset_round(void)
{
    for (unsigned i = 0; i < MAX_SLOTS; i++) {
        atomic_store(&slots[i].done, 0);
        atomic_store(&slots[i].t_last, 0);
    }
    atomic_store(&t_first, 0);
    atomic_fetch_add(&round_no, 1);
}

/* ---- key streams ---------------------------------------------------- */

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Fill keys[0..n); returns the parallelism the stream allows: n / the
 * count of its most frequent key. */
static double make_keys(int dist, size_t n)
{
    static double cdf[NKEYS];
    static uint32_t count[NKEYS];
    double h = 0;
    for (unsigned k = 0; k < NKEYS; k++)
        cdf[k] = h += 1.0 / pow(k + 1, 0.99);
    memset(count, 0, sizeof count);
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
        count[keys[i]]++;
    }
    uint32_t most = 1;
    for (unsigned k = 0; k < NKEYS; k++)
        most = count[k] > most ? count[k] : most;
    return (double)n / most;
}

/* ---- one repetition ---------------------------------------------------- */

struct cfg {
    int      shape, variant, dist;
    unsigned threads;
    size_t   n;
    double   cores[RQB_MAX_SAMPLES]; /* per repetition, rank 0 */
    int      ncores;
    int      bad;    /* a counter total came out wrong */
    rq_pdq_t *pdq;   /* variants (b) and (c): open for all repetitions */
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

/* The stream shape's placement: rank 1 (the sender) on the last CPU,
 * rank 0 and its PDQ threads on the others, as for rq_poll, so that the
 * two variants compare the receive path, not where the scheduler put the
 * threads (left floating, a PDQ thread time-shared the sender's CPU in
 * some repetitions: 2 against 30 Mmsg/s).  Nothing with one CPU. */
static cpu_set_t stream_saved;
static int stream_pinned;

static void stream_pin(struct rqb *b, int on)
{
    int cpus = get_nprocs();
    if (cpus < 2 || b->me > 1)
        return;
    if (!on) {
        if (stream_pinned)
            sched_setaffinity(0, sizeof stream_saved, &stream_saved);
        stream_pinned = 0;
        return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < cpus && i < CPU_SETSIZE; i++)
        if ((b->me == 1) == (i == cpus - 1))
            CPU_SET(i, &set);
    stream_pinned = sched_getaffinity(0, sizeof stream_saved, &stream_saved) == 0 &&
                    sched_setaffinity(0, sizeof set, &set) == 0;
}

/* Let the calling thread (and the threads it starts) run on every CPU;
 * *saved gets its pin back for restore_affinity.  Returns whether it was
 * saved. */
static int widen_affinity(cpu_set_t *saved)
{
    cpu_set_t all;
    int have = sched_getaffinity(0, sizeof *saved, saved) == 0;
    CPU_ZERO(&all);
    for (int i = 0; i < get_nprocs() && i < CPU_SETSIZE; i++)
        CPU_SET(i, &all);
    sched_setaffinity(0, sizeof all, &all);
    return have;
}

static void restore_affinity(int have, const cpu_set_t *saved)
{
    if (have)
        sched_setaffinity(0, sizeof *saved, saved);
}

/* Open the PDQ with its threads free to run on every CPU (the stream
 * shape: on every CPU rank 0 may use). */
static int open_unpinned(rq_ctx_t *ctx, const rq_pdq_attr_t *at, rq_pdq_t **pdq)
{
    if (stream_pinned)
        return rq_pdq_open(ctx, QID, at, pdq);
    cpu_set_t mine;
    int have = widen_affinity(&mine);
    int rc = rq_pdq_open(ctx, QID, at, pdq);
    restore_affinity(have, &mine);
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

static uint64_t counters_sum(void)
{
    uint64_t s = 0;
    for (unsigned k = 0; k < NKEYS; k++)
        s += state[k * STATE_STRIDE];
    return s;
}

/* Send message i of the stream to dst (rank 0). */
static int send_one(rq_ctx_t *ctx, const struct cfg *c, size_t i)
{
    uint64_t a[2] = {keys[i], 1};
    if (c->variant == V_POLL)
        return rq_request(ctx, 0, H_FAA, a, 2, NULL, 0, 0);
    return rq_pdq_enqueue(ctx, 0, QID, c->variant == V_PDQ ? keys[i] : RQ_KEY_NOSYNC, H_FAA, a,
                          2, NULL, 0, 0);
}

/* Rank 0: wait until every message ran (polling for (a), else napping so
 * the PDQ's threads have the CPUs); returns the end time. */
static uint64_t wait_all(rq_ctx_t *ctx, const struct cfg *c)
{
    if (c->pdq == NULL) {
        while (done_total() < c->n)
            rq_poll(ctx);
        return rqb_now_ns();
    }
    /* Few wake-ups: each one steals a CPU from the threads measured (at
     * 100 us, ten thousand wake-ups a second took 4% from two threads
     * filling 2 CPUs with 1 us handlers, and a PDQ thread sharing rank 0's
     * CPU spent 9% of its samples returning from the interrupts), so the
     * looks are 2 ms apart and the handlers record the end (on_faa). */
    uint64_t last_look = rqb_now_ns();
    while (done_total() < c->n) {
        last_look = rqb_now_ns();
        nap(2000000);
    }
    uint64_t seen = rqb_now_ns(), first = atomic_load(&t_first), last = 0;
    for (unsigned i = 0; i < MAX_SLOTS; i++) {
        uint64_t t = atomic_load_explicit(&slots[i].t_last, memory_order_relaxed);
        last = t > last ? t : last;
    }
    if (last != 0)
        return last;
    uint64_t lo = first > last_look ? first : last_look; /* under 64 handlers a thread */
    return lo + (seen - lo) / 2;
}

/* Push what this core's caches hold out to the shared L3: a sweep through
 * twice the L2 (per core, 2 MiB on the AMD EPYC VMs this ran on; 4 MiB on
 * most Intel server cores).  The backlog is written by rank 0's thread;
 * without this, a PDQ thread placed on that thread's core found part of
 * it in its own L2 and drained it twice as fast as one on another core:
 * every 0 ns row was bimodal, and which thread count drew the fast
 * repetitions decided its speedup (0.7x in one run, 2.7x in the next). */
static void evict_l2(void)
{
    enum { SWEEP = 8u << 20 };
    static unsigned char *buf;
    if (buf == NULL && (buf = malloc(SWEEP)) == NULL)
        return;
    for (size_t i = 0; i < SWEEP; i += 64)
        buf[i]++;
    __asm__ __volatile__("" ::: "memory");
}

/* Rank 0's part of a repetition; Mmsg/s from the first handler's start to
 * the last one's end. */
static double rank0_run(struct rqb *b, struct cfg *c, volatile uint64_t *go, uint64_t round)
{
    rq_ctx_t *ctx = b->ctx;
    uint64_t before = counters_sum();
    use_lock = c->variant == V_SPIN;
    if (c->shape == S_BACKLOG) {
        if (c->pdq != NULL) {
            atomic_store(&gate_in, 0);
            atomic_store(&gate_open, 0);
            if (rq_pdq_enqueue(ctx, 0, QID, RQ_KEY_SEQUENTIAL, H_GATE, NULL, 0, NULL, 0, 0) != 0)
                return NAN;
            while (!atomic_load(&gate_in))
                nap(10000);
        }
        for (size_t i = 0; i < c->n; i++)
            if (send_one(ctx, c, i) != 0)
                return NAN;
        rq_msg_t v;
        rq_peek(ctx, AUXQ, &v); /* the lanes' packets into the buffer / the PDQ */
        evict_l2();
    }
    reset_round();
    double cpu0 = cpu_s();
    uint64_t w0 = rqb_now_ns();
    if (c->shape == S_BACKLOG) {
        if (c->pdq != NULL)
            atomic_store(&gate_open, 1);
    } else {
        __atomic_store_n(go, round, __ATOMIC_RELEASE); /* rank 1 sends */
    }
    uint64_t t_end = wait_all(ctx, c);
    if (c->ncores < RQB_MAX_SAMPLES)
        c->cores[c->ncores++] = (cpu_s() - cpu0) / ((double)(t_end - w0) * 1e-9);
    if (counters_sum() - before != c->n)
        c->bad = 1;
    uint64_t t0 = atomic_load(&t_first), span = t_end > t0 ? t_end - t0 : 0;
    return span != 0 ? (double)c->n / (double)span * 1e3 : NAN;
}

static double run(struct rqb *b, void *arg)
{
    struct cfg *c = arg;
    volatile uint64_t *phase = rqb_flag(b, 3), *go = rqb_flag(b, 4);
    static uint64_t round;
    double r = 0;
    rq_barrier(b->ctx);
    round++;
    if (b->me == 0) {
        r = rank0_run(b, c, go, round);
        __atomic_store_n(phase, round, __ATOMIC_RELEASE);
    } else if (b->me == 1 && c->shape == S_STREAM) {
        rqb_spin_until(go, round);
        for (size_t i = 0; i < c->n; i++)
            if (send_one(b->ctx, c, i) != 0)
                break;
        while (__atomic_load_n(phase, __ATOMIC_ACQUIRE) < round)
            nap(100000);
    } else {
        while (__atomic_load_n(phase, __ATOMIC_ACQUIRE) < round)
            nap(1000000); /* off the CPUs the PDQ threads run on */
    }
    return rqb_from(b, 0, r);
}

static const char *const dist_name[D_COUNT] = {"uniform", "Zipf(0.99)", "hot key"};
static const char *const var_name[] = {"(a) rq_poll", "(b) spinlock", "(c) PDQ"};

/* Measure one configuration; rows for throughput and cores.  Returns the
 * median throughput. */
static double measure(struct rqb *b, struct cfg *c)
{
    char name[160], note[160];
    if (c->shape == S_BACKLOG)
        snprintf(name, sizeof name, "backlog %llu ns, %s: %s", (unsigned long long)occ_ns,
                 dist_name[c->dist], var_name[c->variant]);
    else
        snprintf(name, sizeof name, "stream, %s: %s", dist_name[c->dist], var_name[c->variant]);
    c->ncores = 0;
    c->bad = 0;
    c->pdq = NULL;
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

/* ---- the limit: the same work with the keys split, no queue ----------
 * T plain threads, thread t running the handler's work for every message
 * whose key is t mod T: what T threads can do on these CPUs with the
 * keys' data never shared and nothing dispatched (the hot key's messages
 * all land on one thread, so the keys' parallelism is in it too). */

struct limit_arg {
    const uint32_t  *mine; /* this thread's messages' keys, in order */
    size_t           n;
    _Atomic int     *go;
    int              cpu;  /* pinned here (-1: not) */
    uint64_t         end;
};

static void *limit_thread(void *arg)
{
    struct limit_arg *a = arg;
    if (a->cpu >= 0) { /* one CPU each, as the PDQ's threads (RQ_PDQ_BIND) */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(a->cpu, &one);
        (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    }
    while (!atomic_load_explicit(a->go, memory_order_acquire))
        __builtin_ia32_pause();
    for (size_t i = 0; i < a->n; i++) {
        uint64_t *s = state + (a->mine[i] % NKEYS) * STATE_STRIDE;
        s[0] += 1;
        uint64_t t0 = occ_ns != 0 ? rqb_now_ns() : 0;
        do
            for (size_t w = 1; w < STATE_WORDS; w++)
                s[w] = s[w] * 3 + 1;
        while (occ_ns != 0 && rqb_now_ns() - t0 < occ_ns);
    }
    a->end = rqb_now_ns();
    return NULL;
}

struct limit_cfg { unsigned T; size_t n; };

static double limit_run(struct rqb *b, void *arg)
{
    const struct limit_cfg *c = arg;
    double r = 0;
    rq_barrier(b->ctx);
    if (b->me == 0) {
        struct limit_arg a[16];
        pthread_t th[16];
        _Atomic int go = 0;
        /* Each thread's keys laid out in a row before the clock starts. */
        uint32_t *split = malloc(c->n * sizeof *split);
        size_t at = 0;
        for (unsigned t = 0; t < c->T && split != NULL; t++) {
            a[t].mine = split + at;
            for (size_t i = 0; i < c->n; i++)
                if (keys[i] % c->T == t)
                    split[at++] = keys[i];
            a[t].n = (size_t)(split + at - a[t].mine);
            a[t].go = &go;
            a[t].cpu = -1;
            a[t].end = 0;
        }
        cpu_set_t mine, wide;
        int have = widen_affinity(&mine);
        /* Thread t on the t-th CPU (round the set): unpinned, the kernel
         * put two of them on one CPU in some repetitions (the 16-thread
         * limit was 7.3 or 14.5 by turns, the 2-thread one at 250 ns 1.0). */
        if (sched_getaffinity(0, sizeof wide, &wide) == 0 && CPU_COUNT(&wide) > 1) {
            int cpus[CPU_SETSIZE], k = 0;
            for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, &wide))
                    cpus[k++] = cpu;
            for (unsigned t = 0; t < c->T; t++)
                a[t].cpu = cpus[t % (unsigned)k];
        }
        unsigned made = 0;
        for (; split != NULL && made < c->T; made++)
            if (pthread_create(&th[made], NULL, limit_thread, &a[made]) != 0)
                break;
        restore_affinity(have, &mine);
        nap(1000000); /* let them spread over the CPUs */
        uint64_t t0 = rqb_now_ns(), end = t0;
        atomic_store_explicit(&go, 1, memory_order_release);
        for (unsigned i = 0; i < made; i++) {
            pthread_join(th[i], NULL);
            end = a[i].end > end ? a[i].end : end;
        }
        free(split);
        r = made == c->T && end > t0 ? (double)c->n / (double)(end - t0) * 1e3 : NAN;
    } else {
        nap(1000000);
    }
    return rqb_from(b, 0, r);
}

/* Thread counts 1, 2, 4, 8, 16 up to the CPUs. */
static int thread_counts(const struct rqb *b, unsigned *ts)
{
    int most = b->o.pdq_threads != 0 ? b->o.pdq_threads : get_nprocs() < 16 ? get_nprocs() : 16, n = 0;
    for (unsigned t = 1; (int)t <= most; t *= 2)
        ts[n++] = t;
    if (b->o.smoke && n > 2)
        n = 2;
    return n;
}

/* The backlog shape at one occupancy: (a), then the PDQ at each thread
 * count with its speedup over one thread beside the ideal; (b) at 0 ns. */
static void backlog_rows(struct rqb *b, size_t n, int dist, const unsigned *ts, int nt)
{
    double par = make_keys(dist, n);
    struct cfg c = {.shape = S_BACKLOG, .variant = V_POLL, .dist = dist, .threads = 1, .n = n};
    double poll = measure(b, &c), one = NAN, lim_one = NAN;
    for (int i = 0; i < nt; i++) {
        c.threads = ts[i];
        char lname[96];
        snprintf(lname, sizeof lname, "backlog %llu ns, %s: limit, keys split",
                 (unsigned long long)occ_ns, dist_name[dist]);
        struct limit_cfg lc = {ts[i], n};
        struct rqb_summary ls;
        rqb_measure(b, lname, limit_run, &lc, &ls);
        rqb_row(b, lname, ts[i], "Mmsg/s", &ls,
                "T plain threads, thread t runs the keys = t mod T: no queue, no data shared");
        if (ts[i] == 1)
            lim_one = ls.median;
        if (occ_ns == 0) {
            c.variant = V_SPIN;
            measure(b, &c);
        }
        c.variant = V_PDQ;
        double r = measure(b, &c);
        char name[96], note[128];
        if (ts[i] == 1) {
            one = r;
            snprintf(name, sizeof name, "backlog %llu ns, %s: PDQ 1 / rq_poll",
                     (unsigned long long)occ_ns, dist_name[dist]);
            rqb_row_derived(b, name, 1, "x", one / poll, "same run: the queue's cost at 1 thread");
            continue;
        }
        double ideal = (double)ts[i] < par ? (double)ts[i] : par;
        snprintf(name, sizeof name, "backlog %llu ns, %s: PDQ speedup", (unsigned long long)occ_ns,
                 dist_name[dist]);
        snprintf(note, sizeof note,
                 "over 1 PDQ thread, same run; ideal %.2f (min(T, %.1f: the keys' parallelism)), "
                 "limit %.2f (keys split)", ideal, par, ls.median / lim_one);
        rqb_row_derived(b, name, ts[i], "x", r / one, note);
    }
}

static void stream_rows(struct rqb *b, size_t n, const unsigned *ts, int nt)
{
    make_keys(D_UNIFORM, n);
    stream_pin(b, 1);
    struct cfg c = {.shape = S_STREAM, .variant = V_POLL, .dist = D_UNIFORM, .threads = 1, .n = n};
    double poll = measure(b, &c);
    for (int i = 0; i < nt; i++) {
        c.variant = V_PDQ;
        c.threads = ts[i];
        double r = measure(b, &c);
        char name[96];
        snprintf(name, sizeof name, "stream, uniform: PDQ / rq_poll");
        rqb_row_derived(b, name, ts[i], "x", r / poll,
                        "same run; rank 1 sends from the last CPU, rank 0's PDQ (T threads) or "
                        "rq_poll runs them on the others");
    }
    stream_pin(b, 0);
}

int rqb_fam_pdq(struct rqb *b)
{
    const size_t nmax = b->o.smoke ? 2000 : b->o.quick ? 20000 : 100000;
    state = aligned_alloc(4096, (size_t)NKEYS * STATE_STRIDE * 8);
    keys = malloc(nmax * sizeof *keys);
    if (state == NULL || keys == NULL) {
        free(state);
        free(keys);
        rqb_row_na(b, "pdq", NAN, "Mmsg/s", "out of memory");
        return 0;
    }
    memset(state, 0, (size_t)NKEYS * STATE_STRIDE * 8);
    rq_handler_register(b->ctx, H_FAA, on_faa, NULL, 0);
    rq_handler_register(b->ctx, H_GATE, on_gate, NULL, 0);
    rq_queue_open(b->ctx, AUXQ);
    if (b->np >= 2) {
        double L = rqb_from(b, 0, rqb_cacheline_oneway_ns(b, b->o.quick ? 20000 : 100000));
        rqb_row_derived(b, "cache line one-way (limit L)", NAN, "ns", L,
                        "the physical limit between ranks 0 and 1, this run");
        rqb_pdq_round_trips(b);
    }
    unsigned ts[8];
    const int nt = thread_counts(b, ts);

    /* Occupancy 0, 250 ns, 1 us, 4 us; each repetition about the same
     * length (n shrinks as the handlers grow). */
    static const uint64_t occ_full[] = {0, 250, 1000, 4000}, occ_smoke[] = {0, 1000};
    const uint64_t *occ = b->o.smoke ? occ_smoke : occ_full;
    const int nocc = b->o.smoke ? 2 : 4;
    for (int o = 0; o < nocc; o++) {
        occ_ns = occ[o];
        size_t n = nmax;
        if (occ_ns != 0 && n > (b->o.quick ? 20000000u : 80000000u) / occ_ns)
            n = (b->o.quick ? 20000000u : 80000000u) / occ_ns;
        for (int d = 0; d < D_COUNT; d++)
            backlog_rows(b, n, d, ts, nt);
    }
    occ_ns = 0;
    if (b->np >= 2)
        stream_rows(b, nmax, ts, nt);
    free(state);
    free(keys);
    state = NULL;
    keys = NULL;
    return 0;
}
