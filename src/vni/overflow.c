/* overflow.c - overflow control (FUGU thesis, section 5.2): coarse flow
 * control for a runaway job, through a control word apart from the data
 * lanes (the thesis's "second network").
 *
 *   Normal -> Overflow when some rank's virtual buffer holds more than
 *   RQ_OVERFLOW_BYTES while the node's MemAvailable is below
 *   RQ_OVERFLOW_FREE_BYTES: that rank joins the STOP set
 *   (hdr->overflow_ranks += 1, seq_cst) and counts an overflow_stop.
 *   Overflow -> Normal when every member's buffer has drained to empty:
 *   each leaves the set as its buffer empties (hdr->overflow_ranks -= 1).
 *
 * While the set is not empty, every send made outside a handler by a rank
 * that is not itself a member waits (rqi_overflow_wait) and consumes
 * meanwhile: it runs handlers when it is outside an atomicity section,
 * else drains its lanes into its own buffer.  Handler sends and members'
 * sends go on: they are how buffers drain, and stopping them could stop
 * the job for good.  The check sits on the send slow path (a full lane), so
 * a runaway sender is held within a lane's worth of packets per target
 * above the threshold (docs/delivery.md).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sys.h"
#include "am/am.h"
#include "ctx.h"
#include "deliver/deliver.h"

#define CHECK_INTERVAL_NS 1000000u /* read /proc/meminfo at most once per ms */


/* MemAvailable in bytes (the kernel's estimate of memory available
 * without swapping), or UINT64_MAX when it cannot be read. */
static uint64_t mem_available(void)
{
    char buf[4096];
    int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return UINT64_MAX;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return UINT64_MAX;
    buf[n] = '\0';
    const char *p = strstr(buf, "MemAvailable:");
    unsigned long long kb;
    if (p == NULL || sscanf(p + 13, "%llu", &kb) != 1)
        return UINT64_MAX;
    return (uint64_t)kb * 1024u;
}

int rqi_overflow_init(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    v->ovf_bytes = ctx->cfg.v[RQI_CFG_OVERFLOW_BYTES];
    v->ovf_free = ctx->cfg.v[RQI_CFG_OVERFLOW_FREE_BYTES];
    if (v->ovf_free == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        v->ovf_free = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 10u : 0;
    }
    ctx->vb.limit = ctx->cfg.v[RQI_CFG_VBUF_MAX];
    return 0;
}

void rqi_overflow_check(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    uint64_t t = rqi_mono_ns();
    if (v->ovf_member || t < v->ovf_next_check_ns)
        return;
    v->ovf_next_check_ns = t + CHECK_INTERVAL_NS;
    if (mem_available() >= v->ovf_free)
        return;
    v->ovf_member = 1;
    ctx->stats.overflow_stops++;
    atomic_fetch_add(&ctx->shm.hdr->overflow_ranks, 1u); /* STOP */
}

void rqi_overflow_leave(rq_ctx_t *ctx)
{
    if (!ctx->vni.ovf_member)
        return;
    ctx->vni.ovf_member = 0;
    ctx->vni.ovf_next_check_ns = 0;
    atomic_fetch_sub(&ctx->shm.hdr->overflow_ranks, 1u); /* RESUME once all left */
}

int rqi_overflow_wait(rq_ctx_t *ctx)
{
    unsigned spins = 0;
    while (rqi_load_relaxed(&ctx->shm.hdr->overflow_ranks) != 0 && !ctx->vni.ovf_member) {
        int n = 0;
        if (rqi_load_relaxed(&ctx->vni.atomic) == 0) {
            n = rqi_poll(ctx);
        } else {
            int rc = rqi_drain(ctx);
            if (rc != 0)
                return rc;
        }
        if (n > 0) {
            spins = 0;
            continue;
        }
        int rc = rqi_wait_step(ctx, &spins);
        if (rc != 0)
            return rc;
    }
    return 0;
}
