/* report.c - see report.h. */
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char rqb_csv_header[] =
    "family,impl,name,param,unit,median,min,max,ci90_lo,ci90_hi,n,cycles,note";

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src != NULL ? src : "");
}

struct rqb_row *rqb_report_add(struct rqb_report *r, const char *family, const char *impl,
                               const char *name, double param, const char *unit,
                               const struct rqb_summary *s, const char *note)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        struct rqb_row *rows = realloc(r->rows, sizeof *rows * (size_t)cap);
        if (rows == NULL)
            return NULL;
        r->rows = rows;
        r->cap = cap;
    }
    struct rqb_row *w = &r->rows[r->n++];
    memset(w, 0, sizeof *w);
    copy(w->family, sizeof w->family, family);
    copy(w->impl, sizeof w->impl, impl);
    if (name != NULL && strlen(name) >= sizeof w->name) /* a row must keep its name */
        fprintf(stderr, "rqbench: row name cut to %zu bytes: %s\n", sizeof w->name - 1, name);
    copy(w->name, sizeof w->name, name);
    copy(w->unit, sizeof w->unit, unit);
    copy(w->note, sizeof w->note, note);
    w->param = param;
    w->s = *s;
    w->cycles = (strcmp(unit, "ns") == 0 && s->n > 0 && r->tsc_ghz > 0)
                    ? s->median * r->tsc_ghz : NAN;
    return w;
}

void rqb_report_na(struct rqb_report *r, const char *family, const char *impl,
                   const char *name, double param, const char *unit, const char *why)
{
    struct rqb_summary s;
    rqb_summarize(NULL, 0, 0.9, &s);
    char note[112];
    snprintf(note, sizeof note, "not available: %s", why);
    rqb_report_add(r, family, impl, name, param, unit, &s, note);
}

static int same_param(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

const struct rqb_row *rqb_report_find(const struct rqb_report *r, const char *family,
                                      const char *impl, const char *name, double param)
{
    for (int i = 0; i < r->n; i++) {
        const struct rqb_row *w = &r->rows[i];
        if (strcmp(w->family, family) == 0 && strcmp(w->impl, impl) == 0 &&
            strcmp(w->name, name) == 0 && same_param(w->param, param))
            return w;
    }
    return NULL;
}

void rqb_report_free(struct rqb_report *r)
{
    free(r->rows);
    r->rows = NULL;
    r->n = r->cap = 0;
}

/* Sizes print as 64, 4K, 16M; other params as plain numbers. */
void rqb_fmt_param(char *b, size_t cap, double p)
{
    if (isnan(p))
        snprintf(b, cap, "-");
    else if (p >= 1024 && fmod(p, 1024 * 1024) == 0)
        snprintf(b, cap, "%.0fM", p / (1024 * 1024));
    else if (p >= 1024 && fmod(p, 1024) == 0)
        snprintf(b, cap, "%.0fK", p / 1024);
    else
        snprintf(b, cap, "%g", p);
}

static void fmt_num(char *b, size_t cap, double v)
{
    if (isnan(v))
        snprintf(b, cap, "-");
    else if (fabs(v) >= 1e5)
        snprintf(b, cap, "%.4g", v);
    else if (fabs(v) >= 100)
        snprintf(b, cap, "%.1f", v);
    else
        snprintf(b, cap, "%.3g", v);
}

static const char *family_title(const char *family)
{
    static const char *const t[][2] = {
        {"limits", "physical limits between ranks 0 and 1, same run"},
        {"am", "basic active messages, unloaded (Liu & Culler 5.1.1)"},
        {"loaded", "loaded network: ring and traverse (Liu & Culler 5.1.2)"},
        {"xfer", "array transfer (Liu & Culler 5.2, Table 5)"},
        {"poll", "polling (Liu & Culler 6.1)"},
        {"splitc", "Split-C primitives (Split-C paper, Table 1)"},
        {"rq", "remote queues (RQ paper 2.1)"},
        {"compare", "shapes shared with the MPI and UCX peers"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i][0], family) == 0)
            return t[i][1];
    return "";
}

void rqb_report_text(FILE *f, const struct rqb_report *r)
{
    const char *family = "";
    for (int i = 0; i < r->n; i++) {
        const struct rqb_row *w = &r->rows[i];
        if (strcmp(w->family, family) != 0) {
            family = w->family;
            fprintf(f, "\n[%s] %s\n  %-7s %-52s %6s %10s %-5s %21s %6s %4s %9s  %s\n", family,
                    family_title(family),
                    "impl", "benchmark", "param", "median", "unit", "[min .. max]", "ci90%",
                    "n", "cycles", "note");
        }
        char p[16], med[16], lo[16], hi[16], cyc[16], ci[16], range[40];
        rqb_fmt_param(p, sizeof p, w->param);
        if (w->s.n == 0) {
            fprintf(f, "  %-7s %-52s %6s %10s %-5s %21s %6s %4s %9s  %s\n", w->impl, w->name, p,
                    "n/a", w->unit, "", "", "", "", w->note);
            continue;
        }
        fmt_num(med, sizeof med, w->s.median);
        fmt_num(lo, sizeof lo, w->s.min);
        fmt_num(hi, sizeof hi, w->s.max);
        fmt_num(cyc, sizeof cyc, w->cycles);
        if (isfinite(w->s.ci_lo) && isfinite(w->s.ci_hi) && w->s.median != 0)
            snprintf(ci, sizeof ci, "%.1f",
                     100 * fmax(w->s.median - w->s.ci_lo, w->s.ci_hi - w->s.median) /
                         fabs(w->s.median));
        else
            snprintf(ci, sizeof ci, "-");
        snprintf(range, sizeof range, "[%s .. %s]", lo, hi);
        fprintf(f, "  %-7s %-52s %6s %10s %-5s %21s %6s %4d %9s  %s\n", w->impl, w->name, p, med,
                w->unit, range, ci, w->s.n, cyc, w->note);
    }
}

