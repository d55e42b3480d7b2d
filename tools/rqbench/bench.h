/* bench.h - the measurement core shared by rqbench's benchmark families.
 *
 * Every family function is collective: all ranks call it, rank 0 records
 * the rows.  A measurement is a function run by all ranks that returns its
 * figure on rank 0; rqb_measure() warms it up once, then repeats it until
 * the 90% confidence interval of the median lies within 5% of the median
 * (after a minimum number of repetitions) or the time budget runs out. */
#ifndef RQBENCH_H
#define RQBENCH_H

#include <stddef.h>
#include <stdint.h>

#include <rq.h>

#include "report.h"

struct rqb_opts {
    int         quick, smoke;  /* shorter runs; smoke = format checks only */
    int         min_reps, max_reps;
    double      budget_s;      /* per measurement */
    double      rel;           /* CI half-width target, relative to the median */
    size_t      max_size;      /* largest transfer (xfer), clipped to the segment */
    int         pdq_threads;   /* pdq: most PDQ threads (0: the CPUs, at most 16) */
    const char *csv, *json, *plot_dir;
};

struct rqb {
    rq_ctx_t         *ctx;
    int               me, np;
    struct rqb_opts   o;
    struct rqb_report rep;      /* filled on rank 0 */
    const char       *family;   /* rows are added to this family */
    int               progress; /* rank 0 writes a progress line (stderr is a tty) */
};

/* Offsets in rank 0's segment reserved for rqbench's own words and the
 * limit measurements; transfers use offsets from RQB_DATA_OFF up. */
#define RQB_FLAG_OFF 1024u
#define RQB_DATA_OFF (1u << 20)

/* Time.  rqb_elapsed_ns subtracts the measured cost of one clock read. */
uint64_t rqb_now_ns(void);
double   rqb_elapsed_ns(uint64_t t0);
double   rqb_timer_overhead_ns(void);
double   rqb_tsc_ghz(void);
/* Spin (no poll) for ns nanoseconds. */
void     rqb_delay_ns(uint64_t ns);
/* Register-only work of iters rounds, and its cost in ns per round on this
 * core (measure it on the rank that will run it). */
void     rqb_work(uint64_t iters);
double   rqb_work_ns_per_iter(void);

typedef double (*rqb_fn)(struct rqb *b, void *arg);
/* Run fn until converged (see above); s gets rank 0's summary on every
 * rank (broadcast: families may branch on it). */
void rqb_measure(struct rqb *b, const char *what, rqb_fn fn, void *arg, struct rqb_summary *s);

/* Record a row (rank 0; a no-op elsewhere). */
void rqb_row(struct rqb *b, const char *name, double param, const char *unit,
             const struct rqb_summary *s, const char *note);
void rqb_row_na(struct rqb *b, const char *name, double param, const char *unit, const char *why);
/* A figure derived from other rows (a fit, a difference): no spread. */
void rqb_row_derived(struct rqb *b, const char *name, double param, const char *unit, double v,
                     const char *note);

/* v as measured on rank r, returned on every rank. */
double rqb_from(struct rqb *b, int r, double v);
/* Mean over all ranks of v. */
double rqb_mean(struct rqb *b, double v);

/* A word in rank 0's segment that ranks use to hand off a phase without
 * polling (so that a quiescent receiver really runs no librq code). */
volatile uint64_t *rqb_flag(struct rqb *b, int i);
/* Wait, without polling librq, until *w >= v; yields when oversubscribed. */
void rqb_spin_until(const volatile uint64_t *w, uint64_t v);

/* Rank 0 sends k requests (tag, one argument, no payload) to rank 1, which
 * runs no librq code until all are sent, then drains them with rq_poll
 * until *counter (moved by tag's handler on rank 1) reaches *due + k.
 * Returns ns per message on rank side: 0, sending into an idle ring
 * (o_s); 1, receiving from a full one, handler included (o_r).  Every
 * rank calls it. */
double rqb_fill_then_drain(struct rqb *b, unsigned tag, int k, const volatile uint64_t *counter,
                           uint64_t *due, int side);

/* Physical limits between ranks 0 and 1 (limits.c). */
double rqb_cacheline_oneway_ns(struct rqb *b, long iters);
double rqb_twoline_oneway_ns(struct rqb *b, long iters);
double rqb_raw_ring_rate(struct rqb *b, long slots);
void   rqb_limits(struct rqb *b, int full);
/* Whether ranks 0 and 1 map each other's segment (every rank agrees;
 * every rank calls it). */
int    rqb_pair_shares_memory(struct rqb *b);
/* The cache-line one-way latency L between ranks 0 and 1, measured as
 * the limits row is (every rank calls it; needs shared memory). */
void   rqb_line_measure(struct rqb *b, const char *what, struct rqb_summary *L);
/* Single-core memcpy bandwidth (MB/s) of *(size_t *)arg bytes on rank 0
 * (an rqb_fn). */
double rqb_memcpy_bw(struct rqb *b, void *arg);

/* Benchmark families (subcommands). */
int rqb_fam_am(struct rqb *b);
int rqb_fam_loaded(struct rqb *b);
int rqb_fam_xfer(struct rqb *b);
int rqb_fam_poll(struct rqb *b);
int rqb_fam_splitc(struct rqb *b);
int rqb_fam_rq(struct rqb *b);
/* compare.c's tagged two-sided rows (tagged.c): am_latency and bw[] are
 * the same run's short-AM latency and rq_request_long bandwidths. */
void rqb_compare_tagged(struct rqb *b, double am_latency, const double *bw, const size_t *bw_len,
                        int nbw);
int rqb_fam_compare(struct rqb *b);
/* compare.c's bandwidth stream (arg: the size_t length, 0 = 8 B rate):
 * the rate in MB/s (M/s) on rank 0, 0 elsewhere. */
double rqb_compare_stream(struct rqb *b, void *arg);
int rqb_fam_vni(struct rqb *b);
int rqb_fam_pdq(struct rqb *b);
/* pdq_rt.c: a PDQ message's round trip beside an active message's. */
void rqb_pdq_round_trips(struct rqb *b);
/* am: a promoted handler beside a plain one and a hand-off (promote.c). */
void rqb_promote_rows(struct rqb *b);
int rqb_fam_large(struct rqb *b);
int rqb_fam_intr(struct rqb *b);
int rqb_fam_overflow(struct rqb *b);
int rqb_fam_scale(struct rqb *b);

/* The seed's figure for a row that has an analog (paper.c), or NULL; and
 * the row's note with it put first (in buf) unless the note already cites
 * the paper. */
const char *rqb_paper_ref(const char *family, const char *name);
const char *rqb_paper_note(const char *family, const char *name, const char *note, char *buf,
                           size_t cap);

/* Plots of every family that has rows (plots.c). */
void rqb_plots(const struct rqb_report *r, const char *dir);

#endif
