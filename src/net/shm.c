/* shm.c - create, map and watch the job segment (see shm.h). */
#define _GNU_SOURCE
#include "net/shm.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "net/shm_bulk.h"
#include "rq.h"

#define PAGE 4096ull

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint64_t rqi_shm_medium_max(uint64_t ring_bytes, uint64_t cfg_max)
{
    /* Quarter of the ring, and within the 16-bit slot count of a packet,
     * minus room for header, extension and arguments (+ a PDQ key). */
    uint64_t room = 32 + 24 + 8 * (RQ_MAX_ARGS + 1);
    uint64_t cap = ring_bytes / 4 - room;
    uint64_t cap16 = 65535ull * RQI_SLOT_BYTES - room;
    uint64_t m = cfg_max < cap ? cfg_max : cap;
    m = m < cap16 ? m : cap16;
    return m & ~7ull;
}


uint32_t rqi_shm_lanes(uint64_t cfg_lanes, uint32_t nlocal)
{
    uint64_t want = cfg_lanes != 0 ? cfg_lanes : RQI_MAX_LANES;
    return want < nlocal ? (uint32_t)want : nlocal;
}

uint64_t rqi_shm_gas_ring_bytes(uint64_t ring_bytes, uint32_t nlanes)
{
    /* The largest power of two <= 2 * ring / nlanes, within [ring/4, ring]. */
    uint64_t want = 2 * ring_bytes / (nlanes != 0 ? nlanes : 1), b = ring_bytes;
    while (b > want && b > ring_bytes / 4)
        b /= 2;
    return b > 4096 ? b : 4096;
}

int rqi_shm_create(const struct rqi_config *cfg, uint32_t nranks, uint32_t nlocal,
                   uint64_t job_id, char *err, size_t errlen)
{
    if (nranks == 0 || nranks > RQI_MAX_RANKS || nlocal == 0 || nlocal > nranks) {
        snprintf(err, errlen, "rank count %u outside [1, %u]", nranks, RQI_MAX_RANKS);
        return -EINVAL;
    }
    uint64_t ring = cfg->v[RQI_CFG_RING_BYTES];
    uint32_t lanes = rqi_shm_lanes(cfg->v[RQI_CFG_LANES], nlocal);
    uint64_t seg = round_up(cfg->v[RQI_CFG_SEGMENT_SIZE], PAGE);
    uint64_t bulk = round_up(cfg->v[RQI_CFG_BULK_BYTES], PAGE);
    uint64_t ctr = round_up((uint64_t)nranks * RQI_CACHELINE, PAGE);
    uint64_t gas = rqi_shm_gas_ring_bytes(ring, lanes);
    uint64_t stride = RQI_CTRL_BYTES + ctr + lanes * ring + RQI_GAS_KINDS * lanes * gas + seg + bulk;
    uint64_t total = PAGE + stride * nranks;

    int fd = memfd_create("rq-job", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "memfd_create: %s", strerror(errno));
        return -errno;
    }
    if (ftruncate(fd, (off_t)total) != 0) {
        int e = errno;
        snprintf(err, errlen, "ftruncate(%llu): %s", (unsigned long long)total, strerror(e));
        close(fd);
        return -e;
    }
    struct rqi_job_hdr *h = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED) {
        int e = errno;
        snprintf(err, errlen, "mmap: %s", strerror(e));
        close(fd);
        return -e;
    }
    h->magic = RQI_JOB_MAGIC;
    h->version = RQI_JOB_VERSION;
    h->nranks = nranks;
    h->nlocal = nlocal;
    h->job_id = job_id != 0 ? job_id : rqi_job_id_new();
    h->ring_bytes = ring;
    h->gas_ring_bytes = gas;
    h->nlanes = lanes;
    h->seg_bytes = seg;
    h->bulk_bytes = bulk;
    h->ctr_bytes = ctr;
    h->medium_max = rqi_shm_medium_max(ring, cfg->v[RQI_CFG_MEDIUM_MAX]);
    h->rank_stride = stride;
    h->ranks_off = PAGE;
    h->total_bytes = total;
    munmap(h, PAGE);
    return fd;
}

