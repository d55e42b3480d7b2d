/*
 * rqdsm.h - fine-grain software shared memory on librq: CRL-style regions
 * kept coherent per block by a home-based, full-map invalidation protocol
 * (Stache / CRL) whose messages are parallel-dispatch-queue messages keyed
 * by the block's global address (docs/dsm.md has the state machine).
 *
 * A region is created on its home rank, which holds its master copy, and
 * named by a global region id any rank may map.  Accesses are bracketed:
 * rqdsm_start_read / rqdsm_end_read, rqdsm_start_write / rqdsm_end_write,
 * on the whole region or on a byte range of it.  Between start and end the
 * bytes of the range are coherent: a read section sees the last write
 * section that ended on any rank before the read's start returned (a
 * single-writer, multiple-reader protocol per block; each block is
 * sequentially consistent), and no other rank writes them.  Outside a
 * section the mapped bytes may be stale and must not be written.
 *
 * THREADS
 *   - With attr.app_threads > 1, any number of threads of a rank may
 *     open and end sections at once (rqdsm_start_* / rqdsm_end_*), on the
 *     same blocks or others, from the threads the application started and
 *     from promoted handlers' parts (rq_handler_promote).  A rank keeps one
 *     copy of each block, shared by its threads.  Per block the rules
 *     hold between threads as between ranks: any number of read
 *     sections, or one write section and none other; a thread whose
 *     section must wait (another thread of the rank, or another rank,
 *     holds the block the other way) waits in the start call, running
 *     handlers.  A miss while another thread of the rank already waits
 *     for the block waits for the same grant (one request).  An
 *     invalidation or recall waits for every thread's section on the
 *     block to end.  Nesting is per thread: a thread may read inside its
 *     own write section and nest reads; a write inside its own read or
 *     write section of the same blocks is refused (RQ_EINVAL).  An end
 *     call names the blocks of an open start call of the same thread
 *     (RQ_ERANGE otherwise); at most 64 sections are open per thread
 *     (RQ_ENOMEM beyond).  Sections of several threads that wait for
 *     each other's blocks in opposite orders deadlock, as locks would.
 *   - rqdsm_flush: any thread, also several at once (blocks in any
 *     thread's section are skipped).  rqdsm_init, rqdsm_finalize,
 *     create, map, unmap and destroy: one thread at a time (the
 *     application serialises them), with no section of another thread
 *     open on what they change.
 *   - attr.app_threads (default 1) turns on the per-thread records that
 *     nesting and end checks need with several threads (about 2 ns per
 *     section).  Each of the first app_threads threads that open a
 *     section after rqdsm_init gets a row of read records on lines of its
 *     own, kept until rqdsm_finalize: its read hits write no line another
 *     thread writes.  Later threads (more in all than app_threads, also
 *     when earlier ones have exited) are served as correctly through the
 *     block's shared word, each hit writing it: size app_threads for
 *     every thread that will read, not only those at once.  Under
 *     RQDSM_PROTO_POLL it also makes the context
 *     thread-safe (as RQ_THREAD_SAFE=1; the other organisations' PDQ does
 *     so anyway).  With 1, one thread at a time calls rqdsm: the one that
 *     called rqdsm_init, or another while that one is outside rqdsm (a
 *     promoted handler's part on a pool of one thread,
 *     RQ_PROMOTE_THREADS=1, while the main thread waits in rq_wait_until:
 *     tests/dsm/dsm_promote.c).
 *   - The protocol runs in handlers: on the PDQ's threads
 *     (RQDSM_PROTO_PDQ, the default; dedicated or multiplexed; an
 *     application thread waiting in an rqdsm call, or in rqdsm_poll,
 *     runs them too, and now and then one in its other rqdsm calls
 *     when the threads are multiplexed or, in a job of several ranks,
 *     when this node runs more threads, its ranks' protocol and
 *     application threads, than it has CPUs online), on the
 *     main thread inside rq_poll (RQDSM_PROTO_POLL), or on the PDQ's
 *     threads under one spin lock per block (RQDSM_PROTO_SPINLOCK, the PDQ
 *     paper's baseline).  Under RQDSM_PROTO_POLL a rank serves other
 *     ranks' misses only while it is inside an rqdsm call or rq_poll: call
 *     rq_poll (or rqdsm_poll) in long computations.
 *   - rqdsm calls must not be made from librq handlers.
 *
 * RESOURCES
 *   The protocol uses one queue id (attr.qid, default RQDSM_QID) and
 *   RQDSM_HANDLERS handler ids from attr.handler_base (default
 *   RQDSM_HANDLER_BASE): the application must leave them free.
 *
 * BLOCKING
 *   start calls block until the range is coherent here (a miss waits for
 *   the home and for the invalidations it needs), running handlers
 *   meanwhile; end calls never wait for another rank.  rqdsm_init,
 *   rqdsm_finalize are collective.
 */
