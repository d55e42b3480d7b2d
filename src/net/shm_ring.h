/* shm_ring.h - one inbound lane of a rank: one or several producers (the
 * ranks mapped to this lane), one consumer (the owner).  The whole
 * intra-node hot path is here.  A rank has RQ_LANES lanes (at most its job's
 * rank count); sender s always uses lane s mod lanes, so per-pair order is
 * the lane's order, and a lane with a single sender is single-producer.
 *
 * ALGORITHM
 *   A bounded array of 64-byte slots indexed by 64-bit positions (never
 *   wrap).  A packet occupies 1..n contiguous slots; it never straddles the
 *   end of the array (a PAD packet fills the gap instead), so the receiver
 *   reads header, arguments and payload in place, contiguous (zero copy).
 *   Publication is per packet, in the style of Vyukov's bounded MPMC queue
 *   and GASNet-PSHM/Nemesis: the first word of a packet's first slot is its
 *   sequence word, seq = pos + 1 when published.  A slot's stale contents
 *   can never equal a future pos + 1: a first slot keeps an older
 *   (pos - k*N) + 1, and the consumer zeroes the first word of every
 *   continuation slot, whose payload bytes could otherwise look like one.
 *   Free space is tracked with two counters on separate cache lines:
 *     tail  next position to reserve; producers only (CAS).
 *     head  every position below it is released; consumer only, published
 *           in batches (every N/8 slots, and whenever a poll finds the ring
 *           empty), so producers rarely see its line move.
 *   Producers keep a private cached copy of head and re-read the shared
 *   one only when the cached copy says "full": in steady streaming there is
 *   no shared-counter read and no cache-line round trip per packet, only
 *   the slot lines themselves moving from producer to consumer.
 *
 * STEPS
 *   producer: t = tail; need n (+ pad to the end if it would straddle);
 *             if t + need - head_cache > N: head_cache = load_acquire(head);
 *             still full -> caller drains its own ring and retries;
 *             CAS(tail, t, t + need) reserves [t, t + need);
 *             write the payload beyond the first slot, then header
 *             (job, src, tag, lengths), args and the payload's first
 *             bytes, so the first line's stores drain together
 *             (rqi_pkt_copy_tail);
 *             store_release(seq, pos + 1).                  [publish]
 *   consumer: load_acquire(seq at scan) == scan + 1 -> packet visible;
 *             validate, deliver in place or copy to the virtual buffer;
 *             zero continuation seq words; advance scan (and head when no
 *             earlier packet is still held by a view or a running handler,
 *             else mark this one done with seq = 0);
 *             store_release(head) in batches.               [release space]
 *
 * FENCE TABLE (who writes what, which store releases, which load acquires)
 *   slot contents  written by the reserving producer, plain stores;
 *                  released by its store_release(seq) and acquired by the
 *                  consumer's load_acquire(seq) in rqi_ring_rx_peek.
 *   seq word       producer: store_release(pos + 1) (publish);
 *                  consumer: relaxed stores of 0 (continuation / done),
 *                  made visible to producers by the next head release.
 *   head           consumer: store_release after it finished reading and
 *                  zeroing the released slots; producers: load_acquire
 *                  before reusing them (the consumer's reads and zeroing
 *                  happen-before the producer's overwrite).
 *   tail           producers: CAS (relaxed is enough: the reservation
 *                  only hands out disjoint ranges; data ordering is carried
 *                  by seq and head); a lane's sole producer stores it
 *                  plainly (no other writer exists).  The consumer side
 *                  does not read tail per packet (rqi_ring_rx_waiting
 *                  reads head and the slot instead); only rare snapshots
 *                  do (rq_pdq_drain's marks, the progress thread's
 *                  interrupt marks).
 *   Under x86-64 TSO the acquire/release pairs are free; the only locked
 *   instruction per packet is a shared lane's CAS on tail; a single-producer
 *   lane has none (a locked instruction would wait for the producer's
 *   pending slot stores, which wait for the slot lines to arrive from the
 *   consumer's core: measured at ~45% of the streaming rate between far
 *   cores).
 *
 * PROGRESS
 *   Lock-free for producers (a failed CAS means another producer reserved);
 *   wait-free for a lane's sole producer.
 *   A reserved but not yet published packet holds back delivery of later
 *   ones (per-ring order = reservation order); a producer that dies inside
 *   that window is a dead peer, reported by the liveness check.
 *
 * CAPACITY
 *   N slots (RQ_RING_BYTES / 64).  The largest packet is limited by
 *   rq_medium_max() to a quarter of the ring, so a packet always fits once
 *   the consumer drains.
 */
