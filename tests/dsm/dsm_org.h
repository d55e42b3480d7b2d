/* dsm_org.h - the DSM tests' protocol organisation argument: pdq,
 * multiplexed, poll or spinlock, set in an rqdsm_attr_t. */
#ifndef RQ_TEST_DSM_ORG_H
#define RQ_TEST_DSM_ORG_H

#include <string.h>

#include "rqdsm.h"

/* Set a's organisation from its name: 0, or -1 (an unknown name). */
static inline int dsm_org_set(rqdsm_attr_t *a, const char *name)
{
    if (strcmp(name, "pdq") == 0) {
        a->protocol = RQDSM_PROTO_PDQ;
    } else if (strcmp(name, "multiplexed") == 0) {
        a->protocol = RQDSM_PROTO_PDQ;
        a->pdq_mode = RQ_PDQ_MULTIPLEXED;
    } else if (strcmp(name, "poll") == 0) {
        a->protocol = RQDSM_PROTO_POLL;
    } else if (strcmp(name, "spinlock") == 0) {
        a->protocol = RQDSM_PROTO_SPINLOCK;
    } else {
        return -1;
    }
    return 0;
}

#endif
