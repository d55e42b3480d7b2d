/* em3d - the Split-C irregular relaxation (graph.h) on librq.  Each kind's
 * values and its ghosts live in the segment as one array
 * [n values | ghosts, grouped by owner], so an edge is one index and a
 * ghost has a global address.  Per half-step (update kind K from the
 * other kind's values), --variant (or RQAPP_VARIANT) chooses how the
 * ghosts get fresh values:
 *
 *   get    the reader pulls: one split-phase rq_get per ghost, rq_sync,
 *          update, rq_barrier (the owner must not overwrite a value that
 *          is being read)
 *   store  the owner pushes: after updating, one 8-byte rq_store per
 *          ghost copy into its reader's array, then rq_all_store_sync
 *   bulk   the owner packs each reader's values and stores them with one
 *          rq_store per reader (they land contiguous: the reader's
 *          ghosts of one owner are in the owner's order), then
 *          rq_all_store_sync (default)
 *   am     the same packed values in active messages (medium payloads);
 *          the handler copies them into the ghosts and counts them; the
 *          reader waits for its count, then rq_barrier
 *
 * The barrier of each half-step keeps a fast owner from overwriting
 * ghosts that a slow reader is still reading.  RQ_GAS_STRATEGY (direct,
 * np, proc) decides who moves the gets' and stores' data; the program is
 * the same.  Rank 0 checks every value against a serial relaxation.
 *
 * Usage: em3d [--variant V] [--reps R] <nodes per rank> <degree>
 *             <remote fraction> <iterations> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>

#include "app.h"
#include "fail.h"
#include "graph.h"
#include "placement.h"

enum { V_GET, V_STORE, V_BULK, V_AM, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"get", "store", "bulk", "am"};
enum { H_GHOSTS = 1 };

/* A reader's needs from this rank, for one kind of values. */
struct sendlist {
    uint64_t  count, start; /* how many, where they go in its ghosts */
    uint32_t *idx;          /* which of my values */
};

static struct {
    rq_ctx_t       *ctx;
    int             me, np, variant;
    struct em_args  a;
    struct em_part  part[2];     /* my E nodes (read H), my H nodes (read E) */
    uint64_t        maxg[2];     /* most ghosts of a kind on any rank */
    uint64_t        off[2];      /* segment offset of kind K's [values | ghosts] */
    double         *val[2];      /* the same, here */
    struct sendlist *send[2];    /* [K][reader]: who reads my kind-K values */
    double         *pack;
    size_t          chunk;       /* am: doubles per message */
    volatile uint64_t got[2];    /* am: ghost values of kind K received */
    uint64_t        want[2];     /* am: the count that completes this half-step */
    uint64_t        bad;
} G;

/* The ghosts of kind K here are read by my nodes of the other kind. */
static const struct em_part *readers_of(int kind)
{
    return &G.part[kind ^ 1];
}

static void on_ghosts(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)arg;
    if (m->nargs != 3 || m->args[0] > 1) {
        G.bad++;
        return;
    }
    const int k = (int)m->args[0];
    const uint64_t pos = m->args[1], cnt = m->args[2], ng = readers_of(k)->ng;
    if (pos > ng || cnt > ng - pos || m->len != cnt * sizeof(double)) {
        G.bad++;
        return;
    }
    memcpy(G.val[k] + G.a.n + pos, m->data, m->len);
    G.got[k] = G.got[k] + cnt;
}

/* Tell each owner which of its values of each kind I read, and where they
 * go in my ghosts; learn the same from every reader.  The lists pass
 * through a scratch area of the segment (after the values). */
