/* intr.c - rqbench intr: the cost of receiving by interrupt against the
 * interval between messages (Liu & Culler, section 6.2.2, Figure 7).
 *
 * Method (the paper's): rank 1 turns RQ_INTR_ALL on and runs a fixed
 * amount of computation (register-only floating-point work, a set number
 * of iterations, never calling librq) while rank 0 sends n null requests
 * (the handler increments a counter) with a delay between sends; rank 1's
 * progress thread is woken and runs the handlers, taking the CPU from the
 * computation.  The same computation is timed without messages in the
 * same repetition (paired: a drift of the machine hits both).  Then
 *   overhead per message  y = (T_with - T_without) / n - h
 * where h is the handler's own time (timed directly), and x, the
 * interval, is what rank 0 achieved: its send span / (n - 1).  The
 * computation is sized to outlast the sends; a repetition where it did
 * not is redone with twice the work.
 *
 * Model (the paper's): receiving k messages in one interrupt costs
 * T_i + (k - 1) T_p (the first by interrupt, the rest by the dispatch
 * loop's polling), and the receiver cannot spend more than x per message,
 * so y = min(x, (T_i + (k - 1) T_p) / k) - h.  On the CM-5 an interrupt
 * preempted at once and the sender waited for the receiver, so k followed
 * from x: y = min(x, T_i) - h, the paper's closed form.  Here the
 * scheduler may let a woken progress thread wait while more messages
 * arrive (batching them: k > 1 well above x = T_i), so k is counted,
 * rq_stats().interrupts (progress-thread episodes that ran handlers) over
 * the messages, in the repetition whose y is the median.  The points are
 * measured interleaved (a round runs one repetition of each), the
 * family's budget times the number of points in all.  T_i is fitted
 * to the sweep (least relative squares) for both forms.  T_p, the polled
 * receive (h included), is measured here.
 *
 * What neither form has: an episode of the progress thread need not
 * follow a sleep.  When the bell rings again before the thread sleeps
 * (messages less than an episode apart), the episode is one more turn of
 * the progress loop, T_a, with no context switch.  The sleep-counted form
 * counts both: of the n / k episodes, n / s followed a real sleep (s:
 * messages per voluntary context switch of rank 1's process; its main
 * thread computes and never sleeps) and cost T_i, the rest cost T_a:
 *   y = T_i / s + T_a (1/k - 1/s) + T_p (1 - 1/k) - h
 * with no min(x, ...): the lanes are deep, the sender never waits for the
 * receiver, and a progress thread that never sleeps costs more than the
 * interval when its turns are slower than the sends.  T_i and T_a are
 * fitted minimax; the target is this form within 20% of every point. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <sys/resource.h>

#include "bench.h"

enum { H_COUNT = 70 };
enum { NPTS = 12 };

static volatile uint64_t counted;
static uint64_t counted_due;

static void on_count(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)m;
    (void)a;
    counted++;
}

struct intr_arg {
    uint64_t delay_ns; /* between rank 0's sends */
    int      n;        /* messages */
    uint64_t iters;    /* rank 1's work (grows when it ended too early) */
    double   h;        /* handler time, ns */
    double   x;        /* out: achieved interval of the last repetition */
    double   k[RQB_MAX_SAMPLES + 1]; /* out: messages per interrupt, each repetition */
    double   s[RQB_MAX_SAMPLES + 1]; /* out: messages per real sleep, each repetition */
    double   y[RQB_MAX_SAMPLES + 1]; /* out: its overhead per message */
    int      nk;
};

/* Context switches rank 1's process made by going to sleep: its main
 * thread computes and never sleeps, so these are the progress thread's
 * futex waits that really slept (a wait the bell beat returns at once). */
static long voluntary_switches(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_nvcsw;
}

/* One repetition: returns y (ns per message) on every rank, NAN if the
 * work ended before the sends (the caller then grows it). */
