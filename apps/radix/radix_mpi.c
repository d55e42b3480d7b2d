/* radix-mpi - the same LSD radix sort with MPI, as an MPI user writes it:
 * per pass a digit histogram, MPI_Allgather of the histograms (which give
 * every key its global position), the keys counting-sorted by digit and
 * split by destination rank, one MPI_Alltoallv, and each rank places what
 * it received: from each source, bucket by bucket, the part of that
 * bucket's global range that falls in its slots.  Same keys, checks and
 * output as the librq version (keys.h).
 *
 * Usage: radix-mpi [--reps R] <keys per rank> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "keys.h"
#include "keys_mpi.h"
#include "fail.h"
#include "placement.h"

struct state {
    int            me, np;
    struct rx_args a;
    uint32_t      *src, *dst, *tmp, *recv;
    uint64_t      *all;              /* np x RX_BUCKETS histograms */
    int           *scount, *rcount, *sdispl, *rdispl;
};

/* Global position of bucket b's first key from rank r. */
static void bases(const struct state *S, uint64_t *base /* np x RX_BUCKETS */)
{
    uint64_t below = 0;
    for (unsigned b = 0; b < RX_BUCKETS; b++)
        for (int r = 0; r < S->np; r++) {
            base[(size_t)r * RX_BUCKETS + b] = below;
            below += S->all[(size_t)r * RX_BUCKETS + b];
        }
}

static void pass(struct state *S, int d, uint64_t *base)
{
    const uint64_t n = S->a.n;
    uint64_t h[RX_BUCKETS];
    rx_histogram(S->src, n, d, h);
    MPI_Allgather(h, RX_BUCKETS, MPI_UINT64_T, S->all, RX_BUCKETS, MPI_UINT64_T, MPI_COMM_WORLD);
    bases(S, base);
    /* Keys by digit (stable), then the counts per destination rank. */
    uint64_t at[RX_BUCKETS], s = 0;
    for (unsigned b = 0; b < RX_BUCKETS; b++) {
        at[b] = s;
        s += h[b];
    }
    for (uint64_t i = 0; i < n; i++)
        S->tmp[at[rx_digit(S->src[i], d)]++] = S->src[i];
    memset(S->scount, 0, (size_t)S->np * sizeof(int));
    for (unsigned b = 0; b < RX_BUCKETS; b++) {
        uint64_t g = base[(size_t)S->me * RX_BUCKETS + b], left = h[b];
        while (left > 0) {
            uint64_t slot = g % n, run = left < n - slot ? left : n - slot;
            S->scount[g / n] += (int)run;
            g += run, left -= run;
        }
    }
    MPI_Alltoall(S->scount, 1, MPI_INT, S->rcount, 1, MPI_INT, MPI_COMM_WORLD);
    S->sdispl[0] = S->rdispl[0] = 0;
    for (int r = 1; r < S->np; r++) {
        S->sdispl[r] = S->sdispl[r - 1] + S->scount[r - 1];
        S->rdispl[r] = S->rdispl[r - 1] + S->rcount[r - 1];
    }
    MPI_Alltoallv(S->tmp, S->scount, S->sdispl, MPI_UINT32_T, S->recv, S->rcount, S->rdispl,
                  MPI_UINT32_T, MPI_COMM_WORLD);
    /* From source r: its buckets in order, each the part of its global
     * range inside my slots [me n, (me + 1) n). */
    const uint64_t lo = (uint64_t)S->me * n, hi = lo + n;
    for (int r = 0; r < S->np; r++) {
        const uint32_t *in = S->recv + S->rdispl[r];
        for (unsigned b = 0; b < RX_BUCKETS; b++) {
            const size_t rb = (size_t)r * RX_BUCKETS + b;
            uint64_t g0 = base[rb], g1 = g0 + S->all[rb];
            uint64_t a0 = g0 > lo ? g0 : lo, a1 = g1 < hi ? g1 : hi;
            if (a0 >= a1)
                continue;
            memcpy(&S->dst[a0 - lo], in, (a1 - a0) * sizeof(uint32_t));
            in += a1 - a0;
        }
    }
    uint32_t *t = S->src;
    S->src = S->dst;
    S->dst = t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct state S = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &S.me);
    MPI_Comm_size(MPI_COMM_WORLD, &S.np);
    const double line_ns = rqa_placement_mpi();
    char err[200];
    if (rx_parse(argc, argv, &S.a, err, sizeof err) != 0)
        return rqa_mpi_fail(err);
    const uint64_t n = S.a.n;
    S.src = malloc(n * sizeof(uint32_t));
    S.dst = malloc(n * sizeof(uint32_t));
    S.tmp = malloc(n * sizeof(uint32_t));
    S.recv = malloc(n * sizeof(uint32_t));
    S.all = malloc((size_t)S.np * RX_BUCKETS * sizeof *S.all);
    uint64_t *base = malloc((size_t)S.np * RX_BUCKETS * sizeof *base);
    S.scount = malloc(4 * (size_t)S.np * sizeof(int));
    double *times = malloc((size_t)S.a.reps * sizeof *times);
    if (!S.src || !S.dst || !S.tmp || !S.recv || !S.all || !base || !S.scount || !times ||
        n > (uint64_t)INT32_MAX) {
        printf("ERROR: out of memory (or more keys than an MPI count)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    S.rcount = S.scount + S.np;
    S.sdispl = S.rcount + S.np;
    S.rdispl = S.sdispl + S.np;
    if (S.me == 0) {
        printf("Split-C radix sort, MPI version (alltoallv)\n");
        printf("Number of ranks      = %d\n", S.np);
        printf("Keys per rank        = %llu\n", (unsigned long long)n);
        rqa_placement_print(line_ns);
    }
    int ok = 1;
    for (int rep = 0; rep < S.a.reps; rep++) {
        rx_fill(S.src, n, S.me);
        uint64_t fp_in[3], fp_in_all[3];
        rx_fingerprint(S.src, n, fp_in);
        MPI_Allreduce(fp_in, fp_in_all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int d = 0; d < RX_PASSES; d++)
            pass(&S, d, base);
        MPI_Barrier(MPI_COMM_WORLD);
        double mine = MPI_Wtime() - t0;
        MPI_Allreduce(&mine, &times[rep], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        ok &= rx_check_mpi(S.src, n, S.me, S.np, fp_in_all);
    }
    int bad = 0;
    if (S.me == 0)
        bad = rx_result("radix-mpi", ok, S.np, &S.a, rqa_median(times, S.a.reps));
    free(S.src);
    free(S.dst);
    free(S.tmp);
    free(S.recv);
    free(S.all);
    free(base);
    free(S.scount);
    free(times);
    fflush(stdout);
    MPI_Finalize();
    return bad;
}
