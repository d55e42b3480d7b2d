/* shm.h - the job segment shared by the ranks of one node.
 *
 * One memfd per job, created by the launcher (rqrun) or by a 1-rank job
 * itself, inherited by the ranks as a file descriptor.  A memfd has no
 * name in /dev/shm, so no exit path - SIGKILL included - leaves anything
 * behind: the memory goes when the last rank unmaps it.  Owner-only by
 * construction (it is reachable only through the inherited descriptor).
 *
 * Layout (every offset page aligned):
 *   [job header page]
 *   rank r at ranks_off + r * rank_stride:
 *     [control area, two pages: tail and head of each ring, pid, departed,
 *      the global-address counters]
 *     [store counters: one cache line per source rank (ctr_bytes): the
 *      bytes each source has stored into r, written by that source alone
 *      (or by r's server on its behalf), so no line has two writers]
 *     [inbound lanes: nlanes * ring_bytes]
 *     [global-address rings: nlanes request rings, then nlanes reply
 *      rings, gas_ring_bytes each (rqi_shm_gas_ring_bytes: 2 / nlanes of
 *      a lane, within a quarter and a whole one);
 *      a sender uses the ring of its lane, so they have one producer each
 *      up to 16 ranks per node, as the lanes]
 *     [segment: seg_bytes]
 *     [staging area: bulk_bytes, written by this rank only (net/shm_bulk.h)]
 * Per-receiver memory is nlanes lanes and 2 * nlanes global-address rings
 * (24 lanes' worth at most, with 16 lanes) and one line per rank of the
 * job, whatever the number of ranks
 * (docs/design-shm.md, "Lanes and memory").  The global-address rings
 * carry the np and proc strategies' requests and replies
 * (src/gas/gas_proto.c); under the direct strategy their pages are never
 * touched, so never allocated.
 *
 * ORDERING: header fields are written by the creator before any rank is
 * started (fork/exec orders them).  attached/departed are counters every
 * rank bumps with a seq_cst RMW and others read with acquire; pid is
 * stored by its owner with release before it bumps attached, so a rank
 * that acquires attached == nranks sees every pid.  failed is set (release)
 * by rqrun or a rank and polled (acquire) by blocking calls.
 */
#ifndef RQI_SHM_H
#define RQI_SHM_H

#include <stdint.h>
#include <stddef.h>
#include <poll.h>
#include <sys/types.h>

#include "core/config.h"
#include "core/jobid.h"
#include "net/shm_ring.h"

#define RQI_JOB_MAGIC   0x31424f4a2d5152ull /* "RQ-JOB1" */
#define RQI_JOB_VERSION 9u
#define RQI_MAX_RANKS   4096u
#define RQI_MAX_LANES   16u
#define RQI_CTRL_BYTES  8192u /* a rank's control area (struct rqi_rank_area) */
/* Global-address ring kinds; a rank has nlanes rings of each. */
enum { RQI_GAS_REQ = 0, RQI_GAS_REP = 1, RQI_GAS_KINDS = 2 };

struct rqi_job_hdr {
    uint64_t magic;
    uint32_t version;
    uint32_t nranks;
    uint64_t job_id;
    uint64_t ring_bytes;   /* per lane */
    uint64_t gas_ring_bytes; /* per global-address ring: rqi_shm_gas_ring_bytes */
    uint32_t nlanes;       /* lanes per rank: rqi_shm_lanes(RQ_LANES, nlocal) */
    uint32_t nlocal;       /* ranks that attach here (the others are on
                              other nodes; their areas are never touched) */
    uint64_t seg_bytes;
    uint64_t bulk_bytes;   /* staging area per rank (multiple of a page) */
    uint64_t ctr_bytes;    /* store counters per rank: nranks lines, page-rounded */
    uint64_t medium_max;
    uint64_t rank_stride;
    uint64_t ranks_off;
    uint64_t total_bytes;
    _Alignas(RQI_CACHELINE) _Atomic uint32_t attached;
    _Atomic uint32_t failed; /* nonzero: the job is failing; stop waiting */
    _Atomic uint32_t first_dead; /* rank + 1 of the first rank seen dead (CAS from 0) */
    /* The control channel of the virtual network interface, apart from the
     * data lanes (src/vni/vni.h): read by every send, written rarely. */
    _Alignas(RQI_CACHELINE) _Atomic uint32_t intr_ranks; /* ranks with interrupts on */
};

/* A rank's progress-thread doorbell and interrupt mode (src/vni/vni.h). */
struct rqi_vni_area {
    _Alignas(RQI_CACHELINE) _Atomic uint32_t bell; /* futex word: RQI_BELL_* bits pending */
    _Atomic uint32_t sleeping;                     /* 1: the progress thread may be asleep */
    _Alignas(RQI_CACHELINE) _Atomic uint32_t intr_mode; /* RQ_INTR_*; read by senders */
    _Alignas(RQI_CACHELINE) _Atomic uint64_t pdq_idle;  /* bit q: qid q's PDQ threads all
                                                           sleep; senders ring RQI_BELL_PDQ */
    _Atomic uint64_t pdq_rung;                          /* bit q: a sender rang for that sleep
                                                           (cleared as the next one arms) */
    _Atomic uint32_t pdq_mb;  /* 1: this rank's sleepers issue a global membarrier
                                 (set at rq_init, before any PDQ): registered
                                 senders need no fence (rqi_vni_pdq_sent) */
    /* Overflow control's STOP (src/vni/overflow.c): how many ranks of the
     * job are in overflow.  Every member adds 1 here for every other rank
     * (a plain atomic on this node, a UCP atomic from another: the area is
     * registered), and takes it back when it leaves; this rank's own
     * sends read it.  64-bit: UCX's atomics are. */
    _Alignas(RQI_CACHELINE) _Atomic uint64_t stop;
    _Alignas(RQI_CACHELINE) char end_[1];
};

