/* barnes - Barnes-Hut N-body on rqdsm, the finest-grain of FUGU's CRL
 * programs (thesis section 7.1) and the PDQ paper's barnes (kernel.h has
 * the simplifications).  Each rank owns a block of bodies and homes two
 * regions: its bodies (32 bytes each) and a pool of tree cells (64 bytes
 * each, two to a 128-byte block).  A step:
 *   1. the root cube from the job's min / max (rq_allreduce);
 *   2. every rank inserts its bodies into the one shared octree, SPLASH-2
 *      style: walk down in read sections, take the cell to change in a
 *      write section (the section is the lock), split a leaf into a new
 *      cell from its own pool;
 *   3. centres of mass: each rank computes the cells it allocated, deepest
 *      first, waiting (polling) for a child cell another rank computes;
 *   4. forces: each rank walks the tree for its bodies, a read section per
 *      cell and body visited (misses on first touch, hits after);
 *   5. each rank moves its bodies (a write section on its body region).
 * A barrier separates the phases.  Compared with a serial run of the same
 * kernel (the same tree and sums: the positions agree exactly).
 *
 * --app-threads A runs A application threads per rank (a rank is an
 * A-processor node sharing one copy of the tree): each inserts, computes
 * forces for and moves an A-th of the rank's bodies, and computes every
 * A-th of the rank's cells; one thread makes the job-wide calls, and
 * idle threads at a barrier run the protocol's handlers.
 *
 * Usage: barnes [--protocol P] [--threads T] [--app-threads A] [--dsm-block B]
 *               <bodies> <steps> */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rq.h>
#include <rqdsm.h>

#include "app.h"
#include "dsmapp.h"
#include "fail.h"
#include "kernel.h"
#include "placement.h"

/* The shared tree as the kernel sees it. */
struct tree {
    int               me, np;
    size_t            n, cap;      /* bodies; cells per rank's pool */
    size_t           *lo;          /* np + 1 body bounds */
    rqdsm_region_t  **cells, **bodies;
    _Atomic size_t    used;        /* cells of my pool in this step's tree */
    unsigned char    *depth;       /* cap: the depth of each of my cells */
};

static void must(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "ERROR: barnes: %s failed (%d)\n", what, rc);
        exit(1);
    }
}

static int owner(const struct tree *t, int32_t id)
{
    int r = (int)((uint64_t)id * (uint64_t)t->np / t->n);
    while (r + 1 < t->np && t->lo[r + 1] <= (size_t)id)
        r++;
    while (t->lo[r] > (size_t)id)
        r--;
    return r;
}

static void cell_read(void *u, int32_t id, struct bh_cell *out)
{
    struct tree *t = u;
    rqdsm_region_t *r = t->cells[(size_t)id / t->cap];
    size_t off = (size_t)id % t->cap * sizeof *out;
    must(rqdsm_start_read(r, off, sizeof *out), "rqdsm_start_read");
    memcpy(out, (char *)rqdsm_ptr(r) + off, sizeof *out);
    must(rqdsm_end_read(r, off, sizeof *out), "rqdsm_end_read");
}

static void body_read(void *u, int32_t id, struct bh_body *out)
{
    struct tree *t = u;
    int o = owner(t, id);
    size_t off = ((size_t)id - t->lo[o]) * sizeof *out;
    must(rqdsm_start_read(t->bodies[o], off, sizeof *out), "rqdsm_start_read");
    memcpy(out, (char *)rqdsm_ptr(t->bodies[o]) + off, sizeof *out);
    must(rqdsm_end_read(t->bodies[o], off, sizeof *out), "rqdsm_end_read");
}

static struct bh_cell *cell_begin(void *u, int32_t id)
{
    struct tree *t = u;
    rqdsm_region_t *r = t->cells[(size_t)id / t->cap];
    size_t off = (size_t)id % t->cap * sizeof(struct bh_cell);
    must(rqdsm_start_write(r, off, sizeof(struct bh_cell)), "rqdsm_start_write");
    return (struct bh_cell *)((char *)rqdsm_ptr(r) + off);
}

static void cell_end(void *u, int32_t id)
{
    struct tree *t = u;
    must(rqdsm_end_write(t->cells[(size_t)id / t->cap],
                         (size_t)id % t->cap * sizeof(struct bh_cell), sizeof(struct bh_cell)),
         "rqdsm_end_write");
}

