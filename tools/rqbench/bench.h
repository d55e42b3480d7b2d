/* bench.h - shared helpers of rqbench's benchmark families. */
#ifndef RQBENCH_H
#define RQBENCH_H

#include <stdint.h>

#include <rq.h>

struct rqb_opts {
    int  reps;    /* repetitions of each measurement; the median is reported */
    long iters;   /* round trips per latency repetition */
    long msgs;    /* messages per rate repetition */
    int  quick;
};

/* One measured quantity over opts.reps repetitions. */
struct rqb_sample {
    double v[64];
    int    n;
};

uint64_t rqb_now_ns(void);
void     rqb_add(struct rqb_sample *s, double v);
double   rqb_median(const struct rqb_sample *s);
double   rqb_min(const struct rqb_sample *s);
double   rqb_max(const struct rqb_sample *s);

/* Physical limits between rank 0 and rank 1 (both ranks call; rank 0 gets
 * the result).  Scratch memory: the start of rank 0's segment. */
double rqb_cacheline_oneway_ns(rq_ctx_t *ctx, long iters);
double rqb_twoline_oneway_ns(rq_ctx_t *ctx, long iters);
double rqb_raw_ring_rate(rq_ctx_t *ctx, long slots);

/* Benchmark families (subcommands). */
int rqb_am(rq_ctx_t *ctx, const struct rqb_opts *o);

#endif
