/* report.h - rqbench's results: rows collected by rank 0, written as an
 * aligned text table, CSV and JSON, and read back from CSV (the --compare
 * driver merges the runs of librq and of its peers this way).  No librq
 * dependency: the MPI and UCX peer programs use it too. */
#ifndef RQBENCH_REPORT_H
#define RQBENCH_REPORT_H

#include <stdio.h>

#include "stats.h"

/* One result.  param is the x of a curve (bytes, step, interval in ns),
 * NAN for a single figure.  s.n == 0 marks a row that could not be
 * measured; note then says why ("not available: ..."). */
struct rqb_row {
    char   family[16]; /* table: am, loaded, xfer, poll, splitc, rq, compare, limits */
    char   impl[12];   /* librq, limit, mpi, ucx */
    char   name[64];
    double param;
    char   unit[8];    /* ns, M/s, MB/s, ... */
    struct rqb_summary s;
    double cycles;     /* median in TSC cycles for ns rows, else NAN */
    char   note[112];
};

struct rqb_report {
    struct rqb_row *rows;
    int             n, cap;
    /* run description (JSON "meta"; text header) */
    double          tsc_ghz, timer_ns, line_ns;
    int             ranks, cpu0, cpu1;
    char            placement[16];
};

/* Append a row; cycles are derived from the summary when unit is "ns".
 * note may be NULL.  Returns the row, or NULL when out of memory. */
struct rqb_row *rqb_report_add(struct rqb_report *r, const char *family, const char *impl,
                               const char *name, double param, const char *unit,
                               const struct rqb_summary *s, const char *note);
/* A row that could not be measured (why: "needs 3 ranks", ...). */
void rqb_report_na(struct rqb_report *r, const char *family, const char *impl,
                   const char *name, double param, const char *unit, const char *why);
/* The first row matching family, impl, name and param (NAN matches NAN). */
const struct rqb_row *rqb_report_find(const struct rqb_report *r, const char *family,
                                      const char *impl, const char *name, double param);
void rqb_report_free(struct rqb_report *r);

/* Write the report.  Text: one table per family, in the order rows were
 * added.  CSV: a header line, then one line per row (RFC 4180 quoting).
 * JSON: {"meta": {...}, "results": [...]}.  Return 0 or -1 (errno). */
void rqb_report_text(FILE *f, const struct rqb_report *r);
int  rqb_report_csv(const char *path, const struct rqb_report *r);
int  rqb_report_json(const char *path, const struct rqb_report *r);
/* Append the rows of a CSV file written by rqb_report_csv. */
int  rqb_report_read_csv(const char *path, struct rqb_report *r);

/* A param as printed: sizes as 64, 4K, 16M; "-" for NAN. */
void rqb_fmt_param(char *buf, size_t cap, double param);

/* The header line of the CSV files (tests check it). */
extern const char rqb_csv_header[];

#endif