static double intr_once(struct rqb *b, struct intr_arg *a)
{
    volatile uint64_t *go = rqb_flag(b, 3), *span = rqb_flag(b, 4), *sent_end = rqb_flag(b, 5);
    static uint64_t round;
    double t_without = 0, t_with = 0, x = 0, k = 0, sl = 0;
    rq_stats_t st0, st1;
    uint64_t work_end = 0;
    rq_barrier(b->ctx);
    round++;
    /* without: rank 1 alone, nobody sends */
    if (b->me == 1) {
        uint64_t t0 = rqb_now_ns();
        rqb_work(a->iters);
        t_without = rqb_elapsed_ns(t0);
        rq_interrupts(b->ctx, RQ_INTR_ALL);
    }
    rq_barrier(b->ctx); /* after rank 1's rq_interrupts: the mode is visible */
    if (b->me == 1) {
        counted_due += (uint64_t)a->n;
        __atomic_store_n(go, round, __ATOMIC_RELEASE);
        rq_stats(b->ctx, &st0);
        long csw0 = voluntary_switches();
        uint64_t t0 = rqb_now_ns();
        rqb_work(a->iters);
        work_end = rqb_now_ns();
        t_with = (double)(work_end - t0);
        rq_interrupts(b->ctx, RQ_INTR_OFF);
        long sleeps = voluntary_switches() - csw0;
        rq_stats(b->ctx, &st1);
        uint64_t ints = st1.interrupts - st0.interrupts;
        k = ints != 0 ? (double)a->n / (double)ints : NAN;
        sl = sleeps > 0 ? (double)a->n / (double)sleeps : NAN;
        while (counted < counted_due) /* the rest, if any, by polling */
            rq_poll(b->ctx);
    } else if (b->me == 0) {
        rqb_spin_until(go, round);
        uint64_t t0 = rqb_now_ns(), t1 = t0;
        for (int i = 0; i < a->n; i++) {
            if (i > 0)
                rqb_delay_ns(a->delay_ns);
            t1 = rqb_now_ns();
            rq_request(b->ctx, 1, H_COUNT, NULL, 0, NULL, 0, 0);
        }
        __atomic_store_n(span, t1 - t0, __ATOMIC_RELAXED);
        __atomic_store_n(sent_end, rqb_now_ns(), __ATOMIC_RELEASE);
    }
    rq_barrier(b->ctx);
    double y = NAN;
    if (b->me == 1) {
        x = (double)__atomic_load_n(span, __ATOMIC_RELAXED) / (a->n - 1);
        if (work_end > __atomic_load_n(sent_end, __ATOMIC_ACQUIRE))
            y = (t_with - t_without) / a->n - a->h;
    }
    a->x = rqb_from(b, 1, x);
    k = rqb_from(b, 1, k);
    sl = rqb_from(b, 1, sl);
    y = rqb_from(b, 1, y);
    if (isfinite(y) && isfinite(k) && a->nk < RQB_MAX_SAMPLES + 1) {
        a->k[a->nk] = k;
        a->s[a->nk] = sl;
        a->y[a->nk++] = y;
    }
    return y;
}

static double intr_rep(struct rqb *b, void *argp)
{
    struct intr_arg *a = argp;
    for (;;) {
        double y = intr_once(b, a); /* rqb_from: rank 1's NAN arrives as -inf */
        if (isfinite(y) || a->iters > (1ull << 40))
            return y;
        a->iters *= 2; /* the work ended before the sends: more of it */
    }
}

/* The handler's own time: direct calls through a volatile pointer. */
static double handler_ns(void)
{
    void (*volatile fn)(rq_ctx_t *, const rq_msg_t *, void *) = on_count;
    rq_msg_t m = {0};
    enum { N = 1000000 };
    uint64_t before = counted, t0 = rqb_now_ns();
    for (int i = 0; i < N; i++)
        fn(NULL, &m, NULL);
    double t = rqb_elapsed_ns(t0) / N;
    counted = before;
    return t;
}

