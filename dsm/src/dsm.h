/* dsm.h - rqdsm internals: the instance, regions, the per-block words and
 * the directory (docs/dsm.md has the protocol's state machine).
 *
 * MEMORY ORDERING
 *
 * The entry word (one per block per mapping, struct rqdsm_region.entry) is
 * written by two kinds of thread: this rank's application threads (start /
 * end calls, any number at once) and the protocol handlers for that block
 * (one at a time: the PDQ serialises a block's key; under
 * RQDSM_PROTO_SPINLOCK the block's lock does; under RQDSM_PROTO_POLL the
 * context lock does).  Every change is a compare-and-swap on the whole
 * word, so "a handler defers an invalidation" and "the last end call sees
 * the deferral" cannot both miss each other, and two threads of the rank
 * cannot both take a hold the other excludes: a write hold is taken only
 * from a word with no holder, a read hold only from one with no writer and
 * no write request out (E_PEND_W: its grant must find no reader), and
 * E_WANT_R / E_WANT_W hand the grant's hold to the one thread that set it
 * (the others wait for E_PEND to clear and look again).  Each thread's own
 * open sections are thread-local (cache.c), never read by another.
 *
 * Fast read holds (app_mt): a read hold taken by adding to the word would
 * make every thread that reads a block write its line (barnes: 31% of a
 * run at 2 threads).  So a thread with a row of its own (r->rd, one
 * counter per block, written only by that thread) takes a read hold by
 * adding one to its counter (a seq_cst RMW), then loading the word
 * (seq_cst): the hold stands if the block is readable and E_NOFAST is
 * clear, else the thread takes it back (the same path as a release) and
 * uses the word.  Whoever must know every reader (an INV or RECALL
 * handler, a writer thread, a flush) sets E_NOFAST with a seq_cst CAS
 * first, then loads the counters seq_cst: of a fast reader and such a
 * checker, one sees the other (Dekker; the single total order of seq_cst
 * operations).  A deferral is answered by whoever, holding none, finds no
 * holder left (word count, writer, every counter): its CAS that clears
 * the deferral bit is the only one that answers.  A fast release drops
 * the counter (seq_cst RMW), and if the word then holds a deferral tries
 * that; a word release drops its count (seq_cst CAS) and, if no word
 * holder is left beside a deferral, loads the counters again after it
 * (a count taken before its CAS may miss a fast reader that left
 * meanwhile and saw this hold still there); the CAS that defers (INV,
 * RECALL) is seq_cst too, before its own look at the counters.
 * E_NOFAST clears when the block is readable again with no reader to
 * count (a grant, a write section's end, a deferral settled).  So a
 * writer's count, taken before the CAS that sets E_WRITER or E_PEND_W,
 * may be of an E_NOFAST since cleared and set again (ABA: the CAS still
 * matches): that CAS is seq_cst and the writer counts again after it,
 * giving a hit back or holding its request until the count is zero
 * (fast_drain in cache.c).
 *
 * The block's bytes are published by the word:
 *   - a DATA handler loads the word (acquire: after the release that
 *     ended the last section on the old bytes and the request's CAS),
 *     copies the bytes in, then its CAS (release) sets the state; the
 *     application's load of the word (acquire) that sees the state
 *     orders its reads of the bytes after the copy.  DATA comes
 *     only for a request, and the CAS that marks a request pending also
 *     checks that the copy does not serve already (invalid for a read,
 *     not exclusive for a write): no grant copies bytes in under a
 *     reader, and the home answers its owner's request without bytes;
 *   - a handler or end call that gives the block away (INV, RECALL) first
 *     CASes the state down (acq_rel: after the application's last write,
 *     which its end call released), then copies the bytes out; no new
 *     DATA for the block can overwrite them meanwhile (the block's
 *     handlers are serialised, and the application has not asked again).
 *
 * The directory (struct dir, home only) is touched only by handlers of
 * its block's key, one at a time: no atomics.  The region table is written
 * by the application thread (create, map) and by the DESTROY handler
 * (RQ_KEY_SEQUENTIAL: nothing else runs); handlers read it.  Pointers are
 * published with release stores and read with acquire loads.  The
 * counters (st) and last_grant, the TSC of the last read grant's state
 * change (stored by DATA handlers, read by the application thread after
 * its miss completes, for Table 1's resume time), are relaxed: timing and
 * statistics only, no data rides on them.
 */
