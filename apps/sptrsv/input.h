/* input.h - what sptrsv's librq and MPI versions do the same way around
 * the solve: options, the input and its right-hand side, the serial
 * reference, and the report lines.  No librq, no MPI. */
#ifndef RQAPP_SPTRSV_INPUT_H
#define RQAPP_SPTRSV_INPUT_H

#include <stdint.h>

#include "matrix.h"

#define SP_REL_BOUND 1e-10 /* largest relative error that validates */

struct sp_input {
    struct sp_csr L;
    double       *b, *ref;  /* b = L * ones; ref: the serial solution */
    double        t_serial; /* median time of the serial solve, this run */
    uint64_t      bs, reps;
    int           levels;
    char          note[256];
};

/* Take --block BS (default 8), --reps R (default 5) and --levels out of
 * argv, then load the one remaining argument (matrix.h), reorder it by
 * level set when asked, and time the serial solve.  0, or -1 with the
 * reason in err (usage: the line shown for a wrong argument count). */
int sp_input_setup(struct sp_input *in, int *argc, char **argv, const char *usage, char *err,
                   size_t errlen);
void sp_input_free(struct sp_input *in);

/* The result lines (rank 0): input, sizes, "sptrsv: <impl_mode> ranks=..."
 * figures, and "Solution validates" or the error line. */
void sp_report(const struct sp_input *in, const char *impl_mode, int np, double t,
               double recv_fraction, double msgs_per_rank, double rel, int ok);

#endif
