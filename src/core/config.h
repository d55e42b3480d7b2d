/* config.h - RQ_* environment variables: one table, parsed once.
 * Leaf module: depends on nothing else in librq. */
#ifndef RQI_CONFIG_H
#define RQI_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum rqi_cfg_id {
    RQI_CFG_RING_BYTES,
    RQI_CFG_LANES,
    RQI_CFG_MEDIUM_MAX,
    RQI_CFG_SEGMENT_SIZE,
    RQI_CFG_POLL_BATCH,
    RQI_CFG_SPIN_COUNT,
    RQI_CFG_PEER_CHECK_MS,
    RQI_CFG_INIT_TIMEOUT_MS,
    RQI_CFG_VBUF_CHUNK_BYTES,
    RQI_CFG_KILL_GRACE_MS,
    RQI_CFG_GAS_STRATEGY,
    RQI_CFG_NP_SPIN_US,
    RQI_CFG_NP_CPU_OFFSET,
    RQI_CFG_NP_CORE,
    RQI_CFG_NP_TICK_US,
    RQI_CFG_ATOMIC_TIMEOUT_US,
    RQI_CFG_VBUF_MAX,
    RQI_CFG_OVERFLOW_BYTES,
    RQI_CFG_OVERFLOW_FREE_BYTES,
    RQI_CFG_OVERFLOW_HIGH_BYTES,
    RQI_CFG_THREAD_SAFE,
    RQI_CFG_PDQ_WINDOW,
    RQI_CFG_PDQ_SPIN_US,
    RQI_CFG_PDQ_FALLBACK_US,
    RQI_CFG_PDQ_BIND,
    RQI_CFG_TRANSPORT,
    RQI_CFG_UCX_EAGER_MAX,
    RQI_CFG_UCX_INFLIGHT,
    RQI_CFG_YIELD_IDLE,
    RQI_CFG_BULK_BYTES,
    RQI_CFG_BULK_STREAM,
    RQI_CFG_ASYNC_MIN,
    RQI_CFG_ASYNC_PULL,
    RQI_CFG_BUFFER_ALWAYS,
    RQI_CFG_BUFFER_DELAY_NS,
    RQI_CFG_PROMOTE_THREADS,
    RQI_CFG_PROMOTE_SPIN_US,
    RQI_CFG_COUNT
};

struct rqi_cfg_var {
    const char *name;      /* environment variable */
    uint64_t    def;       /* default */
    uint64_t    min, max;  /* accepted range (inclusive) */
    int         pow2;      /* must be a power of two */
    const char *help;
    const char *const *names; /* non-NULL: a choice; the value is an index
                                 into this NULL-terminated list */
};

/* RQ_GAS_STRATEGY values (see rq.h, global address space). */
enum { RQI_GAS_DIRECT = 0, RQI_GAS_NP = 1, RQI_GAS_PROC = 2 };
/* RQ_NP_CORE values: whether the np thread has a core of its own (it spins
 * when idle and senders wake it) or shares its rank's (it wakes on a tick;
 * the rank's main thread serves whenever it is inside librq). */
enum { RQI_NP_CORE_AUTO = 0, RQI_NP_CORE_OWN = 1, RQI_NP_CORE_SHARED = 2 };
/* RQ_YIELD_IDLE values: whether non-blocking receive calls give the CPU
 * away after RQ_SPIN_COUNT empty calls in a row. */
enum { RQI_YIELD_AUTO = 0, RQI_YIELD_NEVER = 1, RQI_YIELD_ALWAYS = 2 };
/* RQ_BULK_STREAM values: how a large payload is copied (core/copy.h). */
enum { RQI_STREAM_AUTO = 0, RQI_STREAM_NEVER = 1, RQI_STREAM_ALWAYS = 2 };
/* RQ_ASYNC_PULL values: who copies a large rq_request_long_nb. */
enum { RQI_PULL_ON = 0, RQI_PULL_OFF = 1, RQI_PULL_REFUSE = 2 };
/* RQI_CFG_PDQ_BIND: where a PDQ's threads run (pdq/pdq.c). */
enum { RQI_PDQ_BIND_SPREAD = 0, RQI_PDQ_BIND_NONE = 1 };
/* RQ_TRANSPORT values: how a rank reaches a peer. */
enum { RQI_TRANSPORT_AUTO = 0, RQI_TRANSPORT_SHM = 1, RQI_TRANSPORT_UCX = 2 };

/* The table, indexed by enum rqi_cfg_id. */
extern const struct rqi_cfg_var rqi_cfg_vars[RQI_CFG_COUNT];

/* Parsed values, indexed by enum rqi_cfg_id. */
struct rqi_config {
    uint64_t v[RQI_CFG_COUNT];
    uint64_t set; /* bit i: variable i came from the environment */
};
_Static_assert(RQI_CFG_COUNT <= 64, "one bit of rqi_config.set per variable");

/* Read every variable from the environment into cfg.  Numbers accept the
 * suffixes k/K, m/M, g/G (powers of 1024).  On a malformed or out-of-range
 * value: writes a message naming the variable into err (errlen bytes) and
 * returns -1; else 0. */
int rqi_config_load(struct rqi_config *cfg, char *err, size_t errlen);

/* Parse one number as rqi_config_load does; 0 ok, -1 malformed. */
int rqi_config_parse_u64(const char *s, uint64_t *out);

/* Parse the text s of variable var (a number, or one of its names) and
 * check its range.  0 ok; else -1 and a message naming var in err. */
int rqi_config_parse_var(const struct rqi_cfg_var *var, const char *s, uint64_t *out,
                         char *err, size_t errlen);

/* Write value v of var as text (a name for a choice) into buf. */
void rqi_config_format(const struct rqi_cfg_var *var, uint64_t v, char *buf, size_t len);

/* Variables that the launcher sets for each rank (documented, not tunable). */
#define RQI_ENV_RANK   "RQ_RANK"
#define RQI_ENV_SIZE   "RQ_SIZE"
#define RQI_ENV_JOB_FD "RQ_JOB_FD"
/* Read as a string (PMIx launch): the node this rank counts as on. */
#define RQI_ENV_NODE_ID "RQ_NODE_ID"
/* Read as a string: the file overflow control reads MemAvailable from. */
#define RQI_ENV_OVERFLOW_MEMINFO "RQ_OVERFLOW_MEMINFO"
#define RQI_OVERFLOW_MEMINFO_DEFAULT "/proc/meminfo"

#endif
