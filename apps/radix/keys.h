/* keys.h - what the sorting programs share (librq and MPI versions):
 * arguments, the keys, the digit histograms, validation and the result
 * lines.  Keys are 32-bit, n per rank, drawn from a per-rank stream
 * (splitmix64), the same for every strategy and variant. */
#ifndef RQAPP_KEYS_H
#define RQAPP_KEYS_H

#include <stddef.h>
#include <stdint.h>

#define RX_BITS 8                 /* bits per digit */
#define RX_BUCKETS (1u << RX_BITS)
#define RX_PASSES (32 / RX_BITS)

struct rx_args {
    uint64_t n;     /* keys per rank */
    int      reps;  /* sorts timed (median) */
};

/* Parse "[--reps R] <keys per rank>" (reps already taken out by the
 * caller if it wants; argv[1] the count).  0, or -1 with the reason. */
int rx_parse(int argc, char **argv, struct rx_args *a, char *err, size_t errlen);

/* Rank r's keys. */
void rx_fill(uint32_t *k, uint64_t n, int r);

/* Histogram of digit d (0 = least significant) of k[0..n). */
void rx_histogram(const uint32_t *k, uint64_t n, int d, uint64_t h[RX_BUCKETS]);

static inline unsigned rx_digit(uint32_t key, int d)
{
    return (key >> (d * RX_BITS)) & (RX_BUCKETS - 1);
}

/* Order-independent fingerprint of a multiset of keys: {count, sum,
 * sum of a mix of each key}, to be added over ranks. */
void rx_fingerprint(const uint32_t *k, uint64_t n, uint64_t fp[3]);

/* 1 if k[0..n) is non-decreasing. */
int rx_sorted(const uint32_t *k, uint64_t n);

/* Sort k[0..n) locally (LSD radix, 4 passes; tmp holds n keys). */
void rx_local_sort(uint32_t *k, uint32_t *tmp, uint64_t n);

/* Bitonic sort's merge-split: of the 2n keys in the sorted blocks a and b,
 * the n smallest (keep_low) or the n largest, sorted, into out. */
void rx_merge_split(const uint32_t *a, const uint32_t *b, uint64_t n, int keep_low,
                    uint32_t *out);

/* Sample sort's splitters: from np*s samples (sorted here), the np-1 keys
 * that cut them into equal parts. */
void rx_splitters(uint32_t *samples, int np, unsigned s, uint32_t *split);

/* The rank a key goes to: the number of splitters <= key. */
static inline int rx_bucket(uint32_t key, const uint32_t *split, int np)
{
    int lo = 0, hi = np - 1; /* answer in [lo, hi] */
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (split[mid] <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The check of a distributed sort, in one vector that the ranks add up
 * (any allreduce, SUM of uint64): RX_SUMMARY_LEN(np) words.  Rank me
 * fills it from its n output keys (zeros elsewhere); rx_summary_ok says
 * whether the sum shows every rank sorted, the ranks in order (empty
 * ranks skipped) and the same multiset as the input's fingerprint (the
 * sum of rx_fingerprint over the ranks' inputs). */
#define RX_SUMMARY_LEN(np) (4 + 3 * (size_t)(np))
void rx_summary(const uint32_t *k, uint64_t n, int me, int np, uint64_t *v);
int rx_summary_ok(const uint64_t *sum, const uint64_t fp_in[3], int np);

/* Result lines (rank 0): "Solution validates" or the error line, then
 * "<prog>: ranks=P keys_per_rank=n time_s=t Mkeys_per_s=r".  0 ok, 1 not. */
int rx_result(const char *prog, int ok, int np, const struct rx_args *a, double t);

#endif
