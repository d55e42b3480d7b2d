/* pmix.c - the PMIx client calls behind pmix.h. */
#define _GNU_SOURCE
#include "boot/pmix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rq.h"

int rqi_pmix_launched(void)
{
    return getenv("PMIX_RANK") != NULL && getenv("PMIX_NAMESPACE") != NULL;
}

#ifdef RQ_HAVE_PMIX
#include <pmix.h>

static pmix_proc_t me;

int rqi_pmix_init(int *rank, int *size, char *err, size_t errlen)
{
    pmix_status_t st = PMIx_Init(&me, NULL, 0);
    if (st != PMIX_SUCCESS) {
        snprintf(err, errlen, "PMIx_Init: %s", PMIx_Error_string(st));
        return RQ_EPEER;
    }
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *v = NULL;
    st = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v);
    if (st != PMIX_SUCCESS || v == NULL || v->type != PMIX_UINT32) {
        snprintf(err, errlen, "PMIx_Get(job size): %s", PMIx_Error_string(st));
        if (v != NULL)
            PMIX_VALUE_RELEASE(v);
        PMIx_Finalize(NULL, 0);
        return RQ_EPEER;
    }
    *size = (int)v->data.uint32;
    *rank = (int)me.rank;
    PMIX_VALUE_RELEASE(v);
    return 0;
}

int rqi_pmix_put(const char *key, const void *buf, size_t len)
{
    pmix_value_t val;
    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)(uintptr_t)buf;
    val.data.bo.size = len;
    /* PMIx_Put copies the value. */
    return PMIx_Put(PMIX_GLOBAL, key, &val) == PMIX_SUCCESS ? 0 : RQ_EPEER;
}

int rqi_pmix_fence(void)
{
    if (PMIx_Commit() != PMIX_SUCCESS)
        return RQ_EPEER;
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    pmix_status_t st = PMIx_Fence(&job, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    return st == PMIX_SUCCESS ? 0 : RQ_EPEER;
}

int rqi_pmix_get(int rank, const char *key, void *buf, size_t cap, size_t *len)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, me.nspace, (pmix_rank_t)rank);
    pmix_value_t *v = NULL;
    if (PMIx_Get(&p, key, NULL, 0, &v) != PMIX_SUCCESS || v == NULL)
        return RQ_EPEER;
    int rc = 0;
    if (v->type != PMIX_BYTE_OBJECT)
        rc = RQ_EPEER;
    else if (v->data.bo.size > cap)
        rc = RQ_ERANGE;
    else {
        memcpy(buf, v->data.bo.bytes, v->data.bo.size);
        *len = v->data.bo.size;
    }
    PMIX_VALUE_RELEASE(v);
    return rc;
}

void rqi_pmix_fini(void)
{
    PMIx_Finalize(NULL, 0);
}
#endif
