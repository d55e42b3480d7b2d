/* overflow.c - overflow control (FUGU thesis, section 5.2): coarse flow
 * control for a runaway job, through control words apart from the data
 * lanes (the thesis's "second network").
 *
 *   Normal -> Overflow (eq. 5.2) when some rank's virtual buffer holds
 *   more than RQ_OVERFLOW_BYTES while its node's MemAvailable is below
 *   RQ_OVERFLOW_FREE_BYTES (the low-water mark): that rank joins the STOP
 *   set and counts an overflow_stop.
 *   Overflow -> Normal (eq. 5.3) once every member has left; a member
 *   leaves when its buffer is empty, or when its node's MemAvailable has
 *   risen above RQ_OVERFLOW_HIGH_BYTES (the high-water mark: memory is no
 *   longer short, so buffering may go on; the buffer must pass the
 *   threshold again while memory is low to stop the job again).
 *
 * THE STOP WORD  Every rank's area holds `stop` (net/shm.h): how many
 *   members of the set it must honour.  Joining adds 1 to the word of
 *   every other rank of the job, on every node: a seq_cst RMW for a rank
 *   of this node, a UCP atomic (net/ucx.h) for the others; leaving takes
 *   1 back the same way.  Adds and takes commute, so a take that overtakes
 *   its add across the network leaves the word transiently nonzero (a
 *   brief extra STOP), never wrong for good.  A rank's sends read its own
 *   word, relaxed: it is a signal, no data hangs on it.  The member's own
 *   state (vni.ovf_member) is the context owner's; the progress thread
 *   reads it relaxed to decide whether to look at memory, and acts only
 *   after claiming the context.
 *
 * While a rank's word is nonzero, every send it makes outside a handler,
 * unless it is itself a member, waits (rqi_overflow_wait) and consumes
 * meanwhile: it runs handlers when it is outside an atomicity section,
 * else drains its lanes into its own buffer.  Handler sends and members'
 * sends go on: they are how buffers drain, and stopping them could stop
 * the job for good.  Every send looks (a load of our own line): a
 * receiver that buffers as fast as its senders send never lets a lane
 * fill, so a check on a full lane alone would hold nobody.  What gets
 * through after STOP is what was committed before it: the lanes' and, to
 * another node, the network's own buffering (delivery.md: the bound).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sys.h"
#include "net/net.h"
#include "ctx.h"
#include "net/ucx.h"

#define CHECK_INTERVAL_NS 1000000u /* read /proc/meminfo at most once per ms */

/* MemAvailable in bytes (the kernel's estimate of memory available
 * without swapping) from path (/proc/meminfo or RQ_OVERFLOW_MEMINFO), or
 * UINT64_MAX when it cannot be read. */
static uint64_t mem_available(const char *path)
{
    char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
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
    const char *mi = getenv(RQI_ENV_OVERFLOW_MEMINFO);
    if (mi == NULL || *mi == '\0')
        mi = RQI_OVERFLOW_MEMINFO_DEFAULT;
    else if (strlen(mi) >= sizeof v->ovf_meminfo || mem_available(mi) == UINT64_MAX) {
        fprintf(stderr, "librq: %s=\"%s\" is not a readable file with a MemAvailable line\n",
                RQI_ENV_OVERFLOW_MEMINFO, mi);
        return RQ_EINVAL;
    }
    snprintf(v->ovf_meminfo, sizeof v->ovf_meminfo, "%s", mi);
    v->ovf_bytes = ctx->cfg.v[RQI_CFG_OVERFLOW_BYTES];
    v->ovf_free = ctx->cfg.v[RQI_CFG_OVERFLOW_FREE_BYTES];
    v->ovf_high = ctx->cfg.v[RQI_CFG_OVERFLOW_HIGH_BYTES];
    if (v->ovf_free == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        v->ovf_free = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 10u : 0;
    }
    if (v->ovf_high == 0)
        v->ovf_high = v->ovf_free > UINT64_MAX / 2 ? UINT64_MAX : 2 * v->ovf_free;
    if (v->ovf_high < v->ovf_free) {
        fprintf(stderr, "librq: RQ_OVERFLOW_HIGH_BYTES (%llu) is below the low-water mark "
                        "RQ_OVERFLOW_FREE_BYTES (%llu)\n",
                (unsigned long long)v->ovf_high, (unsigned long long)v->ovf_free);
        return RQ_EINVAL;
    }
    ctx->vb.limit = ctx->cfg.v[RQI_CFG_VBUF_MAX];
    return 0;
}

/* Add delta to the STOP word of every other rank of the job. */
static void stop_all(rq_ctx_t *ctx, uint64_t delta)
{
    for (int r = 0; r < ctx->size; r++) {
        if (r == ctx->rank)
            continue;
        if (ctx->remote[r])
            (void)ctx->net->stop_add(ctx, r, delta); /* a failure fails the job */
        else
            atomic_fetch_add(&rqi_shm_area(&ctx->shm, (uint32_t)r)->vni.stop, delta);
    }
}

static void leave(rq_ctx_t *ctx)
{
    rqi_store_relaxed(&ctx->vni.ovf_member, 0);
    ctx->vni.ovf_next_check_ns = 0;
    stop_all(ctx, UINT64_MAX); /* RESUME once every member has left */
}

int rqi_overflow_memory_high(const rq_ctx_t *ctx)
{
    return mem_available(ctx->vni.ovf_meminfo) > ctx->vni.ovf_high;
}

void rqi_overflow_high_exit(rq_ctx_t *ctx)
{
    if (!rqi_load_relaxed(&ctx->vni.ovf_member))
        return;
    ctx->vni.ovf_high_exits++;
    leave(ctx);
}

void rqi_overflow_check(rq_ctx_t *ctx)
{
    struct rqi_vni *v = &ctx->vni;
    uint64_t t = rqi_mono_ns();
    if (t < v->ovf_next_check_ns)
        return;
    v->ovf_next_check_ns = t + CHECK_INTERVAL_NS;
    uint64_t avail = mem_available(v->ovf_meminfo);
    if (rqi_load_relaxed(&v->ovf_member)) {
        if (avail > v->ovf_high)
            rqi_overflow_high_exit(ctx);
        return;
    }
    if (ctx->vb.bytes_now <= v->ovf_bytes || avail >= v->ovf_free)
        return;
    rqi_store_relaxed(&v->ovf_member, 1);
    ctx->stats.overflow_stops++;
    stop_all(ctx, 1); /* STOP */
    /* Our progress thread may sleep with no timeout: from now on it
     * watches for the high-water mark. */
    if (v->on && !rqi_vni_on_progress)
        rqi_vni_ring(ctx, ctx->rank, RQI_BELL_OVERFLOW);
}

void rqi_overflow_leave(rq_ctx_t *ctx)
{
    if (rqi_load_relaxed(&ctx->vni.ovf_member))
        leave(ctx);
}
