/* build.c - what this build of librq contains (rq_build_info). */
#include "rq.h"

#define RQI_STR_(x) #x
#define RQI_STR(x) RQI_STR_(x)

#if defined(RQ_HAVE_UCX)
#define RQI_BUILD_UCX " ucx (UCX " RQ_UCX_VERSION ")"
#else
#define RQI_BUILD_UCX ""
#endif
#if defined(RQ_HAVE_PMIX)
#define RQI_BUILD_PMIX " pmix (PMIx " RQ_PMIX_VERSION ")"
#else
#define RQI_BUILD_PMIX ""
#endif

#if defined(__SANITIZE_ADDRESS__)
#define RQI_BUILD_ASAN " address"
#else
#define RQI_BUILD_ASAN ""
#endif
#if defined(RQ_BUILD_UBSAN)
#define RQI_BUILD_UBSAN " undefined"
#else
#define RQI_BUILD_UBSAN ""
#endif
#if defined(__SANITIZE_THREAD__)
#define RQI_BUILD_TSAN " thread"
#else
#define RQI_BUILD_TSAN ""
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(RQ_BUILD_UBSAN) || defined(__SANITIZE_THREAD__)
#define RQI_BUILD_SAN RQI_BUILD_ASAN RQI_BUILD_UBSAN RQI_BUILD_TSAN
#else
#define RQI_BUILD_SAN " none"
#endif

const char *rq_build_info(void)
{
    static const char info[] =
        "librq " RQI_STR(RQ_VERSION_MAJOR) "." RQI_STR(RQ_VERSION_MINOR) "." RQI_STR(
            RQ_VERSION_PATCH) "\n"
        "transports   shm (this node)" RQI_BUILD_UCX "\n"
        "bootstrap    rqrun, singleton" RQI_BUILD_PMIX "\n"
        "threads      progress thread per rank; RQ_THREAD_SAFE=1 lets any thread call\n"
        "sanitizers  " RQI_BUILD_SAN "\n";
    return info;
}