#ifndef RQDSM_INTERNAL_H
#define RQDSM_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rqdsm.h"

/* Handler ids, from attr.handler_base. */
enum {
    H_RD_REQ,      /* requester -> home: a copy to read */
    H_WR_REQ,      /* requester -> home: the only copy, to write */
    H_FLUSH_REQ,   /* owner -> home: recall my exclusive copy */
    H_DROP,        /* sharer -> home: I dropped my shared copy */
    H_INV_ACK,     /* sharer -> home: invalidated */
    H_RECALL_DATA, /* owner -> home: the bytes, downgraded or invalidated */
    H_DATA,        /* home -> requester: granted (shared or exclusive) */
    H_INV,         /* home -> sharer: invalidate */
    H_RECALL,      /* home -> owner: give it back (to shared or invalid) */
    H_MAP_REQ,     /* any -> home: the region's size */
    H_REPLY,       /* a cookie's answer (map, destroy) */
    H_DESTROY,     /* home -> mapper: drop the region (RQ_KEY_SEQUENTIAL) */
    H_COUNT
};

/* Entry word: state, outstanding request, deferrals, holders. */
#define E_STATE   0x3u    /* E_I, E_S or E_E */
#define E_I       0u
#define E_S       1u
#define E_E       2u
#define E_PEND    0x4u    /* a request to the home is outstanding */
#define E_PEND_W  0x8u    /* ... and it asks for an exclusive copy */
#define E_WANT_R  0x10u   /* the application waits: grant it a read hold */
#define E_WANT_W  0x20u   /* the application waits: grant it the write hold */
#define E_INV_DEF 0x40u   /* an INV waits for the last end call */
#define E_REC_S   0x80u   /* a RECALL to shared waits */
#define E_REC_I   0x100u  /* a RECALL to invalid waits */
#define E_WRITER  0x200u  /* the application is in a write section */
#define E_NOFAST  0x400u  /* fast read holds off: whoever must count the
                             readers set it before counting (see below) */
#define E_RD_ONE  (1u << 12)
#define E_READERS(w) ((w) >> 12)

/* Key layout: home 16 bits | serial 20 | block 28.  A rid is the key's
 * top 36 bits.  home 0xffff is refused so no key is a reserved one. */
#define SERIAL_BITS 20
#define BLOCK_BITS  28
#define RID_HOME(rid)   ((int)((rid) >> SERIAL_BITS))
#define RID_SERIAL(rid) ((uint32_t)((rid) & ((1u << SERIAL_BITS) - 1)))
#define KEY(rid, b)     (((uint64_t)(rid) << BLOCK_BITS) | (uint64_t)(b))
#define KEY_RID(k)      ((k) >> BLOCK_BITS)
#define KEY_BLOCK(k)    ((size_t)((k) & ((1u << BLOCK_BITS) - 1)))
#define MAX_HOME        0xfffe

/* A request waiting at the home while its block is busy. */
struct pend {
    struct pend *next;
    int          src;
    int          type; /* H_RD_REQ, H_WR_REQ, H_FLUSH_REQ, H_DROP */
};

/* The home's record of one block. */
struct dir {
    uint8_t      excl;      /* 1: `owner` holds the only copy; 0: sharers */
    uint8_t      busy;      /* serving a request that waits for acks / data */
    uint8_t      need_data; /* the write being served sends the bytes */
    uint8_t      serving;   /* H_RD_REQ, H_WR_REQ or H_FLUSH_REQ */
    int          owner;
    int          src;       /* the request being served */
    uint32_t     acks;      /* INV_ACKs still due */
    struct pend *head, *tail;
};

