/* mt.c - the context lock's per-thread name (see mt.h). */
#include "core/mt.h"

_Thread_local char rqi_mt_self __attribute__((tls_model("initial-exec")));