#ifndef RQI_SHM_RING_H
#define RQI_SHM_RING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/atomics.h"

#define RQI_SLOT_BYTES 64u

/* Packet kinds (rqi_pkt.kind). */
enum {
    RQI_PK_INLINE = 1, /* args + payload in place (short and medium) */
    RQI_PK_LONG   = 2, /* payload already in the target segment: ext = off, len */
    RQI_PK_FRAG   = 3, /* fragment of a large medium: ext = msg id, total, offset */
    RQI_PK_PAD    = 4, /* fills the slots up to the end of the array */
    RQI_PK_RNDV   = 5, /* large medium: payload in the sender's staging area
                          (net/shm_bulk.h): ext = off, len, cookie */
};
/* Packet flags (rqi_pkt.flags). */
#define RQI_PF_SYSTEM 0x1u /* handler id indexes librq's internal handlers */
#define RQI_PF_KEY    0x2u /* PDQ message: the last argument word is its key */
#define RQI_PF_INTR   0x4u /* sent with RQ_INTERRUPT (RQ_INTR_SELECTIVE) */

/* The header at the start of a packet's first slot: 32 bytes. */
struct rqi_pkt {
    _Atomic uint64_t seq; /* pos + 1 when published */
    uint32_t job;         /* low 32 bits of the job id */
    uint32_t src;         /* sending rank */
    uint32_t tag;         /* handler id (AM queue) or tag (named queue) */
    uint16_t qid;
    uint8_t  nargs;
    uint8_t  kind;
    uint32_t len;         /* payload bytes in place after the args */
    uint16_t nslots;      /* slots occupied, PAD included */
    uint8_t  flags;
    uint8_t  pad_;
};
_Static_assert(sizeof(struct rqi_pkt) == 32, "packet header is 32 bytes");

/* Extension words between header and args, by kind. */
struct rqi_pkt_long { uint64_t off, len; };
struct rqi_pkt_frag { uint64_t msg_id, total, offset; };
struct rqi_pkt_rndv { uint64_t off, len, cookie; };

static inline size_t rqi_pkt_ext_bytes(unsigned kind)
{
    return kind == RQI_PK_LONG ? sizeof(struct rqi_pkt_long)
         : kind == RQI_PK_FRAG ? sizeof(struct rqi_pkt_frag)
         : kind == RQI_PK_RNDV ? sizeof(struct rqi_pkt_rndv) : 0;
}

static inline size_t rqi_pkt_bytes(unsigned kind, unsigned nargs, size_t len)
{
    return sizeof(struct rqi_pkt) + rqi_pkt_ext_bytes(kind) + 8u * nargs + len;
}

static inline unsigned rqi_pkt_slots(unsigned kind, unsigned nargs, size_t len)
{
    return (unsigned)((rqi_pkt_bytes(kind, nargs, len) + RQI_SLOT_BYTES - 1) / RQI_SLOT_BYTES);
}

static inline void *rqi_pkt_ext(struct rqi_pkt *p) { return p + 1; }
static inline uint64_t *rqi_pkt_args(struct rqi_pkt *p)
{
    return (uint64_t *)((char *)(p + 1) + rqi_pkt_ext_bytes(p->kind));
}
static inline void *rqi_pkt_payload(struct rqi_pkt *p)
{
    return rqi_pkt_args(p) + p->nargs;
}

