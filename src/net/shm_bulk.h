/* shm_bulk.h - a rank's staging area for medium payloads above
 * rq_medium_max(): one copy from the sender's buffer into its own staging
 * area, then the receiver's handler reads the payload in place there, as
 * it reads a smaller one in place in its lane.  The packet that announces
 * it (RQI_PK_RNDV) travels in the lane, so per-pair FIFO order is the
 * lane's.
 *
 * LAYOUT
 *   A byte ring of `size` bytes (a multiple of 64) in the sender's part of
 *   the job segment (net/shm.h), cut into blocks: a 64-byte header, then
 *   the payload, rounded up to 64.  A block never straddles the end: a
 *   PAD block (cookie 0, free at once) fills the gap instead.  Positions
 *   are 64-bit and never wrap; offset = pos % size.
 *
 * OWNERSHIP
 *   The sending rank (whoever owns its context: the application thread or
 *   its progress thread, never both) is the only allocator: head and tail
 *   are private to it.  A receiver only reads a block's header and payload
 *   and frees it.  A block is identified by its cookie, a per-sender
 *   counter that never repeats and is never 0: the packet carries it, so a
 *   stale or forged packet cannot free (or read as valid) another block.
 *
 * MEMORY ORDERING (who writes what, which store releases, which load
 * acquires)
 *   payload, bytes  sender, plain stores, then the cookie (relaxed); all
 *                   released by the lane's store_release(seq) of the
 *                   announcing packet, acquired by the receiver's
 *                   load_acquire(seq) (net/shm_ring.h).
 *   cookie          receiver: load_acquire to check it, after reading the
 *                   payload CAS(cookie -> 0) with release: its reads
 *                   happen-before the sender's reuse.  Sender: load_acquire
 *                   of 0 in reclaim before the space is written again.
 *
 * CAPACITY
 *   A payload of up to size - 64 bytes fits once the area is empty; the
 *   sender waits (draining its own lanes, as on a full ring) while the
 *   receivers of earlier blocks have not consumed them.  Larger payloads
 *   are fragmented through the lane instead.
 *
 * RESIDENCE
 *   A steady stream cycles through the start of the area (RQI_BULK_HOT).
 *   Those pages are made resident in one call the first time a block
 *   reaches them, by the sender (written) and by each receiver in its own
 *   mapping (read), instead of one page fault per 4 KiB on the first lap:
 *   that lap cost 0.74-0.97 ns/B against 0.04-0.11 afterwards (16-256 KiB
 *   payloads, near placement), which made a short run's mediums above the
 *   limit 1.4-4x a long request's.  `resident` (sender: its own area;
 *   receiver: per sender, in ctx) only grows; it is private to whoever owns
 *   the context.
 */
#ifndef RQI_SHM_BULK_H
#define RQI_SHM_BULK_H

#include <stdint.h>

#include "core/atomics.h"

#define RQI_BULK_HDR 64u

struct rqi_bulk_hdr {
    _Atomic uint64_t cookie; /* nonzero while a receiver owes its release */
    uint64_t         bytes;  /* whole block, header included */
    uint32_t         dst;    /* the receiver (for the sender's kicks) */
    uint32_t         pad_;
};
_Static_assert(sizeof(struct rqi_bulk_hdr) <= RQI_BULK_HDR, "block header fits 64 bytes");

/* The sender's private state of its own area. */
struct rqi_bulk_tx {
    char    *base;      /* NULL: no staging area (RQ_BULK_BYTES=0) */
    uint64_t size;
    uint64_t head, tail; /* allocate at head; blocks below tail are free */
    uint64_t next_cookie;
    uint64_t resident;  /* bytes from the start made resident (RESIDENCE) */
};

/* Make [*resident, end) of an area of size bytes at base resident in
 * this mapping, at least up to the hot window (RESIDENCE), and advance
 * *resident: written pages for the sender (write != 0), read ones for a
 * receiver.  One madvise(MADV_POPULATE_*), else a touch per page.  Never
 * fails: what could not be made resident faults in later. */
void rqi_bulk_make_resident(char *base, uint64_t size, uint64_t *resident, uint64_t end,
                            int write);

static inline uint64_t rqi_bulk_block_bytes(uint64_t len)
{
    return RQI_BULK_HDR + ((len + 63u) & ~63ull);
}

/* Whether a payload of len bytes can ever be staged. */
static inline int rqi_bulk_fits(const struct rqi_bulk_tx *b, uint64_t len)
{
    return b->base != NULL && len <= b->size - RQI_BULK_HDR;
}

static inline struct rqi_bulk_hdr *rqi_bulk_at(char *base, uint64_t size, uint64_t pos)
{
    return (struct rqi_bulk_hdr *)(base + pos % size);
}

/* Take back every block at the tail that its receiver has released. */
static inline void rqi_bulk_reclaim(struct rqi_bulk_tx *b)
{
    while (b->tail != b->head) {
        struct rqi_bulk_hdr *h = rqi_bulk_at(b->base, b->size, b->tail);
        /* Pairs with the receiver's release CAS in rqi_bulk_release. */
        if (rqi_load_acquire(&h->cookie) != 0)
            return;
        b->tail += h->bytes;
    }
    /* Empty: start the next block at offset 0, so that the largest
     * payload fits without a PAD. */
    uint64_t off = b->head % b->size;
    if (off != 0) {
        b->head += b->size - off;
        b->tail = b->head;
    }
}

