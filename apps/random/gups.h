/* gups.h - HPC Challenge RandomAccess (GUPS), the part every version
 * shares (librq and MPI): arguments, the random stream, the table's
 * distribution, verification and the result lines.
 *
 * Interface: random <update ratio> <log2 table size>.  A table of
 * N = 2^n 64-bit words, T[i] = i, is dealt in equal blocks of
 * ceil(N / ranks) words (the last rank's may be shorter).  U = ratio * N
 * updates T[a & (N - 1)] ^= a, for a the HPCC stream
 * x_{k+1} = (x_k << 1) ^ (x_k < 0 ? 7 : 0) (signed 64-bit) from x_0 = 1:
 * update g (0 <= g < U) uses x_{g+1}, and rank r makes updates
 * [U*r/ranks, U*(r+1)/ranks), as GUPS_STREAMS independent streams started
 * by jump-ahead (the PRK's vector length), so the updates are the same
 * whatever the rank count.  The timed pass makes them once; an untimed
 * pass makes them again, which restores T[i] = i wherever every update
 * landed: the words that differ are the error (HPCC allows 1%). */
#ifndef RQAPP_GUPS_H
#define RQAPP_GUPS_H

#include <stddef.h>
#include <stdint.h>

#define GUPS_STREAMS 1024  /* independent streams per rank (PRK's LOOKAHEAD) */
#define GUPS_ERROR_BOUND 0.01 /* HPCC: at most 1% of the words may differ */

struct gups_args {
    uint64_t ratio;       /* updates per table word */
    int      log2n;       /* table of 2^log2n words */
    uint64_t n, mask;     /* words, n - 1 */
    uint64_t blk;         /* words per rank (the last may hold fewer) */
    uint64_t updates;     /* ratio * n */
};

/* Parse "<update ratio> <log2 table size>" (argv[1..2]) for np ranks.
 * 0, or -1 with the reason (a usage line or the bad value) in err. */
int gups_parse(int argc, char **argv, int np, struct gups_args *a, char *err, size_t errlen);

/* Words rank r holds, and the first global index it holds. */
uint64_t gups_local_words(const struct gups_args *a, int r);
static inline int gups_owner(const struct gups_args *a, uint64_t index)
{
    return (int)(index / a->blk);
}

/* x_n of the stream, by jump-ahead (x_0 = 1): O(64 * 64) steps. */
uint64_t gups_starts(uint64_t n);

static inline uint64_t gups_next(uint64_t x)
{
    return (x << 1) ^ ((int64_t)x < 0 ? 7u : 0u);
}

/* Rank r's streams: stream j makes len[j] updates starting after x[j]
 * (advance with gups_next before each use).  Returns how many streams
 * (at most GUPS_STREAMS; 0 when the rank has no updates). */
int gups_streams(const struct gups_args *a, int r, int np, uint64_t *x, uint64_t *len);

/* A table of `words` words for the versions that keep it in private
 * memory: 2 MiB aligned and advised to use transparent huge pages, so a
 * random update costs a memory access, not also a page walk (the librq
 * segment is shared memory, where huge pages are off by default).  Free
 * with free().  NULL when out of memory. */
uint64_t *gups_alloc_table(uint64_t words);

/* Apply n updates v[0..n) to this rank's block T (first index `first`,
 * nloc words): T[(v & mask) - first] ^= v, with the targets of later
 * updates prefetched so that many misses are in flight.  Returns how many
 * updates were not this rank's (skipped: a malformed message). */
uint64_t gups_apply(uint64_t *T, uint64_t first, uint64_t nloc, uint64_t mask, const uint64_t *v,
                    size_t n);

/* T (rank r's block) back to T[i] = global index. */
void gups_init(uint64_t *T, const struct gups_args *a, int r);

/* Words of rank r's block that differ from their index. */
uint64_t gups_errors(const uint64_t *T, const struct gups_args *a, int r);

/* Header lines (rank 0). */
void gups_header(const char *title, int np, const struct gups_args *a, const char *variant);

/* Result lines (rank 0): "Solution validates" (errors within 1%) and
 * "Rate (GUPS/s): r, Time (s): t", or the error line.  0 validated, 1 not. */
int gups_result(uint64_t errors, double time, const struct gups_args *a);

#endif
