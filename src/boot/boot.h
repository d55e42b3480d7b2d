/* boot.h - how a process finds its job: under rqrun (RQ_JOB_FD, RQ_RANK,
 * RQ_SIZE); under a PMIx launcher (mpirun, srun: node identity and the
 * job key exchanged through PMIx, one job segment per node created by the
 * node's lowest rank and opened by the others through /proc); or alone (a
 * 1-rank job it creates itself). */
#ifndef RQI_BOOT_H
#define RQI_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

struct rqi_boot {
    int rank, size;
    int job_fd;       /* the job segment's memfd, owned by the caller */
    int pmix;         /* started by a PMIx launcher: rqi_pmix_* usable */
    unsigned char *remote; /* NULL (every rank shares our segment) or size
                              flags, 1: that rank is reached through UCX;
                              owned by the caller (free) */
    int host_ranks;   /* ranks of the job on this machine (simulated nodes,
                         RQ_NODE_ID, share one): whether it is oversubscribed */
    int host_index;   /* this rank's place among them (0 .. host_ranks - 1,
                         in rank order): where its helper threads go */
};

/* What creates a job segment (net/shm.h: rqi_shm_create), passed in by
 * rq_init so that the bootstrap calls no transport: a memfd for nranks
 * ranks, nlocal of them on this node, keyed key (0: a fresh one), or a
 * negative value with a message in err. */
typedef int (*rqi_seg_create_fn)(const struct rqi_config *cfg, uint32_t nranks, uint32_t nlocal,
                                 uint64_t key, char *err, size_t errlen);

/* 0, or an RQ_E* code with a message in err. */
int rqi_boot(const struct rqi_config *cfg, struct rqi_boot *b, rqi_seg_create_fn create,
             char *err, size_t errlen);

#endif
