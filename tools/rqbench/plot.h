/* plot.h - curves of a report drawn as SVG with gnuplot. */
#ifndef RQBENCH_PLOT_H
#define RQBENCH_PLOT_H

#include "report.h"

/* One figure: every row of family whose name is in series[] and whose
 * param is finite becomes a point of the curve "impl name". */
struct rqb_plot {
    const char *file;   /* DIR/file.dat, DIR/file.gp, DIR/file.svg */
    const char *title, *xlabel, *ylabel;
    int         logx, logy;
    int         ybw;    /* plot param/median*1e3 (bytes per ns row -> MB/s) */
    const char *family;
    const char *series[8]; /* NULL-terminated */
};

/* Write the data and the gnuplot script into dir (created if needed), then
 * run gnuplot on it.  Returns 1 if the SVG was drawn, 0 if gnuplot is not
 * installed or failed (data and script are still there), -1 on an I/O
 * error, -2 if no row matched (nothing written). */
int rqb_plot_write(const char *dir, const struct rqb_report *r, const struct rqb_plot *p);

#endif