static int exchange_lists(uint64_t scratch)
{
    const uint64_t n = G.a.n;
    /* At each owner: meta[K][reader] = {count, start}, then lists[K][reader][n]. */
    const uint64_t meta = scratch, lists = scratch + 2 * (uint64_t)G.np * 16;
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        const struct em_part *p = readers_of(k);
        for (int o = 0; o < G.np && rc == 0; o++) {
            if (o == G.me)
                continue;
            uint64_t m[2] = {p->gstart[o + 1] - p->gstart[o], p->gstart[o]};
            rc = rq_put(G.ctx, o, meta + ((uint64_t)k * G.np + G.me) * 16, m, sizeof m, 0);
            if (rc == 0)
                rc = rq_put(G.ctx, o, lists + ((uint64_t)k * G.np + G.me) * n * 4,
                            p->gidx + p->gstart[o], m[0] * 4, 0);
        }
    }
    if (rc == 0)
        rc = rq_sync(G.ctx);
    if (rc == 0)
        rc = rq_barrier(G.ctx);
    if (rc != 0)
        return rc;
    void *seg;
    size_t len;
    rq_segment(G.ctx, &seg, &len);
    for (int k = 0; k < 2; k++) {
        G.send[k] = calloc((size_t)G.np, sizeof *G.send[k]);
        if (G.send[k] == NULL)
            return RQ_ENOMEM;
        for (int r = 0; r < G.np; r++) {
            if (r == G.me)
                continue;
            const uint64_t *m = (const uint64_t *)((char *)seg + meta + ((uint64_t)k * G.np + r) * 16);
            struct sendlist *s = &G.send[k][r];
            s->count = m[0];
            s->start = m[1];
            if (s->count > n)
                return RQ_EINVAL;
            s->idx = malloc((s->count ? s->count : 1) * sizeof *s->idx);
            if (s->idx == NULL)
                return RQ_ENOMEM;
            memcpy(s->idx, (char *)seg + lists + ((uint64_t)k * G.np + r) * n * 4, s->count * 4);
            for (uint64_t j = 0; j < s->count; j++)
                if (s->idx[j] >= n)
                    return RQ_EINVAL;
        }
    }
    return rq_barrier(G.ctx); /* the scratch area may be reused */
}

/* Send my kind-k values to every reader (store, bulk, am). */
static int push(int k)
{
    const uint64_t n = G.a.n;
    const double *v = G.val[k];
    int rc = 0;
    for (int i = 1; i < G.np && rc == 0; i++) {
        const int r = (G.me + i) % G.np; /* spread: not everyone to rank 0 first */
        const struct sendlist *s = &G.send[k][r];
        const uint64_t at = G.off[k] + (n + s->start) * sizeof(double);
        if (s->count == 0)
            continue;
        if (G.variant == V_STORE) {
            for (uint64_t j = 0; j < s->count && rc == 0; j++)
                rc = rq_store(G.ctx, r, at + j * sizeof(double), &v[s->idx[j]], sizeof(double), 0);
            continue;
        }
        for (uint64_t j = 0; j < s->count; j++)
            G.pack[j] = v[s->idx[j]];
        if (G.variant == V_BULK) {
            rc = rq_store(G.ctx, r, at, G.pack, s->count * sizeof(double), 0);
            continue;
        }
        for (uint64_t j = 0; j < s->count && rc == 0; j += G.chunk) {
            const uint64_t c = s->count - j < G.chunk ? s->count - j : G.chunk;
            const uint64_t args[3] = {(uint64_t)k, s->start + j, c};
            rc = rq_request(G.ctx, r, H_GHOSTS, args, 3, G.pack + j, c * sizeof(double), 0);
        }
    }
    return rc;
}

/* Fetch the ghosts of kind k from their owners (get). */
static int pull(int k)
{
    const struct em_part *p = readers_of(k);
    double *ghost = G.val[k] + G.a.n;
    int rc = 0;
    for (int o = 0; o < G.np && rc == 0; o++)
        for (uint64_t g = p->gstart[o]; g < p->gstart[o + 1] && rc == 0; g++)
            rc = rq_get(G.ctx, &ghost[g], o, G.off[k] + (uint64_t)p->gidx[g] * sizeof(double),
                        sizeof(double), 0);
    return rc != 0 ? rc : rq_sync(G.ctx);
}