struct rqdsm_region {
    rqdsm_t            *dsm;
    rqdsm_rid_t         rid;
    int                 home;
    size_t              size, nblocks;
    unsigned char      *mem;      /* nblocks * block bytes (home: the master) */
    _Atomic uint32_t   *entry;    /* one word per block */
    _Atomic uint32_t   *rd;       /* app_mt: fast read holds, rd[t * rowstride + b]
                                     for the rank's thread t (only t writes them) */
    size_t              rowstride; /* nblocks rounded up to whole lines: rows of
                                      small regions shared lines, and each read
                                      section wrote another thread's line */
    atomic_flag        *lock;     /* RQDSM_PROTO_SPINLOCK: one per block */
    struct dir         *dir;      /* home only */
    uint64_t           *sharers;  /* home only: words_per_block per block */
    _Atomic uint64_t   *mappers;  /* home only: ranks that mapped it */
    int                 maps;     /* rqdsm_map calls minus unmaps, here */
};

/* A region table: per home, 1024 chunks of 1024 region pointers. */
#define CHUNK 1024u
typedef _Atomic(struct rqdsm_region *) region_slot;
struct home_table {
    _Atomic(region_slot *) chunk[CHUNK];
};

/* Waiters for answers (map, destroy): a message names a slot and its
 * generation, never a pointer, so a forged answer is dropped. */
#define COOKIES 64u
struct cookie {
    _Atomic int64_t  value;
    _Atomic int      left; /* answers still due */
    _Atomic uint32_t gen;
};

struct rqdsm {
    rq_ctx_t        *ctx;
    rq_pdq_t        *pdq;
    int              me, np;
    unsigned         block, block_shift;
    int              protocol, pdq_mode;
    int              serve_sections; /* application threads help in their
                                        section calls (init.c, cache.c) */
    int              app_mt;    /* attr.app_threads > 1: per-thread section records */
    unsigned         app_threads;        /* attr.app_threads: rd rows per region */
    _Atomic unsigned next_thread;        /* rows handed out to threads */
    uint64_t         gen;                /* this instance, among every one of the
                                            process (a thread's row is per gen) */
    unsigned         qid, hbase;
    unsigned         words; /* sharer bitmap words per block */
    uint32_t         next_serial;
    _Atomic(struct home_table *) *homes; /* np entries */
    struct cookie    cookies[COOKIES];     /* application thread's waits */
    struct rqdsm_counters *st; /* RQDSM_COUNTER_SLOTS blocks (counters.c) */
    _Atomic uint64_t last_grant;   /* TSC of the last read grant's state change */
    double           ns_per_tick; /* TSC calibration */
};

/* ---- counters (counters.c) ---------------------------------------------
 * One block of counters per counting thread, on lines of its own: a block
 * shared by the rank's threads had every application thread write one
 * line per section (a hit) and every protocol thread per handler, and
 * the line crossed between the cores at each (barnes, 1 rank x 2 threads:
 * 0.24-0.25 s, 0.10-0.14 without; docs/dsm.md).  Thread i of the process
 * (an index handed out at its first count, taken back when it exits)
 * owns block i of every instance and adds with a relaxed load and store;
 * threads past RQDSM_COUNTER_SLOTS - 1 share the last block and add with
 * an atomic RMW.  rqdsm_stats sums the blocks with relaxed loads: a
 * count, not a synchronisation (no data rides on it). */
#define RQDSM_COUNTER_SLOTS 64u

struct rqdsm_counters {
    _Alignas(64) _Atomic uint64_t read_hits, write_hits, read_misses, write_misses, upgrades,
        invalidations, recalls, deferred, home_requests, messages, dropped, handlers,
        handler_ticks, timed_misses, miss_ticks, request_ticks, resume_ticks, fills,
        fill_ticks, replies, reply_ticks, reply_send_ticks;
};

