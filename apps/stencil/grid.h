/* grid.h - the Parallel Research Kernels' stencil, the part its librq and
 * MPI versions share: arguments, the 2-D decomposition, the tile with its
 * halo, the star stencil, validation and the result lines.
 *
 * Interface: stencil <iterations> <grid size>.  An n x n grid, IN[i][j] =
 * i + j, OUT = 0; each iteration OUT += the radius-2 star stencil of IN
 * (weights +-1/(2 k R) at distance k along each axis) over the points at
 * least R from the border, then IN += 1.  After iterations + 1 of them
 * (the first untimed) the average |OUT| over those points must be
 * (iterations + 1) * 2.  Rate = (2 * stencil size + 1) * active points /
 * avg time.  The ranks form an npx x npy grid (as square as the rank count
 * allows); each holds a tile of IN with a halo of width R, refreshed from
 * its up to four neighbours before every iteration. */
#ifndef RQAPP_GRID_H
#define RQAPP_GRID_H

#include <stddef.h>

#define ST_R 2                       /* stencil radius */
#define ST_POINTS (4 * ST_R + 1)     /* points of the star */

struct st_args {
    int  iterations;
    long n;
    int  npx, npy;  /* the rank grid: npx <= npy, as square as np allows */
};

/* Directions of the halo exchange; opposite(d) = d ^ 1. */
enum { ST_WEST, ST_EAST, ST_SOUTH, ST_NORTH, ST_DIRS };

struct st_tile {
    int    npx, npy, px, py;     /* rank grid and this rank's place in it */
    long   i0, i1, j0, j1;       /* global rows [i0, i1), columns [j0, j1) */
    long   h, w, ld;             /* tile rows, columns, row length with halo */
    int    nbr[ST_DIRS];         /* neighbour rank, or -1 */
    size_t strip[ST_DIRS];       /* doubles in the strip exchanged that way */
    double *in, *out;            /* (h + 2R) x ld, halo included */
};

#define ST_IN(T, i, j) ((T)->in[(size_t)((i) + ST_R) * (size_t)(T)->ld + (size_t)((j) + ST_R)])
#define ST_OUT(T, i, j) ((T)->out[(size_t)((i) + ST_R) * (size_t)(T)->ld + (size_t)((j) + ST_R)])

/* Parse "<iterations> <grid size>" (argv[1..2]) for np ranks.  0, or -1
 * with the reason in err. */
int st_parse(int argc, char **argv, int np, struct st_args *a, char *err, size_t errlen);

/* Decompose and allocate rank me's tile, initialised.  0, or -1. */
int st_tile_init(struct st_tile *t, const struct st_args *a, int me, int np);
void st_tile_free(struct st_tile *t);

/* The largest strip any direction exchanges (for buffer sizing). */
size_t st_strip_max(const struct st_tile *t);

/* Copy this tile's edge strip toward direction d into buf, or a received
 * strip from direction d into the halo. */
void st_pack(const struct st_tile *t, int d, double *buf);
void st_unpack(struct st_tile *t, int d, const double *buf);

/* One iteration's local work: OUT += stencil(IN) over the tile's active
 * points, then IN += 1 over the tile (halo excluded). */
void st_compute(struct st_tile *t, const struct st_args *a);

/* Sum of |OUT| over the tile's active points. */
double st_local_norm(const struct st_tile *t, const struct st_args *a);

void st_header(const char *title, int np, const struct st_tile *t, const struct st_args *a,
               const char *variant);
/* "Solution validates" and "Rate (MFlops/s): r Avg time (s): t", or the
 * error line (rank 0).  0 validated, 1 not. */
int st_result(double norm_sum, double total_time, const struct st_args *a);

#endif
