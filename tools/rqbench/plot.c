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
    int blocks = 0;
    for (int s = 0; p->series[s] != NULL && blocks < 32; s++) {
        const char *impls[8];
        int ni = impls_of(r, p, p->series[s], impls, 8);
        for (int k = 0; k < ni && blocks < 32; k++) {
            snprintf(labels[blocks], sizeof labels[blocks], "%s %s", impls[k], p->series[s]);
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
                }
            }
            blocks++;
        }
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
    fprintf(g,
            "# %s - drawn by rqbench; run: gnuplot %s.gp\n"
            "set terminal svg size 900,560 dynamic enhanced font 'sans,12'\n"
            "set output '%s.svg'\n"
            "set title \"%s\" noenhanced\n"
            "set xlabel \"%s\" noenhanced\nset ylabel \"%s\" noenhanced\n"
            "set key outside right noenhanced\nset grid\n%s%s",
            p->file, p->file, p->file, p->title, p->xlabel, p->ylabel,
            p->logx ? "set logscale x 2\n" : "", p->logy ? "set logscale y\n" : "");
    fputs("plot ", g);
    for (int b = 0; b < blocks; b++)
        fprintf(g, "%s'%s.dat' index %d using 1:2 with linespoints title \"%s\"",
                b ? ", \\\n     " : "", p->file, b, labels[b]);
    fputs("\n", g);
    if (fclose(g) != 0)
        return -1;

    /* gnuplot resolves the file names relative to dir. */
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp' 2>/dev/null", dir, p->file);
    int st = system(cmd);
    return (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 1 : 0;
}