/* This thread's block index plus one (0: none yet). */
extern _Thread_local unsigned rqdsm_counter_slot1 __attribute__((tls_model("initial-exec")));
unsigned rqdsm_counter_slot_take(void);
struct rqdsm_counters *rqdsm_counters_alloc(void);

static inline void rqdsm_count(rqdsm_t *d, size_t off, uint64_t v)
{
    unsigned i = rqdsm_counter_slot1 != 0 ? rqdsm_counter_slot1 - 1 : rqdsm_counter_slot_take();
    _Atomic uint64_t *c = (_Atomic uint64_t *)(void *)((char *)&d->st[i] + off);
    if (i < RQDSM_COUNTER_SLOTS - 1) /* ours alone */
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* The sum of counter f over the blocks. */
#define STAT_SUM(d, f) rqdsm_counter_sum((d), offsetof(struct rqdsm_counters, f))
uint64_t rqdsm_counter_sum(const rqdsm_t *d, size_t off);

#define STAT(d, f) rqdsm_count((d), offsetof(struct rqdsm_counters, f), 1)
#define STAT_ADD(d, f, v) rqdsm_count((d), offsetof(struct rqdsm_counters, f), (v))

/* The TSC (handler and miss timing; calibrated at init). */
static inline uint64_t rqdsm_ticks(void)
{
    return __builtin_ia32_rdtsc();
}

/* Ticks a handler on this thread spent sending a read grant's bytes
 * (grant sets it; the request handler reads and clears it). */
extern _Thread_local uint64_t rqdsm_grant_send_ticks __attribute__((tls_model("initial-exec")));

/* init.c */
int  rqdsm_send(rqdsm_t *d, int dst, int h, uint64_t key, const uint64_t *args, unsigned nargs,
                const void *data, size_t len);
/* A waiting application thread's state across rqdsm_wait_step calls. */
struct rqdsm_wait {
    unsigned idle; /* steps in a row that found nothing */
    unsigned ran;  /* steps in a row that ran PDQ handlers and did not poll */
};
int  rqdsm_wait_step(rqdsm_t *d, struct rqdsm_wait *w);
/* The fast read holds on block b of r, every thread's (regions.c). */
uint32_t rqdsm_fast_readers(const struct rqdsm_region *r, size_t b);
void rqdsm_lock(struct rqdsm_region *r, size_t b);
void rqdsm_unlock(struct rqdsm_region *r, size_t b);

/* regions.c */
struct rqdsm_region *rqdsm_lookup(rqdsm_t *d, rqdsm_rid_t rid);
/* The region and block a message names, NULL (counted) if unknown. */
struct rqdsm_region *rqdsm_msg_region(rqdsm_t *d, const rq_msg_t *m, unsigned nargs, size_t *b);
void rqdsm_region_free(struct rqdsm_region *r);
void rqdsm_free_all(rqdsm_t *d);
void rqdsm_h_map_req(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);
void rqdsm_h_reply(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);
void rqdsm_h_destroy(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);

/* home.c */
void rqdsm_h_request(rq_ctx_t *ctx, const rq_msg_t *m, void *arg); /* RD, WR, FLUSH, DROP */
void rqdsm_h_inv_ack(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);
void rqdsm_h_recall_data(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);

/* cache.c */
void rqdsm_h_data(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);
void rqdsm_h_inv(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);
void rqdsm_h_recall(rq_ctx_t *ctx, const rq_msg_t *m, void *arg);
/* The home's own copy, from its directory's handlers (same key): 1 done,
 * 0 deferred to the holder's end call (which then messages the home). */
int  rqdsm_local_inv(rqdsm_t *d, struct rqdsm_region *r, size_t b);
int  rqdsm_local_recall(rqdsm_t *d, struct rqdsm_region *r, size_t b, unsigned kind);

#endif
