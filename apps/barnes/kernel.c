/* kernel.c - the Barnes-Hut kernel (see kernel.h). */
#define _POSIX_C_SOURCE 200809L
#include "kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct barnes barnes_setup(size_t n)
{
    struct barnes b = {n, 1.0, 0.05, 0.025};
    return b;
}

/* splitmix64: one stream per body. */
static double uniform(uint64_t *s, double lo, double hi)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) / 9007199254740992.0);
}

/* A point on the sphere of radius rad (SPLASH-2's pickshell). */
static void shell(uint64_t *s, double rad, double v[3])
{
    double rsq;
    do {
        for (int d = 0; d < 3; d++)
            v[d] = uniform(s, -1.0, 1.0);
        rsq = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    } while (rsq > 1.0 || rsq == 0.0);
    double scale = rad / sqrt(rsq);
    for (int d = 0; d < 3; d++)
        v[d] *= scale;
}

/* SPLASH-2's testdata: the Plummer model, scaled to unit energy. */
void barnes_body(const struct barnes *b, size_t i, struct bh_body *out, double vel[3])
{
    const double rsc = 3.0 * 3.14159265358979323846 / 16.0, vsc = sqrt(1.0 / rsc);
    uint64_t s = (uint64_t)i * 0xd1b54a32d192ed03ull + 12345;
    double r = 1.0 / sqrt(pow(uniform(&s, 0.0, 0.999), -2.0 / 3.0) - 1.0);
    shell(&s, rsc * r, out->pos);
    double x, y;
    do {
        x = uniform(&s, 0.0, 1.0);
        y = uniform(&s, 0.0, 0.1);
    } while (y > x * x * pow(1.0 - x * x, 3.5));
    shell(&s, vsc * sqrt(2.0) * x / pow(1.0 + r * r, 0.25), vel);
    out->mass = 1.0 / (double)b->n;
}

void bh_bounds(const struct bh_body *bodies, size_t count, double mn[3], double mx[3])
{
    for (size_t i = 0; i < count; i++)
        for (int d = 0; d < 3; d++) {
            mn[d] = fmin(mn[d], bodies[i].pos[d]);
            mx[d] = fmax(mx[d], bodies[i].pos[d]);
        }
}

struct bh_box bh_box_of(const double mn[3], const double mx[3])
{
    struct bh_box box = {{0, 0, 0}, 0};
    for (int d = 0; d < 3; d++) {
        box.c[d] = 0.5 * (mn[d] + mx[d]);
        box.half = fmax(box.half, 0.5 * (mx[d] - mn[d]));
    }
    box.half = box.half * 1.00001 + 1e-12; /* nobody on the far faces */
    return box;
}

void bh_cell_init(struct bh_cell *c)
{
    memset(c, 0, sizeof *c);
    c->mass = -1.0;
}

static int octant(const struct bh_box *box, const double p[3])
{
    return (p[0] >= box->c[0]) | (p[1] >= box->c[1]) << 1 | (p[2] >= box->c[2]) << 2;
}

static struct bh_box sub(const struct bh_box *box, int oct)
{
    struct bh_box s;
    s.half = 0.5 * box->half;
    for (int d = 0; d < 3; d++)
        s.c[d] = box->c[d] + ((oct >> d) & 1 ? s.half : -s.half);
    return s;
}

/* The SPLASH-2 insertion: walk down reading; at the slot to change, take
 * the cell for writing and look again.  A leaf to split gets its new cell
 * filled before the parent is taken (a cell is never written inside
 * another's write section: two cells may share a coherence block).  If
 * another rank changed the slot meanwhile, go on from what is there now;
 * a cell prepared for a split it made first stays unlinked (its centre of
 * mass is computed and never read). */
