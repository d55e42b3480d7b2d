/* boot.c - find this process's job (see boot.h). */
#define _GNU_SOURCE
#include "boot/boot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "boot/pmix.h"
#include "core/jobid.h"
#include "net/shm.h" /* RQI_MAX_RANKS */
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

#ifdef RQ_HAVE_PMIX
#define NODE_MAX 256

/* This rank's node name: RQ_NODE_ID, else the host name; under
 * RQ_TRANSPORT=ucx every rank is a node of its own. */
static void node_name(const struct rqi_config *cfg, int rank, char *out, size_t cap)
{
    const char *id = getenv(RQI_ENV_NODE_ID);
    char host[NODE_MAX - 16] = "";
    if (id == NULL || *id == '\0') {
        gethostname(host, sizeof host - 1);
        id = host;
    }
    if (cfg->v[RQI_CFG_TRANSPORT] == RQI_TRANSPORT_UCX)
        snprintf(out, cap, "%.*s#%d", (int)(cap - 16), id, rank);
    else
        snprintf(out, cap, "%s", id);
}

/* Open the segment of our node's leader through /proc (a memfd has no
 * name; its owner's descriptor table is the way in, same user only). */
static int open_leader_fd(int leader, char *err, size_t errlen)
{
    int32_t pid = 0, fd = -1;
    size_t len;
    if (rqi_pmix_get(leader, "rq.pid", &pid, sizeof pid, &len) != 0 || len != sizeof pid ||
        rqi_pmix_get(leader, "rq.shmfd", &fd, sizeof fd, &len) != 0 || len != sizeof fd) {
        snprintf(err, errlen, "PMIx: rank %d published no job segment", leader);
        return -1;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, (int)fd);
    int f = open(path, O_RDWR | O_CLOEXEC);
    if (f < 0)
        snprintf(err, errlen, "open %s (rank %d's job segment): %s", path, leader,
                 strerror(errno));
    return f;
}

static int boot_pmix(const struct rqi_config *cfg, struct rqi_boot *b, rqi_seg_create_fn create,
                     char *err, size_t errlen)
{
    int rank, size;
    int rc = rqi_pmix_init(&rank, &size, err, errlen);
    if (rc != 0)
        return rc;
    b->pmix = 1;
    b->rank = rank;
    b->size = size;
    b->job_fd = -1;
    if (size < 1 || size > (int)RQI_MAX_RANKS) {
        snprintf(err, errlen, "PMIx job of %d ranks: librq supports 1 to %u", size, RQI_MAX_RANKS);
        return RQ_ENOTSUP;
    }
    char node[NODE_MAX], other[NODE_MAX];
    node_name(cfg, rank, node, sizeof node);
    char host[NODE_MAX] = "";
    gethostname(host, sizeof host - 1);
    int32_t pid = (int32_t)getpid();
    uint64_t key = rank == 0 ? rqi_job_id_new() : 0;
    if (rqi_pmix_put("rq.node", node, strlen(node) + 1) != 0 ||
        rqi_pmix_put("rq.pid", &pid, sizeof pid) != 0 ||
        rqi_pmix_put("rq.host", host, strlen(host) + 1) != 0 ||
        (rank == 0 && rqi_pmix_put("rq.key", &key, sizeof key) != 0) || rqi_pmix_fence() != 0) {
        snprintf(err, errlen, "PMIx exchange of node names failed");
        return RQ_EPEER;
    }
    size_t len;
    if (rqi_pmix_get(0, "rq.key", &key, sizeof key, &len) != 0 || len != sizeof key || key == 0) {
        snprintf(err, errlen, "PMIx: rank 0 published no job key");
        return RQ_EPEER;
    }
    b->remote = calloc((size_t)size, 1);
    if (b->remote == NULL)
        return RQ_ENOMEM;
    int leader = -1, nlocal = 0, nremote = 0;
    b->host_ranks = 0;
    b->host_index = 0;
    for (int r = 0; r < size; r++) {
        if (rqi_pmix_get(r, "rq.node", other, sizeof other, &len) != 0 || len == 0 ||
            other[len - 1] != '\0') {
            snprintf(err, errlen, "PMIx: rank %d published no node name", r);
            return RQ_EPEER;
        }
        char other_host[NODE_MAX];
        if (rqi_pmix_get(r, "rq.host", other_host, sizeof other_host, &len) == 0 && len != 0 &&
            other_host[len - 1] == '\0' && strcmp(other_host, host) == 0) {
            b->host_ranks++;
            if (r < rank)
                b->host_index++;
        }
        if (strcmp(other, node) == 0) {
            nlocal++;
            if (leader < 0)
                leader = r;
        } else {
            b->remote[r] = 1;
            nremote++;
        }
    }
    if (nremote != 0 && cfg->v[RQI_CFG_TRANSPORT] == RQI_TRANSPORT_SHM) {
        snprintf(err, errlen, "RQ_TRANSPORT=shm but the job spans nodes (%d of %d ranks are "
                              "elsewhere)", nremote, size);
        return RQ_ENOTSUP;
    }
    /* Our node's lowest rank creates the segment, sized for the whole job
     * (other nodes' areas stay untouched, never allocated), and publishes
     * its descriptor; the others open it once the fence says it exists. */
    int32_t fd = -1;
    if (leader == rank) {
        fd = create(cfg, (uint32_t)size, (uint32_t)nlocal, key, err, errlen);
        if (fd < 0)
            return RQ_ENOMEM;
        b->job_fd = fd;
        if (rqi_pmix_put("rq.shmfd", &fd, sizeof fd) != 0)
            return RQ_EPEER;
    }
    if (rqi_pmix_fence() != 0) {
        snprintf(err, errlen, "PMIx fence after creating the job segments failed");
        return RQ_EPEER;
    }
    if (leader != rank && (b->job_fd = open_leader_fd(leader, err, errlen)) < 0)
        return RQ_EPEER;
    if (nremote == 0) {
        free(b->remote);
        b->remote = NULL;
    }
    return 0;
}
#endif

int rqi_boot(const struct rqi_config *cfg, struct rqi_boot *b, rqi_seg_create_fn create,
             char *err, size_t errlen)
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
        b->host_ranks = (int)size; /* rqrun starts every rank here */
        b->host_index = (int)rank;
        return 0;
    }
    if (rqi_pmix_launched()) {
#ifdef RQ_HAVE_PMIX
        return boot_pmix(cfg, b, create, err, errlen);
#else
        long n = 1;
        if ((env_int("OMPI_COMM_WORLD_SIZE", 1, 1 << 30, &n) == 0 ||
             env_int("SLURM_NTASKS", 1, 1 << 30, &n) == 0) && n > 1) {
            snprintf(err, errlen, "started by mpirun/srun with %ld processes, but librq was "
                                  "built without PMIx (install libpmix-dev and rebuild)", n);
            return RQ_ENOTSUP;
        }
#endif
    }
    int f = create(cfg, 1, 1, 0, err, errlen);
    if (f < 0)
        return RQ_ENOMEM;
    b->job_fd = f;
    b->rank = 0;
    b->size = 1;
    b->host_ranks = 1;
    b->host_index = 0;
    return 0;
}