/* RFC 4180: quote a field that holds a comma, quote or newline. */
static void csv_str(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
}

int rqb_report_csv(const char *path, const struct rqb_report *r)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "%s\n", rqb_csv_header);
    for (int i = 0; i < r->n; i++) {
        const struct rqb_row *w = &r->rows[i];
        csv_str(f, w->family); fputc(',', f);
        csv_str(f, w->impl);   fputc(',', f);
        csv_str(f, w->name);   fputc(',', f);
        csv_num(f, w->param);  fputc(',', f);
        csv_str(f, w->unit);   fputc(',', f);
        const double v[] = {w->s.median, w->s.min, w->s.max, w->s.ci_lo, w->s.ci_hi};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
            if (w->s.n > 0)
                csv_num(f, v[k]);
            fputc(',', f);
        }
        fprintf(f, "%d,", w->s.n);
        csv_num(f, w->cycles);
        fputc(',', f);
        csv_str(f, w->note);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

int rqb_report_json(const char *path, const struct rqb_report *r)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "{\n  \"meta\": {\"ranks\": %d, \"cpus\": [%d, %d], \"placement\": ", r->ranks,
            r->cpu0, r->cpu1);
    json_str(f, r->placement);
    fputs(", \"cacheline_oneway_ns\": ", f);
    json_num(f, r->line_ns);
    fputs(", \"tsc_ghz\": ", f);
    json_num(f, r->tsc_ghz);
    fputs(", \"timer_overhead_ns\": ", f);
    json_num(f, r->timer_ns);
    fputs(", \"confidence\": 0.9},\n  \"results\": [", f);
    for (int i = 0; i < r->n; i++) {
        const struct rqb_row *w = &r->rows[i];
        fputs(i ? ",\n    {" : "\n    {", f);
        fputs("\"family\": ", f); json_str(f, w->family);
        fputs(", \"impl\": ", f); json_str(f, w->impl);
        fputs(", \"name\": ", f); json_str(f, w->name);
        fputs(", \"param\": ", f); json_num(f, w->param);
        fputs(", \"unit\": ", f); json_str(f, w->unit);
        fputs(", \"median\": ", f); json_num(f, w->s.n ? w->s.median : NAN);
        fputs(", \"min\": ", f); json_num(f, w->s.n ? w->s.min : NAN);
        fputs(", \"max\": ", f); json_num(f, w->s.n ? w->s.max : NAN);
        fputs(", \"ci90\": [", f); json_num(f, w->s.n ? w->s.ci_lo : NAN);
        fputs(", ", f); json_num(f, w->s.n ? w->s.ci_hi : NAN);
        fprintf(f, "], \"n\": %d, \"cycles\": ", w->s.n);
        json_num(f, w->cycles);
        fputs(", \"note\": ", f); json_str(f, w->note);
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* Split one CSV record into at most max fields, unquoting in place. */
static int csv_split(char *line, char **field, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        char *out = p;
        field[n++] = out;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0')
                    break;
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
        } else {
            while (*p && *p != ',' && *p != '\n')
                *out++ = *p++;
        }
        int more = *p == ',';
        *out = '\0';
        if (!more)
            break;
        p++;
    }
    return n;
}

static double csv_double(const char *s) { return *s ? strtod(s, NULL) : NAN; }

int rqb_report_read_csv(const char *path, struct rqb_report *r)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, first = 1;
    while (getline(&line, &cap, f) > 0) {
        if (first) {
            first = 0;
            if (strncmp(line, rqb_csv_header, strlen(rqb_csv_header)) != 0) {
                errno = EINVAL;
                rc = -1;
                break;
            }
            continue;
        }
        char *fld[13];
        if (csv_split(line, fld, 13) != 13) {
            errno = EINVAL;
            rc = -1;
            break;
        }
        struct rqb_summary s;
        rqb_summarize(NULL, 0, 0.9, &s);
        s.n = atoi(fld[10]);
        if (s.n > 0) {
            s.median = csv_double(fld[5]);
            s.min = csv_double(fld[6]);
            s.max = csv_double(fld[7]);
            s.ci_lo = fld[8][0] ? csv_double(fld[8]) : -INFINITY;
            s.ci_hi = fld[9][0] ? csv_double(fld[9]) : INFINITY;
        }
        struct rqb_row *w = rqb_report_add(r, fld[0], fld[1], fld[2], csv_double(fld[3]),
                                           fld[4], &s, fld[12]);
        if (w == NULL) {
            rc = -1;
            break;
        }
        w->cycles = csv_double(fld[11]);
    }
    free(line);
    fclose(f);
    return rc;
}