int bh_insert(const struct bh_access *a, int32_t root, struct bh_box box, int32_t id,
              const double pos[3])
{
    int32_t cur = root;
    int retries = 0;
    for (int depth = 0; depth < BH_MAX_DEPTH;) {
        int oct = octant(&box, pos);
        struct bh_cell c;
        a->cell(a->u, cur, &c);
        int32_t slot = c.child[oct], nc = -1;
        if (BH_IS_BODY(slot)) {
            struct bh_body other;
            a->body(a->u, BH_ID(slot), &other);
            if ((nc = a->alloc(a->u, depth + 1)) < 0)
                return -1;
            struct bh_box sb = sub(&box, oct);
            struct bh_cell *n = a->cell_begin(a->u, nc);
            bh_cell_init(n);
            n->child[octant(&sb, other.pos)] = slot;
            a->cell_end(a->u, nc);
        }
        if (!BH_IS_CELL(slot)) {
            struct bh_cell *w = a->cell_begin(a->u, cur);
            int changed = w->child[oct] != slot;
            if (!changed)
                w->child[oct] = slot == BH_EMPTY ? BH_BODY(id) : BH_CELL(nc);
            a->cell_end(a->u, cur);
            if (changed) {
                retries++;
                continue;
            }
            if (slot == BH_EMPTY)
                return retries;
            slot = BH_CELL(nc);
        }
        cur = BH_ID(slot);
        box = sub(&box, oct);
        depth++;
    }
    return -1;
}

int bh_com(const struct bh_access *a, int32_t id)
{
    struct bh_cell c;
    a->cell(a->u, id, &c);
    double m = 0, mp[3] = {0, 0, 0};
    for (int k = 0; k < 8; k++) {
        int32_t s = c.child[k];
        double cm, p[3];
        if (BH_IS_BODY(s)) {
            struct bh_body b;
            a->body(a->u, BH_ID(s), &b);
            cm = b.mass;
            memcpy(p, b.pos, sizeof p);
        } else if (BH_IS_CELL(s)) {
            struct bh_cell ch;
            a->cell(a->u, BH_ID(s), &ch);
            if (ch.mass < 0)
                return 0;
            cm = ch.mass;
            memcpy(p, ch.com, sizeof p);
        } else {
            continue;
        }
        m += cm;
        for (int d = 0; d < 3; d++)
            mp[d] += cm * p[d];
    }
    struct bh_cell *w = a->cell_begin(a->u, id);
    w->mass = m;
    for (int d = 0; d < 3; d++)
        w->com[d] = m > 0 ? mp[d] / m : 0;
    a->cell_end(a->u, id);
    return 1;
}

static void gravity(const struct barnes *b, const double pos[3], const double src[3],
                    double mass, double acc[3])
{
    double dr[3], r2 = b->eps * b->eps;
    for (int d = 0; d < 3; d++) {
        dr[d] = src[d] - pos[d];
        r2 += dr[d] * dr[d];
    }
    double inv = 1.0 / sqrt(r2), f = mass * inv * inv * inv;
    for (int d = 0; d < 3; d++)
        acc[d] += f * dr[d];
}

uint64_t bh_accel(const struct barnes *b, const struct bh_access *a, int32_t root,
                  struct bh_box box, int32_t self, const double pos[3], double acc[3])
{
    struct frame {
        int32_t slot;
        double  half;
    } stack[8 * BH_MAX_DEPTH + 8];
    int top = 0;
    uint64_t n = 0;
    acc[0] = acc[1] = acc[2] = 0;
    stack[top++] = (struct frame){BH_CELL(root), box.half};
    while (top > 0) {
        struct frame f = stack[--top];
        if (BH_IS_BODY(f.slot)) {
            if (BH_ID(f.slot) == self)
                continue;
            struct bh_body o;
            a->body(a->u, BH_ID(f.slot), &o);
            gravity(b, pos, o.pos, o.mass, acc);
            n++;
            continue;
        }
        struct bh_cell c;
        a->cell(a->u, BH_ID(f.slot), &c);
        double d2 = 0;
        for (int d = 0; d < 3; d++)
            d2 += (c.com[d] - pos[d]) * (c.com[d] - pos[d]);
        double side = 2.0 * f.half;
        if (side * side < b->theta * b->theta * d2) { /* far enough: one interaction */
            gravity(b, pos, c.com, c.mass, acc);
            n++;
            continue;
        }
        for (int k = 7; k >= 0; k--) /* octant 0 popped first */
            if (c.child[k] != BH_EMPTY)
                stack[top++] = (struct frame){c.child[k], 0.5 * f.half};
    }
    return n;
}