#ifndef RQDSM_H
#define RQDSM_H

#include <stddef.h>
#include <stdint.h>

#include <rq.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RQDSM_QID          62u   /* default protocol queue id */
#define RQDSM_HANDLER_BASE 232u  /* default first handler id */
#define RQDSM_HANDLERS     12u   /* handler ids used from the base */

#define RQDSM_BLOCK_MIN    32u
#define RQDSM_BLOCK_MAX    4096u

/* Who runs the protocol's handlers (see THREADS). */
#define RQDSM_PROTO_PDQ      1
#define RQDSM_PROTO_POLL     2
#define RQDSM_PROTO_SPINLOCK 3

typedef struct rqdsm rqdsm_t;               /* this rank's DSM instance */
typedef struct rqdsm_region rqdsm_region_t; /* a region as mapped on this rank */
typedef uint64_t rqdsm_rid_t;               /* global region id (home rank inside) */

typedef struct rqdsm_attr {
    unsigned block;        /* coherence block bytes: a power of two in
                              [RQDSM_BLOCK_MIN, RQDSM_BLOCK_MAX]; 0 = 128 */
    int      protocol;     /* RQDSM_PROTO_*; 0 = RQDSM_PROTO_PDQ */
    unsigned threads;      /* protocol threads (PDQ and SPINLOCK); 0 = 1 */
    int      pdq_mode;     /* RQ_PDQ_DEDICATED or RQ_PDQ_MULTIPLEXED; 0 = dedicated */
    unsigned qid;          /* 0 = RQDSM_QID */
    unsigned handler_base; /* 0 = RQDSM_HANDLER_BASE */
    unsigned app_threads;  /* application threads of a rank that call rqdsm
                              (at once, and rows for the first this many
                              over the instance's life), at most 1024;
                              0 = 1 (see THREADS) */
} rqdsm_attr_t;

typedef struct rqdsm_stats {
    uint64_t read_hits, write_hits;   /* start calls served here, per block */
    uint64_t read_misses;             /* blocks fetched for reading */
    uint64_t write_misses;            /* blocks fetched or upgraded for writing */
    uint64_t upgrades;                /* of those, already held shared (no data moved) */
    uint64_t invalidations;           /* INVs received (this rank as a sharer) */
    uint64_t recalls;                 /* RECALLs received (this rank as the owner) */
    uint64_t deferred;                /* INVs and RECALLs that waited for an end call */
    uint64_t home_requests;           /* requests served as home (others' and own) */
    uint64_t messages;                /* protocol messages sent */
    uint64_t dropped;                 /* messages for an unknown or destroyed region */
    uint64_t handlers;                /* protocol handlers run on this rank */
    uint64_t handler_ns;              /* time in them (TSC, calibrated at init) */
    /* The read-miss breakdown (the PDQ paper's Table 1), TSC-timed.  On
     * the requester, for one-block misses its start_read asked for: */
    uint64_t timed_misses;            /* read misses timed here */
    uint64_t miss_ns;                 /* their time: miss detected to hold granted */
    uint64_t request_ns;              /* of which: miss detected to request sent */
    uint64_t resume_ns;               /* of which: the grant's state change to the
                                         waiting thread seeing it */
    uint64_t fills, fill_ns;          /* read grants placed here (DATA handlers) and
                                         their time: place data, change state */
    /* On the home, for other ranks' read requests granted at once: */
    uint64_t replies, reply_ns;       /* those handlers and their time */
    uint64_t reply_send_ns;           /* of reply_ns: sending the DATA */
} rqdsm_stats_t;

/* rqdsm_init - start the DSM on every rank of ctx's job.  attr NULL: the
 * defaults; it must be the same on every rank.  Opens the protocol PDQ
 * (PDQ and SPINLOCK protocols) and registers the handlers.  Returns 0,
 * RQ_EINVAL (bad attr, or ranks disagree), RQ_ENOMEM, or the error of
 * rq_pdq_open / rq_handler_register.  Blocking: yes (collective).
 * Thread safety: the main thread, once per context. */
int rqdsm_init(rq_ctx_t *ctx, const rqdsm_attr_t *attr, rqdsm_t **dsm);

/* rqdsm_finalize - wait until every rank has finished (a barrier), close
 * the PDQ and free every region and mapping of this rank.  Sections must
 * be closed.  Returns 0, RQ_EINVAL (dsm NULL), RQ_EPEER.  Blocking: yes
 * (collective). */
