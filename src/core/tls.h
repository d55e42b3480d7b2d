/* tls.h - what the calling thread is doing inside librq, per thread (not
 * per context): every layer asks, the layer concerned sets it.  Defined in
 * core so that asking never calls up.
 *   rqi_am_handler_depth   > 0 while this thread runs an active-message or
 *                          queue handler (set by progress/)
 *   rqi_pdq_handler_depth  > 0 while it runs a PDQ handler (pdq/)
 *   rqi_vni_on_progress    1 on a rank's progress thread (vni/) */
#ifndef RQI_CORE_TLS_H
#define RQI_CORE_TLS_H

extern _Thread_local int rqi_am_handler_depth __attribute__((tls_model("initial-exec")));
extern _Thread_local int rqi_pdq_handler_depth __attribute__((tls_model("initial-exec")));
extern _Thread_local int rqi_vni_on_progress __attribute__((tls_model("initial-exec")));

#endif
