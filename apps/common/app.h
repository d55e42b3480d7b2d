/* app.h - what every librq application shares: a clock, options that
 * leave a program's positional arguments alone, and the one-line error
 * exit.  Applications include only the public <rq.h> (and MPI for their
 * MPI versions); nothing here knows librq's internals. */
#ifndef RQAPP_APP_H
#define RQAPP_APP_H

#include <stddef.h>
#include <stdint.h>

/* Monotonic wall clock in seconds. */
double rqa_now(void);

/* A cheap clock for timing short stretches inside hot loops (a receive
 * call between row computations): CPU ticks where the CPU has an
 * invariant counter (x86-64), else nanoseconds.  rqa_ticks_to_s converts
 * a sum of tick differences, calibrated against rqa_now over the time
 * since the first rqa_ticks call (calibrate after a long enough run). */
uint64_t rqa_ticks(void);
double rqa_ticks_to_s(uint64_t ticks);

/* Remove option --name=VALUE or --name VALUE from argv (anywhere) and
 * return VALUE, or NULL when absent.  *argc shrinks accordingly, so the
 * positional arguments keep their public meaning (PRK, HPCC). */
const char *rqa_take_opt(int *argc, char **argv, const char *name);

/* Remove option --name VALUE (as rqa_take_opt) and parse VALUE as a
 * number >= min into *out; *out = def when the option is absent.  0, or
 * -1 (not a number, or below min). */
int rqa_take_double(int *argc, char **argv, const char *name, double def, double min,
                    double *out);

/* Remove flag --name from argv (anywhere); 1 if it was there, else 0. */
int rqa_take_flag(int *argc, char **argv, const char *name);

/* The variant of a program: option --OPT NAME (opt: "variant", or the
 * program's own word such as "mode"), else the environment variable
 * RQAPP_VARIANT, else def.  Returns its index in names[0..n), or -1 after
 * printing the valid names to stderr. */
int rqa_variant(int *argc, char **argv, const char *opt, const char *const *names, int n,
                const char *def);

/* Parse a whole non-negative decimal number (no sign, no blanks, no
 * trailing text) into *out.  0 or -1. */
int rqa_parse_u64(const char *s, uint64_t *out);

/* The most iterations (or requests, or ns of work) any program takes, as
 * the PRK transpose does: a count past it is a typo, not a run. */
#define RQA_COUNT_MAX 1000000000u
#define RQA_COUNT_MAX_S "1000000000"

/* Parse a count in [lo, RQA_COUNT_MAX] into *out.  0 or -1. */
static inline int rqa_parse_count(const char *s, uint64_t lo, uint64_t *out)
{
    return rqa_parse_u64(s, out) != 0 || *out < lo || *out > RQA_COUNT_MAX ? -1 : 0;
}

/* One turn of a loop that waits on memory alone (no librq call, so
 * RQ_YIELD_IDLE cannot help it): back to back for the first turns, then
 * the CPU goes to whoever else is runnable (sched_yield): with more
 * threads than cores (interrupt mode's progress thread, oversubscribed
 * ranks) the thread that would end the wait gets to run.  *spins counts
 * the turns; the caller zeroes it when the wait ends. */
void rqa_spin_turn(unsigned *spins);

/* Parse a whole finite decimal number (strtod syntax, no trailing text)
 * into *out.  0 or -1. */
int rqa_parse_double(const char *s, double *out);

/* splitmix64: the next number of the stream whose state is *s.  The
 * programs draw their inputs from it, so every strategy, variant and the
 * MPI version see the same data. */
/* The first of rank r's items when n items are split into np contiguous
 * blocks as evenly as can be (rank r owns [lo(r), lo(r + 1))). */
static inline size_t rqa_block_lo(size_t n, int np, int r)
{
    return n * (size_t)r / (size_t)np;
}

static inline uint64_t rqa_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform double in [0, 1) from the stream *s. */
static inline double rqa_uniform(uint64_t *s)
{
    return (double)(rqa_splitmix(s) >> 11) * 0x1p-53;
}

/* The global-address strategy a librq run uses: RQ_GAS_STRATEGY, else
 * its default, "direct" (for the programs' header lines). */
const char *rqa_gas_strategy(void);

/* Median of n doubles (sorts v). */
double rqa_median(double *v, int n);

#endif
