/* kernel.c - the simplified Water kernel (see kernel.h). */
#include "kernel.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct water water_setup(size_t n)
{
    struct water w = {n, cbrt((double)n / 0.8), 2.5, 0.0005};
    return w;
}

void water_position(const struct water *w, size_t i, double *p)
{
    size_t side = (size_t)ceil(cbrt((double)w->n));
    double a = w->box / (double)side;
    size_t c[3] = {i % side, (i / side) % side, i / (side * side)};
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull;
    for (int d = 0; d < 3; d++) {
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        double jitter = ((double)(x >> 11) / 9007199254740992.0 - 0.5) * 0.1 * a;
        p[d] = ((double)c[d] + 0.5) * a + jitter;
    }
}

static double wrap_delta(double d, double box)
{
    if (d > 0.5 * box)
        return d - box;
    if (d < -0.5 * box)
        return d + box;
    return d;
}

size_t water_forces(const struct water *w, const double *pos, size_t lo, size_t hi, double *f)
{
    const size_t n = w->n, half = n / 2;
    const double cut2 = w->cut * w->cut;
    size_t pairs = 0;
    for (size_t i = lo; i < hi; i++)
        for (size_t k = 1; k <= half; k++) {
            size_t j = (i + k) % n;
            if (n % 2 == 0 && k == half && i > j)
                continue; /* the opposite pair once, from the lower index */
            double r[3], r2 = 0;
            for (int d = 0; d < 3; d++) {
                r[d] = wrap_delta(pos[3 * i + d] - pos[3 * j + d], w->box);
                r2 += r[d] * r[d];
            }
            if (r2 >= cut2 || r2 == 0)
                continue;
            pairs++;
            double s2 = 1.0 / r2, s6 = s2 * s2 * s2;
            double mag = 24.0 * s2 * s6 * (2.0 * s6 - 1.0);
            if (mag > 1e4)
                mag = 1e4; /* keep a rare close pair from blowing up */
            for (int d = 0; d < 3; d++) {
                f[3 * i + d] += mag * r[d];
                f[3 * j + d] -= mag * r[d];
            }
        }
    return pairs;
}

void water_move(const struct water *w, double *pos, double *vel, const double *f, size_t lo,
                size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        for (int d = 0; d < 3; d++) {
            vel[3 * i + d] += f[3 * i + d] * w->dt;
            double x = pos[3 * i + d] + vel[3 * i + d] * w->dt;
            pos[3 * i + d] = x - w->box * floor(x / w->box);
        }
}

void water_serial(const struct water *w, int steps, double *pos, double *vel)
{
    double *f = calloc(3 * w->n, sizeof *f);
    for (size_t i = 0; i < w->n; i++)
        water_position(w, i, pos + 3 * i);
    memset(vel, 0, 3 * w->n * sizeof *vel);
    for (int s = 0; s < steps && f; s++) {
        memset(f, 0, 3 * w->n * sizeof *f);
        water_forces(w, pos, 0, w->n, f);
        water_move(w, pos, vel, f, 0, w->n);
    }
    free(f);
}
