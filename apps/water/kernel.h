/* kernel.h - the n-squared molecular-dynamics kernel of SPLASH-2 Water,
 * simplified (documented in docs/apps.md): point molecules in a periodic
 * cube, a Lennard-Jones pair force with a cutoff, a symplectic Euler step.
 * Each pair is computed once, by the owner of its first molecule, as in
 * water-nsquared: molecule i interacts with the n/2 molecules after it
 * (cyclically).  Shared by water (on rqdsm), water-mpi and the serial
 * check. */
#ifndef RQAPP_WATER_KERNEL_H
#define RQAPP_WATER_KERNEL_H

#include <stddef.h>

struct water {
    size_t n;       /* molecules */
    double box, cut, dt;
};

/* The parameters for n molecules (density fixed, cutoff 2.5 sigma). */
struct water water_setup(size_t n);
/* Initial position of molecule i (a jittered lattice): p[3]. */
void water_position(const struct water *w, size_t i, double *p);
/* Add to f (3 per molecule, all n) the forces of the pairs (i, j), i in
 * [lo, hi), j the n/2 molecules after i (cyclic; half the pairs of an
 * even n's opposite molecules by the lower index).  pos: 3n.  Returns the
 * pairs within the cutoff. */
size_t water_forces(const struct water *w, const double *pos, size_t lo, size_t hi, double *f);
/* One step for molecules [lo, hi): v += f dt; x += v dt (wrapped). */
void water_move(const struct water *w, double *pos, double *vel, const double *f, size_t lo,
                size_t hi);
/* The serial run: steps of all n molecules; pos and vel (3n) out. */
void water_serial(const struct water *w, int steps, double *pos, double *vel);

#endif