void bh_move(const struct barnes *b, struct bh_body *body, double vel[3], const double acc[3])
{
    for (int d = 0; d < 3; d++) {
        vel[d] += acc[d] * b->dt;
        body->pos[d] += vel[d] * b->dt;
    }
}

/* --- the private-array tree ---------------------------------------- */

#define CHUNK_CELLS 4096u /* cells never move: a write section holds a pointer */

static struct bh_cell *local_at(struct bh_local *t, int32_t id)
{
    return &t->chunk[(uint32_t)id / CHUNK_CELLS][(uint32_t)id % CHUNK_CELLS];
}

static void local_cell(void *u, int32_t id, struct bh_cell *out)
{
    *out = *local_at(u, id);
}

static void local_body(void *u, int32_t id, struct bh_body *out)
{
    *out = ((struct bh_local *)u)->bodies[id];
}

static struct bh_cell *local_begin(void *u, int32_t id)
{
    return local_at(u, id);
}

static void local_end(void *u, int32_t id)
{
    (void)u;
    (void)id;
}

static int32_t local_alloc(void *u, int depth)
{
    struct bh_local *t = u;
    (void)depth;
    if (t->ncells == t->nchunks * CHUNK_CELLS) {
        if (t->ncells >= (size_t)INT32_MAX - CHUNK_CELLS)
            return -1;
        struct bh_cell **c = realloc(t->chunk, (t->nchunks + 1) * sizeof *c);
        if (c == NULL)
            return -1;
        t->chunk = c;
        if ((c[t->nchunks] = malloc(CHUNK_CELLS * sizeof **c)) == NULL)
            return -1;
        t->nchunks++;
    }
    return (int32_t)t->ncells++;
}

void bh_local_free(struct bh_local *t)
{
    for (size_t i = 0; i < t->nchunks; i++)
        free(t->chunk[i]);
    free(t->chunk);
    memset(t, 0, sizeof *t);
}

void bh_local_access(struct bh_local *t, struct bh_access *a)
{
    *a = (struct bh_access){t, local_cell, local_body, local_begin, local_end, local_alloc};
}

/* Children are allocated after their parent: computing in reverse
 * allocation order is a post-order. */
int bh_local_build(const struct barnes *b, struct bh_local *t, const struct bh_body *bodies,
                   struct bh_box *root_box)
{
    struct bh_access a;
    bh_local_access(t, &a);
    t->bodies = bodies;
    t->ncells = 0;
    if (local_alloc(t, 0) != 0)
        return -1;
    bh_cell_init(local_at(t, 0));
    double mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    bh_bounds(bodies, b->n, mn, mx);
    struct bh_box box = *root_box = bh_box_of(mn, mx);
    for (size_t i = 0; i < b->n; i++)
        if (bh_insert(&a, 0, box, (int32_t)i, bodies[i].pos) < 0)
            return -1;
    for (size_t c = t->ncells; c-- > 0;)
        if (bh_com(&a, (int32_t)c) != 1)
            return -1;
    return 0;
}

int barnes_serial(const struct barnes *b, int steps, struct bh_body *out)
{
    double *vel = malloc(3 * b->n * sizeof *vel), *acc = malloc(3 * b->n * sizeof *acc);
    struct bh_local t = {0};
    int rc = vel && acc ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < b->n; i++)
        barnes_body(b, i, &out[i], vel + 3 * i);
    for (int s = 0; rc == 0 && s < steps; s++) {
        struct bh_box box;
        rc = bh_local_build(b, &t, out, &box);
        struct bh_access a;
        bh_local_access(&t, &a);
        for (size_t i = 0; rc == 0 && i < b->n; i++)
            bh_accel(b, &a, 0, box, (int32_t)i, out[i].pos, acc + 3 * i);
        for (size_t i = 0; rc == 0 && i < b->n; i++)
            bh_move(b, &out[i], vel + 3 * i, acc + 3 * i);
    }
    bh_local_free(&t);
    free(vel);
    free(acc);
    return rc;
}
