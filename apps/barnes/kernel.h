/* kernel.h - Barnes-Hut N-body (SPLASH-2 barnes, simplified as documented
 * in docs/apps.md): a Plummer-model galaxy, an octree rebuilt every step
 * with one body per leaf, centres of mass bottom-up, forces by a tree walk
 * with the opening criterion size / distance < theta, a leapfrog step.
 *
 * The tree is reached only through struct bh_access, so barnes (cells and
 * bodies in rqdsm regions, a section around each access), barnes-mpi (a
 * replicated tree in private arrays) and the serial check run the same
 * insertions, sums and walks in the same order: for the same bodies they
 * build the same tree (an octree with one body per leaf does not depend
 * on insertion order) and compute bit-identical forces.
 *
 * A child slot is 0 (empty), a cell (id + 1) or a body (-(id + 1)). */
#ifndef RQAPP_BARNES_KERNEL_H
#define RQAPP_BARNES_KERNEL_H

#include <stddef.h>
#include <stdint.h>

struct bh_body {         /* the shared part of a body: 32 bytes */
    double pos[3], mass;
};

struct bh_cell {         /* 64 bytes: two per 128-byte coherence block */
    int32_t child[8];
    double  mass;        /* < 0: centre of mass not computed yet */
    double  com[3];
};

struct bh_box {          /* a cube: centre and half the side */
    double c[3], half;
};

#define BH_EMPTY      0
#define BH_CELL(id)   ((int32_t)(id) + 1)
#define BH_BODY(id)   (-(int32_t)(id) - 1)
#define BH_IS_CELL(s) ((s) > 0)
#define BH_IS_BODY(s) ((s) < 0)
#define BH_ID(s)      ((s) > 0 ? (s) - 1 : -(s) - 1)
#define BH_MAX_DEPTH  64

/* How the kernel reaches the tree. */
struct bh_access {
    void *u;
    /* copy cell id / body id out (a read section around it) */
    void (*cell)(void *u, int32_t id, struct bh_cell *out);
    void (*body)(void *u, int32_t id, struct bh_body *out);
    /* open a write section on cell id and return its bytes; close it */
    struct bh_cell *(*cell_begin)(void *u, int32_t id);
    void (*cell_end)(void *u, int32_t id);
    /* a new cell at depth d, not yet linked (ids < 2^31 - 1); -1: full */
    int32_t (*alloc)(void *u, int depth);
};

struct barnes {
    size_t n;
    double theta, eps, dt;
};

/* The SPLASH-2 defaults: theta 1.0, eps 0.05, dt 0.025. */
struct barnes barnes_setup(size_t n);
/* Body i of the Plummer model (a per-body seed: any rank makes any body). */
void barnes_body(const struct barnes *b, size_t i, struct bh_body *out, double vel[3]);
/* The min / max per axis of count bodies; bh_box_of turns the job's
 * min / max into the root cube. */
void bh_bounds(const struct bh_body *bodies, size_t count, double mn[3], double mx[3]);
struct bh_box bh_box_of(const double mn[3], const double mx[3]);
/* An empty cell (mass -1: centre of mass pending). */
void bh_cell_init(struct bh_cell *c);
/* Insert body id at pos into the tree rooted at cell root (cube box).
 * Concurrent inserters are safe when cell_begin excludes the others.
 * Returns the times another inserter changed the slot first (>= 0), or
 * -1 (cells exhausted, or bodies closer than 2^-64 of the box). */
int bh_insert(const struct bh_access *a, int32_t root, struct bh_box box, int32_t id,
              const double pos[3]);
/* Compute cell id's mass and centre of mass from its children (in
 * octant order).  1 done, 0 a child cell's is not computed yet. */
int bh_com(const struct bh_access *a, int32_t id);
/* The acceleration on body self at pos (the walk, depth first in octant
 * order).  Returns the interactions computed. */
uint64_t bh_accel(const struct barnes *b, const struct bh_access *a, int32_t root,
                  struct bh_box box, int32_t self, const double pos[3], double acc[3]);
/* Leapfrog: v += a dt; x += v dt. */
void bh_move(const struct barnes *b, struct bh_body *body, double vel[3], const double acc[3]);

/* A tree in private arrays (barnes-mpi and the serial check). */
struct bh_local {
    struct bh_cell      **chunk;   /* cells in fixed chunks: they never move */
    size_t                nchunks, ncells;
    const struct bh_body *bodies;
};
void bh_local_access(struct bh_local *t, struct bh_access *a);
void bh_local_free(struct bh_local *t);
/* Build the whole tree of bodies[0, n) in t (root cell 0) and its root
 * cube (*root_box); 0 or -1. */
int bh_local_build(const struct barnes *b, struct bh_local *t, const struct bh_body *bodies,
                   struct bh_box *root_box);

/* The serial run: steps of all n bodies; the final bodies out (n). */
int barnes_serial(const struct barnes *b, int steps, struct bh_body *out);

#endif