/* T_p: rank 0 sends a burst of K messages to an idle rank 1, which then
 * polls them all; ns per message on rank 1 (handler included). */
enum { K = 1024 };
static double polled_once(struct rqb *b, void *arg)
{
    (void)arg;
    return rqb_fill_then_drain(b, H_COUNT, K, &counted, &counted_due, 1);
}

/* The paper's model.  Receiving k messages in one interrupt costs
 * T_i + (k - 1) T_p, and a receiver cannot spend more than the interval
 * on each message (it then does nothing else): per message
 *   y = min(x, (T_i + (k - 1) T_p) / k) - h.
 * On the CM-5 k followed from x (k = 1 from x >= T_i, and below it the
 * sender waited for the receiver): y = min(x, T_i) - h, the paper's
 * closed form (k = 0 here selects it). */
static double model(double x, double k, double ti, double tp, double h)
{
    double per = k > 0 ? (ti + (k - 1) * tp) / k : ti;
    return (x < per ? x : per) - h;
}

/* T_i by least relative squares over the points (k[i] = 0: the closed
 * form), scanning a geometric grid in 0.2% steps: one parameter, a dozen
 * points, no solver needed. */
static double fit_ti(const double *x, const double *y, const double *k, int n, double tp,
                     double h)
{
    double best = INFINITY, best_ti = NAN;
    for (double ti = tp > 1 ? tp : 1; ti < 1e7; ti *= 1.002) {
        double err = 0;
        for (int i = 0; i < n && err < best; i++) {
            double m = model(x[i], k[i], ti, tp, h);
            err = m > 0 ? err + (y[i] - m) * (y[i] - m) / (m * m) : INFINITY;
        }
        if (err < best) {
            best = err;
            best_ti = ti;
        }
    }
    return best_ti;
}

/* The sleep-counted form: of the n/k episodes, n/s followed a real sleep
 * and cost T_i; the others (the bell rang again before the thread slept)
 * cost T_a, an episode of the progress loop without a context switch;
 * every further message of an episode costs T_p.  No min(x, ...): the
 * lanes are deep, nobody waits for the receiver, and a progress thread
 * that never sleeps can cost more than the interval. */
struct sleep_fit { double ti, ta, worst, at; };

static double model_sleep(double k, double s, const struct sleep_fit *f, double tp, double h)
{
    double per_ep = 1 / k, per_sleep = s > k ? 1 / s : per_ep;
    return per_sleep * f->ti + (per_ep - per_sleep) * f->ta + (1 - per_ep) * tp - h;
}

/* Minimax over a geometric grid (1% steps): the T_i, T_a that make the
 * worst relative deviation smallest. */
static struct sleep_fit fit_sleep(const double *y, const double *k, const double *s, int n,
                                  double tp, double h)
{
    struct sleep_fit best = {NAN, NAN, INFINITY, NAN};
    for (double ti = 100; ti < 1e6; ti *= 1.01)
        for (double ta = 10; ta < 1e6; ta *= 1.01) {
            struct sleep_fit f = {ti, ta, 0, NAN};
            for (int i = 0; i < n && f.worst < best.worst; i++) {
                double m = model_sleep(k[i], s[i], &f, tp, h);
                double e = m > 0 ? fabs(y[i] - m) / m : INFINITY;
                if (e > f.worst) {
                    f.worst = e;
                    f.at = i;
                }
            }
            if (f.worst < best.worst)
                best = f;
        }
    return best;
}

/* The worst |y - model| / model over the points; *at gets its x. */
static double worst_dev(const double *x, const double *y, const double *k, int n, double ti,
                        double tp, double h, double *at)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double m = model(x[i], k[i], ti, tp, h), e = fabs(y[i] - m) / m;
        if (e > worst) {
            worst = e;
            *at = x[i];
        }
    }
    return worst;
}

