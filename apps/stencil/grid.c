/* grid.c - the stencil's shared parts (see grid.h). */
#include "grid.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"

int st_parse(int argc, char **argv, int np, struct st_args *a, char *err, size_t errlen)
{
    uint64_t it, n;
    if (argc != 3) {
        snprintf(err, errlen, "Usage: %s <# iterations> <array dimension>", argv[0]);
        return -1;
    }
    if (rqa_parse_u64(argv[1], &it) != 0 || it < 1 || it > 1000000000u) {
        snprintf(err, errlen, "ERROR: iterations must be >= 1 : %s", argv[1]);
        return -1;
    }
    if (rqa_parse_u64(argv[2], &n) != 0 || n < 1 || n > (1u << 20)) {
        snprintf(err, errlen, "ERROR: grid size must be a number in 1..%u : %s", 1u << 20,
                 argv[2]);
        return -1;
    }
    if (n < 2 * ST_R + 1) {
        snprintf(err, errlen, "ERROR: grid must have at least %d points per side for a radius "
                 "%d stencil : %s", 2 * ST_R + 1, ST_R, argv[2]);
        return -1;
    }
    a->iterations = (int)it;
    a->n = (long)n;
    /* Every tile at least R wide: the halo comes from the next tile only. */
    int npx = 1;
    for (int f = 1; f * f <= np; f++)
        if (np % f == 0)
            npx = f;
    a->npx = npx;
    a->npy = np / npx;
    if ((long)(np / npx) * ST_R > a->n) {
        snprintf(err, errlen, "ERROR: grid size %llu too small for %d x %d ranks (tiles need "
                 "%d points a side)", (unsigned long long)n, npx, np / npx, ST_R);
        return -1;
    }
    return 0;
}

static void span(long n, int parts, int k, long *lo, long *hi)
{
    *lo = n * k / parts;
    *hi = n * (k + 1) / parts;
}

int st_tile_init(struct st_tile *t, const struct st_args *a, int me, int np)
{
    (void)np;
    t->npx = a->npx;
    t->npy = a->npy;
    t->px = me % t->npx;
    t->py = me / t->npx;
    span(a->n, t->npx, t->px, &t->j0, &t->j1);  /* columns along x */
    span(a->n, t->npy, t->py, &t->i0, &t->i1);  /* rows along y */
    t->h = t->i1 - t->i0;
    t->w = t->j1 - t->j0;
    t->ld = t->w + 2 * ST_R;
    t->nbr[ST_WEST] = t->px > 0 ? me - 1 : -1;
    t->nbr[ST_EAST] = t->px < t->npx - 1 ? me + 1 : -1;
    t->nbr[ST_SOUTH] = t->py > 0 ? me - t->npx : -1;
    t->nbr[ST_NORTH] = t->py < t->npy - 1 ? me + t->npx : -1;
    t->strip[ST_WEST] = t->strip[ST_EAST] = (size_t)ST_R * (size_t)t->h;
    t->strip[ST_SOUTH] = t->strip[ST_NORTH] = (size_t)ST_R * (size_t)t->w;
    size_t cells = (size_t)(t->h + 2 * ST_R) * (size_t)t->ld;
    t->in = calloc(cells, sizeof(double));
    t->out = calloc(cells, sizeof(double));
    if (t->in == NULL || t->out == NULL)
        return -1;
    for (long i = 0; i < t->h; i++)
        for (long j = 0; j < t->w; j++)
            ST_IN(t, i, j) = (double)(t->i0 + i) + (double)(t->j0 + j);
    return 0;
}

void st_tile_free(struct st_tile *t)
{
    free(t->in);
    free(t->out);
}

size_t st_strip_max(const struct st_tile *t)
{
    size_t m = 0;
    for (int d = 0; d < ST_DIRS; d++)
        m = t->strip[d] > m ? t->strip[d] : m;
    return m;
}

/* The cells of the strip toward d (sending: inside the tile) or from d
 * (receiving: in the halo): first row, first column, rows, columns. */
