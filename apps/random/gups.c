/* gups.c - RandomAccess's shared parts (see gups.h). */
#define _DEFAULT_SOURCE
#include "gups.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "app.h"

int gups_parse(int argc, char **argv, int np, struct gups_args *a, char *err, size_t errlen)
{
    uint64_t ratio, log2n;
    if (argc != 3) {
        snprintf(err, errlen, "Usage: %s <update ratio> <log2 table size>", argv[0]);
        return -1;
    }
    if (rqa_parse_u64(argv[1], &ratio) != 0 || ratio < 1 || ratio > (1u << 20)) {
        snprintf(err, errlen, "ERROR: update ratio must be a number in 1..%u : %s", 1u << 20,
                 argv[1]);
        return -1;
    }
    if (rqa_parse_u64(argv[2], &log2n) != 0 || log2n < 1 || log2n > 40) {
        snprintf(err, errlen, "ERROR: log2 table size must be a number in 1..40 : %s", argv[2]);
        return -1;
    }
    a->ratio = ratio;
    a->log2n = (int)log2n;
    a->n = 1ull << log2n;
    a->mask = a->n - 1;
    if (a->n < (uint64_t)np) {
        snprintf(err, errlen, "ERROR: table of %llu words for %d ranks: every rank needs one",
                 (unsigned long long)a->n, np);
        return -1;
    }
    a->blk = (a->n + (uint64_t)np - 1) / (uint64_t)np;
    if (ratio > UINT64_MAX / a->n / 2) {
        snprintf(err, errlen, "ERROR: too many updates; reduce the update ratio or table size");
        return -1;
    }
    a->updates = ratio * a->n;
    return 0;
}

uint64_t gups_local_words(const struct gups_args *a, int r)
{
    uint64_t first = a->blk * (uint64_t)r;
    if (first >= a->n)
        return 0;
    return a->n - first < a->blk ? a->n - first : a->blk;
}

/* a * b in GF(2)[x] modulo x^64 + x^2 + x + 1: shift and add, each shift
 * one step of the stream (multiplication by x). */
static uint64_t mulmod(uint64_t a, uint64_t b)
{
    uint64_t r = 0;
    for (int i = 63; i >= 0; i--) {
        r = gups_next(r);
        if ((b >> i) & 1)
            r ^= a;
    }
    return r;
}

uint64_t gups_starts(uint64_t n)
{
    uint64_t r = 1;
    for (int i = 63; i >= 0; i--) {
        r = mulmod(r, r);
        if ((n >> i) & 1)
            r = gups_next(r);
    }
    return r;
}

int gups_streams(const struct gups_args *a, int r, int np, uint64_t *x, uint64_t *len)
{
    /* U * r / np without overflow: U = ratio * 2^n < 2^63. */
    const unsigned __int128 U = a->updates;
    const uint64_t lo = (uint64_t)(U * (unsigned)r / (unsigned)np);
    const uint64_t hi = (uint64_t)(U * (unsigned)(r + 1) / (unsigned)np);
    const uint64_t count = hi - lo;
    const int s = count < GUPS_STREAMS ? (int)count : GUPS_STREAMS;
    uint64_t at = lo;
    for (int j = 0; j < s; j++) {
        len[j] = count / (uint64_t)s + ((uint64_t)j < count % (uint64_t)s);
        x[j] = gups_starts(at); /* the stream makes x_{at+1} first */
        at += len[j];
    }
    return s;
}

uint64_t *gups_alloc_table(uint64_t words)
{
    const size_t huge = 2u << 20, bytes = (words * sizeof(uint64_t) + huge - 1) / huge * huge;
    void *p = aligned_alloc(huge, bytes);
    if (p != NULL)
        (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only: fine if refused */
    return p;
}

uint64_t gups_apply(uint64_t *T, uint64_t first, uint64_t nloc, uint64_t mask, const uint64_t *v,
                    size_t n)
{
    enum { AHEAD = 16 };
    uint64_t bad = 0;
    for (size_t k = 0; k < n; k++) {
        if (k + AHEAD < n) {
            uint64_t ia = (v[k + AHEAD] & mask) - first;
            if (ia < nloc)
                __builtin_prefetch(&T[ia], 1);
        }
        uint64_t i = (v[k] & mask) - first;
        if (i < nloc)
            T[i] ^= v[k];
        else
            bad++;
    }
    return bad;
}

void gups_init(uint64_t *T, const struct gups_args *a, int r)
{
    const uint64_t first = a->blk * (uint64_t)r, n = gups_local_words(a, r);
    for (uint64_t i = 0; i < n; i++)
        T[i] = first + i;
}

uint64_t gups_errors(const uint64_t *T, const struct gups_args *a, int r)
{
    const uint64_t first = a->blk * (uint64_t)r, n = gups_local_words(a, r);
    uint64_t e = 0;
    for (uint64_t i = 0; i < n; i++)
        e += T[i] != first + i;
    return e;
}

void gups_header(const char *title, int np, const struct gups_args *a, const char *variant)
{
    printf("HPC Challenge RandomAccess interface\n");
    printf("%s\n", title);
    printf("Number of ranks               = %d\n", np);
    printf("Table size (aggregate)        = %llu\n", (unsigned long long)a->n);
    printf("Update ratio                  = %llu\n", (unsigned long long)a->ratio);
    printf("Number of updates (aggregate) = %llu\n", (unsigned long long)a->updates);
    printf("Variant                       = %s\n", variant);
}

int gups_result(uint64_t errors, double time, const struct gups_args *a)
{
    printf("Incorrect table elements      = %llu (HPCC allows %.0f%%)\n",
           (unsigned long long)errors, GUPS_ERROR_BOUND * 100);
    if ((double)errors > GUPS_ERROR_BOUND * (double)a->n) {
        printf("ERROR: number of incorrect table elements = %llu\n", (unsigned long long)errors);
        return 1;
    }
    printf("Solution validates\n");
    printf("Rate (GUPS/s): %lf, Time (s): %lf\n", 1e-9 * (double)a->updates / time, time);
    return 0;
}