/* Shared counters of one ring, each on its own cache line. */
/* Two lines: the struct's alignment pads head's line to its end, so the
 * next ring's tail never shares it. */
struct rqi_ring_ctrl {
    _Alignas(RQI_CACHELINE) _Atomic uint64_t tail; /* producers */
    _Alignas(RQI_CACHELINE) _Atomic uint64_t head; /* consumer */
};
_Static_assert(sizeof(struct rqi_ring_ctrl) == 2 * RQI_CACHELINE, "tail and head: a line each");

/* A producer's handle on one destination ring (process-local). */
struct rqi_ring_tx {
    char                 *slots;
    struct rqi_ring_ctrl *ctrl;
    uint64_t              nslots;     /* power of two */
    uint64_t              head_cache; /* last head seen */
    int                   exclusive;  /* we are this ring's only producer */
};

/* The consumer's handle on its own ring (process-local). */
struct rqi_ring_rx {
    char                 *slots;
    struct rqi_ring_ctrl *ctrl;
    uint64_t              nslots;
    uint64_t              scan;      /* next position to read */
    uint64_t              head;      /* released below this (local) */
    uint64_t              head_pub;  /* last value stored to ctrl->head */
    uint64_t              batch;     /* publish head every this many slots */
};

static inline struct rqi_pkt *rqi_ring_slot(char *slots, uint64_t nslots, uint64_t pos)
{
    return (struct rqi_pkt *)(slots + (pos & (nslots - 1)) * RQI_SLOT_BYTES);
}

/* Write header bytes 8..31 as three 64-bit stores: a producer's stores
 * wait in the store buffer for the slot line to arrive from the consumer's
 * core, so fewer and wider stores keep more packets in flight.  Byte
 * layout is that of struct rqi_pkt (little-endian). */
static inline void rqi_pkt_write_header(struct rqi_pkt *p, uint32_t job, uint32_t src,
                                        uint32_t tag, unsigned qid, unsigned nargs,
                                        unsigned kind, uint32_t len, unsigned nslots,
                                        unsigned flags)
{
    uint64_t w[3];
    w[0] = (uint64_t)job | (uint64_t)src << 32;
    w[1] = (uint64_t)tag | (uint64_t)qid << 32 | (uint64_t)nargs << 48 | (uint64_t)kind << 56;
    w[2] = (uint64_t)len | (uint64_t)nslots << 32 | (uint64_t)flags << 48;
    memcpy((char *)p + 8, w, sizeof w);
}
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "header packing assumes little-endian");

/* Copy a payload that starts `at` bytes into packet p, all but its bytes
 * that share the packet's first slot, in ascending line order; returns
 * how many those are (the caller copies them after the header, just
 * before publishing).  A consumer that caught up spins on the first
 * slot's seq word, pulling that line to its core on every poll: written
 * first (header) and last (seq), the line crossed between the two and the
 * producer paid a second round trip for it, doubling the cost of a
 * three-slot packet.  With the first line written last its stores drain
 * together.  Up to RQI_TAIL_LINES_MAX the lines are copied one by one in
 * ascending order: glibc's memcpy above 256 bytes stores them out of
 * order, measured 1.4x per 7-slot packet.  Above, on x86-64, one string
 * move (rep movsb: whole lines, in order, fast-string microcode): far
 * placement 1.1-1.9x cheaper per packet than glibc's memcpy from 1 KiB to
 * 4 KiB, whose vector loop below its own rep movsb threshold cost a step
 * of 1.5x at 2 KiB (rqbench large). */
