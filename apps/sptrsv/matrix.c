/* matrix.c - sparse lower-triangular matrices (see matrix.h). */
#define _POSIX_C_SOURCE 200809L
#include "matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app.h"

#define SP_MAX_ROWS (1 << 26)
#define SP_MAX_NNZ  ((int64_t)1 << 31)

struct trip {
    int    i, j;
    double v;
};

static int trip_cmp(const void *a, const void *b)
{
    const struct trip *x = a, *y = b;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

/* CSR from lower-triangular triplets (sorted here); checks duplicates and
 * the diagonal. */
static int from_triplets(struct trip *t, int64_t m, int n, struct sp_csr *L, char *err,
                         size_t errlen)
{
    qsort(t, (size_t)m, sizeof *t, trip_cmp);
    L->n = n;
    L->nnz = m;
    L->rowptr = calloc((size_t)n + 1, sizeof *L->rowptr);
    L->col = malloc((size_t)(m ? m : 1) * sizeof *L->col);
    L->val = malloc((size_t)(m ? m : 1) * sizeof *L->val);
    if (L->rowptr == NULL || L->col == NULL || L->val == NULL) {
        snprintf(err, errlen, "out of memory");
        sp_free(L);
        return -1;
    }
    for (int64_t k = 0; k < m; k++) {
        if (k > 0 && t[k].i == t[k - 1].i && t[k].j == t[k - 1].j) {
            snprintf(err, errlen, "duplicate entry (%d, %d)", t[k].i + 1, t[k].j + 1);
            sp_free(L);
            return -1;
        }
        L->rowptr[t[k].i + 1]++;
        L->col[k] = t[k].j;
        L->val[k] = t[k].v;
    }
    for (int i = 0; i < n; i++)
        L->rowptr[i + 1] += L->rowptr[i];
    for (int i = 0; i < n; i++) {
        int64_t e = L->rowptr[i + 1] - 1;
        if (e < L->rowptr[i] || L->col[e] != i || L->val[e] == 0.0) {
            snprintf(err, errlen, "zero or missing diagonal at row %d", i + 1);
            sp_free(L);
            return -1;
        }
    }
    return 0;
}

int sp_read_mtx(FILE *f, struct sp_csr *L, char *err, size_t errlen)
{
    char line[1024], obj[64], fmt[64], field[64], sym[64];
    memset(L, 0, sizeof *L);
    if (fgets(line, sizeof line, f) == NULL ||
        sscanf(line, "%%%%MatrixMarket %63s %63s %63s %63s", obj, fmt, field, sym) != 4) {
        snprintf(err, errlen, "not a Matrix Market file (no %%%%MatrixMarket header)");
        return -1;
    }
    if (strcasecmp(obj, "matrix") != 0 || strcasecmp(fmt, "coordinate") != 0) {
        snprintf(err, errlen, "only 'matrix coordinate' Matrix Market files are supported");
        return -1;
    }
    if (strcasecmp(field, "real") != 0 && strcasecmp(field, "integer") != 0 &&
        strcasecmp(field, "double") != 0) {
        snprintf(err, errlen, "field '%s' not supported (real or integer)", field);
        return -1;
    }
    int symmetric = strcasecmp(sym, "symmetric") == 0;
    if (!symmetric && strcasecmp(sym, "general") != 0) {
        snprintf(err, errlen, "symmetry '%s' not supported (general or symmetric)", sym);
        return -1;
    }
    long long rows, cols, nnz;
    do {
        if (fgets(line, sizeof line, f) == NULL) {
            snprintf(err, errlen, "no size line");
            return -1;
        }
    } while (line[0] == '%');
    char extra;
    if (sscanf(line, "%lld %lld %lld %c", &rows, &cols, &nnz, &extra) != 3 || rows < 1 ||
        cols < 1 || nnz < 0) {
        snprintf(err, errlen, "malformed size line");
        return -1;
    }
    if (rows != cols) {
        snprintf(err, errlen, "not square (%lld x %lld)", rows, cols);
        return -1;
    }
    if (rows > SP_MAX_ROWS || nnz > SP_MAX_NNZ) {
        snprintf(err, errlen, "too large (at most %d rows, 2^31 entries)", SP_MAX_ROWS);
        return -1;
    }
    struct trip *t = malloc((size_t)(nnz ? nnz : 1) * sizeof *t);
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (long long k = 0; k < nnz; k++) {
        long long i, j;
        double v;
        if (fgets(line, sizeof line, f) == NULL) {
            snprintf(err, errlen, "truncated: %lld of %lld entries", k, nnz);
            free(t);
            return -1;
        }
        if (line[0] == '%') {
            k--;
            continue;
        }
        if (sscanf(line, "%lld %lld %lf %c", &i, &j, &v, &extra) != 3 || !isfinite(v)) {
            snprintf(err, errlen, "malformed entry %lld: %.60s", k + 1, line);
            free(t);
            return -1;
        }
        if (i < 1 || i > rows || j < 1 || j > cols) {
            snprintf(err, errlen, "entry %lld: (%lld, %lld) out of range", k + 1, i, j);
            free(t);
            return -1;
        }
        if (j > i) {
            if (!symmetric) {
                snprintf(err, errlen,
                         "not lower triangular: entry (%lld, %lld) is above the diagonal", i, j);
                free(t);
                return -1;
            }
            long long s = i;
            i = j;
            j = s;
        }
        t[k] = (struct trip){(int)(i - 1), (int)(j - 1), v};
    }
    int rc = from_triplets(t, nnz, (int)rows, L, err, errlen);
    free(t);
    return rc;
}

void sp_write_mtx(FILE *f, const struct sp_csr *L)
{
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n");
    fprintf(f, "%d %d %lld\n", L->n, L->n, (long long)L->nnz);
    for (int i = 0; i < L->n; i++)
        for (int64_t k = L->rowptr[i]; k < L->rowptr[i + 1]; k++)
            fprintf(f, "%d %d %.17g\n", i + 1, L->col[k] + 1, L->val[k]);
}

/* Incomplete Cholesky IC(0) in place: L's pattern and values hold the
 * lower triangle of an SPD M-matrix; afterwards L L^T matches it on the
 * pattern.  Rows are sorted, the diagonal last. */
static void ic0(struct sp_csr *L)
{
    for (int i = 0; i < L->n; i++) {
        const int64_t b = L->rowptr[i], e = L->rowptr[i + 1] - 1; /* e: diagonal */
        double d = L->val[e];
        for (int64_t p = b; p < e; p++) {
            const int j = L->col[p];
            /* s = a_ij - sum_k L_ik L_jk over k < j in both rows */
            double s = L->val[p];
            int64_t q = L->rowptr[j], qe = L->rowptr[j + 1] - 1;
            for (int64_t r = b; r < p && q < qe;) {
                if (L->col[r] == L->col[q])
                    s -= L->val[r++] * L->val[q++];
                else if (L->col[r] < L->col[q])
                    r++;
                else
                    q++;
            }
            L->val[p] = s / L->val[L->rowptr[j + 1] - 1];
            d -= L->val[p] * L->val[p];
        }
        L->val[e] = sqrt(d > 1e-12 ? d : 1e-12);
    }
}

/* The Laplacian + I of a graph given by its lower edges (i > j), as
 * lower triplets, then IC(0). */
static int laplacian_ic0(int n, struct trip *edges, int64_t ne, struct sp_csr *L, char *err,
                         size_t errlen)
{
    int *deg = calloc((size_t)n, sizeof *deg);
    struct trip *t = malloc((size_t)(ne + n) * sizeof *t);
    if (deg == NULL || t == NULL) {
        free(deg);
        free(t);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int64_t k = 0; k < ne; k++) {
        deg[edges[k].i]++;
        deg[edges[k].j]++;
        t[k] = (struct trip){edges[k].i, edges[k].j, -1.0};
    }
    for (int i = 0; i < n; i++)
        t[ne + i] = (struct trip){i, i, (double)deg[i] + 1.0};
    int rc = from_triplets(t, ne + n, n, L, err, errlen);
    free(deg);
    free(t);
    if (rc == 0)
        ic0(L);
    return rc;
}

static int gen_grid(int k, int dims, struct sp_csr *L, char *err, size_t errlen)
{
    const int64_t n = dims == 2 ? (int64_t)k * k : (int64_t)k * k * k;
    if (k < 1 || n > SP_MAX_ROWS) {
        snprintf(err, errlen, "grid size out of range");
        return -1;
    }
    struct trip *e = malloc((size_t)n * (size_t)dims * sizeof *e);
    if (e == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int64_t ne = 0;
    for (int64_t v = 0; v < n; v++) {
        int64_t x = v % k, y = (v / k) % k, z = v / ((int64_t)k * k);
        if (x > 0)
            e[ne++] = (struct trip){(int)v, (int)(v - 1), 0};
        if (y > 0)
            e[ne++] = (struct trip){(int)v, (int)(v - k), 0};
        if (dims == 3 && z > 0)
            e[ne++] = (struct trip){(int)v, (int)(v - (int64_t)k * k), 0};
    }
    int rc = laplacian_ic0((int)n, e, ne, L, err, errlen);
    free(e);
    return rc;
}

/* A power-network-like graph: n buses, ne lines, mostly between buses
 * close in numbering (a feeder's neighbours), some long ties. */
static int gen_power(int n, int64_t ne, uint64_t seed, struct sp_csr *L, char *err, size_t errlen)
{
    if (n < 2 || n > SP_MAX_ROWS || ne < 0 || ne > (int64_t)n * (n - 1) / 2 || ne > SP_MAX_NNZ) {
        snprintf(err, errlen, "power graph: need 2 <= rows and 0 <= edges <= rows*(rows-1)/2");
        return -1;
    }
    struct trip *e = malloc((size_t)(ne ? ne : 1) * sizeof *e);
    if (e == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int64_t have = 0;
    while (have < ne) {
        for (int64_t k = have; k < ne; k++) {
            int i = 1 + (int)(rqa_splitmix(&seed) % (uint64_t)(n - 1)), j;
            if (rqa_splitmix(&seed) % 4 != 0) {
                int d = 1 + (int)(rqa_splitmix(&seed) % 8);
                j = i - (d < i ? d : i);
            } else {
                j = (int)(rqa_splitmix(&seed) % (uint64_t)i);
            }
            e[k] = (struct trip){i, j, 0};
        }
        qsort(e, (size_t)ne, sizeof *e, trip_cmp);
        have = 0;
        for (int64_t k = 0; k < ne; k++)
            if (k == 0 || e[k].i != e[k - 1].i || e[k].j != e[k - 1].j)
                e[have++] = e[k];
    }
    int rc = laplacian_ic0(n, e, ne, L, err, errlen);
    free(e);
    return rc;
}

int sp_load(const char *spec, struct sp_csr *L, char *note, size_t notelen, char *err,
            size_t errlen)
{
    static const struct {
        const char *name;
        int         rows, nnz;
    } pwr[] = {{"pwr05", 274, 759}, {"pwr06", 1454, 1923}, {"pwr10", 5300, 8271}};
    memset(L, 0, sizeof *L);
    snprintf(note, notelen, "%s", spec);
    for (size_t k = 0; k < sizeof pwr / sizeof pwr[0]; k++)
        if (strcmp(spec, pwr[k].name) == 0) {
            snprintf(note, notelen,
                     "%s: generated power graph, IC(0); the paper's bcsp%s has %d rows and "
                     "%d nonzeros",
                     spec, pwr[k].name, pwr[k].rows, pwr[k].nnz);
            return gen_power(pwr[k].rows, pwr[k].nnz - pwr[k].rows, 5 + k, L, err, errlen);
        }
    int a, b, c;
    char tail;
    if (sscanf(spec, "grid2d:%d%c", &a, &tail) == 1)
        return gen_grid(a, 2, L, err, errlen);
    if (sscanf(spec, "grid3d:%d%c", &a, &tail) == 1)
        return gen_grid(a, 3, L, err, errlen);
    int nf = sscanf(spec, "power:%d:%d:%d%c", &a, &b, &c, &tail);
    if (nf == 2 || nf == 3)
        return gen_power(a, b, nf == 3 ? (uint64_t)c : 1, L, err, errlen);
    if (strncmp(spec, "grid", 4) == 0 || strncmp(spec, "power:", 6) == 0) {
        snprintf(err, errlen, "bad generator spec '%s' (grid2d:K, grid3d:K, power:ROWS:EDGES[:SEED])",
                 spec);
        return -1;
    }
    FILE *f = fopen(spec, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot open '%s' (a .mtx file or a generator spec)", spec);
        return -1;
    }
    char why[200];
    int rc = sp_read_mtx(f, L, why, sizeof why);
    fclose(f);
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", spec, why);
    return rc;
}

int sp_levels(const struct sp_csr *L)
{
    int *lev = calloc((size_t)L->n, sizeof *lev), max = 0;
    if (lev == NULL)
        return -1;
    for (int i = 0; i < L->n; i++) {
        int l = 0;
        for (int64_t k = L->rowptr[i]; k < L->rowptr[i + 1] - 1; k++)
            if (lev[L->col[k]] + 1 > l)
                l = lev[L->col[k]] + 1;
        lev[i] = l;
        if (l + 1 > max)
            max = l + 1;
    }
    free(lev);
    return max;
}

int sp_permute_levels(struct sp_csr *L)
{
    const int n = L->n;
    int *lev = calloc((size_t)n, sizeof *lev), *cnt = NULL, *perm = NULL;
    struct trip *t = malloc((size_t)L->nnz * sizeof *t);
    if (lev == NULL || t == NULL)
        goto fail;
    int nl = 0;
    for (int i = 0; i < n; i++) {
        for (int64_t k = L->rowptr[i]; k < L->rowptr[i + 1] - 1; k++)
            if (lev[L->col[k]] + 1 > lev[i])
                lev[i] = lev[L->col[k]] + 1;
        if (lev[i] + 1 > nl)
            nl = lev[i] + 1;
    }
    cnt = calloc((size_t)nl + 1, sizeof *cnt);
    perm = malloc((size_t)n * sizeof *perm);
    if (cnt == NULL || perm == NULL)
        goto fail;
    for (int i = 0; i < n; i++)
        cnt[lev[i] + 1]++;
    for (int l = 0; l < nl; l++)
        cnt[l + 1] += cnt[l];
    for (int i = 0; i < n; i++)
        perm[i] = cnt[lev[i]]++; /* new index of row i: by level, then index */
    for (int i = 0; i < n; i++)
        for (int64_t k = L->rowptr[i]; k < L->rowptr[i + 1]; k++)
            t[k] = (struct trip){perm[i], perm[L->col[k]], L->val[k]};
    struct sp_csr P;
    char err[64];
    if (from_triplets(t, L->nnz, n, &P, err, sizeof err) != 0)
        goto fail;
    sp_free(L);
    *L = P;
    free(lev);
    free(cnt);
    free(perm);
    free(t);
    return 0;
fail:
    free(lev);
    free(cnt);
    free(perm);
    free(t);
    return -1;
}

void sp_serial_solve(const struct sp_csr *L, const double *b, double *x)
{
    for (int i = 0; i < L->n; i++) {
        double s = b[i];
        const int64_t e = L->rowptr[i + 1] - 1;
        for (int64_t k = L->rowptr[i]; k < e; k++)
            s -= L->val[k] * x[L->col[k]];
        x[i] = s / L->val[e];
    }
}

void sp_rhs_ones(const struct sp_csr *L, double *b)
{
    for (int i = 0; i < L->n; i++) {
        double s = 0;
        for (int64_t k = L->rowptr[i]; k < L->rowptr[i + 1]; k++)
            s += L->val[k];
        b[i] = s;
    }
}

void sp_free(struct sp_csr *L)
{
    free(L->rowptr);
    free(L->col);
    free(L->val);
    L->rowptr = NULL;
    L->col = NULL;
    L->val = NULL;
}