static void strip_box(const struct st_tile *t, int d, int halo, long *r0, long *c0, long *nr,
                      long *nc)
{
    switch (d) {
    case ST_WEST:
        *r0 = 0, *c0 = halo ? -ST_R : 0, *nr = t->h, *nc = ST_R;
        break;
    case ST_EAST:
        *r0 = 0, *c0 = halo ? t->w : t->w - ST_R, *nr = t->h, *nc = ST_R;
        break;
    case ST_SOUTH:
        *r0 = halo ? -ST_R : 0, *c0 = 0, *nr = ST_R, *nc = t->w;
        break;
    default:
        *r0 = halo ? t->h : t->h - ST_R, *c0 = 0, *nr = ST_R, *nc = t->w;
        break;
    }
}

void st_pack(const struct st_tile *t, int d, double *buf)
{
    long r0, c0, nr, nc;
    strip_box(t, d, 0, &r0, &c0, &nr, &nc);
    for (long i = 0; i < nr; i++)
        for (long j = 0; j < nc; j++)
            *buf++ = ST_IN(t, r0 + i, c0 + j);
}

void st_unpack(struct st_tile *t, int d, const double *buf)
{
    long r0, c0, nr, nc;
    strip_box(t, d, 1, &r0, &c0, &nr, &nc);
    for (long i = 0; i < nr; i++)
        for (long j = 0; j < nc; j++)
            ST_IN(t, r0 + i, c0 + j) = *buf++;
}

void st_compute(struct st_tile *t, const struct st_args *a)
{
    const long ilo = t->i0 > ST_R ? t->i0 : ST_R, ihi = t->i1 < a->n - ST_R ? t->i1 : a->n - ST_R;
    const long jlo = t->j0 > ST_R ? t->j0 : ST_R, jhi = t->j1 < a->n - ST_R ? t->j1 : a->n - ST_R;
    double wgt[ST_R + 1];
    for (int k = 1; k <= ST_R; k++)
        wgt[k] = 1.0 / (2.0 * k * ST_R);
    for (long gi = ilo; gi < ihi; gi++) {
        const long i = gi - t->i0;
        for (long gj = jlo; gj < jhi; gj++) {
            const long j = gj - t->j0;
            double s = 0.0;
            for (int k = 1; k <= ST_R; k++)
                s += wgt[k] * (ST_IN(t, i, j + k) - ST_IN(t, i, j - k)) +
                     wgt[k] * (ST_IN(t, i + k, j) - ST_IN(t, i - k, j));
            ST_OUT(t, i, j) += s;
        }
    }
    for (long i = 0; i < t->h; i++)
        for (long j = 0; j < t->w; j++)
            ST_IN(t, i, j) += 1.0;
}

double st_local_norm(const struct st_tile *t, const struct st_args *a)
{
    double s = 0.0;
    for (long i = 0; i < t->h; i++)
        for (long j = 0; j < t->w; j++) {
            long gi = t->i0 + i, gj = t->j0 + j;
            if (gi >= ST_R && gi < a->n - ST_R && gj >= ST_R && gj < a->n - ST_R)
                s += fabs(ST_OUT(t, i, j));
        }
    return s;
}

void st_header(const char *title, int np, const struct st_tile *t, const struct st_args *a,
               const char *variant)
{
    printf("Parallel Research Kernels interface\n");
    printf("%s\n", title);
    printf("Number of ranks        = %d\n", np);
    printf("Grid size              = %ld\n", a->n);
    printf("Radius of stencil      = %d\n", ST_R);
    printf("Tiles in x/y-direction = %d/%d\n", t->npx, t->npy);
    printf("Type of stencil        = star\n");
    printf("Number of iterations   = %d\n", a->iterations);
    printf("Variant                = %s\n", variant);
}

int st_result(double norm_sum, double total_time, const struct st_args *a)
{
    const double epsilon = 1.e-8;
    const double active = (double)(a->n - 2 * ST_R) * (double)(a->n - 2 * ST_R);
    const double norm = norm_sum / active, want = (double)(a->iterations + 1) * 2.0;
    if (fabs(norm - want) / want > epsilon) {
        printf("ERROR: L1 norm = %lf, Reference L1 norm = %lf\n", norm, want);
        return 1;
    }
    printf("Solution validates\n");
    const double avgtime = total_time / a->iterations;
    const double flops = (2.0 * ST_POINTS + 1.0) * active;
    printf("Rate (MFlops/s): %lf Avg time (s): %lf\n", 1.0E-06 * flops / avgtime, avgtime);
    return 0;
}
