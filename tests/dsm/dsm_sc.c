/* dsm_sc.c - the DSM protocol under random load: every rank reads and
 * writes random ranges of random blocks of regions homed everywhere, and
 * checks sequential consistency per block.
 *
 *   dsm_sc PROTOCOL THREADS BLOCK OPS [REGIONS BLOCKS_PER_REGION SEED]
 *     PROTOCOL: pdq | multiplexed | poll | spinlock
 *
 * Each block holds a record {version, writer, fill...}: a write section
 * bumps the version of every block of its range and fills the block with
 * a pattern of (region, block, version); a read section checks that the
 * fill matches the version (no torn copy), that no version it sees goes
 * backwards (per block, from this rank's point of view), and, inside a
 * write section of its own, that it sees its own writes.  At the end each
 * block's version must equal the number of writes all ranks made to it:
 * no write lost, none duplicated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>
#include <rqdsm.h>

#include "check.h"
#include "dsm_org.h"

struct rec {
    uint64_t version;
    uint64_t writer;
};

static unsigned char fill_byte(uint64_t g, size_t b, uint64_t v, size_t i)
{
    return (unsigned char)(g * 13 + b * 7 + v * 31 + i);
}

static void write_block(unsigned char *p, unsigned block, uint64_t g, size_t b, int me)
{
    struct rec r;
    memcpy(&r, p, sizeof r);
    r.version++;
    r.writer = (uint64_t)me;
    memcpy(p, &r, sizeof r);
    for (size_t i = sizeof r; i < block; i++)
        p[i] = fill_byte(g, b, r.version, i);
}

static uint64_t check_block(const unsigned char *p, unsigned block, uint64_t g, size_t b)
{
    struct rec r;
    memcpy(&r, p, sizeof r);
    for (size_t i = sizeof r; i < block; i++)
        if (p[i] != (r.version == 0 ? 0 : fill_byte(g, b, r.version, i))) {
            fprintf(stderr, "torn block: region %llu block %zu version %llu byte %zu\n",
                    (unsigned long long)g, b, (unsigned long long)r.version, i);
            exit(1);
        }
    return r.version;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s pdq|multiplexed|poll|spinlock THREADS BLOCK OPS "
                        "[REGIONS BLOCKS SEED]\n", argv[0]);
        return 2;
    }
    rqdsm_attr_t a = {0};
    if (dsm_org_set(&a, argv[1]) != 0) {
        fprintf(stderr, "unknown protocol %s\n", argv[1]);
        return 2;
    }
    a.threads = (unsigned)atoi(argv[2]);
    a.block = (unsigned)atoi(argv[3]);
    long ops = atol(argv[4]);
    int nreg = argc > 5 ? atoi(argv[5]) : 4;
    int nblk = argc > 6 ? atoi(argv[6]) : 8;
    uint64_t seed = argc > 7 ? strtoull(argv[7], NULL, 0) : 12345;

    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    int me = rq_rank(ctx), np = rq_size(ctx);
    rqdsm_t *dsm;
    CHECK_EQ(rqdsm_init(ctx, &a, &dsm), 0);
    const unsigned block = rqdsm_block(dsm);

    /* Every rank homes nreg regions; the last one of each rank is not a
     * whole number of blocks (a partial last block). */
    int total = np * nreg;
    uint64_t *rids = calloc((size_t)total, sizeof *rids), *mine = calloc((size_t)total, 8);
    CHECK(rids && mine);
    for (int j = 0; j < nreg; j++) {
        size_t size = (size_t)nblk * block - (j == nreg - 1 ? block / 2 : 0);
        rqdsm_rid_t rid;
        CHECK_EQ(rqdsm_create(dsm, size, &rid), 0);
        mine[me * nreg + j] = rid;
    }
    CHECK_EQ(rq_allreduce(ctx, mine, rids, (size_t)total, RQ_UINT64, RQ_SUM), 0);
    rqdsm_region_t **reg = calloc((size_t)total, sizeof *reg);
    CHECK(reg);
    for (int g = 0; g < total; g++) {
        CHECK_EQ(rqdsm_map(dsm, rids[g], &reg[g]), 0);
        CHECK_EQ(rqdsm_rid(reg[g]), rids[g]);
    }
    CHECK_EQ(rq_barrier(ctx), 0);

    uint64_t *seen = calloc((size_t)total * (size_t)nblk, 8);
    int64_t *writes = calloc((size_t)total * (size_t)nblk, 8);
    int64_t *all = calloc((size_t)total * (size_t)nblk, 8);
    CHECK(seen && writes && all);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + (uint64_t)me * 7919 + 1;
    for (long op = 0; op < ops; op++) {
        int g = (int)(rnd(&s) % (uint64_t)total);
        rqdsm_region_t *r = reg[g];
        size_t nb = (rqdsm_size(r) + block - 1) / block;
        size_t b0 = rnd(&s) % nb, n = 1 + rnd(&s) % 3;
        if (b0 + n > nb)
            n = nb - b0;
        size_t off = b0 * block, len = (b0 + n == nb) ? rqdsm_size(r) - off : n * block;
        unsigned char *p = rqdsm_ptr(r);
        int kind = (int)(rnd(&s) % 10);
        if (kind < 6) { /* read */
            CHECK_EQ(rqdsm_start_read(r, off, len), 0);
            for (size_t b = b0; b < b0 + n; b++) {
                uint64_t v = check_block(p + b * block, block, (uint64_t)g, b);
                uint64_t *last = &seen[(size_t)g * nblk + b];
                if (v < *last) {
                    fprintf(stderr, "rank %d: region %d block %zu went back from %llu to %llu\n",
                            me, g, b, (unsigned long long)*last, (unsigned long long)v);
                    exit(1);
                }
                *last = v;
            }
            if (kind == 5) {
                /* A held range does not change: give the handlers time to
                 * run, take it again (nested), and look once more. */
                for (int i = 0; i < 20; i++)
                    CHECK(rqdsm_poll(dsm) >= 0);
                CHECK_EQ(rqdsm_start_read(r, off, len), 0);
                for (size_t b = b0; b < b0 + n; b++)
                    CHECK_EQ(check_block(p + b * block, block, (uint64_t)g, b),
                             seen[(size_t)g * nblk + b]);
                CHECK_EQ(rqdsm_end_read(r, off, len), 0);
            }
            CHECK_EQ(rqdsm_end_read(r, off, len), 0);
        } else { /* write, sometimes with a read of its own inside */
            CHECK_EQ(rqdsm_start_write(r, off, len), 0);
            for (size_t b = b0; b < b0 + n; b++) {
                uint64_t v = check_block(p + b * block, block, (uint64_t)g, b);
                CHECK(v >= seen[(size_t)g * nblk + b]);
                write_block(p + b * block, block, (uint64_t)g, b, me);
                seen[(size_t)g * nblk + b] = v + 1;
                writes[(size_t)g * nblk + b]++;
            }
            if (kind == 9) {
                CHECK_EQ(rqdsm_start_read(r, off, len), 0);
                for (size_t b = b0; b < b0 + n; b++)
                    CHECK_EQ(check_block(p + b * block, block, (uint64_t)g, b),
                             seen[(size_t)g * nblk + b]);
                CHECK_EQ(rqdsm_end_read(r, off, len), 0);
                /* an upgrade inside a read is refused, changing nothing */
                CHECK_EQ(rqdsm_start_read(r, off, len), 0);
                CHECK_EQ(rqdsm_start_write(r, off, len), RQ_EINVAL);
                CHECK_EQ(rqdsm_end_read(r, off, len), 0);
            }
            CHECK_EQ(rqdsm_end_write(r, off, len), 0);
        }
        if (op % 997 == 0 && (rnd(&s) % 4) == 0)
            CHECK_EQ(rqdsm_flush(r), 0);
    }

    /* Final contents: each block's version is the job's number of writes. */
    CHECK_EQ(rq_barrier(ctx), 0);
    size_t cells = (size_t)total * (size_t)nblk;
    CHECK_EQ(rq_allreduce(ctx, writes, all, cells, RQ_INT64, RQ_SUM), 0);
    long long total_writes = 0;
    for (int g = 0; g < total; g++) {
        rqdsm_region_t *r = reg[g];
        size_t nb = (rqdsm_size(r) + block - 1) / block;
        CHECK_EQ(rqdsm_start_read(r, 0, 0), 0);
        for (size_t b = 0; b < nb; b++) {
            uint64_t v = check_block((unsigned char *)rqdsm_ptr(r) + b * block, block,
                                     (uint64_t)g, b);
            if ((int64_t)v != all[(size_t)g * nblk + b]) {
                fprintf(stderr, "rank %d: region %d block %zu: version %llu, %lld writes\n", me,
                        g, b, (unsigned long long)v, (long long)all[(size_t)g * nblk + b]);
                exit(1);
            }
            total_writes += (long long)v;
        }
        CHECK_EQ(rqdsm_end_read(r, 0, 0), 0);
    }
    rqdsm_stats_t st;
    CHECK_EQ(rqdsm_stats(dsm, &st), 0);
    if (np > 1)
        CHECK(st.read_misses + st.write_misses > 0);
    CHECK_EQ(st.dropped, 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    for (int g = 0; g < total; g++)
        CHECK_EQ(rqdsm_unmap(reg[g]), 0);
    CHECK_EQ(rqdsm_finalize(dsm), 0);
    if (me == 0)
        printf("dsm_sc: %d ranks, %s, block %u, %ld ops per rank, %lld writes: consistent "
               "(rank 0: %llu read / %llu write misses, %llu invalidations, %llu recalls, "
               "%llu deferred)\n",
               np, argv[1], block, ops, total_writes, (unsigned long long)st.read_misses,
               (unsigned long long)st.write_misses, (unsigned long long)st.invalidations,
               (unsigned long long)st.recalls, (unsigned long long)st.deferred);
    free(rids);
    free(mine);
    free(reg);
    free(seen);
    free(writes);
    free(all);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
