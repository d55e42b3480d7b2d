/* input.c - sptrsv's shared setup and report (see input.h). */
#include "input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

int sp_input_setup(struct sp_input *in, int *argc, char **argv, const char *usage, char *err,
                   size_t errlen)
{
    memset(in, 0, sizeof *in);
    const char *bs_opt = rqa_take_opt(argc, argv, "block");
    const char *reps_opt = rqa_take_opt(argc, argv, "reps");
    in->levels = rqa_take_flag(argc, argv, "levels");
    in->bs = 8;
    in->reps = 5;
    if ((bs_opt != NULL && (rqa_parse_u64(bs_opt, &in->bs) != 0 || in->bs < 1 ||
                            in->bs > (1u << 26))) ||
        (reps_opt != NULL && (rqa_parse_u64(reps_opt, &in->reps) != 0 || in->reps < 1 ||
                              in->reps > 10000))) {
        snprintf(err, errlen, "--block must be in 1..2^26, --reps in 1..10000");
        return -1;
    }
    if (*argc != 2) {
        snprintf(err, errlen, "%s", usage);
        return -1;
    }
    if (sp_load(argv[1], &in->L, in->note, sizeof in->note, err, errlen) != 0)
        return -1;
    const size_t n = (size_t)in->L.n;
    in->b = malloc(n * sizeof *in->b);
    in->ref = malloc(n * sizeof *in->ref);
    if ((in->levels && sp_permute_levels(&in->L) != 0) || in->b == NULL || in->ref == NULL) {
        snprintf(err, errlen, "out of memory");
        sp_input_free(in);
        return -1;
    }
    sp_rhs_ones(&in->L, in->b);
    /* The optimized serial code, same run: the speedup's reference. */
    double ts[16];
    int nts = in->reps < 16 ? (int)in->reps : 16;
    for (int r = 0; r < nts; r++) {
        double t = rqa_now();
        sp_serial_solve(&in->L, in->b, in->ref);
        ts[r] = rqa_now() - t;
    }
    in->t_serial = rqa_median(ts, nts);
    return 0;
}

void sp_input_free(struct sp_input *in)
{
    sp_free(&in->L);
    free(in->b);
    free(in->ref);
    in->b = in->ref = NULL;
}

void sp_report(const struct sp_input *in, const char *impl_mode, int np, double t,
               double recv_fraction, double msgs_per_rank, double rel, int ok)
{
    printf("sptrsv: %s\n", in->note);
    printf("sptrsv: rows %d, nonzeros %lld, level sets %d%s, block %llu\n", in->L.n,
           (long long)in->L.nnz, sp_levels(&in->L), in->levels ? " (rows ordered by level)" : "",
           (unsigned long long)in->bs);
    printf("sptrsv: %s ranks=%d time_s=%.9f serial_s=%.9f speedup=%.3f msgs_per_rank=%.1f "
           "recv_fraction=%.3f rel_error=%.3e\n",
           impl_mode, np, t, in->t_serial, t > 0 ? in->t_serial / t : 0, msgs_per_rank,
           recv_fraction, rel);
    printf(ok ? "Solution validates (relative error %.3e <= %.0e)\n"
              : "ERROR: relative error %.3e exceeds %.0e\n",
           rel, SP_REL_BOUND);
}