int rqdsm_finalize(rqdsm_t *dsm);

/* rqdsm_create - create a region of size bytes (1 .. 2^40), zero-filled,
 * with this rank as home; *rid names it on every rank.  The home's own
 * mapping is returned by rqdsm_map(dsm, *rid, ...).  Returns 0, RQ_EINVAL,
 * RQ_ENOMEM (memory, or 2^20 regions created here).  Non-blocking. */
int rqdsm_create(rqdsm_t *dsm, size_t size, rqdsm_rid_t *rid);

/* rqdsm_map - map region rid on this rank.  The first map of a region
 * homed elsewhere asks its home for its size (one round trip); later maps
 * return the same mapping.  Returns 0, RQ_EINVAL (rid malformed or its
 * home out of range), RQ_ERANGE (no such region at its home, or
 * destroyed), RQ_ENOMEM.  Blocking: yes (the first time). */
int rqdsm_map(rqdsm_t *dsm, rqdsm_rid_t rid, rqdsm_region_t **region);

/* rqdsm_unmap - drop one map of region.  The copy stays cached (and
 * coherent) until rqdsm_flush, rqdsm_destroy or rqdsm_finalize.  Returns
 * 0, RQ_EINVAL (not mapped, or a section is open).  Non-blocking. */
int rqdsm_unmap(rqdsm_region_t *region);

/* rqdsm_ptr, rqdsm_size, rqdsm_rid - the mapped bytes (this rank's copy;
 * valid between start and end), the region's size and id.  NULL / 0 for
 * NULL. */
void       *rqdsm_ptr(const rqdsm_region_t *region);
size_t      rqdsm_size(const rqdsm_region_t *region);
rqdsm_rid_t rqdsm_rid(const rqdsm_region_t *region);

/* rqdsm_start_read / rqdsm_end_read - open / close a read section on bytes
 * [off, off + len) of region (len 0: to the end).  Sections may nest and
 * overlap (read within read, read within write).  start blocks until
 * every block of the range is held here (misses to the home, in block
 * order); invalidations of held blocks wait for the matching end.
 * Returns 0, RQ_EINVAL (NULL, not mapped), RQ_ERANGE (range outside the
 * region; end: no matching start), RQ_EPEER. */
int rqdsm_start_read(rqdsm_region_t *region, size_t off, size_t len);
int rqdsm_end_read(rqdsm_region_t *region, size_t off, size_t len);

/* rqdsm_start_write / rqdsm_end_write - the same for a write section: the
 * range's blocks are held exclusively (every other copy invalidated)
 * until end.  A write section may not be opened on a block this rank
 * holds in a read section (RQ_EINVAL: upgrading inside a read would
 * deadlock two upgraders) nor nest another write on the same block. */
int rqdsm_start_write(rqdsm_region_t *region, size_t off, size_t len);
int rqdsm_end_write(rqdsm_region_t *region, size_t off, size_t len);

/* rqdsm_flush - give this rank's copies of region's blocks back to the
 * home: shared copies are dropped, an exclusive one is written back.
 * Blocks in an open section are skipped.  Returns 0, RQ_EINVAL, RQ_EPEER.
 * Blocking: yes (until written back). */
int rqdsm_flush(rqdsm_region_t *region);

/* rqdsm_destroy - at the home, destroy region rid: every rank's copy is
 * dropped (one RQ_KEY_SEQUENTIAL message per rank that mapped it) and the
 * memory freed.  No rank may use the region afterwards, and none may be
 * in a section on it (the caller's responsibility, as with free).
 * Returns 0, RQ_EINVAL (not this rank's region), RQ_ERANGE (no such
 * region).  Blocking: yes (until every copy is dropped). */
int rqdsm_destroy(rqdsm_t *dsm, rqdsm_rid_t rid);

/* rqdsm_poll - run pending protocol work on the calling thread: rq_poll,
 * and rq_pdq_help (either PDQ mode).  Returns what they ran (>= 0) or an
 * error.  Non-blocking. */
int rqdsm_poll(rqdsm_t *dsm);

/* rqdsm_stats - this rank's counters since rqdsm_init.  Returns 0 or
 * RQ_EINVAL.  Non-blocking; any thread (the counters are read without
 * stopping the handlers). */
int rqdsm_stats(const rqdsm_t *dsm, rqdsm_stats_t *out);

/* rqdsm_block - the block size in use. */
unsigned rqdsm_block(const rqdsm_t *dsm);

#ifdef __cplusplus
}
#endif
#endif /* RQDSM_H */