/* Update my nodes of kind k, and make the new values visible to readers. */
static int half_step(int k)
{
    int rc = 0;
    if (G.variant == V_GET)
        rc = pull(k ^ 1);
    if (rc != 0)
        return rc;
    em_update(&G.part[k], G.val[k ^ 1], G.val[k]);
    switch (G.variant) {
    case V_GET:
        return rq_barrier(G.ctx);
    case V_AM:
        G.want[k] += readers_of(k)->ng;
        rc = push(k);
        if (rc == 0)
            rc = rq_wait_until(G.ctx, &G.got[k], G.want[k]);
        return rc != 0 ? rc : rq_barrier(G.ctx);
    default:
        rc = push(k);
        return rc != 0 ? rc : rq_all_store_sync(G.ctx);
    }
}

/* The initial values, with fresh ghosts of kind H (E's first update reads
 * them); collective. */
static int start(void)
{
    for (int k = 0; k < 2; k++)
        for (uint64_t i = 0; i < G.a.n; i++)
            G.val[k][i] = em_initial(G.me, k, i);
    int rc = rq_barrier(G.ctx);
    if (rc != 0 || G.variant == V_GET)
        return rc;
    if (G.variant == V_AM)
        G.want[EM_H] += readers_of(EM_H)->ng;
    rc = push(EM_H);
    if (rc != 0)
        return rc;
    if (G.variant == V_AM) {
        rc = rq_wait_until(G.ctx, &G.got[EM_H], G.want[EM_H]);
        return rc != 0 ? rc : rq_barrier(G.ctx);
    }
    return rq_all_store_sync(G.ctx);
}

/* Rank 0: every rank's values (read from its segment) against a serial
 * relaxation; the others wait. */
static int check(double *err)
{
    const uint64_t n = G.a.n, tot = (uint64_t)G.np * n;
    double e = 0;
    int rc = 0;
    if (G.me == 0) {
        double *E = malloc(tot * sizeof *E), *H = malloc(tot * sizeof *H);
        double *got = malloc(n * sizeof *got);
        if (E == NULL || H == NULL || got == NULL || em_serial(&G.a, G.np, E, H) != 0)
            rc = RQ_ENOMEM;
        double *want[2] = {E, H};
        for (int r = 0; r < G.np && rc == 0; r++)
            for (int k = 0; k < 2 && rc == 0; k++) {
                rc = rq_get(G.ctx, got, r, G.off[k], n * sizeof *got, 0);
                if (rc == 0)
                    rc = rq_sync(G.ctx);
                if (rc == 0) {
                    const double x = em_max_error(got, want[k] + (uint64_t)r * n, n);
                    e = x > e ? x : e;
                }
            }
        free(E);
        free(H);
        free(got);
    }
    int rc2 = rq_broadcast(G.ctx, 0, &e, sizeof e);
    *err = e;
    return rc != 0 ? rc : rc2;
}

