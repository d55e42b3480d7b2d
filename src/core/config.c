/* config.c - RQ_* environment variables with documented defaults. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB (1024ull)
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

static const char *const gas_strategies[] = {"direct", "np", "proc", NULL};
static const char *const transports[] = {"auto", "shm", "ucx", NULL};
static const char *const np_cores[] = {"auto", "own", "shared", NULL};
static const char *const yield_modes[] = {"auto", "never", "always", NULL};
static const char *const pull_modes[] = {"on", "off", "refuse", NULL};
static const char *const stream_modes[] = {"auto", "never", "always", NULL};
static const char *const pdq_binds[] = {"spread", "none", NULL};

const struct rqi_cfg_var rqi_cfg_vars[RQI_CFG_COUNT] = {
    [RQI_CFG_RING_BYTES] = {"RQ_RING_BYTES", 256 * KiB, 4 * KiB, 1 * GiB, 1,
        "bytes of each inbound lane (64-byte slots; power of two)", NULL},
    [RQI_CFG_LANES] = {"RQ_LANES", 0, 0, 16, 0,
        "inbound lanes per rank (0: one per rank on the node, up to 16; at most the node's "
        "ranks); a lane with one sender needs no locked instruction", NULL},
    [RQI_CFG_MEDIUM_MAX] = {"RQ_MEDIUM_MAX", 16 * KiB, 64, 256 * MiB, 0,
        "largest payload read in place in the lane; capped at ring/4 minus a header; larger ones "
        "are staged (RQ_BULK_BYTES: one copy, read in place), or fragmented when larger than "
        "the staging area", NULL},
    [RQI_CFG_SEGMENT_SIZE] = {"RQ_SEGMENT_SIZE", 64 * MiB, 0, 64 * GiB, 0,
        "bytes of each rank's global-address segment (rounded up to a page)", NULL},
    [RQI_CFG_POLL_BATCH] = {"RQ_POLL_BATCH", 64, 1, 1u << 20, 0,
        "most handlers one rq_poll runs", NULL},
    [RQI_CFG_SPIN_COUNT] = {"RQ_SPIN_COUNT", 128, 0, 1u << 30, 0,
        "empty polls a blocking call spins before it yields the CPU; also the empty receive "
        "calls in a row before RQ_YIELD_IDLE yields", NULL},
    [RQI_CFG_PEER_CHECK_MS] = {"RQ_PEER_CHECK_MS", 10, 1, 60000, 0,
        "how often a blocked call checks that its peers are alive", NULL},
    [RQI_CFG_INIT_TIMEOUT_MS] = {"RQ_INIT_TIMEOUT_MS", 60000, 1, 3600000, 0,
        "how long rq_init waits for every rank to attach", NULL},
    [RQI_CFG_VBUF_CHUNK_BYTES] = {"RQ_VBUF_CHUNK_BYTES", 64 * KiB, 4 * KiB, 1 * GiB, 0,
        "allocation unit of the virtual buffer (demand-allocated)", NULL},
    [RQI_CFG_KILL_GRACE_MS] = {"RQ_KILL_GRACE_MS", 1000, 0, 600000, 0,
        "rqrun: after a rank fails, SIGTERM the others, SIGKILL them after this", NULL},
    [RQI_CFG_GAS_STRATEGY] = {"RQ_GAS_STRATEGY", RQI_GAS_DIRECT, 0, 2, 0,
        "who moves global-address data: direct (the initiator, through the mapped segment), "
        "np (a progress thread per rank), proc (the target's thread when it polls)",
        gas_strategies},
    [RQI_CFG_NP_SPIN_US] = {"RQ_NP_SPIN_US", 50, 0, 1000000, 0,
        "np strategy: microseconds the progress thread polls an idle job before it sleeps", NULL},
    [RQI_CFG_NP_CPU_OFFSET] = {"RQ_NP_CPU_OFFSET", 0, 0, 4096, 0,
        "np strategy: run the progress thread this many CPUs after its rank's CPU "
        "(0: wherever the rank may run, sharing its core when bound)", NULL},
    [RQI_CFG_NP_CORE] = {"RQ_NP_CORE", RQI_NP_CORE_AUTO, 0, 2, 0,
        "np strategy: own (the progress thread has a core: it spins RQ_NP_SPIN_US when idle "
        "and senders wake it), shared (it shares its rank's: it wakes every RQ_NP_TICK_US, "
        "and the rank serves requests whenever it is inside librq, as under proc), auto "
        "(own when RQ_NP_CPU_OFFSET is set or the node has a CPU for every rank and every "
        "progress thread, else shared)", np_cores},
    [RQI_CFG_NP_TICK_US] = {"RQ_NP_TICK_US", 1000, 10, 1000000, 0,
        "np strategy, shared core: how often the progress thread wakes to serve requests "
        "its rank left waiting while computing outside librq", NULL},
    [RQI_CFG_ATOMIC_TIMEOUT_US] = {"RQ_ATOMIC_TIMEOUT_US", 1000, 0, 60000000, 0,
        "atomicity timer: a blocked sender's target that has not drained its inbound lanes "
        "for this long has them moved into its virtual buffer by its progress thread (0: never)", NULL},
    [RQI_CFG_VBUF_MAX] = {"RQ_VBUF_MAX", 0, 0, UINT64_MAX, 0,
        "most bytes a rank's virtual buffer may hold (0: unlimited); beyond it packets stay "
        "in the lanes and senders wait", NULL},
    [RQI_CFG_OVERFLOW_BYTES] = {"RQ_OVERFLOW_BYTES", 64 * MiB, 4 * KiB, UINT64_MAX, 0,
        "overflow control: a virtual buffer above this while the node is low on memory "
        "stops the job's senders, on every node, until the buffers drain or memory recovers", NULL},
    [RQI_CFG_OVERFLOW_FREE_BYTES] = {"RQ_OVERFLOW_FREE_BYTES", 0, 0, UINT64_MAX, 0,
        "overflow control: the node is low on memory below this much MemAvailable "
        "(0: a tenth of physical memory)", NULL},
    [RQI_CFG_OVERFLOW_HIGH_BYTES] = {"RQ_OVERFLOW_HIGH_BYTES", 0, 0, UINT64_MAX, 0,
        "overflow control: a rank in overflow lifts its STOP once MemAvailable rises above this, "
        "drained or not (0: twice RQ_OVERFLOW_FREE_BYTES; below it rq_init fails)", NULL},
    [RQI_CFG_THREAD_SAFE] = {"RQ_THREAD_SAFE", 0, 0, 1, 0,
        "1: every call may come from any thread (a context lock); on by itself once a PDQ is open", NULL},
    [RQI_CFG_PDQ_WINDOW] = {"RQ_PDQ_WINDOW", 64, 1, 65536, 0,
        "PDQ search window: queued messages of busy keys dispatch goes around (when rq_pdq_attr.window is 0; unset: 64 or 32 per PDQ thread, whichever is more)", NULL},
    [RQI_CFG_PDQ_SPIN_US] = {"RQ_PDQ_SPIN_US", 50, 0, 1000000, 0,
        "how long an idle PDQ thread looks for work before it sleeps (stuck behind busy keys, or beside a solo run: how long it sleeps between looks)", NULL},
    [RQI_CFG_PDQ_FALLBACK_US] = {"RQ_PDQ_FALLBACK_US", 200, 0, 60000000, 0,
        "multiplexed PDQ: how long messages wait for rq_pdq_help before a fallback thread runs them "
        "(up to 4x this after helpers that kept calling stop)", NULL},
    [RQI_CFG_PDQ_BIND] = {"RQ_PDQ_BIND", RQI_PDQ_BIND_SPREAD, 0, 1, 0,
        "where a PDQ's threads run: spread (each on one CPU of the opening thread's allowed set, "
        "thread i of this node's k-th rank at place k * threads + i, round the set; a set of one "
        "CPU is left as it is), none (wherever the opening thread may run)", pdq_binds},
    [RQI_CFG_TRANSPORT] = {"RQ_TRANSPORT", RQI_TRANSPORT_AUTO, 0, 2, 0,
        "how ranks started by mpirun/srun reach each other: auto (shared memory on the same node, "
        "UCX across nodes), shm (one node only), ucx (UCX for every other rank)", transports},
    [RQI_CFG_UCX_EAGER_MAX] = {"RQ_UCX_EAGER_MAX", 8 * KiB, 0, 1 * GiB, 0,
        "UCX: payloads up to this go eagerly (copied); larger ones by rendezvous, "
        "zero-copy into the receiver's buffer", NULL},
    [RQI_CFG_UCX_INFLIGHT] = {"RQ_UCX_INFLIGHT", 1024, 1, 1u << 20, 0,
        "UCX: eager sends the network has not yet taken (each holds a copy); "
        "beyond this a sender drains and waits", NULL},
    [RQI_CFG_YIELD_IDLE] = {"RQ_YIELD_IDLE", RQI_YIELD_AUTO, 0, 2, 0,
        "whether rq_poll, rq_peek, rq_peek_n and rq_dequeue give the CPU away (sched_yield) once "
        "RQ_SPIN_COUNT calls in a row found nothing: auto (when this node runs more ranks than "
        "it has CPUs), never, always", yield_modes},
    [RQI_CFG_BULK_BYTES] = {"RQ_BULK_BYTES", 256 * MiB, 0, 64 * GiB, 0,
        "bytes of each rank's staging area for medium payloads above rq_medium_max (one copy, "
        "read in place); payloads larger than it (minus 64) are fragmented; 0: always fragment",
        NULL},
    [RQI_CFG_BULK_STREAM] = {"RQ_BULK_STREAM", RQI_STREAM_AUTO, 0, 2, 0,
        "how a staged medium payload is copied into the staging area: auto (from 8 MiB up "
        "non-temporal stores; below, per receiver, whichever of memcpy and non-temporal stores "
        "has lately cost this sender less, memcpy unless streaming costs under a quarter), "
        "never (memcpy), always (non-temporal stores)", stream_modes},
    [RQI_CFG_ASYNC_MIN] = {"RQ_ASYNC_MIN", 64 * KiB, 0, UINT64_MAX, 0,
        "non-blocking transfers (rq_put_nb, rq_get_nb, rq_request_long_nb) of at least this many "
        "bytes to another rank of this node are copied by the rank's copy thread (and by the "
        "caller while it waits); smaller ones at the call", NULL},
    [RQI_CFG_ASYNC_PULL] = {"RQ_ASYNC_PULL", RQI_PULL_ON, 0, 2, 0,
        "who copies a non-blocking long request of RQ_ASYNC_MIN bytes or more to a rank of this "
        "node: on (the target, reading the initiator's memory as it polls; cross-memory attach), "
        "off (the initiator's copy thread), refuse (targets refuse: tests the fallback)",
        pull_modes},
    [RQI_CFG_BUFFER_ALWAYS] = {"RQ_BUFFER_ALWAYS", 0, 0, 1, 0,
        "measurement aid (FUGU Figure 7-2): 1 delivers every received packet through the "
        "virtual buffer, as if the receiver were never there (a copy per packet)", NULL},
    [RQI_CFG_BUFFER_DELAY_NS] = {"RQ_BUFFER_DELAY_NS", 0, 0, 1000000, 0,
        "measurement aid (FUGU Figure 7-22): spin this many ns for every packet put into "
        "the virtual buffer, a slower buffered path", NULL},
    [RQI_CFG_PROMOTE_THREADS] = {"RQ_PROMOTE_THREADS", 32, 1, 4096, 0,
        "most threads of the pool that runs promoted handlers (rq_handler_promote); started on "
        "demand, beyond it promoted parts wait their turn", NULL},
    [RQI_CFG_PROMOTE_SPIN_US] = {"RQ_PROMOTE_SPIN_US", 50, 0, 1000000, 0,
        "how long an idle promotion thread looks for work (yielding the CPU) before it sleeps",
        NULL},
};

int rqi_config_parse_u64(const char *s, uint64_t *out)
{
    /* One rule for both ends: digits first, nothing after the number but
     * its suffix (strtoull alone would skip leading blanks and take a sign,
     * so " 64" and " -1" passed where "64 " did not). */
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || end == s)
        return -1;
    uint64_t mul = 1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mul = KiB; end++; break;
    case 'm': case 'M': mul = MiB; end++; break;
    case 'g': case 'G': mul = GiB; end++; break;
    default: return -1;
    }
    if (*end != '\0')
        return -1;
    if (mul != 1 && v > UINT64_MAX / mul)
        return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

