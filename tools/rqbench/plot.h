/* plot.h - curves of a report drawn as SVG and PNG with gnuplot: sizes on
 * B / KiB / MiB ticks, the legend below the axes, the physical limit of the
 * same run (dashed) and, after --compare, the MPI and UCX curves on the same
 * axes, the placement and date in the title. */
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
    int         xbytes;    /* x is a size in bytes: B / KiB / MiB ticks */
    const char *limit;     /* a "limits" row name drawn dashed (x = its param), or NULL */
};

/* Write the data and the gnuplot script into dir (created if needed), then
 * run gnuplot on it: DIR/file.svg, and DIR/file.png where gnuplot has the
 * pngcairo terminal.  Returns 1 if the SVG was drawn, 0 if gnuplot is not
 * installed or failed (data and script are still there), -1 on an I/O
 * error, -2 if no row matched (nothing written). */
int rqb_plot_write(const char *dir, const struct rqb_report *r, const struct rqb_plot *p);

#endif
