/* solver.c - the plan of the distributed triangular solve (see solver.h). */
#include "solver.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sp_solver_init(struct sp_solver *s, const struct sp_csr *L, const double *b, int me, int np,
                   int bs)
{
    memset(s, 0, sizeof *s);
    const int n = L->n;
    s->L = L;
    s->b = b;
    s->me = me;
    s->np = np;
    s->bs = bs;
    s->cptr = calloc((size_t)n + 1, sizeof *s->cptr);
    s->optr = calloc((size_t)n + 1, sizeof *s->optr);
    s->acc = malloc((size_t)n * sizeof *s->acc);
    s->x = malloc((size_t)n * sizeof *s->x);
    s->cnt = malloc((size_t)n * sizeof *s->cnt);
    s->own = malloc((size_t)n * sizeof *s->own);
    int *mark = malloc((size_t)np * sizeof *mark);
    if (!s->cptr || !s->optr || !s->acc || !s->x || !s->cnt || !s->own || !mark)
        goto fail;
    for (int i = 0; i < n; i++)
        if (sp_owner(s, i) == me)
            s->own[s->nown++] = i;
    s->ready = malloc((size_t)(s->nown ? s->nown : 1) * sizeof *s->ready);
    if (s->ready == NULL)
        goto fail;
    /* Column counts: my dependent rows of each column; for my columns,
     * the distinct other ranks with a dependent row. */
    int64_t nremote = 0;
    for (int i = 0; i < n; i++) {
        if (sp_owner(s, i) != me)
            continue;
        for (int64_t k = L->rowptr[i]; k < L->rowptr[i + 1] - 1; k++)
            s->cptr[L->col[k] + 1]++;
    }
    for (int i = 0; i < n; i++)
        s->cptr[i + 1] += s->cptr[i];
    s->crow = malloc((size_t)(s->cptr[n] ? s->cptr[n] : 1) * sizeof *s->crow);
    s->cval = malloc((size_t)(s->cptr[n] ? s->cptr[n] : 1) * sizeof *s->cval);
    int64_t *fill = malloc((size_t)n * sizeof *fill);
    if (!s->crow || !s->cval || !fill) {
        free(fill);
        goto fail;
    }
    memcpy(fill, s->cptr, (size_t)n * sizeof *fill);
    for (int i = 0; i < n; i++) {
        if (sp_owner(s, i) != me)
            continue;
        for (int64_t k = L->rowptr[i]; k < L->rowptr[i + 1] - 1; k++) {
            int j = L->col[k];
            s->crow[fill[j]] = i;
            s->cval[fill[j]++] = L->val[k];
        }
    }
    free(fill);
    /* Received messages: one per column j owned elsewhere with a row of
     * mine depending on it. */
    for (int j = 0; j < n; j++)
        if (sp_owner(s, j) != me && s->cptr[j + 1] > s->cptr[j])
            s->expect++;
    /* Sends: for each of my columns, the distinct other owners of its
     * dependent rows (from the whole matrix: a CSC pass). */
    int64_t *ccount = calloc((size_t)n + 1, sizeof *ccount);
    if (ccount == NULL)
        goto fail;
    for (int64_t k = 0; k < L->nnz; k++)
        ccount[L->col[k] + 1]++;
    for (int j = 0; j < n; j++)
        ccount[j + 1] += ccount[j];
    int *rows = malloc((size_t)(L->nnz ? L->nnz : 1) * sizeof *rows);
    int64_t *cf = malloc((size_t)n * sizeof *cf);
    if (rows == NULL || cf == NULL) {
        free(ccount);
        free(rows);
        free(cf);
        goto fail;
    }
    memcpy(cf, ccount, (size_t)n * sizeof *cf);
    for (int i = 0; i < n; i++)
        for (int64_t k = L->rowptr[i]; k < L->rowptr[i + 1] - 1; k++)
            rows[cf[L->col[k]]++] = i;
    for (int pass = 0; pass < 2; pass++) {
        nremote = 0;
        for (int j = 0; j < n; j++) {
            if (pass == 0)
                s->optr[j] = nremote;
            if (sp_owner(s, j) != me)
                continue;
            for (int r = 0; r < np; r++)
                mark[r] = 0;
            for (int64_t k = ccount[j]; k < cf[j]; k++) {
                int o = sp_owner(s, rows[k]);
                if (o != me && !mark[o]) {
                    mark[o] = 1;
                    if (pass == 1)
                        s->orank[nremote] = o;
                    nremote++;
                }
            }
        }
        if (pass == 0) {
            s->optr[n] = nremote;
            s->orank = malloc((size_t)(nremote ? nremote : 1) * sizeof *s->orank);
            if (s->orank == NULL)
                break;
        }
    }
    s->sends = (uint64_t)nremote;
    free(ccount);
    free(rows);
    free(cf);
    free(mark);
    if (s->orank == NULL)
        goto fail_nomark;
    sp_solver_reset(s);
    return 0;
fail:
    free(mark);
fail_nomark:
    sp_solver_free(s);
    return -1;
}

void sp_solver_reset(struct sp_solver *s)
{
    s->head = s->tail = 0;
    s->solved = 0;
    for (int k = 0; k < s->nown; k++) {
        int i = s->own[k];
        s->acc[i] = 0;
        s->cnt[i] = (int)(s->L->rowptr[i + 1] - s->L->rowptr[i] - 1);
        if (s->cnt[i] == 0)
            s->ready[s->tail++ % s->nown] = i;
    }
}

void sp_solver_free(struct sp_solver *s)
{
    free(s->own);
    free(s->cptr);
    free(s->crow);
    free(s->cval);
    free(s->optr);
    free(s->orank);
    free(s->acc);
    free(s->x);
    free(s->cnt);
    free(s->ready);
    memset(s, 0, sizeof *s);
}

double sp_rel_error(const struct sp_solver *s, const double *ref, double *maxref)
{
    double e = 0, m = 0;
    for (int k = 0; k < s->nown; k++) {
        int i = s->own[k];
        double d = fabs(s->x[i] - ref[i]);
        if (isnan(d))
            e = INFINITY;
        else if (d > e)
            e = d;
        if (fabs(ref[i]) > m)
            m = fabs(ref[i]);
    }
    *maxref = m;
    return e;
}