/* From any of the rank's application threads. */
static int32_t cell_alloc(void *u, int depth)
{
    struct tree *t = u;
    size_t c = atomic_fetch_add(&t->used, 1);
    if (c >= t->cap) {
        atomic_store(&t->used, t->cap); /* full: stays full */
        return -1;
    }
    t->depth[c] = (unsigned char)depth;
    return (int32_t)((size_t)t->me * t->cap + c);
}

/* Phase 3: my cells, deepest first (a cell's children are one deeper, so
 * every rank and thread waits only on cells some thread computes before
 * its own); thread th of A takes every A-th.  order is built by thread
 * 0 (*k cells) before a team barrier. */
static void order_cells(struct tree *t, int32_t *order, size_t *k)
{
    size_t n = 0, used = atomic_load(&t->used);
    for (int d = BH_MAX_DEPTH; d >= 0; d--)
        for (size_t c = 0; c < used; c++)
            if (t->depth[c] == d)
                order[n++] = (int32_t)((size_t)t->me * t->cap + c);
    *k = n;
}

static void centres_of_mass(const struct bh_access *a, rqdsm_t *dsm, const int32_t *order,
                            size_t k, int th)
{
    for (size_t i = (size_t)th; i < k; i += (size_t)rqa_app_threads()) {
        unsigned spins = 0;
        while (!bh_com(a, order[i])) {
            if (rqdsm_poll(dsm) == 0)
                rqa_spin_turn(&spins);
        }
    }
}

/* One run: what the rank's application threads share.  Thread th of A
 * takes the th-th of A equal parts of the rank's bodies. */
struct barnes_run {
    rq_ctx_t           *ctx;
    rqdsm_t            *dsm;
    const struct barnes *b;
    struct tree        *t;
    struct bh_access   *a;
    struct bh_body     *body;
    double             *vel, *acc;
    int32_t            *order;
    size_t              lo, hi, ncells;
    uint64_t            steps;
    struct bh_box       box;
    int                 rc;   /* the job-wide calls' result (thread 0 sets it) */
    _Atomic int         full;
    _Atomic uint64_t    inter, retries;
};

static void part_of(const struct barnes_run *R, int th, size_t *lo, size_t *hi)
{
    int a = rqa_app_threads();
    *lo = R->lo + rqa_block_lo(R->hi - R->lo, a, th);
    *hi = R->lo + rqa_block_lo(R->hi - R->lo, a, th + 1);
}

/* A team barrier whose failure every thread sees (thread 0 records it). */
static int meet(struct barnes_run *R, int th)
{
    int rc = rqa_team_barrier(R->ctx, R->dsm);
    if (th == 0 && rc != 0)
        R->rc = rc;
    return rc;
}