int rqi_shm_attach(int fd, struct rqi_shm *shm, char *err, size_t errlen)
{
    memset(shm, 0, sizeof *shm);
    shm->fd = -1;
    struct rqi_job_hdr probe;
    if (pread(fd, &probe, sizeof probe, 0) != (ssize_t)sizeof probe) {
        snprintf(err, errlen, "job descriptor %d unreadable: %s", fd, strerror(errno));
        return RQ_EINVAL;
    }
    if (probe.magic != RQI_JOB_MAGIC || probe.version != RQI_JOB_VERSION ||
        probe.nranks == 0 || probe.nranks > RQI_MAX_RANKS || probe.ranks_off != PAGE ||
        probe.nlanes == 0 || probe.nlanes > RQI_MAX_LANES || probe.nlocal == 0 ||
        probe.nlocal > probe.nranks || probe.nlanes > probe.nlocal ||
        probe.ctr_bytes != (((uint64_t)probe.nranks * RQI_CACHELINE + PAGE - 1) / PAGE) * PAGE ||
        probe.gas_ring_bytes != rqi_shm_gas_ring_bytes(probe.ring_bytes, probe.nlanes) ||
        probe.rank_stride != RQI_CTRL_BYTES + probe.ctr_bytes +
                                 probe.nlanes * probe.ring_bytes +
                                 RQI_GAS_KINDS * probe.nlanes * probe.gas_ring_bytes +
                                 probe.seg_bytes + probe.bulk_bytes ||
        (probe.bulk_bytes & (PAGE - 1)) != 0 ||
        probe.total_bytes != PAGE + probe.rank_stride * probe.nranks ||
        probe.ring_bytes < 4096 || (probe.ring_bytes & (probe.ring_bytes - 1)) != 0 ||
        probe.medium_max > rqi_shm_medium_max(probe.ring_bytes, UINT64_MAX)) {
        snprintf(err, errlen, "descriptor %d is not a librq job of this version", fd);
        return RQ_EINVAL;
    }
    void *base = mmap(NULL, probe.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "mmap of %llu bytes: %s", (unsigned long long)probe.total_bytes,
                 strerror(errno));
        return RQ_ENOMEM;
    }
    shm->fd = fd;
    shm->base = base;
    shm->bytes = probe.total_bytes;
    shm->hdr = base;
    return 0;
}

void rqi_shm_detach(struct rqi_shm *shm)
{
    if (shm->base != NULL)
        munmap(shm->base, shm->bytes);
    if (shm->fd >= 0)
        close(shm->fd);
    memset(shm, 0, sizeof *shm);
    shm->fd = -1;
}

int rqi_peers_open(struct rqi_peers *pe, const struct rqi_shm *shm, int self)
{
    int n = (int)shm->hdr->nranks;
    pe->n = n;
    pe->pfd = calloc((size_t)n, sizeof *pe->pfd);
    pe->pid = calloc((size_t)n, sizeof *pe->pid);
    if (pe->pfd == NULL || pe->pid == NULL) {
        free(pe->pfd);
        free(pe->pid);
        pe->pfd = NULL;
        pe->pid = NULL;
        return RQ_ENOMEM;
    }
    for (int r = 0; r < n; r++) {
        /* Pairs with the owner's store_release(pid) before it attached. */
        pe->pid[r] = rqi_load_acquire(&rqi_shm_area(shm, (uint32_t)r)->pid);
        pe->pfd[r].fd = -1;
        pe->pfd[r].events = POLLIN;
        if (r != self && pe->pid[r] > 0)
            pe->pfd[r].fd = (int)syscall(SYS_pidfd_open, pe->pid[r], 0);
    }
    return 0;
}

static int departed(const struct rqi_shm *shm, int r)
{
    /* Pairs with the owner's store_release(departed) in rq_finalize. */
    return rqi_load_acquire(&rqi_shm_area(shm, (uint32_t)r)->departed) != 0;
}

int rqi_peers_check(const struct rqi_peers *pe, const struct rqi_shm *shm)
{
    /* A pidfd polls readable once its process has exited. */
    if (poll(pe->pfd, (nfds_t)pe->n, 0) > 0) {
        for (int r = 0; r < pe->n; r++)
            if (pe->pfd[r].fd >= 0 && (pe->pfd[r].revents & (POLLIN | POLLHUP)) &&
                !departed(shm, r))
                return r + 1;
    }
    return 0;
}

void rqi_peers_close(struct rqi_peers *pe)
{
    if (pe->pfd != NULL)
        for (int r = 0; r < pe->n; r++)
            if (pe->pfd[r].fd >= 0)
                close(pe->pfd[r].fd);
    free(pe->pfd);
    free(pe->pid);
    pe->pfd = NULL;
    pe->pid = NULL;
    pe->n = 0;
}

void rqi_bulk_make_resident(char *base, uint64_t size, uint64_t *resident, uint64_t end,
                            int write)
{
    uint64_t from = *resident;
    /* The hot window at once; past it (receivers lagging, large blocks)
     * a quarter window at a time, not a call per block. */
    uint64_t to = from + RQI_BULK_HOT / 4;
    if (to < RQI_BULK_HOT)
        to = RQI_BULK_HOT;
    if (to < end)
        to = end;
    to = round_up(to, PAGE);
    if (to > size)
        to = size;
    if (from >= to)
        return;
    *resident = to;
#ifdef MADV_POPULATE_WRITE
    if (madvise(base + from, to - from, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
        return;
#endif
    /* An older kernel: a read per page faults it in (for the sender too: a
     * shared mapping's read fault maps the page writable, no second
     * fault); nothing is written, so a receiver reading a live block is
     * not disturbed. */
    const volatile char *c = (const volatile char *)base;
    for (uint64_t off = from; off < to; off += PAGE)
        (void)c[off];
    (void)write;
}