/* k of the repetition whose overhead is nearest the reported median: the
 * model is evaluated on one repetition's (y, k), not on two medians that
 * may come from different regimes (a point near the knee is bimodal). */
static double k_at_median(const struct intr_arg *a, double median, double *sl)
{
    double k = NAN, best = INFINITY;
    for (int r = 0; r < a->nk; r++)
        if (fabs(a->y[r] - median) < best) {
            best = fabs(a->y[r] - median);
            k = a->k[r];
            *sl = a->s[r];
        }
    return k;
}

int rqb_fam_intr(struct rqb *b)
{
    if (b->np < 2)
        return 0;
    rq_handler_register(b->ctx, H_COUNT, on_count, NULL, 0);
    if (rq_interrupts(b->ctx, RQ_INTR_OFF) == RQ_ENOTSUP) {
        rqb_row_na(b, "interrupt overhead", NAN, "ns", "no progress thread");
        return 0;
    }
    double h = rqb_from(b, 1, b->me == 1 ? handler_ns() : 0);
    rqb_row_derived(b, "handler time h", NAN, "ns", h, "counter increment, direct calls on rank 1");
    struct rqb_summary ps;
    rqb_measure(b, "polled receive T_p", polled_once, NULL, &ps);
    rqb_row(b, "polled receive T_p", NAN, "ns", &ps, "rank 1 polls a burst of 1024, handler included");
    double tp = rqb_from(b, 0, ps.median); /* the summary is rank 0's */
    /* ns per work iteration on rank 1, for sizing the work */
    double per = 0;
    if (b->me == 1) {
        per = rqb_work_ns_per_iter();
    }
    per = rqb_from(b, 1, per);

    static const uint64_t full[NPTS] = {0,    250,   500,   1000,  2000,   4000,
                                        8000, 16000, 32000, 64000, 128000, 256000};
    static const uint64_t quick[] = {0, 500, 1000, 2000, 4000, 8000, 16000, 64000};
    static const uint64_t smoke[] = {0, 2000, 16000};
    const uint64_t *delays = b->o.smoke ? smoke : b->o.quick ? quick : full;
    int npts = b->o.smoke ? 3 : b->o.quick ? 8 : NPTS;
    int nmax = b->o.smoke ? 50 : b->o.quick ? 500 : 2500;
    double xs[NPTS], ys[NPTS], ks[NPTS], ss[NPTS];
    static struct intr_arg a[NPTS]; /* k[] is large */
    for (int p = 0; p < npts; p++) {
        uint64_t d = delays[p];
        /* at most 2500 messages (the paper's), sent over at most ~50 ms */
        int n = (int)(50e6 / ((double)d + 100.0));
        n = n > nmax ? nmax : n < 50 ? 50 : n;
        /* work for the whole send span (at >= 100 ns per send) and 1 ms */
        double want = (double)n * ((double)d + 100.0) + 1e6;
        a[p] = (struct intr_arg){.delay_ns = d, .n = n, .iters = (uint64_t)(want / per), .h = h};
        (void)intr_rep(b, &a[p]); /* warm-up, discarded */
        a[p].nk = 0;
    }
    /* The points interleaved: each round runs one repetition of every
     * point, so a drift of the machine over the sweep (the cost of a
     * wake-up on a shared host moves by tens of percent within a minute)
     * hits every point alike instead of the few measured while it lasted. */
    static double v[NPTS][RQB_MAX_SAMPLES];
    int reps = 0, maxr = b->o.max_reps < RQB_MAX_SAMPLES ? b->o.max_reps : RQB_MAX_SAMPLES;
    uint64_t t0 = rqb_now_ns();
    for (;;) {
        for (int p = 0; p < npts; p++) {
            v[p][reps] = intr_rep(b, &a[p]);
            if (b->me == 0 && b->progress)
                fprintf(stderr, "\rrqbench intr: round %3d, point %2d of %d", reps + 1, p + 1, npts);
        }
        reps++;
        int64_t stop = reps >= maxr || (reps >= b->o.min_reps &&
                                        (double)(rqb_now_ns() - t0) * 1e-9 >= b->o.budget_s * npts);
        rq_broadcast(b->ctx, 0, &stop, sizeof stop);
        if (stop)
            break;
    }
    if (b->me == 0 && b->progress)
        fprintf(stderr, "\r%78s\r", "");
    for (int p = 0; p < npts; p++) {
        uint64_t d = delays[p];
        struct rqb_summary s;
        rqb_summarize(v[p], reps, 0.9, &s);
        xs[p] = a[p].x;
        ys[p] = rqb_from(b, 0, s.median);
        ks[p] = k_at_median(&a[p], ys[p], &ss[p]);
        char note[96];
        snprintf(note, sizeof note, "per message, %d sent %llu ns apart; param = interval x",
                 a[p].n, (unsigned long long)d);
        rqb_row(b, "interrupt overhead", a[p].x, "ns", &s, note);
        rqb_row_derived(b, "messages per interrupt k", a[p].x, "msgs", ks[p],
                        "rq_stats().interrupts over the messages, median's repetition");
        rqb_row_derived(b, "messages per sleep s", a[p].x, "msgs", ss[p],
                        "rank 1's voluntary context switches over the messages");
    }
    /* every rank has the points (rqb_from); rank 0 records the rows */
    double none[NPTS] = {0}, at0 = 0, at = 0;
    double ti0 = fit_ti(xs, ys, none, npts, tp, h), ti = fit_ti(xs, ys, ks, npts, tp, h);
    struct sleep_fit sf = fit_sleep(ys, ks, ss, npts, tp, h);
    for (int p = 0; p < npts; p++) {
        rqb_row_derived(b, "model, closed form", xs[p], "ns", model(xs[p], 0, ti0, tp, h),
                        "min(x, T_i) - h: k from x as on the CM-5");
        rqb_row_derived(b, "model, k counted", xs[p], "ns", model(xs[p], ks[p], ti, tp, h),
                        "min(x, (T_i + (k-1) T_p) / k) - h, k measured");
        rqb_row_derived(b, "model, sleeps counted", xs[p], "ns", model_sleep(ks[p], ss[p], &sf, tp, h),
                        "(T_i / s + T_a (1/k - 1/s) + T_p (1 - 1/k)) - h, k and s measured");
    }
    double dev0 = worst_dev(xs, ys, none, npts, ti0, tp, h, &at0);
    double dev = worst_dev(xs, ys, ks, npts, ti, tp, h, &at);
    rqb_row_derived(b, "T_i, closed form", NAN, "ns", ti0,
                    "fitted; L&C CMAML: 19 us (608 cycles)");
    rqb_row_derived(b, "T_i, k counted", NAN, "ns", ti, "fitted: one interrupt's cost");
    char note[96];
    snprintf(note, sizeof note, "|measured - model| / model, worst at x = %.0f ns", at0);
    rqb_row_derived(b, "closed form deviation, worst", NAN, "frac", dev0, note);
    snprintf(note, sizeof note, "the same, k counted, worst at x = %.0f ns", at);
    rqb_row_derived(b, "k counted deviation, worst", NAN, "frac", dev, note);
    rqb_row_derived(b, "T_i, sleeps counted", NAN, "ns", sf.ti, "fitted: an episode after a real sleep");
    rqb_row_derived(b, "T_a, sleeps counted", NAN, "ns", sf.ta, "fitted: an episode without one");
    snprintf(note, sizeof note, "sleeps counted, worst at x = %.0f ns (target <= 0.2)",
             isfinite(sf.at) ? xs[(int)sf.at] : NAN);
    rqb_row_derived(b, "model deviation, worst", NAN, "frac", sf.worst, note);
    return 0;
}
