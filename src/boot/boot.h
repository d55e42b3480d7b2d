/* boot.h - how a process finds its job: under rqrun (RQ_JOB_FD, RQ_RANK,
 * RQ_SIZE), or alone (a 1-rank job it creates itself).  PMIx launchers
 * (mpirun, srun) belong to the cross-node issue. */
#ifndef RQI_BOOT_H
#define RQI_BOOT_H

#include <stddef.h>

#include "core/config.h"

struct rqi_boot {
    int rank, size;
    int job_fd;    /* the job segment's memfd, owned by the caller */
};

/* 0, or an RQ_E* code with a message in err. */
int rqi_boot(const struct rqi_config *cfg, struct rqi_boot *b, char *err, size_t errlen);

#endif
