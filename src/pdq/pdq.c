/* pdq.c - parallel dispatch queue: belongs to the PDQ issue; every call
 * returns RQ_ENOTSUP (after rejecting NULL handles with RQ_EINVAL). */
#include "rq.h"

int rq_pdq_open(rq_ctx_t *ctx, unsigned qid, const rq_pdq_attr_t *attr, rq_pdq_t **pdq)
{
    (void)qid;
    if (ctx == NULL || attr == NULL || pdq == NULL)
        return RQ_EINVAL;
    *pdq = NULL;
    return RQ_ENOTSUP;
}
int rq_pdq_enqueue(rq_ctx_t *ctx, int dst, unsigned qid, uint64_t key, unsigned handler,
                   const uint64_t *args, unsigned nargs, const void *data, size_t len,
                   unsigned flags)
{
    (void)dst; (void)qid; (void)key; (void)handler; (void)args; (void)nargs;
    (void)data; (void)len; (void)flags;
    return ctx == NULL ? RQ_EINVAL : RQ_ENOTSUP;
}
int rq_pdq_help(rq_pdq_t *pdq, unsigned max)
{
    (void)max;
    return pdq == NULL ? RQ_EINVAL : RQ_ENOTSUP;
}
int rq_pdq_drain(rq_pdq_t *pdq) { return pdq == NULL ? RQ_EINVAL : RQ_ENOTSUP; }
int rq_pdq_close(rq_pdq_t *pdq) { return pdq == NULL ? RQ_EINVAL : RQ_ENOTSUP; }
