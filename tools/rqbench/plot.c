/* plot.c - see plot.h.  gnuplot reads one data block per curve
 * ("index i" in the script); blocks are separated by two blank lines. */
#define _GNU_SOURCE
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

/* The distinct impls of rows of p's family named name, in first-seen order. */
static int impls_of(const struct rqb_report *r, const struct rqb_plot *p, const char *name,
                    const char **out, int max)
{
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        const struct rqb_row *w = &r->rows[i];
        if (strcmp(w->family, p->family) || strcmp(w->name, name) || !isfinite(w->param) ||
            w->s.n == 0)
            continue;
        int seen = 0;
        for (int k = 0; k < n; k++)
            seen |= strcmp(out[k], w->impl) == 0;
        if (!seen && n < max)
            out[n++] = w->impl;
    }
    return n;
}

/* A size in bytes as a tick label: 512 B, 4 KiB, 16 MiB. */
static void size_label(char *buf, size_t cap, double b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, cap, "%g %s", b, unit[u]);
}

/* xtics at powers of 2 from lo to hi, every 2^step, at most ~10 labels. */
static void size_tics(FILE *g, double lo, double hi)
{
    if (!(lo > 0) || !(hi >= lo))
        return;
    int a = (int)floor(log2(lo)), b = (int)ceil(log2(hi));
    static const int steps[] = {1, 2, 4, 10}; /* labels 2x, 4x, 16x or 1024x apart */
    int step = 10;
    for (int k = 0; k < 4; k++)
        if ((b - a) / steps[k] <= 9) {
            step = steps[k];
            break;
        }
    a -= a % step;
    fputs("set xtics (", g);
    for (int e = a, first = 1; e <= b; e += step, first = 0) {
        char l[32];
        size_label(l, sizeof l, ldexp(1, e));
        fprintf(g, "%s\"%s\" %.17g", first ? "" : ", ", l, ldexp(1, e));
    }
    fputs(")\n", g);
}

