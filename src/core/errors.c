/* errors.c - names of the RQ_E* codes. */
#include "rq.h"

const char *rq_strerror(int err)
{
    switch (err) {
    case RQ_OK:        return "RQ_OK: success";
    case RQ_EAGAIN:    return "RQ_EAGAIN: not committed now; poll, then retry";
    case RQ_EINVAL:    return "RQ_EINVAL: invalid argument";
    case RQ_ENOMEM:    return "RQ_ENOMEM: out of memory";
    case RQ_ERANGE:    return "RQ_ERANGE: outside the segment or buffer";
    case RQ_EPEER:     return "RQ_EPEER: a peer rank failed";
    case RQ_ETIMEDOUT: return "RQ_ETIMEDOUT: timed out";
    case RQ_ENOTSUP:   return "RQ_ENOTSUP: not supported (yet)";
    case RQ_EPERM:     return "RQ_EPERM: not allowed here (e.g. inside a handler)";
    default:           return "unknown error";
    }
}