static void barnes_steps(int th, void *arg)
{
    struct barnes_run *R = arg;
    struct tree *t = R->t;
    const size_t own = R->hi - R->lo;
    size_t lo, hi;
    part_of(R, th, &lo, &hi);
    uint64_t inter = 0, retries = 0;
    for (uint64_t s = 0; s < R->steps; s++) {
        if (th == 0) { /* the job-wide calls: one thread of the rank */
            double mn[3] = {INFINITY, INFINITY, INFINITY};
            double mx[3] = {-INFINITY, -INFINITY, -INFINITY};
            bh_bounds(R->body, own, mn, mx);
            int rc = rq_allreduce(R->ctx, mn, mn, 3, RQ_DOUBLE, RQ_MIN);
            if (rc == 0)
                rc = rq_allreduce(R->ctx, mx, mx, 3, RQ_DOUBLE, RQ_MAX);
            R->rc = rc;
            R->box = bh_box_of(mn, mx);
            atomic_store(&t->used, 0);
            if (t->me == 0) { /* the root: cell 0 of rank 0's pool */
                int32_t root = cell_alloc(t, 0);
                bh_cell_init(cell_begin(t, root));
                cell_end(t, root);
            }
        }
        if (meet(R, th) != 0 || R->rc != 0)
            break;
        for (size_t i = lo; i < hi && !atomic_load_explicit(&R->full, memory_order_relaxed); i++) {
            int got = bh_insert(R->a, 0, R->box, (int32_t)i, R->body[i - R->lo].pos);
            if (got < 0)
                atomic_store(&R->full, 1);
            retries += got > 0 ? (uint64_t)got : 0;
        }
        if (meet(R, th) != 0)
            break;
        if (th == 0) { /* after the barrier: the protocol is quiet */
            int64_t full = atomic_load(&R->full);
            R->rc = rq_allreduce(R->ctx, &full, &full, 1, RQ_INT64, RQ_MAX);
            atomic_store(&R->full, (int)full);
            order_cells(t, R->order, &R->ncells);
        }
        if (meet(R, th) != 0 || R->rc != 0 || atomic_load(&R->full))
            break;
        centres_of_mass(R->a, R->dsm, R->order, R->ncells, th);
        if (meet(R, th) != 0)
            break;
        for (size_t i = lo; i < hi; i++)
            inter += bh_accel(R->b, R->a, 0, R->box, (int32_t)i, R->body[i - R->lo].pos,
                              R->acc + 3 * (i - R->lo));
        if (meet(R, th) != 0) /* nobody reads my bodies any more */
            break;
        if (hi > lo) {
            size_t off = (lo - R->lo) * sizeof *R->body, len = (hi - lo) * sizeof *R->body;
            must(rqdsm_start_write(t->bodies[t->me], off, len), "rqdsm_start_write");
            for (size_t i = lo - R->lo; i < hi - R->lo; i++)
                bh_move(R->b, &R->body[i], R->vel + 3 * i, R->acc + 3 * i);
            memcpy((char *)rqdsm_ptr(t->bodies[t->me]) + off, &R->body[lo - R->lo], len);
            must(rqdsm_end_write(t->bodies[t->me], off, len), "rqdsm_end_write");
        }
        if (meet(R, th) != 0)
            break;
    }
    atomic_fetch_add(&R->inter, inter);
    atomic_fetch_add(&R->retries, retries);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    if (rq_init(&argc, &argv, &ctx) != 0)
        return 1;
    double line = rqa_placement_rq(ctx);
    rqdsm_t *dsm;
    char org[96];
    const char *usage = "Usage: barnes [--protocol P] [--threads T] [--app-threads A] "
                        "[--dsm-block B] <bodies> <steps>";
    if (rqa_dsm_start(ctx, &argc, argv, &dsm, org, sizeof org) != 0)
        return rqa_fail(ctx, usage);
    uint64_t n, steps;
    if (argc != 3 || rqa_parse_u64(argv[1], &n) != 0 || rqa_parse_u64(argv[2], &steps) != 0)
        return rqa_fail(ctx, usage);
    const int me = rq_rank(ctx), np = rq_size(ctx);
    if (n < 2 || n < (uint64_t)np || n > 4000000 || steps < 1 || steps > 100000)
        return rqa_fail(ctx, "ERROR: need ranks <= bodies <= 4000000, 2 or more, and "
                             "1 <= steps <= 100000");
    const struct barnes b = barnes_setup(n);
    struct tree t = {.me = me, .np = np, .n = n};
    t.cap = 4 * ((size_t)n / (size_t)np) + 1024; /* a Plummer tree has < n cells */
    if ((size_t)np * t.cap >= INT32_MAX)
        return rqa_fail(ctx, "ERROR: too many bodies for 32-bit cell ids");
    t.lo = calloc((size_t)np + 1, sizeof *t.lo);
    t.cells = calloc((size_t)np, sizeof *t.cells);
    t.bodies = calloc((size_t)np, sizeof *t.bodies);
    t.depth = calloc(t.cap, 1);
    uint64_t *mine = calloc(2 * (size_t)np, 8), *rid = calloc(2 * (size_t)np, 8);
    int32_t *order = calloc(t.cap, sizeof *order);
    if (!t.lo || !t.cells || !t.bodies || !t.depth || !mine || !rid || !order)
        return rqa_fail(ctx, "ERROR: out of memory");
    for (int r = 0; r <= np; r++)
        t.lo[r] = rqa_block_lo(n, np, r);
    const size_t lo = t.lo[me], hi = t.lo[me + 1], own = hi - lo;
    struct bh_body *body = calloc(own, sizeof *body);
    double *vel = calloc(3 * own, sizeof *vel), *acc = calloc(3 * own, sizeof *acc);
    if (!body || !vel || !acc)
        return rqa_fail(ctx, "ERROR: out of memory");
    if (rqdsm_create(dsm, own * sizeof(struct bh_body), &mine[2 * me]) != 0 ||
        rqdsm_create(dsm, t.cap * sizeof(struct bh_cell), &mine[2 * me + 1]) != 0)
        return rqa_fail(ctx, "ERROR: rqdsm_create failed");
    if (rq_allreduce(ctx, mine, rid, 2 * (size_t)np, RQ_UINT64, RQ_SUM) != 0)
        return rqa_fail(ctx, "ERROR: allreduce failed");
    for (int r = 0; r < np; r++)
        if (rqdsm_map(dsm, rid[2 * r], &t.bodies[r]) != 0 ||
            rqdsm_map(dsm, rid[2 * r + 1], &t.cells[r]) != 0)
            return rqa_fail(ctx, "ERROR: rqdsm_map failed");
    for (size_t i = lo; i < hi; i++)
        barnes_body(&b, i, &body[i - lo], vel + 3 * (i - lo));
    must(rqdsm_start_write(t.bodies[me], 0, 0), "rqdsm_start_write");
    memcpy(rqdsm_ptr(t.bodies[me]), body, own * sizeof *body);
    must(rqdsm_end_write(t.bodies[me], 0, 0), "rqdsm_end_write");
    struct bh_access a = {&t, cell_read, body_read, cell_begin, cell_end, cell_alloc};
    int rc = rqa_dsm_barrier(ctx, dsm);
    if (me == 0)
        printf("librq barnes: %llu bodies, %llu steps, %d ranks, %s\n",
               (unsigned long long)n, (unsigned long long)steps, np, org);
    struct barnes_run R = {.ctx = ctx, .dsm = dsm, .b = &b, .t = &t, .a = &a, .body = body,
                           .vel = vel, .acc = acc, .order = order, .lo = lo, .hi = hi,
                           .steps = steps, .rc = rc};
    double t0 = rqa_now();
    if (rc == 0 && rqa_team_run(barnes_steps, &R) != 0)
        return rqa_fail(ctx, "ERROR: an application thread did not start");
    rc = R.rc;
    int full = atomic_load(&R.full);
    uint64_t inter = atomic_load(&R.inter), retries = atomic_load(&R.retries);
    double secs = rqa_now() - t0;
    if (full)
        return rqa_fail(ctx, "ERROR: a rank's cell pool is full (bodies too close together?)");
    if (rc != 0)
        return rqa_fail(ctx, "ERROR: a barrier failed");
    uint64_t mine_c[2] = {inter, retries}, all_c[2] = {0, 0};
    rq_allreduce(ctx, mine_c, all_c, 2, RQ_UINT64, RQ_SUM);
    if (me == 0) {
        rqa_placement_print(line);
        printf("Time (s)             = %.6f\n", secs);
        printf("Interactions         = %llu per step\n", (unsigned long long)(all_c[0] / steps));
        printf("Insert races         = %llu (slots another rank changed first)\n",
               (unsigned long long)all_c[1]);
    }
    rqa_dsm_report(ctx, dsm, "barnes", secs);

    int bad = 0;
    double worst = 0;
    if (me == 0) {
        struct bh_body *sb = malloc(n * sizeof *sb);
        if (sb == NULL || barnes_serial(&b, (int)steps, sb) != 0)
            return rqa_fail(ctx, "ERROR: the serial run failed");
        for (size_t i = 0; i < n; i++) {
            struct bh_body got;
            body_read(&t, (int32_t)i, &got);
            for (int d = 0; d < 3; d++)
                worst = fmax(worst, fabs(got.pos[d] - sb[i].pos[d]));
        }
        free(sb);
        bad = !(worst <= 1e-9);
    }
    rqa_dsm_barrier(ctx, dsm);
    if (me == 0) {
        printf("Max |x - serial|     = %.3g\n", worst);
        printf(bad ? "ERROR: positions differ from the serial run\n" : "Solution validates\n");
    }
    for (int r = 0; r < np; r++) {
        rqdsm_unmap(t.bodies[r]);
        rqdsm_unmap(t.cells[r]);
    }
    rc = rqdsm_finalize(dsm);
    free(t.lo);
    free(t.cells);
    free(t.bodies);
    free(t.depth);
    free(mine);
    free(rid);
    free(order);
    free(body);
    free(vel);
    free(acc);
    rq_finalize(ctx);
    return bad || rc != 0;
}
