/* keys.c - the sorting programs' shared parts (see keys.h). */
#include "keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

int rx_parse(int argc, char **argv, struct rx_args *a, char *err, size_t errlen)
{
    uint64_t n;
    const char *reps = rqa_take_opt(&argc, argv, "reps");
    uint64_t r = 3;
    if (argc != 2) {
        snprintf(err, errlen, "Usage: %s [--variant V] [--reps R] <keys per rank>", argv[0]);
        return -1;
    }
    if (reps != NULL && (rqa_parse_u64(reps, &r) != 0 || r < 1 || r > 1000)) {
        snprintf(err, errlen, "ERROR: --reps must be a number in 1..1000 : %s", reps);
        return -1;
    }
    if (rqa_parse_u64(argv[1], &n) != 0 || n < 1 || n > (1ull << 30)) {
        snprintf(err, errlen, "ERROR: keys per rank must be a number in 1..%llu : %s",
                 1ull << 30, argv[1]);
        return -1;
    }
    a->n = n;
    a->reps = (int)r;
    return 0;
}

void rx_fill(uint32_t *k, uint64_t n, int r)
{
    uint64_t s = 0x5eed0000ull + (uint64_t)r;
    for (uint64_t i = 0; i < n; i++)
        k[i] = (uint32_t)rqa_splitmix(&s);
}

void rx_histogram(const uint32_t *k, uint64_t n, int d, uint64_t h[RX_BUCKETS])
{
    memset(h, 0, RX_BUCKETS * sizeof h[0]);
    for (uint64_t i = 0; i < n; i++)
        h[rx_digit(k[i], d)]++;
}

void rx_fingerprint(const uint32_t *k, uint64_t n, uint64_t fp[3])
{
    fp[0] = n;
    fp[1] = fp[2] = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t s = k[i];
        fp[1] += k[i];
        fp[2] += rqa_splitmix(&s);
    }
}

int rx_sorted(const uint32_t *k, uint64_t n)
{
    for (uint64_t i = 1; i < n; i++)
        if (k[i - 1] > k[i])
            return 0;
    return 1;
}

void rx_local_sort(uint32_t *k, uint32_t *tmp, uint64_t n)
{
    uint32_t *from = k, *to = tmp;
    for (int d = 0; d < RX_PASSES; d++) {
        uint64_t at[RX_BUCKETS], s = 0;
        rx_histogram(from, n, d, at);
        for (unsigned b = 0; b < RX_BUCKETS; b++) {
            const uint64_t c = at[b];
            at[b] = s;
            s += c;
        }
        for (uint64_t i = 0; i < n; i++)
            to[at[rx_digit(from[i], d)]++] = from[i];
        uint32_t *t = from;
        from = to;
        to = t;
    }
    /* An even number of passes: the keys are back in k. */
}

void rx_merge_split(const uint32_t *a, const uint32_t *b, uint64_t n, int keep_low,
                    uint32_t *out)
{
    if (keep_low) {
        uint64_t i = 0, j = 0;
        for (uint64_t k = 0; k < n; k++)
            out[k] = (j >= n || (i < n && a[i] <= b[j])) ? a[i++] : b[j++];
    } else {
        uint64_t i = n, j = n; /* one past the next candidates */
        for (uint64_t k = n; k-- > 0;)
            out[k] = (j == 0 || (i > 0 && a[i - 1] >= b[j - 1])) ? a[--i] : b[--j];
    }
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

void rx_splitters(uint32_t *samples, int np, unsigned s, uint32_t *split)
{
    qsort(samples, (size_t)np * s, sizeof *samples, cmp_u32);
    for (int i = 1; i < np; i++)
        split[i - 1] = samples[(size_t)i * s];
}

void rx_summary(const uint32_t *k, uint64_t n, int me, int np, uint64_t *v)
{
    memset(v, 0, RX_SUMMARY_LEN(np) * sizeof *v);
    rx_fingerprint(k, n, v);
    v[3] = !rx_sorted(k, n);
    v[4 + 3 * me] = n;
    if (n > 0) {
        v[5 + 3 * me] = k[0];
        v[6 + 3 * me] = k[n - 1];
    }
}

int rx_summary_ok(const uint64_t *sum, const uint64_t fp_in[3], int np)
{
    if (memcmp(sum, fp_in, 3 * sizeof *sum) != 0 || sum[3] != 0)
        return 0;
    uint64_t last = 0;
    for (int r = 0; r < np; r++) {
        const uint64_t *e = sum + 4 + 3 * r;
        if (e[0] == 0)
            continue;
        if (e[1] < last)
            return 0;
        last = e[2];
    }
    return 1;
}

int rx_result(const char *prog, int ok, int np, const struct rx_args *a, double t)
{
    if (!ok) {
        printf("ERROR: the keys are not sorted, or not a permutation of the input\n");
        return 1;
    }
    printf("Solution validates\n");
    printf("%s: ranks=%d keys_per_rank=%llu time_s=%.6f Mkeys_per_s=%.3f\n", prog, np,
           (unsigned long long)a->n, t, 1e-6 * (double)a->n * np / t);
    return 0;
}
