/* tls.c - the per-thread state of tls.h. */
#include "core/tls.h"

_Thread_local int rqi_am_handler_depth __attribute__((tls_model("initial-exec")));
_Thread_local int rqi_pdq_handler_depth __attribute__((tls_model("initial-exec")));
_Thread_local int rqi_vni_on_progress __attribute__((tls_model("initial-exec")));
