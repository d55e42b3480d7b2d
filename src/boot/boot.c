/* boot.c - find this process's job (see boot.h). */
#define _GNU_SOURCE
#include "boot/boot.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "net/shm.h"
#include "rq.h"

static int env_int(const char *name, long min, long max, long *out)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int rqi_boot(const struct rqi_config *cfg, struct rqi_boot *b, char *err, size_t errlen)
{
    long fd, rank, size;
    if (getenv(RQI_ENV_JOB_FD) != NULL) {
        if (env_int(RQI_ENV_JOB_FD, 0, 1 << 20, &fd) != 0 ||
            env_int(RQI_ENV_SIZE, 1, RQI_MAX_RANKS, &size) != 0 ||
            env_int(RQI_ENV_RANK, 0, size - 1, &rank) != 0 || fcntl((int)fd, F_GETFD) < 0) {
            snprintf(err, errlen, "RQ_JOB_FD/RQ_RANK/RQ_SIZE are set but invalid "
                                  "(start ranks with rqrun)");
            return RQ_EINVAL;
        }
        /* Keep the descriptor from leaking into programs we exec. */
        fcntl((int)fd, F_SETFD, FD_CLOEXEC);
        /* Consumed: a child process of this rank starts as its own job. */
        unsetenv(RQI_ENV_JOB_FD);
        b->job_fd = (int)fd;
        b->rank = (int)rank;
        b->size = (int)size;
        return 0;
    }
    if (getenv("PMIX_RANK") != NULL || getenv("OMPI_COMM_WORLD_SIZE") != NULL ||
        getenv("SLURM_STEP_ID") != NULL) {
        long n = 1;
        if ((env_int("OMPI_COMM_WORLD_SIZE", 1, 1 << 30, &n) == 0 ||
             env_int("SLURM_NTASKS", 1, 1 << 30, &n) == 0) && n > 1) {
            snprintf(err, errlen, "started by mpirun/srun with %ld processes: PMIx bootstrap "
                                  "is not implemented yet (use rqrun on one node)", n);
            return RQ_ENOTSUP;
        }
    }
    int f = rqi_shm_create(cfg, 1, err, errlen);
    if (f < 0)
        return RQ_ENOMEM;
    b->job_fd = f;
    b->rank = 0;
    b->size = 1;
    return 0;
}