#define RQI_TAIL_LINES_MAX 768u
static inline size_t rqi_pkt_copy_tail(struct rqi_pkt *p, size_t at, const void *data,
                                       size_t len)
{
    size_t first = at < RQI_SLOT_BYTES ? RQI_SLOT_BYTES - at : 0;
    if (first >= len)
        return len;
    char *d = (char *)p + at + first;
    const char *s = (const char *)data + first;
    size_t r = len - first;
    if (r > RQI_TAIL_LINES_MAX) {
#if defined(__x86_64__)
        __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(r) : : "memory");
#else
        memcpy(d, s, r);
#endif
        return first;
    }
    for (; r >= RQI_SLOT_BYTES; r -= RQI_SLOT_BYTES, d += RQI_SLOT_BYTES, s += RQI_SLOT_BYTES)
        memcpy(d, s, RQI_SLOT_BYTES);
    if (r != 0)
        memcpy(d, s, r);
    return first;
}

/* Reserve room for a packet of n slots.  Returns its first slot and sets
 * *pos, or NULL when the ring is full (nothing reserved).  A PAD packet is
 * published here when the packet would straddle the end. */
static inline struct rqi_pkt *rqi_ring_tx_reserve(struct rqi_ring_tx *tx, unsigned n,
                                                  uint32_t job, uint32_t src, uint64_t *pos)
{
    const uint64_t N = tx->nslots;
    uint64_t t = rqi_load_relaxed(&tx->ctrl->tail);
    for (;;) {
        uint64_t off = t & (N - 1);
        uint64_t pad = (off + n > N) ? N - off : 0;
        uint64_t need = pad + n;
        if (RQI_UNLIKELY(t + need - tx->head_cache > N)) {
            /* Pairs with the consumer's store_release(head). */
            tx->head_cache = rqi_load_acquire(&tx->ctrl->head);
            if (t + need - tx->head_cache > N)
                return NULL;
        }
        int won;
        if (tx->exclusive) {
            /* Sole producer (one sender per lane, one thread per context):
             * nobody else moves tail, so a plain store reserves, and no
             * locked instruction drains our store buffer per packet. */
            rqi_store_relaxed(&tx->ctrl->tail, t + need);
            won = 1;
        } else {
            won = atomic_compare_exchange_weak_explicit(&tx->ctrl->tail, &t, t + need,
                                                        memory_order_relaxed,
                                                        memory_order_relaxed);
        }
        if (RQI_LIKELY(won)) {
            if (RQI_UNLIKELY(pad != 0)) {
                struct rqi_pkt *p = rqi_ring_slot(tx->slots, N, t);
                rqi_pkt_write_header(p, job, src, 0, 0, 0, RQI_PK_PAD, 0, (unsigned)pad, 0);
                /* Pairs with load_acquire(seq) in rqi_ring_rx_peek. */
                rqi_store_release(&p->seq, t + 1);
            }
            *pos = t + pad;
            return rqi_ring_slot(tx->slots, N, t + pad);
        }
        /* CAS failed: t holds the new tail; recompute. */
    }
}

/* Make a filled packet visible to the consumer. */
static inline void rqi_ring_tx_publish(struct rqi_pkt *p, uint64_t pos)
{
    /* Releases every plain store into the packet; pairs with
     * load_acquire(seq) in rqi_ring_rx_peek. */
    rqi_store_release(&p->seq, pos + 1);
}

/* The packet at the scan position if one is published, else NULL. */
static inline struct rqi_pkt *rqi_ring_rx_peek(struct rqi_ring_rx *rx)
{
    struct rqi_pkt *p = rqi_ring_slot(rx->slots, rx->nslots, rx->scan);
    /* Pairs with the producer's store_release(seq). */
    if (rqi_load_acquire(&p->seq) == rx->scan + 1) {
        RQI_TSAN_TAKEN();
        return p;
    }
    return NULL;
}

/* Whether a packet may be waiting in the lane, from any thread, without
 * the consumer's private state: the slot at the published head holds a
 * packet published there.  Exact while the consumer is idle (its last
 * poll found the lane empty and published head = scan); while it has
 * taken packets it has not released (head behind scan) it may answer 1
 * for a packet already taken, and a look that races with the consumer
 * moving head on may answer either way (that consumer is busy: it finds
 * what waits itself).  It reads the lines the consumer reads
 * anyway (head, and the next packet's first slot), never tail: tail is
 * the producers' line, and a reader of it per packet moved it between
 * the two cores twice per packet (a PDQ's idle check, and its
 * direct-dispatch intake, did: rqbench pdq, "send call").  If a packet
 * waits, *qid and *kind are its queue id and kind. */