int rqi_config_parse_var(const struct rqi_cfg_var *var, const char *s, uint64_t *out,
                         char *err, size_t errlen)
{
    uint64_t v = var->def;
    int named = 0;
    for (unsigned k = 0; var->names != NULL && var->names[k] != NULL; k++)
        if (s != NULL && strcmp(s, var->names[k]) == 0) {
            v = k;
            named = 1;
        }
    if (s != NULL && !named && rqi_config_parse_u64(s, &v) != 0) {
        snprintf(err, errlen, "%s=\"%s\" is not %s", var->name, s,
                 var->names != NULL ? "one of its names" : "a number");
        return -1;
    }
    if (v < var->min || v > var->max) {
        snprintf(err, errlen, "%s=%llu is outside [%llu, %llu]", var->name,
                 (unsigned long long)v, (unsigned long long)var->min,
                 (unsigned long long)var->max);
        return -1;
    }
    if (var->pow2 && (v & (v - 1)) != 0) {
        snprintf(err, errlen, "%s=%llu is not a power of two", var->name,
                 (unsigned long long)v);
        return -1;
    }
    *out = v;
    return 0;
}

void rqi_config_format(const struct rqi_cfg_var *var, uint64_t v, char *buf, size_t len)
{
    if (var->names != NULL && v <= var->max)
        snprintf(buf, len, "%s", var->names[v]);
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
}

int rqi_config_load(struct rqi_config *cfg, char *err, size_t errlen)
{
    cfg->set = 0;
    for (int i = 0; i < RQI_CFG_COUNT; i++) {
        const struct rqi_cfg_var *var = &rqi_cfg_vars[i];
        const char *s = getenv(var->name);
        if (rqi_config_parse_var(var, s, &cfg->v[i], err, errlen) != 0)
            return -1;
        if (s != NULL && *s != '\0')
            cfg->set |= 1ull << i;
    }
    return 0;
}