int rqb_plot_write(const char *dir, const struct rqb_report *r, const struct rqb_plot *p)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return -1;
    char dat[4096], gp[4096], svg[4096];
    snprintf(dat, sizeof dat, "%s/%s.dat", dir, p->file);
    snprintf(gp, sizeof gp, "%s/%s.gp", dir, p->file);
    snprintf(svg, sizeof svg, "%s/%s.svg", dir, p->file);

    FILE *d = fopen(dat, "w");
    if (d == NULL)
        return -1;
    char labels[32][96];
    int blocks = 0, limit_block = -1;
    double xlo = INFINITY, xhi = -INFINITY;
    double xs[32]; /* distinct x values (counts: each gets a tic) */
    int nxs = 0, xs_over[32] = {0};
    for (int s = 0; p->series[s] != NULL && blocks < 32; s++) {
        const char *impls[8];
        int ni = impls_of(r, p, p->series[s], impls, 8);
        for (int k = 0; k < ni && blocks < 32; k++) {
            /* A family's own limit series (large: memcpy; scale: the raw
             * rings) is drawn as the limit. */
            if (strcmp(p->series[s], "memcpy") == 0 || strncmp(p->series[s], "raw ring", 8) == 0) {
                snprintf(labels[blocks], sizeof labels[blocks], "limit: %s",
                         p->series[s][0] == 'm' ? "one core's memcpy" : p->series[s]);
                limit_block = blocks;
            } else {
                snprintf(labels[blocks], sizeof labels[blocks], "%s %s", impls[k], p->series[s]);
            }
            fprintf(d, "%s# %s\n", blocks ? "\n\n" : "", labels[blocks]);
            for (int i = 0; i < r->n; i++) {
                const struct rqb_row *w = &r->rows[i];
                if (strcmp(w->family, p->family) == 0 && strcmp(w->name, p->series[s]) == 0 &&
                    strcmp(w->impl, impls[k]) == 0 && isfinite(w->param) && w->s.n > 0)
                {
                    double y = w->s.median, lo = w->s.min, hi = w->s.max;
                    if (p->ybw) { /* time per transfer -> MB/s; slow end is the low one */
                        y = w->param / y * 1e3;
                        double l2 = w->param / hi * 1e3, h2 = w->param / lo * 1e3;
                        lo = l2;
                        hi = h2;
                    }
                    fprintf(d, "%.9g %.9g %.9g %.9g\n", w->param, y, lo, hi);
                    int j = 0;
                    while (j < nxs && xs[j] != w->param)
                        j++;
                    if (j == nxs && nxs < 32)
                        xs[nxs++] = w->param;
                    if (j < 32 && strstr(w->note, "oversubscribed") != NULL)
                        xs_over[j] = 1;
                    xlo = fmin(xlo, w->param);
                    xhi = fmax(xhi, w->param);
                }
            }
            blocks++;
        }
    }
    /* The physical limit of the same run: its rows, by size. */
    const struct rqb_row *lim[32];
    int nlim = 0;
    for (int i = 0; p->limit != NULL && i < r->n && blocks > 0 && blocks < 32 && nlim < 32; i++) {
        const struct rqb_row *w = &r->rows[i];
        if (strcmp(w->family, "limits") == 0 && strcmp(w->name, p->limit) == 0 &&
            isfinite(w->param) && w->s.n > 0)
            lim[nlim++] = w;
    }
    for (int a = 1; a < nlim; a++) /* insertion sort: a handful of rows */
        for (int b = a; b > 0 && lim[b]->param < lim[b - 1]->param; b--) {
            const struct rqb_row *t = lim[b];
            lim[b] = lim[b - 1];
            lim[b - 1] = t;
        }
    if (nlim > 0) {
        snprintf(labels[blocks], sizeof labels[blocks], "limit: %s", p->limit);
        fprintf(d, "\n\n# %s\n", labels[blocks]);
        for (int k = 0; k < nlim; k++)
            fprintf(d, "%.9g %.9g %.9g %.9g\n", lim[k]->param, lim[k]->s.median, lim[k]->s.min,
                    lim[k]->s.max);
        limit_block = blocks++;
    }
    if (fclose(d) != 0)
        return -1;
    if (blocks == 0) {
        remove(dat);
        return -2;
    }

    FILE *g = fopen(gp, "w");
    if (g == NULL)
        return -1;
    char date[16] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm) != NULL)
        strftime(date, sizeof date, "%Y-%m-%d", &tm);
    char where[64] = "";
    if (r->placement[0] && isfinite(r->line_ns))
        snprintf(where, sizeof where, "%d ranks, placement %s (L = %.0f ns), ", r->ranks,
                 r->placement, r->line_ns);
    else if (r->placement[0])
        snprintf(where, sizeof where, "%d ranks, %s, ", r->ranks, r->placement);
    fprintf(g,
            "# %s - drawn by rqbench; run: gnuplot %s.gp\n"
            "set title \"%s\\n{/*0.8 %s%s}\" enhanced\n"
            "set xlabel \"%s\" noenhanced\nset ylabel \"%s\" noenhanced\n"
            "set key below left horizontal maxcols 2 noenhanced\n"
            "set grid\n%s%s",
            p->file, p->file, p->title, where, date, p->xlabel, p->ylabel,
            p->logx ? "set logscale x 2\n" : "", p->logy ? "set logscale y\n" : "");
    if (p->xbytes) {
        size_tics(g, xlo, xhi);
        if (p->logx && xlo > 0 && xhi >= xlo) /* room for the end ticks */
            fprintf(g, "set xrange [%.9g:%.9g]\n", xlo / 1.2, xhi * 1.2);
    } else if (p->logx && nxs > 0 && xlo > 0) {
        /* Counts (ranks): a tic at each one measured, those with more
         * ranks than CPUs marked. */
        fputs("set xtics (", g);
        for (int j = 0; j < nxs; j++)
            fprintf(g, "%s\"%g%s\" %.17g", j ? ", " : "", xs[j], xs_over[j] ? " (>CPUs)" : "",
                    xs[j]);
        fprintf(g, ")\nset xrange [%.9g:%.9g]\n", xlo / 1.1, xhi * 1.1);
    }
    fputs("set style line 9 lc rgb 'gray30' dt 2 lw 2\n", g);
    fputs("PLOT = \"", g);
    for (int b = 0; b < blocks; b++)
        fprintf(g, "%s'%s.dat' index %d using 1:2 with %s title '%s'", b ? ", " : "", p->file,
                b, b == limit_block ? "lines ls 9" : "linespoints", labels[b]);
    fputs("\"\n", g);
    fprintf(g, "set terminal svg size 900,620 dynamic enhanced font 'sans,12'\n"
               "set output '%s.svg'\nplot @PLOT\n"
               "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
               "  set terminal pngcairo size 1000,690 enhanced font 'sans,11'\n"
               "  set output '%s.png'\n  plot @PLOT\n}\n",
            p->file, p->file);
    if (fclose(g) != 0)
        return -1;

    /* gnuplot resolves the file names relative to dir. */
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp' 2>/dev/null", dir, p->file);
    int st = system(cmd);
    return (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 1 : 0;
}