/* Global-address words of one rank (see src/gas/gas.h for who writes
 * them and how they are ordered); the bytes stored into it are counted
 * per source (rqi_shm_stored), apart from these. */
struct rqi_gas_area {
    _Alignas(RQI_CACHELINE) _Atomic uint32_t np_sleep; /* futex word: 1 = np asleep */
    _Alignas(RQI_CACHELINE) char end_[1];
};

struct rqi_rank_area {
    struct rqi_ring_ctrl ring[RQI_MAX_LANES];
    struct rqi_ring_ctrl gas_ring[RQI_GAS_KINDS][RQI_MAX_LANES];
    _Alignas(RQI_CACHELINE) _Atomic int32_t pid;
    _Atomic uint32_t departed; /* set by its owner after rq_finalize's barrier */
    struct rqi_gas_area gas;
    struct rqi_vni_area vni;
};

struct rqi_shm {
    int                 fd;
    char               *base;
    size_t              bytes;
    struct rqi_job_hdr *hdr;
};

/* Largest in-place payload for a ring of ring_bytes (cfg_max capped). */
uint64_t rqi_shm_medium_max(uint64_t ring_bytes, uint64_t cfg_max);
/* Inbound lanes per rank for RQ_LANES = cfg_lanes and nlocal ranks on the
 * node: one per local rank up to RQI_MAX_LANES when cfg_lanes is 0 (the
 * default), else cfg_lanes; never more than nlocal. */
uint32_t rqi_shm_lanes(uint64_t cfg_lanes, uint32_t nlocal);
/* Bytes of each global-address ring for nlanes lanes of ring_bytes: a
 * rank's 2 * nlanes of them take about two lanes' worth (a whole lane each
 * with 2 lanes, a quarter from 8 lanes up), at least 4 KiB; a power of
 * two.  A request carries at most a quarter of its ring. */
uint64_t rqi_shm_gas_ring_bytes(uint64_t ring_bytes, uint32_t nlanes);

/* A fresh random job id (never 0): the job key packets carry. */

/* Create and size a job memfd for nranks from cfg and write its header:
 * nlocal of them attach to it (nranks on one node); job_id 0 draws a new
 * one.  Returns the descriptor (close-on-exec set) or -errno. */
int rqi_shm_create(const struct rqi_config *cfg, uint32_t nranks, uint32_t nlocal,
                   uint64_t job_id, char *err, size_t errlen);

/* Map the job behind fd and check its header.  0 or an RQ_E* code. */
int rqi_shm_attach(int fd, struct rqi_shm *shm, char *err, size_t errlen);
void rqi_shm_detach(struct rqi_shm *shm);

static inline struct rqi_rank_area *rqi_shm_area(const struct rqi_shm *s, uint32_t r)
{
    return (struct rqi_rank_area *)(s->base + s->hdr->ranks_off + r * s->hdr->rank_stride);
}
/* The count of bytes rank src has stored into rank r (its own line). */
static inline _Atomic uint64_t *rqi_shm_stored(const struct rqi_shm *s, uint32_t r, uint32_t src)
{
    return (_Atomic uint64_t *)((char *)rqi_shm_area(s, r) + RQI_CTRL_BYTES +
                                (uint64_t)src * RQI_CACHELINE);
}
static inline char *rqi_shm_lane(const struct rqi_shm *s, uint32_t r, uint32_t lane)
{
    return (char *)rqi_shm_area(s, r) + RQI_CTRL_BYTES + s->hdr->ctr_bytes +
           lane * s->hdr->ring_bytes;
}
/* Rank r's global-address ring of kind k (RQI_GAS_REQ, RQI_GAS_REP) for
 * the senders of lane l. */
static inline char *rqi_shm_gas_ring(const struct rqi_shm *s, uint32_t r, uint32_t k, uint32_t l)
{
    return rqi_shm_lane(s, r, s->hdr->nlanes) + (k * s->hdr->nlanes + l) * s->hdr->gas_ring_bytes;
}
static inline char *rqi_shm_segment(const struct rqi_shm *s, uint32_t r)
{
    return rqi_shm_gas_ring(s, r, RQI_GAS_KINDS, 0);
}
/* Rank r's staging area for large medium payloads (net/shm_bulk.h). */
static inline char *rqi_shm_bulk(const struct rqi_shm *s, uint32_t r)
{
    return rqi_shm_segment(s, r) + s->hdr->seg_bytes;
}
_Static_assert(sizeof(struct rqi_rank_area) <= RQI_CTRL_BYTES, "rank control fits its area");

/* Record rank as the job's first dead rank unless one is already known. */
static inline void rqi_shm_note_dead(struct rqi_job_hdr *h, uint32_t rank)
{
    uint32_t none = 0;
    atomic_compare_exchange_strong(&h->first_dead, &none, rank + 1);
}

/* Liveness of the peers, by pidfd (never by touching their memory). */
struct rqi_peers {
    int            n;
    struct pollfd *pfd; /* pidfds; fd -1 for self or where pidfd_open failed */
    pid_t         *pid;
};
int  rqi_peers_open(struct rqi_peers *pe, const struct rqi_shm *shm, int self);
/* 0 when every peer is alive or has departed in order (rq_finalize), else
 * the rank of a dead peer + 1.  One poll() system call. */
int  rqi_peers_check(const struct rqi_peers *pe, const struct rqi_shm *shm);
void rqi_peers_close(struct rqi_peers *pe);

#endif