/* The receiver of the oldest unreleased block (-1 if none): the one to
 * nudge while waiting for room. */
static inline int rqi_bulk_oldest_dst(const struct rqi_bulk_tx *b)
{
    if (b->tail == b->head)
        return -1;
    return (int)rqi_bulk_at(b->base, b->size, b->tail)->dst;
}

/* A steady stream cycles through this window of the area (or two blocks,
 * if larger: double buffering): past it the next block wraps to the start
 * when the room there is free, so the pages stay resident and few.  Both
 * bounds were measured (rqbench large, near placement): a block rewritten
 * while the receiver still caches its lines costs a coherence round trip
 * per line (a 256 KiB window gave 0.03-0.16 ns/B at 16 KiB + 1 from run to
 * run, 16 MiB a steady 0.03, as fast as the in-lane medium below it); a
 * window of many large blocks leaves the shared cache (8 MiB payloads in a
 * 32 MiB window: 1.9x the long path, with two blocks: 1.3x).  With the
 * window's pages made resident up front (RESIDENCE) 4 MiB beat 16 MiB for
 * small blocks: medians of 5 runs 0.038 / 0.029 / 0.027 ns/B at 16 KiB + 1,
 * 64 KiB and 1 MiB, against 0.040 / 0.039 / 0.040 (near, 2026-11-26); but
 * 1-2 MiB blocks need four in the window (docs/benchmarks.md). */
#define RQI_BULK_HOT (4ull << 20)

/* Allocate a block for len bytes to receiver dst: its offset in the area
 * (header first; payload at offset + RQI_BULK_HDR) and its cookie, or 0
 * with nothing allocated when there is no room now.  *undo receives the
 * head to restore to take the allocation back (rqi_bulk_undo). */
static inline uint64_t rqi_bulk_alloc(struct rqi_bulk_tx *b, uint64_t len, uint32_t dst,
                                      uint64_t *off, uint64_t *undo)
{
    const uint64_t n = rqi_bulk_block_bytes(len);
    rqi_bulk_reclaim(b);
    uint64_t o = b->head % b->size;
    /* Blocks up to 1 MiB: the 4 MiB window; to 4 MiB: four blocks (no
     * block rewritten while its receiver may still cache it); larger: two
     * blocks, at least 16 MiB, as measured before the window shrank. */
    uint64_t hot = 4 * n < RQI_BULK_HOT ? RQI_BULK_HOT : 4 * n;
    if (hot > 4 * RQI_BULK_HOT)
        hot = 2 * n > 4 * RQI_BULK_HOT ? 2 * n : 4 * RQI_BULK_HOT;
    /* Wrap when the block would straddle the end, or early, past the hot
     * window, when the start of the area is free for it. */
    uint64_t pad = o + n > b->size || (o >= hot && b->head + (b->size - o) + n - b->tail <= b->size)
                       ? b->size - o
                       : 0;
    if (b->head + pad + n - b->tail > b->size)
        return 0;
    *undo = b->head;
    if (pad != 0) {
        struct rqi_bulk_hdr *p = rqi_bulk_at(b->base, b->size, b->head);
        p->bytes = pad;
        rqi_store_relaxed(&p->cookie, 0);
        b->head += pad;
    }
    if (RQI_UNLIKELY(b->head % b->size + n > b->resident))
        rqi_bulk_make_resident(b->base, b->size, &b->resident, b->head % b->size + n, 1);
    struct rqi_bulk_hdr *h = rqi_bulk_at(b->base, b->size, b->head);
    uint64_t cookie = ++b->next_cookie;
    h->bytes = n;
    h->dst = dst;
    rqi_store_relaxed(&h->cookie, cookie);
    *off = b->head % b->size;
    b->head += n;
    return cookie;
}

/* Take back the latest allocation (it was never announced). */
static inline void rqi_bulk_undo(struct rqi_bulk_tx *b, uint64_t undo)
{
    b->head = undo;
}

/* Receiver side: the block at off of a sender's area of size bytes, if
 * the packet's (off, len, cookie) names a live block there, else NULL.
 * The offset and length were bounds-checked with the packet. */
static inline struct rqi_bulk_hdr *rqi_bulk_block(char *base, uint64_t off, uint64_t len,
                                                  uint64_t cookie)
{
    struct rqi_bulk_hdr *h = (struct rqi_bulk_hdr *)(base + off);
    /* Pairs with nothing new: the lane's acquire already ordered the
     * sender's stores; acquire here keeps a stale block from being read
     * after a check against a newer cookie. */
    if (cookie == 0 || rqi_load_acquire(&h->cookie) != cookie ||
        h->bytes < rqi_bulk_block_bytes(len))
        return NULL;
    return h;
}

/* Receiver side: the payload has been read; hand the block back. */
static inline void rqi_bulk_release(struct rqi_bulk_hdr *h, uint64_t cookie)
{
    uint64_t c = cookie;
    /* Releases our reads of the payload; pairs with rqi_bulk_reclaim. */
    atomic_compare_exchange_strong_explicit(&h->cookie, &c, 0, memory_order_release,
                                            memory_order_relaxed);
}

#endif