static inline int rqi_ring_rx_waiting_what(const struct rqi_ring_rx *rx, unsigned *qid,
                                           unsigned *kind)
{
    /* Pairs with the consumer's store_release(head) and the producer's
     * store_release(seq). */
    const uint64_t h = rqi_load_acquire(&rx->ctrl->head);
    const struct rqi_pkt *p = rqi_ring_slot(rx->slots, rx->nslots, h);
    /* By the time the slot is read, head may have moved on and a producer
     * may be writing a later packet's body over it (a continuation slot's
     * first word is plain payload or arguments): the answer is then
     * either, as above, and so are *qid and *kind.  ThreadSanitizer, which
     * sees such a race when the producer is a thread of this process (a
     * send to itself) and cannot know the values are only hints, is told
     * not to track these reads; whoever acts on the answer takes the
     * packet with the consumer's own acquire (rqi_ring_rx_peek). */
    RQI_TSAN_IGNORE_BEGIN();
    const int waiting = rqi_load_acquire(&p->seq) == h + 1;
    if (waiting) {
        *qid = __atomic_load_n(&p->qid, __ATOMIC_RELAXED);
        *kind = __atomic_load_n(&p->kind, __ATOMIC_RELAXED);
    }
    RQI_TSAN_IGNORE_END();
    return waiting;
}

/* The same, without the packet's queue id and kind. */
static inline int rqi_ring_rx_waiting(const struct rqi_ring_rx *rx)
{
    unsigned qid, kind;
    return rqi_ring_rx_waiting_what(rx, &qid, &kind);
}

static inline void rqi_ring_rx_publish_head(struct rqi_ring_rx *rx)
{
    /* Releases our reads and zeroing of every slot below head; pairs with
     * the producers' load_acquire(head) in rqi_ring_tx_reserve. */
    rqi_store_release(&rx->ctrl->head, rx->head);
    rx->head_pub = rx->head;
}

/* Called when a poll finds nothing: hand all released space back. */
static inline void rqi_ring_rx_idle(struct rqi_ring_rx *rx)
{
    if (rx->head_pub != rx->head)
        rqi_ring_rx_publish_head(rx);
}

/* Step scan over the packet p at scan (nslots already validated) without
 * releasing it: it stays readable until rqi_ring_rx_release(). */
static inline uint64_t rqi_ring_rx_take(struct rqi_ring_rx *rx, const struct rqi_pkt *p)
{
    uint64_t pos = rx->scan;
    rx->scan += p->nslots;
    return pos;
}

/* Release the taken packet p at pos: its slots become free once every
 * earlier packet is released too. */
static inline void rqi_ring_rx_release(struct rqi_ring_rx *rx, struct rqi_pkt *p, uint64_t pos)
{
    const uint64_t N = rx->nslots;
    unsigned n = p->nslots;
    for (unsigned i = 1; i < n; i++)
        rqi_store_relaxed(&rqi_ring_slot(rx->slots, N, pos + i)->seq, 0);
    if (RQI_LIKELY(pos == rx->head)) {
        rx->head = pos + n;
        /* Skip over later packets already released out of order (seq 0). */
        while (RQI_UNLIKELY(rx->head < rx->scan)) {
            struct rqi_pkt *q = rqi_ring_slot(rx->slots, N, rx->head);
            if (rqi_load_relaxed(&q->seq) != 0)
                break;
            rx->head += q->nslots;
        }
        if (RQI_UNLIKELY(rx->head - rx->head_pub >= rx->batch))
            rqi_ring_rx_publish_head(rx);
    } else {
        rqi_store_relaxed(&p->seq, 0); /* done; an earlier packet is still held */
    }
}

#endif