int main(int argc, char **argv)
{
    if (rq_init(&argc, &argv, &G.ctx) != 0) {
        fprintf(stderr, "em3d: rq_init failed\n");
        return 1;
    }
    G.me = rq_rank(G.ctx);
    G.np = rq_size(G.ctx);
    const double line_ns = rqa_placement_rq(G.ctx);
    G.variant = rqa_variant(&argc, argv, "variant", variant_names, NVARIANTS, "bulk");
    char err[200];
    if (G.variant < 0)
        return rqa_fail(G.ctx, "ERROR: unknown variant");
    if (em_parse(argc, argv, &G.a, err, sizeof err) != 0)
        return rqa_fail(G.ctx, err);
    const uint64_t n = G.a.n;
    int built = em_part_build(&G.a, G.me, G.np, EM_E, &G.part[EM_E]) == 0 &&
                em_part_build(&G.a, G.me, G.np, EM_H, &G.part[EM_H]) == 0;
    if (!built)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    uint64_t ng[2] = {readers_of(EM_E)->ng, readers_of(EM_H)->ng};
    if (rq_allreduce(G.ctx, ng, G.maxg, 2, RQ_UINT64, RQ_MAX) != 0)
        return rqa_fail(G.ctx, "ERROR: communication failed");
    /* Segment: [E values | E ghosts] [H values | H ghosts] [setup scratch]. */
    G.off[EM_E] = 0;
    G.off[EM_H] = ((n + G.maxg[EM_E]) * sizeof(double) + 63) / 64 * 64;
    const uint64_t scratch = G.off[EM_H] + ((n + G.maxg[EM_H]) * sizeof(double) + 63) / 64 * 64;
    const uint64_t need = scratch + 2 * (uint64_t)G.np * (16 + n * 4);
    void *seg;
    size_t seg_bytes;
    rq_segment(G.ctx, &seg, &seg_bytes);
    if (need > seg_bytes) {
        snprintf(err, sizeof err, "ERROR: the values and ghosts live in the segment: set "
                 "RQ_SEGMENT_SIZE >= %llu", (unsigned long long)need);
        return rqa_fail(G.ctx, err);
    }
    G.val[EM_E] = (double *)seg;
    G.val[EM_H] = (double *)((char *)seg + G.off[EM_H]);
    G.chunk = rq_medium_max(G.ctx) / sizeof(double);
    G.pack = malloc((n ? n : 1) * sizeof *G.pack);
    double *times = malloc((size_t)G.a.reps * sizeof *times);
    if (G.pack == NULL || times == NULL || G.chunk == 0)
        return rqa_fail(G.ctx, "ERROR: out of memory");
    rq_handler_register(G.ctx, H_GHOSTS, on_ghosts, NULL, 0);
    int rc = exchange_lists(scratch);
    if (G.me == 0) {
        printf("Split-C em3d\n");
        printf("Number of ranks      = %d\n", G.np);
        printf("Nodes per rank       = %llu (E and H each)\n", (unsigned long long)n);
        printf("Degree               = %u\n", G.a.degree);
        printf("Remote fraction      = %g\n", G.a.remote);
        printf("Iterations           = %u\n", G.a.iters);
        printf("Ghosts (most, E/H)   = %llu/%llu\n", (unsigned long long)G.maxg[EM_E],
               (unsigned long long)G.maxg[EM_H]);
        printf("Variant              = %s\n", variant_names[G.variant]);
        printf("Strategy             = %s\n", rqa_gas_strategy());
        rqa_placement_print(line_ns);
    }
    for (int rep = 0; rep < G.a.reps && rc == 0; rep++) {
        rc = start();
        const double t0 = rqa_now();
        for (unsigned it = 0; it < G.a.iters && rc == 0; it++) {
            rc = half_step(EM_E);
            if (rc == 0)
                rc = half_step(EM_H);
        }
        double mine = rqa_now() - t0;
        if (rc == 0)
            rc = rq_allreduce(G.ctx, &mine, &times[rep], 1, RQ_DOUBLE, RQ_MAX);
    }
    double maxerr = 0;
    if (rc == 0)
        rc = check(&maxerr);
    int failed = rqa_run_failed(G.ctx, rc, G.bad);
    if (G.me == 0 && !failed)
        failed = em_result("em3d", maxerr, G.np, &G.a, rqa_median(times, G.a.reps));
    for (int k = 0; k < 2; k++) {
        em_part_free(&G.part[k]);
        for (int r = 0; r < G.np && G.send[k] != NULL; r++)
            free(G.send[k][r].idx);
        free(G.send[k]);
    }
    free(G.pack);
    free(times);
    fflush(stdout);
    if (rq_finalize(G.ctx) != 0)
        failed = 1;
    return failed;
}
