/* pdq.c - the parallel dispatch queue (Falsafi & Wood): handlers run on
 * several threads, serialized per synchronization key by the queue, so no
 * handler locks or busy-waits.  docs/pdq.md has the picture.
 *
 * STRUCTURE (a message's way)
 *   arrival    A message for the PDQ's queue id is copied out of its lane
 *              into an entry (rqi_pdq_push, by whoever owns the context:
 *              a polling application thread, or an idle PDQ thread or
 *              helper that takes the context by trylock: pump, one of the
 *              PDQ's threads at a time) and, under in_lk, appended to its
 *              key's shard: one per PDQ thread, the key's bucket modulo
 *              the threads, an array in arrival order.  NOSYNC entries go
 *              round the shards; SEQUENTIAL ones to their own FIFO.  A PDQ
 *              thread taking packets in admits them at once into its own
 *              ready ring while their shard is empty, and takes in no more
 *              than its ring holds (the rest waits in the lane).
 *   admission  Thread i admits from shard i (others by trylock, helpers
 *              from all), in arrival order, a batch at a time while the
 *              window has room (`parked`, the entries waiting in pend
 *              lists, under `window`), while the entries are of the open
 *              generation (gen: SEQUENTIAL entries arrived before them;
 *              gen_open: SEQUENTIAL entries completed).  A keyed entry
 *              whose key is free claims it in the key table and is ready;
 *              one whose key is busy is appended to the `pend` list of the
 *              entry holding the key if it gets a place in the window
 *              (else it and what follows stay in the shard); NOSYNC
 *              entries are ready at once.
 *              Ready entries go to the admitting thread's ring (a helper
 *              runs its one at once).  A run of one key's entries is
 *              appended under one hold of its bucket.
 *   sequential A SEQUENTIAL entry runs when its generation is open and
 *              every entry that arrived before it has completed (the done
 *              counters sum to its `before`); nothing after it is admitted
 *              until it returns and opens the next generation.
 *   run        A thread pops its own ring, else admits from its shard,
 *              else steals from another's ring (a ready entry never waits
 *              behind a handler that blocks), else admits from the other
 *              shards (another thread's shard, and the lone entry of its
 *              ring, only once that thread stopped taking them:
 *              owner_stalled); it runs the handler, then takes the key's pending
 *              entries (all at once) and runs them in order itself, the
 *              first entry keeping the key until none is left (the thread
 *              that finishes a key runs its next message); then frees it.
 *   direct     A small packet taken in by a thread with nothing ready,
 *              under light load, while no SEQUENTIAL entry waits, its
 *              key's shard is empty and its key free, runs from a copy on
 *              the finding thread's stack, never queued (direct_run).
 *   solo       While nothing of q is queued, admitted or running, a PDQ
 *              thread taking packets in runs q's small packets one after
 *              another from copies on its stack, with no entry, no count
 *              and no key claim (solo_burst: one thread in arrival order),
 *              until anything else arrives (solo_settle).
 *   Per-key order is arrival order: a key's entries are in one shard in
 *   arrival order, admitted from its head, and wait in the `pend` FIFO of
 *   their key's holder.  No lock is taken per message by all threads:
 *   in_lk once per arrival (by the intake) and per 32 freed entries, a
 *   shard's lock by the intake per queued arrival and by its owner per batch,
 *   the key's bucket (its shard's) per claim and per batch of successors.
 *
 * WHO WRITES WHAT (memory ordering)
 *   in_lk (spinlock: exchange acquires, unlocking store releases) guards
 *     arrived[], arrived_all, epoch, the SEQUENTIAL FIFO, seq_arrived's
 *     stores (read relaxed elsewhere as a hint), seq_queued's RMWs (read
 *     relaxed as a hint: no SEQUENTIAL entry to look for), gen_open's
 *     stores (release; admitters load it acquire, so entries of the next
 *     generation run after the SEQUENTIAL handler's effects) and the free
 *     list.  `bytes` (kept only under RQ_VBUF_MAX) is added to under in_lk
 *     and taken from, relaxed, by whichever thread frees an entry.
 *   shards[i].lk guards shard i's array, h, t (the intake appends nested
 *     in in_lk; admitters pop); shards[i].n mirrors the length and
 *     .popped counts admissions (relaxed hints: whether to look, whether
 *     its owner keeps up).  An admitter stores n with release after the
 *     keys of the entries it popped are claimed; a direct run, holding
 *     in_lk (no appends), loads it with acquire in place of the lock.
 *     nbacklog counts the shards' entries (seq_cst RMWs by the intake and
 *     admitters; read as a hint, and by the sleep protocol).
 *   parked: places taken by CAS below `window` (a batch at a time) before
 *     entries are parked, given back (relaxed RMW) when a pend list is
 *     taken to run; a bound, no data rides on it (the bucket locks
 *     publish the pend lists).  Written only where keys are busy.
 *   intake: set and cleared, relaxed, by the thread that pumps; others
 *     read it before their trylock (a hint: the context lock decides).
 *   buckets[b].lk guards bucket b's chain (one running entry per busy key
 *     hashing to b) and those entries' `pend` lists.
 *   ring r (thread r's ready entries): only thread r pushes (slot store
 *     relaxed, then tail store release); anyone pops by CAS on head
 *     (acq_rel) after loading tail (acquire) and the slot, so a popper
 *     sees the entry as its pusher wrote it.  A slot is rewritten only
 *     after head passed it, so a stale read fails its CAS.
 *   slots[i].done[2]: entries completed by thread i
 *     (PDQ threads own theirs and store; helpers take the extra slots
 *     in turn, by a relaxed RMW on helper_turn once per thread and PDQ:
 *     the first PDQ_OWN_SLOTS turns own theirs and store, later ones
 *     share the rest and add; sum_done reads only the slots handed out).
 *     done is stored with release after the handler returned,
 *     read with acquire by drain and by the SEQUENTIAL check, so a
 *     drainer or a SEQUENTIAL handler sees the handlers' effects, and
 *     the ctx's pdq_rejected count (added relaxed before that release).
 *   last_help_ns  stored relaxed by helpers once it is stale by half
 *     of help_stamp_ns (1/16 of the spin and fallback times, at most
 *     1.33 us; a helper looks only every half of it by its cycle
 *     counter, and that only every few calls while its calls are dense:
 *     at most 1.5 help_stamp_ns stale; its time is the clock it read last
 *     plus the counter's ticks since, at most 1.1 us ahead: so what
 *     RQ_PDQ_FALLBACK_US promises holds to 2 us; help_stamp, help_now),
 *     read relaxed by PDQ threads
 *     (when to fall back, when to sleep): a heuristic clock, alone on its
 *     line.
 *   Sleep (mu/work): a sleeper takes mu, adds itself to `sleepers`
 *     (seq_cst), then looks for work (an admissible shard, a runnable
 *     SEQUENTIAL entry, a ring not empty) and waits on `work` only if
 *     there is none; a thread that makes work for others adds it
 *     (seq_cst), then loads `sleepers` and `signalled` and signals under
 *     mu, counting the signal in `signalled` (under mu) until a sleeper
 *     is up; one of the two sees the other, and a sleeper already
 *     signalled is not signalled again.
 *   solo, solo_e  written only by the lease holder (the runner): IDLE at
 *     the lease (under in_lk and the context), RUNNING (release) while it
 *     owns the context, IDLE after each handler (release), 0 at its end;
 *     read with acquire by solo_settle.  The one multiplexed helper may
 *     end a run with PARKED instead (its last store of the run) and
 *     resume it holding the context (IDLE again, relaxed: nothing of q
 *     ran since, or solo_stop would be set); a thread taking a lease
 *     holding the context and in_lk overwrites a parked word.
 *     solo_stop, solo_live: written by
 *     solo_settle under in_lk, reset by a lease; the runner loads
 *     solo_stop relaxed after each message (the asymmetric Dekker pair
 *     at "solo dispatch: the books") and once it owns the context again,
 *     and solo_live under in_lk.  solo_want (the time a PDQ thread asked
 *     the intake to hold off, 0: none), solo_want_after and
 *     solo_backoff_ns: relaxed hints stored by whichever PDQ thread holds
 *     the intake or the lease (a lost update only makes one drain or one
 *     run more or fewer); nothing rides on them.
 *   area->pdq_idle (job segment)  bit qid is set (seq_cst RMW) when the
 *     last awake PDQ thread goes to sleep with no deadline, cleared when
 *     one wakes.  A sender publishes its packet (release), fences and
 *     loads the bit; the sleeper sets the bit, (with pdq_mb) issues a
 *     global membarrier, then loads the lanes' tails and heads.  The
 *     sender's fence is a compiler fence when its process is a target of
 *     that membarrier (asym.h), else seq_cst.  One of the two sees the other,
 *     so either the sender or the sleeper rings RQI_BELL_PDQ and the
 *     progress thread wakes a PDQ thread (rqi_pdq_wake), which takes the
 *     packet in.  area->pdq_rung bit qid: one sender rings per sleep, the
 *     one whose RMW sets it; the sleeper clears it after setting its idle
 *     bit and before it looks at the lanes (vni.c, rqi_vni_pdq_sent, has
 *     why no wake-up is lost).  A thread stuck behind busy keys or a
 *     SEQUENTIAL entry counts among `sleepers` (pushes wake it too); one
 *     of them, the watcher (`watcher` taken by exchange), sleeps with a
 *     deadline (RQ_PDQ_SPIN_US) and counts in `stuck`, the others in
 *     `waiting` (seq_cst RMWs under mu), without one.  Watcher giving up:
 *     `watcher` = 0 (seq_cst), load `waiting`, wake one if any; waiter:
 *     add to `waiting`, fence, load `watcher`, no sleep if 0 (stuck_sleep,
 *     watch_end).
 *
 * LOCK ORDER  context lock (core/mt.h) -> in_lk -> shard lock -> bucket
 * lock; mu -> in_lk, shard lock (a sleeper's last look).  Nobody takes mu
 * holding in_lk or a shard lock, and handlers run holding none.
 */
#define _GNU_SOURCE
#include "pdq/pdq.h"
#include "pdq/place.h"
#include "net/net.h"
#include "core/copy.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdio.h>

#include "am/am.h"
#include "core/sys.h"
#include "deliver/deliver.h"
#include "progress/progress.h"

#define PDQ_MAX_THREADS  1024u
#define PDQ_SMALL_BYTES  256u  /* entries up to this size are recycled ... */
#define PDQ_TINY_BYTES   128u  /* ... those up to this size in records of it */
#define PDQ_FREE_MAX     65536u /* recycled entries an idle PDQ keeps (16 MiB) */
#define PDQ_FREE_BATCH   128u  /* entries a thread frees at once */
#define PDQ_HELP_STAMP_MAX_NS 1333u /* 1.5x this: how stale a helper's time stamp may be */
#define PDQ_FALLBACK_STRETCH 2u /* a fallback thread's sleeps while helped: up to
                                   2^this x RQ_PDQ_FALLBACK_US (help_deadline) */
#define PDQ_HELP_REBASE_NS 16384u /* a helper reads the clock at most this often (help_now) */
#define PDQ_BATCH        32u   /* entries a thread admits at once, whatever the window (which
                                  bounds only what waits behind busy keys): at 16, two
                                  threads of 0 ns handlers wrote the backlog's shared
                                  counters every 16 messages */
#define PDQ_WINDOW_PER_THREAD 32u /* the least default window, per thread */
#define PDQ_RING         64u   /* a thread's ready ring (power of two) */
#define PDQ_BUCKETS      1024u /* key table buckets, a lock and a line each */
#define PDQ_BUCKET_BITS  10
#define PDQ_EXTRA_SLOTS  16u   /* counter slots for helper threads ... */
#define PDQ_OWN_SLOTS    12u   /* ... of which the first helpers' own (my_slot) */
#define PDQ_IDLE_SPINS   64u   /* empty looks (~100 ns each) before yielding */
#define PDQ_DIRECT_BYTES 512u  /* arguments + payload run directly */

struct pdq_entry {
    struct pdq_entry *next;       /* backlog, a key's pend list, free list */
    struct pdq_entry *chain;      /* bucket chain (running entries) */
    struct pdq_entry *pend, *pend_tail; /* a running entry: its key's next ones */
    uint32_t          npend;      /* ... how many (each counted in `parked`) */
    uint64_t          key;
    void             *data;
    size_t            len;
    uint32_t          src, tag;
    uint8_t           nargs, how, small, epoch;
    uint32_t          bytes; /* accounted size */
    uint64_t          gen;    /* RQ_KEY_SEQUENTIAL entries that arrived before it */
    uint64_t          before; /* a SEQUENTIAL entry: all entries that arrived before it */
    _Alignas(8) uint64_t args[];
};

_Static_assert(sizeof(struct pdq_entry) + 4 * 8 <= PDQ_TINY_BYTES,
               "a message of four argument words fits the smaller records");

/* A line each: a bucket's line moves between threads only when its keys
 * do (16-byte buckets shared a line among four unrelated keys). */
struct pdq_bucket {
    _Alignas(64) _Atomic int lk;
    struct pdq_entry *chain;
};

/* A part of the backlog: the entries of the keys whose bucket is b with
 * b mod nshards = its index, in arrival order.  PDQ thread i admits from
 * shard i first, so a key's entries, its bucket and (in the handlers) its
 * data stay on one thread's core while the load is even. */
struct pdq_shard {
    _Alignas(RQI_APART) _Atomic int lk;
    _Atomic uint64_t   n;   /* entries queued: written under lk, read as a hint */
    _Atomic uint64_t   popped; /* entries admitted from it ever: under lk, read as a hint */
    struct pdq_entry **bl;  /* circular, cap a power of two */
    uint64_t           h, t, cap;
};

struct pdq_ring {
    _Alignas(RQI_APART) _Atomic uint64_t head;
    _Alignas(64) _Atomic uint64_t tail;
    struct pdq_entry *_Atomic slot[PDQ_RING];
};

struct pdq_slot {
    _Alignas(RQI_APART) _Atomic uint64_t done[2];
};

struct rq_pdq {
    rq_ctx_t        *ctx;
    unsigned         qid, nthreads, nslots, window;
    int              mode;
    uint64_t         spin_ns, fallback_ns, gen;
    pthread_t       *threads;
    unsigned         started_threads;
    _Atomic int      stop;
    uint64_t         help_stamp_ns; /* 1.5x this: how stale last_help_ns may
                                       be; 1/16 of the times read against it,
                                       at most 1.33 us (help_stamp) */
    uint64_t         help_half_cycles; /* half of it, in cycle-counter ticks */
    uint64_t         help_rate;        /* rqi_cycles_per_1024ns (rounded down) */
    uint64_t         help_rebase_cycles; /* PDQ_HELP_REBASE_NS in ticks */
    /* Own line: helpers write it, and the fields above are read by every
     * thread per message. */
    _Alignas(64) _Atomic uint64_t last_help_ns;
    char             help_pad[56];
    struct pdq_bucket *buckets;
    uint16_t          *bucket_at; /* bucket -> its place in buckets[] (bucket_of) */
    struct pdq_ring   *rings; /* one per PDQ thread */
    struct pdq_slot   *slots; /* PDQ threads', then PDQ_EXTRA_SLOTS helpers' */

    struct pdq_shard  *shards; /* nshards = nthreads */
    unsigned           nshards;
    uint64_t           limit;

    _Alignas(64) _Atomic uint64_t parked;   /* entries in pend lists: the window */
    _Alignas(64) _Atomic uint64_t nbacklog; /* entries in the shards */
    _Alignas(64) _Atomic int intake;        /* a PDQ thread or helper pumps */
    _Atomic unsigned   helper_turn;         /* the next helper's extra slot (my_slot) */
    /* Solo dispatch (solo_burst): the runner's word and the message it
     * runs, written per message by the runner and read by every arrival;
     * then what the arrivals tell it (under in_lk), read per message. */
    _Alignas(64) _Atomic uint64_t solo;
    struct pdq_entry *_Atomic solo_e;
    _Alignas(64) _Atomic unsigned solo_stop;
    uint64_t         solo_live;
    /* The drain to a run (solo_want_ok): when a PDQ thread asked the
     * intake to hold off (ns, 0: nobody did), and how long after a run
     * found long messages or a drain did not come nobody asks again. */
    _Atomic uint64_t solo_want, solo_want_after, solo_backoff_ns;
    _Alignas(64) _Atomic uint64_t gen_open; /* SEQUENTIAL entries completed */
    _Atomic uint64_t   seq_arrived;         /* SEQUENTIAL entries arrived */
    _Atomic unsigned   seq_queued;          /* ... and not yet taken to run */

    _Alignas(64) _Atomic int in_lk;
    uint64_t         arrived[2], arrived_all;
    _Atomic uint64_t bytes;          /* queued bytes, kept when limit != 0 */
    unsigned         epoch;
    struct pdq_entry *seq_head, *seq_tail; /* SEQUENTIAL entries, in arrival order */
    struct pdq_entry *free_small[2]; /* recycled records: PDQ_TINY_BYTES, PDQ_SMALL_BYTES */
    unsigned         nfree;

    _Alignas(64) pthread_mutex_t mu; /* only to sleep on `work` */
    pthread_cond_t   work;
    _Atomic unsigned sleepers;       /* asleep with no deadline */
    _Atomic unsigned signalled;      /* sleepers signalled and not yet up (under mu) */
    _Atomic unsigned awake;
    _Atomic unsigned stuck;          /* asleep until their next look at a stuck backlog */
    _Atomic int      watcher;        /* one of the stuck threads looks (stuck_sleep) */
    _Atomic unsigned waiting;        /* the other stuck threads, asleep until woken */
    pthread_mutex_t  drain_mu;       /* one drain's epoch at a time */
};

/* The PDQ whose thread (a PDQ thread or a helper) is taking packets in to
 * run them itself: its pushes need not wake a sleeper (pump_for). */
static _Thread_local struct rq_pdq *pumping __attribute__((tls_model("initial-exec")));

/* The calling thread's counter slot and ring in a PDQ (PDQ threads: their
 * own; others: a shared slot, no ring). */
static _Thread_local struct {
    const struct rq_pdq *q;
    uint64_t             gen;
    unsigned             slot;
    int                  own;  /* a PDQ thread: slot and ring are its own */
    int                  excl; /* the slot is this thread's alone (a PDQ
                                  thread's, or a helper's of the first
                                  PDQ_OWN_SLOTS): counts are plain stores */
} me __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t pdq_gen;

static unsigned my_slot(struct rq_pdq *q)
{
    if (me.q != q || me.gen != q->gen) {
        me.q = q;
        me.gen = q->gen;
        me.own = 0;
        /* Helpers take the extra slots in turn.  (A hash of this TLS
         * block's address gave every thread but the main one the same
         * slot: thread stacks, and their TLS, sit whole pages apart, so
         * every helper's counter shared one line.)  The first
         * PDQ_OWN_SLOTS turns get a slot of their own, never handed out
         * again, and count with a plain store (a helper's locked add per
         * message was a tenth of its direct run); later ones share the
         * rest and add atomically. */
        const unsigned turn = atomic_fetch_add_explicit(&q->helper_turn, 1, memory_order_relaxed);
        me.excl = turn < PDQ_OWN_SLOTS;
        const unsigned shared = PDQ_OWN_SLOTS + turn % (PDQ_EXTRA_SLOTS - PDQ_OWN_SLOTS);
        me.slot = q->nthreads + (me.excl ? turn : shared);
    }
    return me.slot;
}

static struct pdq_ring *my_ring(struct rq_pdq *q)
{
    return me.q == q && me.gen == q->gen && me.own ? &q->rings[me.slot] : NULL;
}

static void count_add(struct rq_pdq *q, _Atomic uint64_t *c, uint64_t n, memory_order mo)
{
    if (me.excl && me.q == q) /* only this thread writes it */
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, mo);
    else
        atomic_fetch_add_explicit(c, n, mo);
}

/* ---- locks ------------------------------------------------------------ */

/* Critical sections are a few pointer moves, so waiters spin (backing
 * off: every read of a held lock pulls its line from the holder) and
 * yield now and then in case the holder was preempted. */
static RQI_NOINLINE void spin_lock_slow(_Atomic int *lk)
{
    unsigned backoff = 1, spent = 0;
    while (atomic_exchange_explicit(lk, 1, memory_order_acquire) != 0)
        while (atomic_load_explicit(lk, memory_order_relaxed) != 0) {
            for (unsigned i = 0; i < backoff; i++)
                rqi_cpu_relax();
            spent += backoff;
            backoff = backoff < 256 ? backoff * 2 : 256;
            if (spent >= 4096) {
                sched_yield();
                spent = 0;
            }
        }
}

static RQI_ALWAYS_INLINE void spin_lock(_Atomic int *lk)
{
    if (RQI_UNLIKELY(atomic_exchange_explicit(lk, 1, memory_order_acquire) != 0))
        spin_lock_slow(lk);
}

static void spin_unlock(_Atomic int *lk) { atomic_store_explicit(lk, 0, memory_order_release); }

static void in_lock(struct rq_pdq *q) { spin_lock(&q->in_lk); }
static void in_unlock(struct rq_pdq *q) { spin_unlock(&q->in_lk); }

static void wake_one(struct rq_pdq *q)
{

    pthread_mutex_lock(&q->mu);
    if (atomic_load_explicit(&q->signalled, memory_order_relaxed) <
        atomic_load_explicit(&q->sleepers, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&q->signalled, 1, memory_order_relaxed);
        pthread_cond_signal(&q->work);
    }
    pthread_mutex_unlock(&q->mu);
}

/* Work was made for others: wake a sleeper if there is one. */
static void wake_if_sleeping(struct rq_pdq *q)
{
    atomic_thread_fence(memory_order_seq_cst);
    /* A sleeper already signalled looks for work when it is up: signalling
     * another only for it cost a running thread a futex call per message
     * until the first was scheduled. */
    unsigned sl = atomic_load(&q->sleepers);
    if (sl != 0 && atomic_load_explicit(&q->signalled, memory_order_relaxed) < sl)
        wake_one(q);
}

/* A SEQUENTIAL handler returned: what waited behind it, in every shard,
 * may run now, and the shards' owners sleep (stuck behind it, one of
 * them watching): wake them all, not one per admission (each owner
 * admits its own shard, where a thread taking another's over waits
 * PDQ_STALL_NS for it first). */
static void wake_all(struct rq_pdq *q)
{
    atomic_thread_fence(memory_order_seq_cst);
    unsigned sl = atomic_load(&q->sleepers);
    if (sl == 0 || atomic_load_explicit(&q->signalled, memory_order_relaxed) >= sl)
        return;
    pthread_mutex_lock(&q->mu);
    sl = atomic_load(&q->sleepers);
    if (atomic_load_explicit(&q->signalled, memory_order_relaxed) < sl) {
        atomic_store_explicit(&q->signalled, sl, memory_order_relaxed);
        pthread_cond_broadcast(&q->work);
    }
    pthread_mutex_unlock(&q->mu);
}

/* ---- the key table -------------------------------------------------- */

static unsigned bucket_index(uint64_t key)
{
    /* Fibonacci hashing: keys are often addresses or small integers. */
    return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> (64 - PDQ_BUCKET_BITS));
}

/* Bucket b lives at buckets[bucket_at[b]]: a shard's buckets side by
 * side (b mod nshards, then b / nshards), so no two threads' buckets are
 * neighbours in memory (RQI_APART) but at a shard's ends. */
static struct pdq_bucket *bucket_of(struct rq_pdq *q, uint64_t key)
{
    return &q->buckets[q->bucket_at[bucket_index(key)]];
}

/* A key's shard: its bucket's, so a shard's buckets are its own. */
static struct pdq_shard *shard_of(struct rq_pdq *q, uint64_t key)
{
    return &q->shards[bucket_index(key) % q->nshards];
}

/* The window: at most `window` entries wait in pend lists (behind busy
 * keys) at once.  An entry whose key is free is ready and takes no place;
 * one whose key is busy takes one, or, with none left, stays where it is
 * and so does everything behind it (dispatch goes around at most `window`
 * messages of busy keys).  Reserve up to `want` places; returns how many
 * it got.  Only parking and unparking write `parked`: with free keys
 * nobody does (the count of admitted entries not yet started, which every
 * admission wrote and every full window summed over the threads' lines,
 * made two threads of 0 ns handlers slower than one across far cores).
 * The counter publishes no data (the bucket locks do): relaxed. */
static unsigned park_take(struct rq_pdq *q, unsigned want)
{
    uint64_t p = atomic_load_explicit(&q->parked, memory_order_relaxed);
    for (;;) {
        if (p >= q->window)
            return 0;
        unsigned k = want < q->window - p ? want : (unsigned)(q->window - p);
        if (atomic_compare_exchange_weak_explicit(&q->parked, &p, p + k, memory_order_relaxed,
                                                  memory_order_relaxed))
            return k;
    }
}

static void park_give(struct rq_pdq *q, unsigned k)
{
    if (k != 0)
        atomic_fetch_sub_explicit(&q->parked, k, memory_order_relaxed);
}

/* Room in the window now: admission may go on. */
static int window_open(const struct rq_pdq *q)
{
    return atomic_load_explicit(&q->parked, memory_order_relaxed) < q->window;
}

/* Queue e behind r, the entry holding e's key (under the bucket's lock). */
static void append_pending(struct pdq_entry *r, struct pdq_entry *e)
{
    r->npend++;
    e->next = NULL;
    if (r->pend_tail != NULL)
        r->pend_tail->next = e;
    else
        r->pend = e;
    r->pend_tail = e;
}

/* Park e behind holder r, taking a place in the window from *places (its
 * reservation, refilled up to PDQ_BATCH at a time).  0, or -1: the window
 * is full (e is left alone). */
static int park(struct rq_pdq *q, struct pdq_entry *r, struct pdq_entry *e, unsigned *places)
{
    if (*places == 0 && (*places = park_take(q, PDQ_BATCH)) == 0)
        return -1;
    (*places)--;
    append_pending(r, e);
    return 0;
}

/* Claim e's key: 1 when it was free (e now holds it); when it is busy, 0
 * with `queue` if e took a place in the window behind the entry holding
 * the key, else -1 (e left alone). */
static int key_claim(struct rq_pdq *q, struct pdq_entry *e, int queue)
{
    struct pdq_bucket *b = bucket_of(q, e->key);
    spin_lock(&b->lk);
    for (struct pdq_entry *r = b->chain; r != NULL; r = r->chain)
        if (r->key == e->key) {
            const int rc = queue && park_take(q, 1) == 1 ? 0 : -1; /* one place */
            if (rc == 0)
                append_pending(r, e);
            spin_unlock(&b->lk);
            return rc;
        }
    e->pend = e->pend_tail = NULL;
    e->npend = 0;
    e->chain = b->chain;
    b->chain = e;
    spin_unlock(&b->lk);
    return 1;
}

/* Admission's hold on one bucket across a run of one key's entries in the
 * backlog: a hot key's run is appended under one lock, not one per entry
 * (and not one chain walk per entry). */
struct claim_hold {
    struct pdq_bucket *b;      /* locked, or NULL */
    struct pdq_entry  *holder; /* the entry holding key */
    uint64_t           key;
};

/* key_claim with a queue, keeping the bucket locked in h for the next
 * entry of the same key: 1 (e holds the key: ready), 0 (parked behind
 * its holder), -1 (the key is busy and the window full: e left alone). */
static int claim_held(struct rq_pdq *q, struct claim_hold *h, struct pdq_entry *e,
                      unsigned *places)
{
    if (h->b != NULL && h->key == e->key)
        return park(q, h->holder, e, places);
    if (h->b != NULL)
        spin_unlock(&h->b->lk);
    struct pdq_bucket *b = bucket_of(q, e->key);
    spin_lock(&b->lk);
    h->b = b;
    h->key = e->key;
    for (struct pdq_entry *r = b->chain; r != NULL; r = r->chain)
        if (r->key == e->key) {
            h->holder = r;
            return park(q, r, e, places);
        }
    e->pend = e->pend_tail = NULL;
    e->npend = 0;
    e->chain = b->chain;
    b->chain = e;
    h->holder = e;
    return 1;
}

static void claim_release(struct claim_hold *h)
{
    if (h->b != NULL)
        spin_unlock(&h->b->lk);
    h->b = NULL;
}

/* The running entry r of a key has run: take the key's pending entries
 * (all of them, in order: the caller runs them, r keeping the key), or,
 * with none, free the key (r leaves the table) and return NULL.  A hot
 * key costs one lock per batch of its messages, not one per message. */
static struct pdq_entry *key_take_pending(struct rq_pdq *q, struct pdq_entry *r)
{
    struct pdq_bucket *b = bucket_of(q, r->key);
    spin_lock(&b->lk);
    struct pdq_entry *list = r->pend;
    const uint32_t n = r->npend;
    if (list != NULL) {
        r->pend = r->pend_tail = NULL;
        r->npend = 0;
    } else {
        struct pdq_entry **pp = &b->chain;
        while (*pp != r)
            pp = &(*pp)->chain;
        *pp = r->chain;
    }
    spin_unlock(&b->lk);
    park_give(q, n); /* out of the window: about to run */
    return list;
}

/* ---- solo dispatch: the books ---------------------------------------------
 * (The run itself is solo_burst, beside direct dispatch.)
 * q->solo, written only by the thread holding the lease (the runner):
 *   0                      no lease;
 *   seq << 2 | SOLO_IDLE    leased, nothing running;
 *   seq << 2 | SOLO_RUNNING the runner runs its message seq (solo_e) with
 *                          the context let go;
 *   seq << 2 | SOLO_PARKED  leased by q's one multiplexed helper between
 *                          its helps (helper_park): nothing running, and
 *                          nothing of q queued, admitted or running
 *                          elsewhere while solo_stop stays 0.
 * seq counts the runner's messages, so others see it move (solo_elsewhere).
 * solo_stop and solo_live, written under in_lk by solo_settle and reset by
 * the next lease: stop asks the runner to end the lease; live is seq + 1
 * once message seq was put in the books while it ran.
 * A message ends with a Dekker pair against solo_settle, asymmetric
 * (core/asym.h: the runner pays a compiler fence, a settler a membarrier):
 *     runner:  solo = IDLE | seq + 1 (release); light fence; load stop
 *     settler: stop = 1; heavy fence; load solo (acquire)
 * Either the settler finds the message still RUNNING (and puts it in the
 * books; the runner will see stop and finish it as a direct entry), or it
 * finds it over, its handler's effects before the load.  Every arrival of
 * a message for q owns the context (its lock, or the progress thread's
 * claim), and the runner owns it whenever it starts a message: an arrival
 * that finds no message running sets stop, which the runner reads as soon
 * as it owns the context again, before it could start another.  A drain
 * closing an epoch (in_lk only) settles a RUNNING message. */
enum { SOLO_IDLE = 1, SOLO_RUNNING = 2, SOLO_PARKED = 3 };

static uint64_t solo_word(uint64_t seq, unsigned state) { return seq << 2 | state; }

/* Under in_lk, by whatever makes a message of q arrive (arrival) or
 * closes an epoch.  A solo message running now enters the books first: it
 * is counted arrived (in the open epoch) and claims its key, so what
 * arrives after it waits for it as for any entry, a drain waits for it,
 * and a SEQUENTIAL entry counts it before itself.  The key is free: when
 * the lease was taken nothing of q was queued or running and the key
 * table was empty (every holder is counted done after leaving it,
 * key_finish), and everything that arrived since came through here first.
 * At most one membarrier per lease: the runner stops at the next look. */
static void solo_settle(struct rq_pdq *q, int arrival)
{
    uint64_t v = atomic_load_explicit(&q->solo, memory_order_acquire);
    if (RQI_LIKELY(v == 0))
        return;
    if ((v & 3) != SOLO_RUNNING) {
        if (arrival)
            atomic_store_explicit(&q->solo_stop, 1, memory_order_relaxed);
        return;
    }
    if (q->solo_live == (v >> 2) + 1)
        return; /* in the books already */
    atomic_store_explicit(&q->solo_stop, 1, memory_order_relaxed);
    rqi_asym_heavy(q->ctx->mt.heavy);
    v = atomic_load_explicit(&q->solo, memory_order_acquire);
    if ((v & 3) != SOLO_RUNNING || q->solo_live == (v >> 2) + 1)
        return; /* over (its effects are visible), or in the books */
    struct pdq_entry *e = atomic_load_explicit(&q->solo_e, memory_order_relaxed);
    q->solo_live = (v >> 2) + 1;
    e->epoch = (uint8_t)q->epoch;
    q->arrived[e->epoch]++;
    q->arrived_all++;
    if (e->key != RQ_KEY_NOSYNC && key_claim(q, e, 0) != 1) {
        fputs("librq: pdq: a solo message's key was busy as it entered the books\n", stderr);
        abort(); /* exclusion is broken: a bug, not a condition to go on from */
    }
}

/* ---- rings ------------------------------------------------------------ */

static unsigned ring_room(const struct pdq_ring *r)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    return PDQ_RING - (unsigned)(t - atomic_load_explicit(&r->head, memory_order_acquire));
}

/* Owner only; the caller checked ring_room. */
static void ring_push(struct pdq_ring *r, struct pdq_entry *e)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    atomic_store_explicit(&r->slot[t & (PDQ_RING - 1)], e, memory_order_relaxed);
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
}

static struct pdq_entry *ring_pop(struct pdq_ring *r)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    for (;;) {
        if (h >= atomic_load_explicit(&r->tail, memory_order_acquire))
            return NULL;
        struct pdq_entry *e = atomic_load_explicit(&r->slot[h & (PDQ_RING - 1)], memory_order_relaxed);
        if (atomic_compare_exchange_weak_explicit(&r->head, &h, h + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return e;
    }
}

static int ring_empty(struct pdq_ring *r)
{
    return atomic_load_explicit(&r->head, memory_order_acquire) >=
           atomic_load_explicit(&r->tail, memory_order_acquire);
}

/* Some thread's ring holds a ready entry. */
static int rings_ready(struct rq_pdq *q)
{
    for (unsigned i = 0; i < q->nthreads; i++)
        if (!ring_empty(&q->rings[i]))
            return 1;
    return 0;
}

/* Set when this thread found another thread's shard locked (its owner
 * admits there): busy, not stuck. */
static _Thread_local int admit_passed __attribute__((tls_model("initial-exec")));
/* Set when it left another thread's work to that thread, which keeps
 * taking it (owner_stalled); left_looks counts such looks in a row.  Past
 * PDQ_IDLE_SPINS of them the thread is stuck, as behind a busy key: it
 * sleeps between looks and the owner does not wake it for that work (a
 * thread spinning beside a hot key's owner, and woken by it at every
 * batch, made the owner's lines move at each look: 0.4-0.7x of one
 * thread).  Sooner, it is only a full window for a moment. */
static _Thread_local int left_to_owner __attribute__((tls_model("initial-exec")));
static _Thread_local unsigned left_looks __attribute__((tls_model("initial-exec")));

/* ---- taking another thread's work -----------------------------------------
 * A PDQ thread with nothing of its own takes another thread's work (admits
 * from its shard, steals the lone ready entry of its ring) only once that
 * thread has stopped taking it itself: the shard's `popped` count, or the
 * ring's head, has not moved for PDQ_STALL_NS (it runs a long handler, or
 * sleeps).  Taking it while the owner keeps up moves the key's entries,
 * bucket and data to the other core and back: a hot key of 0 ns handlers
 * ran on both threads by turns at 0.4x of one thread.  Each thread keeps
 * what it last saw of each (its own record, per PDQ; indices past 64
 * share records, which only makes the look slower or quicker). */
#define PDQ_STALL_NS 20000u
#define PDQ_WATCH    64u
static _Thread_local struct {
    uint64_t gen;
    uint64_t mark[3][PDQ_WATCH], since[3][PDQ_WATCH];
} watch __attribute__((tls_model("initial-exec")));

/* Whether another thread's shard (kind 0), ring (kind 1) or solo run
 * (kind 2, solo_elsewhere) i, whose
 * marker reads `mark` now, has not moved for PDQ_STALL_NS. */
static int owner_stalled(const struct rq_pdq *q, int kind, unsigned i, uint64_t mark)
{
    if (watch.gen != q->gen) {
        memset(&watch, 0, sizeof watch);
        watch.gen = q->gen;
    }
    i %= PDQ_WATCH;
    const uint64_t now = rqi_mono_ns();
    if (watch.since[kind][i] == 0 || watch.mark[kind][i] != mark) {
        watch.mark[kind][i] = mark;
        watch.since[kind][i] = now;
        return 0;
    }
    return now - watch.since[kind][i] >= PDQ_STALL_NS;
}

/* This thread moved another thread's marker itself (it admitted from that
 * shard or popped that ring): not the owner's progress, so the owner stays
 * stalled.  Taken as progress, it held the taker off for PDQ_STALL_NS
 * after each batch while the owner was still waking: a hot key whose
 * shard's owner slept ran nothing for 20-40 us of each repetition. */
static void owner_moved_by_me(unsigned kind, unsigned i, uint64_t mark)
{
    watch.mark[kind][i % PDQ_WATCH] = mark;
}

/* A ready entry of another thread's ring: one of two or more at once; a
 * lone one (its key's holder, probably with more of the key behind it)
 * once its owner stalls (it may be in a handler that waits for it). */
static _Thread_local struct pdq_ring *stolen_from __attribute__((tls_model("initial-exec")));

static struct pdq_entry *steal(struct rq_pdq *q, const struct pdq_ring *mine)
{
    unsigned n = q->nthreads, start = mine != NULL ? (unsigned)(mine - q->rings) + 1 : 0;
    for (unsigned i = 0; i < n; i++) {
        struct pdq_ring *r = &q->rings[(start + i) % n];
        if (r == mine || ring_empty(r))
            continue;
        const uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
        if (mine != NULL && PDQ_RING - ring_room(r) < 2 &&
            !owner_stalled(q, 1, (start + i) % n, h)) {
            left_to_owner = 1;
            continue;
        }
        struct pdq_entry *e = ring_pop(r);
        if (e != NULL) {
            if (mine != NULL)
                owner_moved_by_me(1, (start + i) % n, h + 1);
            stolen_from = r;
            return e;
        }
    }
    return NULL;
}

/* ---- counters ---------------------------------------------------------- */

/* The entries completed (in epoch 0, 1, or both: -1).  Only the slots
 * handed out so far are read (helper_turn): a slot handed out after the
 * load holds no count the caller could be waiting for that it would not
 * look for again (every caller compares against a bound it reached by
 * counting, and retries while short: an undercount only waits). */
static uint64_t sum_done(const struct rq_pdq *q, int epoch)
{
    const unsigned turns = atomic_load_explicit(&q->helper_turn, memory_order_relaxed);
    const unsigned used = q->nthreads + (turns < PDQ_EXTRA_SLOTS ? turns : PDQ_EXTRA_SLOTS);
    uint64_t s = 0;
    for (unsigned i = 0; i < used; i++) {
        if (epoch != 1)
            s += atomic_load_explicit(&q->slots[i].done[0], memory_order_acquire);
        if (epoch != 0)
            s += atomic_load_explicit(&q->slots[i].done[1], memory_order_acquire);
    }
    return s;
}


/* ---- entries ------------------------------------------------------------ */

/* Entries a thread has finished, freed a batch at a time.  Only n needs
 * a value to start: `= {.n = 0}` zeroed the whole 1 KiB array, a quarter
 * of an idle helper's call (a `rep stos` on every rq_pdq_help). */
struct freeb {
    unsigned          n;
    struct pdq_entry *e[PDQ_FREE_BATCH];
};

/* Under in_lk: keep e's record (e->small: its class) for reuse. */
static void free_push(struct rq_pdq *q, struct pdq_entry *e)
{
    e->next = q->free_small[e->small - 1];
    q->free_small[e->small - 1] = e;
    q->nfree++;
}

static void fb_flush(struct rq_pdq *q, struct freeb *f)
{
    if (f->n == 0)
        return;
    for (unsigned i = 0; i < f->n; i++)
        if (f->e[i]->how == RQI_PDQ_OWN)
            free(f->e[i]->data);
    unsigned keep = 0;
    in_lock(q);
    for (unsigned i = 0; i < f->n; i++) {
        struct pdq_entry *e = f->e[i];
        if (e->small) { /* all of them: an idle thread trims (pool_trim) */
            free_push(q, e);
        } else {
            f->e[keep++] = e;
        }
    }
    in_unlock(q);
    for (unsigned i = 0; i < keep; i++)
        free(f->e[i]);
    f->n = 0;
}

static void fb_put(struct rq_pdq *q, struct freeb *f, struct pdq_entry *e)
{
    if (e->how == RQI_PDQ_DIRECT)
        return; /* on its runner's stack */
    if (q->limit != 0) /* at once: the intake may be waiting for room */
        atomic_fetch_sub_explicit(&q->bytes, e->bytes, memory_order_relaxed);
    f->e[f->n++] = e;
    if (f->n == PDQ_FREE_BATCH)
        fb_flush(q, f);
}

/* A shard's backlog is an array, not a list: admission walks it with the
 * next entries prefetched (a list of cold entries is one miss after
 * another).  Under the shard's lock. */
static struct pdq_entry *sh_first(const struct pdq_shard *sh)
{
    return sh->h != sh->t ? sh->bl[sh->h & (sh->cap - 1)] : NULL;
}

static void sh_pop(struct rq_pdq *q, struct pdq_shard *sh)
{
    /* Fetch the entry 8 ahead, and the key table's bucket of the one 4
     * ahead (whose entry the last prefetch brought). */
    sh->h++;
    const uint64_t m = sh->cap - 1;
    if (sh->h + 8 < sh->t) {
        const char *e8 = (const char *)sh->bl[(sh->h + 8) & m];
        __builtin_prefetch(e8); /* the header; its arguments are on the next line */
        __builtin_prefetch(e8 + 64);
    }
    if (sh->h + 4 < sh->t)
        __builtin_prefetch(bucket_of(q, sh->bl[(sh->h + 4) & m]->key), 1);
}

/* Append e to shard sh.  0, or RQ_ENOMEM (it cannot grow). */
static int sh_append(struct pdq_shard *sh, struct pdq_entry *e)
{
    if (sh->t - sh->h == sh->cap) {
        uint64_t cap = sh->cap != 0 ? 2 * sh->cap : 256;
        struct pdq_entry **n = malloc(sizeof *n * cap);
        if (n == NULL)
            return RQ_ENOMEM;
        uint64_t len = sh->t - sh->h;
        for (uint64_t i = 0; i < len; i++)
            n[i] = sh->bl[(sh->h + i) & (sh->cap - 1)];
        free(sh->bl);
        sh->bl = n;
        sh->cap = cap;
        sh->h = 0;
        sh->t = len;
    }
    sh->bl[sh->t++ & (sh->cap - 1)] = e;
    atomic_store_explicit(&sh->n, sh->t - sh->h, memory_order_relaxed);
    return 0;
}

/* Under in_lk: a recycled record of class cls (1: PDQ_TINY_BYTES, 2:
 * PDQ_SMALL_BYTES), or NULL. */
static struct pdq_entry *free_pop(struct rq_pdq *q, int cls)
{
    struct pdq_entry *e = q->free_small[cls - 1];
    if (e != NULL) {
        q->free_small[cls - 1] = e->next;
        q->nfree--;
    }
    return e;
}

/* An idle thread gives the recycled entries beyond PDQ_FREE_MAX back to
 * malloc, a few hundred per hold of in_lk.  While busy the pool keeps
 * every entry: past the cap the rest went to free(), and two threads
 * freeing another thread's blocks waited on malloc's arena lock (a
 * backlog of 100 000 at 0 ns ran 0.6x slower on 2 threads than on one). */
static void pool_trim(struct rq_pdq *q)
{
    for (;;) {
        struct pdq_entry *list = NULL;
        in_lock(q);
        for (unsigned i = 0; i < 256 && q->nfree > PDQ_FREE_MAX; i++) {
            struct pdq_entry *e = free_pop(q, q->free_small[1] != NULL ? 2 : 1);
            e->next = list;
            list = e;
        }
        in_unlock(q);
        if (list == NULL)
            return;
        while (list != NULL) {
            struct pdq_entry *n = list->next;
            free(list);
            list = n;
        }
    }
}

/* Queue a message whose key is already split from its arguments: copied
 * into an entry (a recycled one when small) and, under one hold of in_lk,
 * arrived and admitted or appended to the backlog. */
static int entry_push(struct rq_pdq *q, uint32_t src, uint32_t tag, uint64_t key,
                      const uint64_t *args, unsigned nargs, void *data, size_t len, int how)
{
    size_t inl = how == RQI_PDQ_COPY ? len : 0;
    size_t size = sizeof(struct pdq_entry) + 8u * nargs + inl;
    uint64_t acct = size + (how == RQI_PDQ_OWN ? len : 0);
    /* Records of two sizes: a backlog of 100 000 small messages in 256-byte
     * records (25 MB) was about this machine's 32 MB L3, and ran half as
     * fast in the repetitions where it did not stay there; most keyed
     * messages fit 128 bytes (12.8 MB). */
    const int small = size <= PDQ_TINY_BYTES ? 1 : size <= PDQ_SMALL_BYTES ? 2 : 0;
    /* A PDQ thread taking packets in admits them straight into its ring
     * while nothing waits ahead of them. */
    struct pdq_ring *ring = pumping == q ? my_ring(q) : NULL;
    struct pdq_entry *e = NULL;
    in_lock(q);
    for (;;) {
        if (q->limit != 0 &&
            atomic_load_explicit(&q->bytes, memory_order_relaxed) + acct > q->limit) {
            in_unlock(q);
            free(e);
            return RQ_ENOMEM; /* RQ_VBUF_MAX: the packet waits in its lane */
        }
        if (e != NULL || (small && (e = free_pop(q, small)) != NULL))
            break;
        in_unlock(q);
        /* Small entries on whole lines. */
        if ((e = small ? aligned_alloc(64, small == 1 ? PDQ_TINY_BYTES : PDQ_SMALL_BYTES)
                       : malloc(size)) == NULL)
            return RQ_ENOMEM;
        in_lock(q);
    }
    solo_settle(q, 1);
    e->key = key;
    e->src = src;
    e->tag = tag;
    e->nargs = (uint8_t)nargs;
    e->how = (uint8_t)how;
    e->small = (uint8_t)small;
    e->bytes = (uint32_t)acct;
    e->len = len;
    memcpy(e->args, args, 8u * nargs);
    if (how == RQI_PDQ_COPY) {
        e->data = e->args + nargs;
        if (len != 0)
            memcpy(e->data, data, len);
    } else {
        e->data = data;
    }
    e->epoch = (uint8_t)q->epoch; /* before anyone else can see e */
    const uint64_t seqs = atomic_load_explicit(&q->seq_arrived, memory_order_relaxed);
    e->gen = seqs;
    int queued = 1;
    if (key == RQ_KEY_SEQUENTIAL) {
        e->before = q->arrived_all;
        e->next = NULL;
        if (q->seq_tail != NULL)
            q->seq_tail->next = e;
        else
            q->seq_head = e;
        q->seq_tail = e;
        atomic_store_explicit(&q->seq_arrived, seqs + 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&q->seq_queued, 1, memory_order_relaxed);
    } else {
        /* NOSYNC entries have no order to keep: spread over the shards. */
        struct pdq_shard *sh = key == RQ_KEY_NOSYNC ? &q->shards[q->arrived_all % q->nshards]
                                                    : shard_of(q, key);
        spin_lock(&sh->lk);
        int taken = 0; /* ready in this thread's ring, or parked behind its key */
        if (ring != NULL && sh->h == sh->t &&
            seqs == atomic_load_explicit(&q->gen_open, memory_order_relaxed) &&
            ring_room(ring) != 0 && window_open(q)) {
            const int c = key == RQ_KEY_NOSYNC ? 1 : key_claim(q, e, 1);
            if (c == 1)
                ring_push(ring, e);
            taken = c >= 0;
        }
        if (taken) {
            queued = 0;
        } else if (sh_append(sh, e) != 0) {
            spin_unlock(&sh->lk);
            if (!e->small) /* large enough for the larger records */
                e->small = 2;
            free_push(q, e); /* back where it came from (or freed at close) */
            in_unlock(q);
            return RQ_ENOMEM;
        } else {
            atomic_fetch_add(&q->nbacklog, 1);
        }
        spin_unlock(&sh->lk);
    }
    q->arrived_all++;
    q->arrived[e->epoch]++;
    if (q->limit != 0)
        atomic_fetch_add_explicit(&q->bytes, acct, memory_order_relaxed);
    in_unlock(q);
    /* A thread that takes packets in to run them looks next itself. */
    if (queued && pumping != q)
        wake_if_sleeping(q);
    return 0;
}

void rqi_pdq_wake(struct rq_pdq *q) { wake_if_sleeping(q); }

int rqi_pdq_push(struct rq_pdq *q, uint32_t src, uint32_t tag, unsigned flags,
                 const uint64_t *args, unsigned nargs, void *data, size_t len, int how)
{
    uint64_t key = RQ_KEY_NOSYNC; /* a plain rq_enqueue to a PDQ's qid */
    if ((flags & RQI_PF_KEY) && nargs != 0)
        key = args[--nargs];
    return entry_push(q, src, tag, key, args, nargs, data, len, how);
}

/* ---- admission ----------------------------------------------------------- */

/* Under sh->lk: admit from shard sh's head, in arrival order, as many as
 * the window grants (at most cap), while the entries are of the open
 * generation (none waits for a RQ_KEY_SEQUENTIAL entry): ready entries go
 * to ring (at most its room), or, with no ring, the first ready one is
 * returned to run at once (*one).  Returns entries admitted. */
static unsigned admit_shard(struct rq_pdq *q, struct pdq_shard *sh, struct pdq_ring *ring,
                            struct pdq_entry **one)
{
    const uint64_t len = sh->t - sh->h;
    const uint64_t open = atomic_load_explicit(&q->gen_open, memory_order_acquire);
    if (len == 0 || sh_first(sh)->gen != open || !window_open(q))
        return 0;
    const unsigned want = len < PDQ_BATCH ? (unsigned)len : PDQ_BATCH;
    unsigned n = 0, ready = 0, room = ring != NULL ? ring_room(ring) : 1, places = 0;
    struct claim_hold h = {NULL, NULL, 0};
    struct pdq_entry *e;
    while (n < want && ready < room && (e = sh_first(sh)) != NULL && e->gen == open) {
        if (e->key != RQ_KEY_NOSYNC) {
            const int c = claim_held(q, &h, e, &places);
            if (c < 0)
                break; /* the window is full: e and what follows wait */
            sh_pop(q, sh);
            n++;
            if (c == 0)
                continue; /* behind its key's running entry */
        } else {
            sh_pop(q, sh);
            n++;
        }
        ready++;
        if (ring != NULL) {
            ring_push(ring, e);
        } else {
            *one = e;
            break;
        }
    }
    claim_release(&h);
    park_give(q, places);
    if (n != 0) {
        /* Release: a direct run that reads 0 sees these claims. */
        atomic_store_explicit(&sh->n, sh->t - sh->h, memory_order_release);
        atomic_store_explicit(&sh->popped, atomic_load_explicit(&sh->popped, memory_order_relaxed) + n,
                              memory_order_relaxed);
        atomic_fetch_sub(&q->nbacklog, n);
    }
    return n;
}

/* Admit from the shards (see admit_shard): a PDQ thread from its own
 * (others: false), or from the others, by trylock (their owners admit
 * there); a helper (no ring) from every shard, starting at its own turn.
 * *one as there.  Wakes a sleeper when this left ready work for a
 * second thread. */
static _Thread_local unsigned help_turn __attribute__((tls_model("initial-exec")));

static unsigned admit(struct rq_pdq *q, struct pdq_ring *ring, int others, struct pdq_entry **one)
{
    *one = NULL;
    if (atomic_load_explicit(&q->nbacklog, memory_order_relaxed) == 0)
        return 0;
    const unsigned ns = q->nshards;
    unsigned n = 0, first, count;
    if (ring == NULL) {
        first = help_turn++ % ns;
        count = ns;
    } else {
        const unsigned mine = (unsigned)(ring - q->rings) % ns;
        first = others ? mine + 1 : mine;
        count = others ? ns - 1 : 1;
    }
    for (unsigned i = 0; i < count && n == 0; i++) {
        struct pdq_shard *sh = &q->shards[(first + i) % ns];
        if (atomic_load_explicit(&sh->n, memory_order_relaxed) == 0)
            continue;
        if (ring == NULL || !others) {
            spin_lock(&sh->lk);
        } else if (!owner_stalled(q, 0, (first + i) % ns,
                                  atomic_load_explicit(&sh->popped, memory_order_relaxed))) {
            left_to_owner = 1;
            continue;
        } else if (atomic_exchange_explicit(&sh->lk, 1, memory_order_acquire) != 0) {
            admit_passed = 1; /* its owner admits there: not stuck, busy */
            continue;
        }
        n = admit_shard(q, sh, ring, one);
        if (others && n != 0)
            owner_moved_by_me(0, (first + i) % ns,
                              atomic_load_explicit(&sh->popped, memory_order_relaxed));
        spin_unlock(&sh->lk);
    }
    /* Ready work for a second thread; what stays in the shard (behind
     * busy keys, or beyond this batch) this thread admits itself next. */
    if (n != 0 && ring != NULL && PDQ_RING - ring_room(ring) >= 2)
        wake_if_sleeping(q);
    return n;
}

/* The first RQ_KEY_SEQUENTIAL entry, taken out if it may run now: every
 * entry that arrived before it has completed (the SEQUENTIAL ones before
 * it too); nothing that arrived after it is admitted until it returns
 * (their generation opens then). */
static struct pdq_entry *seq_take(struct rq_pdq *q)
{
    /* None queued (one may run): no lock.  Idle threads looking under
     * in_lk while a SEQUENTIAL handler ran held up the intake. */
    if (atomic_load_explicit(&q->seq_queued, memory_order_relaxed) == 0)
        return NULL;
    in_lock(q);
    struct pdq_entry *e = q->seq_head;
    if (e != NULL && e->gen == atomic_load_explicit(&q->gen_open, memory_order_relaxed) &&
        sum_done(q, -1) == e->before) {
        q->seq_head = e->next;
        if (q->seq_head == NULL)
            q->seq_tail = NULL;
        atomic_fetch_sub_explicit(&q->seq_queued, 1, memory_order_relaxed);
    } else {
        e = NULL;
    }
    in_unlock(q);
    return e;
}

/* ---- running ------------------------------------------------------------- */

/* Run one entry's handler.  Returns 1 if it found no handler. */
static int run_handler(struct rq_pdq *q, struct pdq_entry *e)
{
    rq_ctx_t *ctx = q->ctx;
    if (e->tag >= RQ_MAX_HANDLERS || ctx->handlers[e->tag].fn == NULL)
        return 1;
    const struct rqi_handler *h = &ctx->handlers[e->tag];
    rq_msg_t m = {(int)e->src, q->qid, e->tag, e->nargs, e->args, e->data, e->len, e->key, 0, 0};
    h->fn(ctx, &m, h->arg);
    return 0;
}

/* Run e (counted as started), then mark it done and free it.  A rejection
 * is counted (rq_stats' `rejected`) before the done count releases it, so
 * a drain that saw e done sees it counted too. */
static void run_one(struct rq_pdq *q, struct pdq_entry *e, struct pdq_slot *s, struct freeb *fb,
                    unsigned *ran, int keep)
{
    if (run_handler(q, e))
        atomic_fetch_add_explicit(&q->ctx->pdq_rejected, 1, memory_order_relaxed);
    else
        (*ran)++;
    if (keep)
        return; /* its key's holder: counted done by key_finish */
    const unsigned ep = e->epoch;
    fb_put(q, fb, e);
    count_add(q, &s->done[ep], 1, memory_order_release);
}

/* e, holding its key, has run: run the key's pending entries as they
 * come (the thread that finishes a key runs its next message), e keeping
 * the key until none is left; then count e done.  e is counted last, once
 * its key has left the table, so a thread that finds every arrived entry
 * done (solo_lease) finds the key table empty. */
static void key_finish(struct rq_pdq *q, struct pdq_entry *e, struct pdq_slot *s, struct freeb *fb,
                       unsigned *ran)
{
    const unsigned ep = e->epoch;
    struct pdq_entry *n;
    while ((n = key_take_pending(q, e)) != NULL)
        while (n != NULL) {
            struct pdq_entry *next = n->next;
            run_one(q, n, s, fb, ran, 0);
            n = next;
        }
    fb_put(q, fb, e); /* out of the table now */
    count_add(q, &s->done[ep], 1, memory_order_release);
}

/* e was started (counted) by this thread: run it, then its key's pending
 * entries as they come (the thread that finishes a key runs its next
 * message), e holding the key until none is left.  Returns handlers run. */
static unsigned run_chain(struct rq_pdq *q, struct pdq_entry *e, struct freeb *fb)
{
    unsigned ran = 0;
    struct pdq_slot *s = &q->slots[my_slot(q)];
    const uint64_t key = e->key;
    rqi_pdq_handler_depth++;
    if (key == RQ_KEY_NOSYNC || key == RQ_KEY_SEQUENTIAL) {
        run_one(q, e, s, fb, &ran, 0);
        if (key == RQ_KEY_SEQUENTIAL) { /* what arrived after it may go */
            in_lock(q);
            atomic_store_explicit(&q->gen_open,
                                  atomic_load_explicit(&q->gen_open, memory_order_relaxed) + 1,
                                  memory_order_release);
            in_unlock(q);
            if (q->nthreads > 1 && atomic_load_explicit(&q->nbacklog, memory_order_relaxed) != 0)
                wake_all(q);
        }
    } else {
        run_one(q, e, s, fb, &ran, 1); /* e stays: it holds the key */
        key_finish(q, e, s, fb, &ran);
    }
    rqi_pdq_handler_depth--;
    return ran;
}

/* Find one ready entry (own ring, the backlog, another thread's ring),
 * count it started.  NULL: none. */
/* Set by next_ready when it found nothing ready with entries left in the
 * backlog (the window full of entries waiting for busy keys, or a
 * SEQUENTIAL one waiting): looking again at once would only take locks the
 * running threads need (a hot key's bucket, their counters' lines). */
static _Thread_local int backlog_stuck __attribute__((tls_model("initial-exec")));

static int seq_waiting(const struct rq_pdq *q)
{
    return atomic_load_explicit(&q->seq_arrived, memory_order_relaxed) !=
           atomic_load_explicit(&q->gen_open, memory_order_relaxed);
}

/* In the order that keeps a key's work on one core: this thread's ring,
 * its shard, the other threads' rings (ready work waiting behind a
 * handler), their shards, a RQ_KEY_SEQUENTIAL entry. */
static struct pdq_entry *next_ready(struct rq_pdq *q, struct pdq_ring *ring)
{
    backlog_stuck = 0;
    admit_passed = 0;
    left_to_owner = 0;
    stolen_from = NULL;
    struct pdq_entry *e = ring != NULL ? ring_pop(ring) : NULL;
    if (e == NULL && ring != NULL) {
        admit(q, ring, 0, &e);
        e = ring_pop(ring);
    }
    if (e == NULL)
        e = steal(q, ring);
    if (e == NULL) {
        admit(q, ring, 1, &e);
        if (e == NULL && ring != NULL)
            e = ring_pop(ring);
    }
    if (e == NULL)
        e = seq_take(q);
    if (e == NULL) {
        left_looks = left_to_owner ? left_looks + 1 : 0;
        if (left_to_owner && left_looks <= PDQ_IDLE_SPINS)
            return NULL; /* busy, not stuck, for now */
        backlog_stuck = !admit_passed &&
                        (left_to_owner || atomic_load_explicit(&q->nbacklog, memory_order_relaxed) != 0 ||
                         seq_waiting(q));
        return NULL;
    }
    left_looks = 0;
    /* About to run a handler that may take long (or wait for a later
     * message): ready work left in the ring (its own, or the one it stole
     * from: a thread woken to steal the first of several entries, which
     * did not look at that ring again, left the rest to threads asleep
     * while every awake one blocked in a handler: pdq_blocked at 8
     * threads) is a sleeper's, and so is the
     * backlog when no other thread will look at it (none awake, none
     * asleep until its next look at a stuck backlog).  Waking a sleeper
     * for a backlog that a stuck one looks at anyway cost a hot key's
     * runner a futex call per batch.  The fence orders this thread's
     * pushes before its look at `sleepers`. */
    if (q->nthreads > 1 && atomic_load_explicit(&q->sleepers, memory_order_relaxed) != 0 &&
        ((ring != NULL && !ring_empty(ring)) || (stolen_from != NULL && !ring_empty(stolen_from)) ||
         (atomic_load_explicit(&q->nbacklog, memory_order_relaxed) != 0 &&
          atomic_load(&q->awake) + atomic_load(&q->stuck) <= 1)))
        wake_if_sleeping(q);
    return e;
}

/* ---- direct dispatch --------------------------------------------------
 * The PDQ's own two-case delivery.  A small packet for q that comes up at
 * the head of a lane while nothing is in q's backlog and its key is free
 * runs at once on the thread that found it: copied to that thread's stack
 * (its slots are released at once, so the lane is never pinned), never
 * queued.  The stack entry stands for it in the key table while it runs. */


/* Whether this thread's next pump may run a packet directly: it took in
 * at most one packet last time (light load: latency matters); under a
 * stream it takes packets in by the burst instead (one context lock per
 * burst, not per packet). */
static _Thread_local int light __attribute__((tls_model("initial-exec"))) = 1;

/* The intake's hold of the context (pump): let both go, or take them
 * back (0: the context is another thread's now; nothing held). */
static RQI_ALWAYS_INLINE void intake_let_go(struct rq_pdq *q)
{
    rqi_vni_leave(&q->ctx->vni, q->ctx);
    atomic_store_explicit(&q->intake, 0, memory_order_relaxed);
    rqi_mt_unlock(&q->ctx->mt);
}

static RQI_ALWAYS_INLINE int intake_retake(struct rq_pdq *q)
{
    if (!rqi_mt_trylock(&q->ctx->mt))
        return 0;
    atomic_store_explicit(&q->intake, 1, memory_order_relaxed);
    rqi_vni_enter(&q->ctx->vni, q->ctx);
    return 1;
}

/* Some lane holds a published packet at its head (rqi_ring_rx_waiting:
 * the shared words the consumer reads anyway, without owning the
 * context).  For the sleeper's look (sleep_arm, lanes_for_pdq) the head's
 * packet is the one that matters: a later one is taken only after it, and
 * its sender is the other side of the doorbell's Dekker pair. */
static int lanes_busy(const rq_ctx_t *ctx)
{
    for (unsigned l = 0; l < ctx->nlanes; l++)
        if (rqi_ring_rx_waiting(&ctx->rx[l]))
            return 1;
    return 0;
}

/* Some lane's head may hold a packet that q's intake (pump) takes: one
 * for a PDQ of this context, a pad, or one it would reject (it moves past
 * both).  Any other packet (an active message, a named queue's) stops
 * that intake until rq_poll takes it: a helper that counted it as work
 * took the context's lock and let it go again on every call, for as long
 * as the application did not poll.  ctx->pdq is read as a hint (pump
 * reads it again under the context's lock). */
static int lanes_for_pdq(const rq_ctx_t *ctx)
{
    int some = 0;
    for (unsigned l = 0; l < ctx->nlanes && !some; l++) {
        unsigned qid, kind;
        if (rqi_ring_rx_waiting_what(&ctx->rx[l], &qid, &kind)) {
            RQI_TSAN_IGNORE_BEGIN();
            some = kind == RQI_PK_PAD || qid >= RQ_MAX_QUEUES || ctx->pdq[qid] != NULL;
            RQI_TSAN_IGNORE_END();
        }
    }
    return some;
}

/* The context is ours (taken once, by trylock) and p is q's valid inline
 * packet at rx's scan.  If it may run now: take it out of the lane, let
 * the context go, run it (and its key's successors) and return 1.  0: it
 * must queue (the context is still ours). */
static int direct_run(struct rq_pdq *q, struct rqi_ring_rx *rx, struct rqi_pkt *p,
                      struct freeb *fb)
{
    rq_ctx_t *ctx = q->ctx;
    rq_msg_t m;
    rqi_msg_from_pkt(ctx, p, &m);
    if (8u * m.nargs + m.len > PDQ_DIRECT_BYTES || m.key == RQ_KEY_SEQUENTIAL)
        return 0;
    _Alignas(8) unsigned char buf[sizeof(struct pdq_entry) + PDQ_DIRECT_BYTES];
    struct pdq_entry *e = (struct pdq_entry *)(void *)buf;
    e->key = m.key;
    in_lock(q);
    solo_settle(q, 1);
    /* Nothing waits for a SEQUENTIAL entry, nothing of its key is queued
     * (its shard is empty), the window has room, the key is free. */
    int ok = atomic_load_explicit(&q->seq_arrived, memory_order_relaxed) ==
             atomic_load_explicit(&q->gen_open, memory_order_relaxed);
    if (ok && m.key == RQ_KEY_NOSYNC) {
        ok = window_open(q);
    } else if (ok) {
        /* The shard's count, not its lock: under in_lk nothing is
         * appended, and an admitter stores the count (release) after the
         * keys of what it took out are claimed, so a 0 here means every
         * earlier entry of the key holds it or waits behind its holder
         * (key_claim then finds it busy). */
        ok = atomic_load_explicit(&shard_of(q, m.key)->n, memory_order_acquire) == 0 &&
             window_open(q) && key_claim(q, e, 0) == 1;
    }
    if (ok) {
        e->epoch = (uint8_t)q->epoch;
        q->arrived[e->epoch]++;
        q->arrived_all++;
    }
    in_unlock(q);
    if (!ok)
        return 0;
    e->src = (uint32_t)m.src;
    e->tag = m.handler;
    e->nargs = (uint8_t)m.nargs;
    e->how = RQI_PDQ_DIRECT;
    e->small = 0;
    e->bytes = 0;
    e->len = m.len;
    memcpy(e->args, m.args, 8u * m.nargs);
    e->data = m.len != 0 ? (void *)(e->args + m.nargs) : NULL;
    if (m.len != 0)
        memcpy(e->data, m.data, m.len);
    uint64_t pos = rqi_ring_rx_take(rx, p);
    rqi_ring_rx_release(rx, p, pos);
    /* The lane is empty behind it: hand the space back now, as a poll
     * that finds it empty does, so that the look below (and helpers'
     * looks, rqi_ring_rx_waiting) see an empty lane, not this packet:
     * they saw it, and a direct run was followed by a queued one every
     * time (a copy into an entry, admission, a key claim). */
    if (rqi_ring_rx_peek(rx) == NULL)
        rqi_ring_rx_idle(rx);
    ctx->stats.received++; /* as the intake counts it: a PDQ's packets are
                              neither run in place nor buffered */
    intake_let_go(q);
    pumping = NULL; /* what the handler's sends take in wakes as usual */
    run_chain(q, e, fb);
    light = !lanes_for_pdq(ctx);
    return 1;
}

/* ---- solo dispatch ------------------------------------------------------
 * Direct dispatch with no lock and no locked instruction per message.
 * While nothing of q is queued, admitted or running anywhere (every
 * arrived entry done, no SEQUENTIAL one waiting: the lease, solo_lease),
 * a PDQ thread taking packets in is the only thread that runs anything of
 * q, so it may run q's small packets one after another, each from a copy
 * on its stack with the context let go, with no entry, no count and no key
 * claim: one thread in arrival order keeps every key's order and
 * exclusion.  Anything else that arrives meanwhile (another thread's
 * intake, an application poll, a helper, the progress thread) or a drain
 * goes through solo_settle first, which puts a running message in the
 * books (counted, its key claimed) and stops the run; the runner then
 * finishes that message as a direct entry.
 * A direct run pays three locked instructions per message (in_lk, the
 * key's claim and release; it took the shard's lock too when solo runs
 * were measured), each of which waits for the packet's lines to come
 * from the sender's core; a CAS per message in their place
 * still cost a fifth of the rate (docs/pdq.md has the figures).
 * Other threads leave the intake to a runner whose word keeps moving
 * (solo_elsewhere): a handler that runs 20 us (PDQ_STALL_NS) lets them in,
 * so a ready message never waits long behind one that blocks.
 * With more than one thread:
 *  - a run whose messages take over PDQ_SOLO_SHORT_NS each (three windows
 *    of 16 in a row: one preemption is not long messages) stops, and no
 *    run starts for a while (solo_back_off: 100 us, doubling up to 100 ms
 *    while messages stay long; a full burst of short ones resets it):
 *    such handlers go faster in parallel than one after another;
 *  - a thread that finds the lease refused only because some of q is
 *    still queued or running asks the intake to hold off (solo_want_ok),
 *    so that the threads finish what they hold and the next intake takes
 *    the lease: threads taking packets in while the others run theirs
 *    kept q busy for ever, and a stream of short messages stayed queued
 *    once one run had stopped. */
#define PDQ_SOLO_BURST     256u /* messages a run takes before its thread looks at the rest */
#define PDQ_SOLO_SHORT_NS  200u /* the most a message may take for a run to go on (T > 1) ... */
#define PDQ_SOLO_WINDOW    16u  /* ... on average over a window of this many messages ... */
#define PDQ_SOLO_SLOW_WINDOWS 3u /* ... in this many windows in a row (one preemption is not long messages) */
#define PDQ_SOLO_DRY_LOOKS 64u  /* looks at dry lanes (a pause apart) before a run ends */
#define PDQ_SOLO_AHEAD     16u  /* slots fetched ahead while the run is behind its senders */
#define PDQ_SOLO_BEHIND    32u  /* messages without a dry look: behind */

#define PDQ_SOLO_WANT_NS        20000u     /* the most the intake holds off for a run */
#define PDQ_SOLO_BACKOFF_NS     100000u    /* no drain to a run for this long after a miss ... */
#define PDQ_SOLO_BACKOFF_MAX_NS 100000000u /* ... doubling each time, up to this */

enum { SOLO_NO_LEASE, SOLO_HELD, SOLO_LET_GO, SOLO_WAIT };
enum { LEASE_OK, LEASE_BUSY, LEASE_NEVER };

static _Thread_local uint64_t solo_seq __attribute__((tls_model("initial-exec")));

/* Another thread runs q solo and its word keeps moving: leave the intake
 * to it (an idle thread's trylock would only take the context from it,
 * and its intake would end the lease). */
static int solo_elsewhere(const struct rq_pdq *q)
{
    const uint64_t v = atomic_load_explicit(&q->solo, memory_order_relaxed);
    return v != 0 && (v & 3) != SOLO_PARKED && !owner_stalled(q, 2, 0, v);
}

/* A lease that its holder may not be using: none, or the helper's parked
 * one (any thread holding the context and the intake may take it over:
 * the helper resumes it only while holding them too, helper_resume). */
static int solo_free(uint64_t v) { return v == 0 || (v & 3) == SOLO_PARKED; }

/* Holding the context and the intake: take the lease if nothing of q is
 * queued, admitted or running, and no other thread holds it.  The done
 * counters are loaded with acquire: the handlers that ran before happen
 * before the ones this thread runs. */
static int solo_lease(struct rq_pdq *q, int helper)
{
    if (atomic_load_explicit(&q->seq_queued, memory_order_relaxed) != 0 || seq_waiting(q) ||
        !solo_free(atomic_load_explicit(&q->solo, memory_order_relaxed)))
        return LEASE_NEVER;
    if (atomic_load_explicit(&q->nbacklog, memory_order_relaxed) != 0)
        return LEASE_BUSY;
    in_lock(q);
    int r = LEASE_NEVER;
    if (solo_free(atomic_load_explicit(&q->solo, memory_order_relaxed)) && !seq_waiting(q))
        r = sum_done(q, -1) == q->arrived_all ? LEASE_OK : LEASE_BUSY;
    if (r == LEASE_OK) {
        atomic_store_explicit(&q->solo_stop, 0, memory_order_relaxed);
        q->solo_live = 0;
        atomic_store_explicit(&q->solo, solo_word(solo_seq, SOLO_IDLE), memory_order_relaxed);
        if (atomic_load_explicit(&q->solo_want, memory_order_relaxed) != 0)
            atomic_store_explicit(&q->solo_want, 0, memory_order_relaxed);
    }
    in_unlock(q);
    /* The run's messages wait in the lanes, where no other thread looks
     * while it runs: if one of its handlers blocks, only a watcher's look
     * (solo_elsewhere, owner_stalled) takes the rest in.  Threads asleep
     * with nothing to do look only when woken: have one up to watch.
     * (With every other thread blocked in a handler and one asleep, the
     * rest of the lane waited for ever: seen once in pdq_blocked.) */
    if (r == LEASE_OK && !helper && q->nthreads > 1 &&
        atomic_load_explicit(&q->watcher, memory_order_relaxed) == 0)
        wake_if_sleeping(q);
    return r;
}

/* No drain to a run for a while: the last run's messages were long, or
 * the last drain did not come.  Each time twice as long, up to
 * PDQ_SOLO_BACKOFF_MAX_NS; a run of short messages starts afresh. */
static void solo_back_off(struct rq_pdq *q, uint64_t now)
{
    uint64_t b = atomic_load_explicit(&q->solo_backoff_ns, memory_order_relaxed);
    b = b < PDQ_SOLO_BACKOFF_NS ? PDQ_SOLO_BACKOFF_NS : b < PDQ_SOLO_BACKOFF_MAX_NS ? 2 * b : b;
    atomic_store_explicit(&q->solo_backoff_ns, b, memory_order_relaxed);
    atomic_store_explicit(&q->solo_want_after, now + b, memory_order_relaxed);
}

/* No run, and no drain to one, until solo_want_after (T > 1). */
static int solo_backing_off(struct rq_pdq *q)
{
    const uint64_t after = atomic_load_explicit(&q->solo_want_after, memory_order_relaxed);
    if (after == 0)
        return 0;
    if (rqi_mono_ns() < after)
        return 1;
    /* Over: no clock read per intake from now on. */
    atomic_store_explicit(&q->solo_want_after, 0, memory_order_relaxed);
    return 0;
}

/* The lease failed only because some of q is queued or running, while
 * packets wait in the lanes: whether the intake should hold off until
 * all of it is done, so that a run can start.  Without this, threads
 * that take packets in while the others run theirs keep q busy for
 * ever: a stream of short messages stayed queued at 0.1-0.3x of one
 * thread's run on 16 cores (each message through the shard, the key
 * table and a ring).  The hold-off lasts PDQ_SOLO_WANT_NS at most. */
static int solo_want_ok(struct rq_pdq *q)
{
    const uint64_t w = atomic_load_explicit(&q->solo_want, memory_order_relaxed);
    const uint64_t now = rqi_mono_ns();
    if (w == 0) {
        atomic_store_explicit(&q->solo_want, now, memory_order_relaxed);
        return 1;
    }
    if (now - w < PDQ_SOLO_WANT_NS)
        return 1;
    atomic_store_explicit(&q->solo_want, 0, memory_order_relaxed);
    solo_back_off(q, now);
    return 0;
}

/* End the lease (the runner only). */
static void solo_end(struct rq_pdq *q, uint64_t seq)
{
    atomic_store_explicit(&q->solo, 0, memory_order_relaxed);
    solo_seq = seq;
}

/* The helper's run caught up (a dry look), holding the context and the
 * intake: keep the lease, parked, for its next help.  Taking a lease
 * costs in_lk (a locked instruction that waits for the store buffer:
 * 27% of a helper's run, one rank sending to itself) and the done
 * counters of every slot; resuming a parked one costs a load of
 * solo_stop.  Parked, the lease is no run: other threads take the lanes
 * in as if there were none (solo_elsewhere), an arrival sets solo_stop
 * (solo_settle), and another thread's lease takes it over (solo_free). */
static void helper_park(struct rq_pdq *q, uint64_t seq)
{
    atomic_store_explicit(&q->solo, solo_word(seq, SOLO_PARKED), memory_order_relaxed);
    solo_seq = seq;
}

/* Holding the context and the intake, the helper finds its parked lease
 * (the word it stored: only the helper parks, only a holder of both
 * changes a parked word): LEASE_OK if nothing arrived for q since (no
 * arrival set solo_stop; every arrival owns the context, so this load,
 * after the trylock's acquire, sees its store), and the lease is a run
 * again; else it ends, and the caller takes a lease as usual. */
static int helper_resume(struct rq_pdq *q)
{
    const uint64_t v = atomic_load_explicit(&q->solo, memory_order_relaxed);
    if (v != solo_word(solo_seq, SOLO_PARKED))
        return LEASE_NEVER;
    if (atomic_load_explicit(&q->solo_stop, memory_order_relaxed) != 0) {
        atomic_store_explicit(&q->solo, 0, memory_order_relaxed);
        return LEASE_NEVER;
    }
    atomic_store_explicit(&q->solo, solo_word(solo_seq, SOLO_IDLE), memory_order_relaxed);
    return LEASE_OK;
}

/* The runner saw stop after its message seq - 1 (e): end the lease; if
 * the message was put in the books while it ran, finish it as a direct
 * entry (its key's successors, then its done count).  The lease ends
 * first: once e is done another thread may take a lease. */
static void solo_stopped(struct rq_pdq *q, struct pdq_entry *e, uint64_t seq, struct freeb *fb)
{
    in_lock(q); /* what solo_settle wrote happens before */
    const int live = q->solo_live == seq;
    in_unlock(q);
    solo_end(q, seq);
    if (!live)
        return;
    struct pdq_slot *s = &q->slots[my_slot(q)];
    unsigned ran = 0;
    rqi_pdq_handler_depth++;
    if (e->key != RQ_KEY_NOSYNC)
        key_finish(q, e, s, fb, &ran);
    else
        count_add(q, &s->done[e->epoch], 1, memory_order_release);
    rqi_pdq_handler_depth--;
}

/* Every lane of ours dry, holding the context and the intake: look
 * again, a pause apart, up to PDQ_SOLO_DRY_LOOKS times (~3.5 us at 55 ns
 * a pause).  Held by this thread's own bias (nobody waits for it: a
 * thread that wants it clears the bias first) it keeps the context and
 * reads the lanes as their consumer; otherwise it lets the context go
 * while it looks (the lanes' shared words only) and takes it back.
 * SOLO_HELD: a packet came, the context and the intake held again;
 * SOLO_NO_LEASE: none came (both still held); SOLO_LET_GO: both let go
 * (the context was taken meanwhile). */
static int solo_dry_wait(struct rq_pdq *q)
{
    rq_ctx_t *ctx = q->ctx;
    if (!rqi_mt_maybe_wanted(&ctx->mt)) {
        for (unsigned looks = 0; looks < PDQ_SOLO_DRY_LOOKS; looks++) {
            if (rqi_mt_maybe_wanted(&ctx->mt))
                break; /* wanted now: look on without it */
            rqi_cpu_relax();
            for (unsigned k = 0; k < ctx->nlanes; k++)
                if (rqi_ring_rx_peek(&ctx->rx[k]) != NULL)
                    return SOLO_HELD;
        }
        if (!rqi_mt_maybe_wanted(&ctx->mt))
            return SOLO_NO_LEASE;
    }
    intake_let_go(q);
    unsigned looks = 0;
    while (!lanes_busy(ctx) && ++looks < PDQ_SOLO_DRY_LOOKS)
        rqi_cpu_relax();
    if (looks == PDQ_SOLO_DRY_LOOKS || !intake_retake(q))
        return SOLO_LET_GO;
    return SOLO_HELD;
}

/* Holding the context (taken by pump, depth 1) and the intake, with
 * nothing ready of its own: run q's messages from the lanes while the
 * lease holds; *n counts them.  SOLO_NO_LEASE: none may run solo now
 * (queue as usual); SOLO_HELD: the context and the intake are still held
 * (take the rest in as usual); SOLO_LET_GO: both were let go. */
static int solo_burst(struct rq_pdq *q, struct freeb *fb, unsigned *n, unsigned limit, int helper)
{
    rq_ctx_t *ctx = q->ctx;
    if (!lanes_busy(ctx) || (q->nthreads > 1 && solo_backing_off(q)))
        return SOLO_NO_LEASE;
    int lease = helper ? helper_resume(q) : LEASE_NEVER;
    if (lease != LEASE_OK)
        lease = solo_lease(q, helper);
    if (lease == LEASE_BUSY && !helper && q->nthreads > 1 && solo_want_ok(q))
        return SOLO_WAIT;
    if (lease != LEASE_OK)
        return SOLO_NO_LEASE;
    _Alignas(8) unsigned char buf[sizeof(struct pdq_entry) + PDQ_DIRECT_BYTES];
    struct pdq_entry *e = (struct pdq_entry *)(void *)buf;
    e->how = RQI_PDQ_DIRECT;
    e->small = 0;
    e->bytes = 0;
    atomic_store_explicit(&q->solo_e, e, memory_order_relaxed);
    const int heavy = ctx->mt.heavy;
    /* With more threads than one: messages timed in windows of
     * PDQ_SOLO_WINDOW from t0 (the time waiting at dry lanes is not
     * theirs); `slow` windows in a row over PDQ_SOLO_SHORT_NS a message. */
    uint64_t t0 = q->nthreads > 1 && !helper ? rqi_mono_ns() : 0;
    uint64_t seq = solo_seq;
    unsigned l = 0, empty = 0, ran = 0, fresh = 0, timed = 0, slow = 0;
    for (;;) {
        struct rqi_ring_rx *rx = &ctx->rx[l];
        /* As rq_poll reads a lane: the checks inline, the rare cases
         * (padding, rejects, a failed job) through rqi_rx_next_lane. */
        struct rqi_pkt *p = rqi_ring_rx_peek(rx);
        if (RQI_UNLIKELY(p != NULL && (p->kind == RQI_PK_PAD || ctx->fail.failed ||
                                       rqi_pkt_check(ctx, rx, p) != RQI_PKT_OK)))
            p = rqi_rx_next_lane(ctx, rx);
        if (p == NULL) {
            rqi_ring_rx_idle(rx);
            if (++empty < ctx->nlanes) {
                l = l + 1 == ctx->nlanes ? 0 : l + 1;
                continue;
            }
            /* Every lane dry: the run has caught up with its senders.  It
             * looks again for a while before it ends: ending at every dry
             * look took a new lease per message or two, and the run fell
             * behind its sender for good (each packet's line then comes
             * from the sender's cache, ~2x the cost). */
            if (RQI_UNLIKELY(ctx->fail.failed))
                break; /* the lanes are not read again (rqi_rx_next_lane) */
            if (helper) { /* caught up: back to the caller, who may wait for just this */
                helper_park(q, seq);
                return SOLO_HELD;
            }
            const int w = solo_dry_wait(q);
            if (w == SOLO_NO_LEASE)
                break;
            if (w == SOLO_LET_GO) {
                solo_end(q, seq);
                return SOLO_LET_GO;
            }
            if (atomic_load_explicit(&q->solo_stop, memory_order_relaxed) != 0) {
                solo_end(q, seq); /* an arrival while the context was let go */
                return SOLO_HELD;
            }
            empty = 0;
            fresh = 0;
            if (t0 != 0) {
                t0 = rqi_mono_ns();
                timed = 0;
            }
            continue;
        }
        empty = 0;
        if (ctx->pdq[p->qid] != q || p->kind != RQI_PK_INLINE)
            break; /* another queue's, or not in one piece: as usual */
        rq_msg_t m;
        rqi_msg_from_pkt(ctx, p, &m);
        if (m.key == RQ_KEY_SEQUENTIAL || 8u * m.nargs + m.len > PDQ_DIRECT_BYTES)
            break;
        /* e: what solo_settle and solo_stopped need (the key, to be
         * claimed); m: the handler's view of the copy. */
        e->key = m.key;
        e->nargs = (uint8_t)m.nargs;
        e->len = m.len;
        for (unsigned i = 0; i < m.nargs; i++) /* a word or two: `rep movs` took longer */
            e->args[i] = m.args[i];
        m.args = e->args;
        if (m.len != 0) {
            memcpy(e->args + m.nargs, m.data, m.len);
            m.data = e->args + m.nargs;
        } else {
            m.data = NULL;
        }
        uint64_t pos = rqi_ring_rx_take(rx, p);
        rqi_ring_rx_release(rx, p, pos);
        /* A helper's lane dry behind it: hand the space back now (as a
         * poll that finds it empty does), so that its look after the
         * handler (lanes_busy) sees an empty lane, not this packet. */
        if (helper && rqi_ring_rx_peek(rx) == NULL)
            rqi_ring_rx_idle(rx);
        /* Behind its senders, the run waited for each packet's line from
         * the sender's core in turn: fetch the lines ahead.  Not while it
         * keeps up, where they are the lines being written. */
        if (++fresh >= PDQ_SOLO_BEHIND)
            __builtin_prefetch(rqi_ring_slot(rx->slots, rx->nslots, rx->scan + PDQ_SOLO_AHEAD));
        ctx->stats.received++;
        /* Under the context: an arrival or a drain that finds the packet
         * gone from the lane finds the message RUNNING. */
        atomic_store_explicit(&q->solo, solo_word(seq, SOLO_RUNNING), memory_order_release);
        intake_let_go(q);
        rqi_pdq_handler_depth++;
        const struct rqi_handler *h = &ctx->handlers[m.handler < RQ_MAX_HANDLERS ? m.handler : 0];
        if (RQI_LIKELY(m.handler < RQ_MAX_HANDLERS && h->fn != NULL))
            h->fn(ctx, &m, h->arg);
        else
            atomic_fetch_add_explicit(&ctx->pdq_rejected, 1, memory_order_relaxed);
        rqi_pdq_handler_depth--;
        (*n)++;
        ran++;
        timed++;
        seq++;
        /* The runner's half of the pair (above): the release orders the
         * handler's effects before the word. */
        atomic_store_explicit(&q->solo, solo_word(seq, SOLO_IDLE), memory_order_release);
        rqi_asym_light(heavy);
        if (atomic_load_explicit(&q->solo_stop, memory_order_relaxed) != 0) {
            solo_stopped(q, e, seq, fb);
            return SOLO_LET_GO;
        }
        if (t0 != 0 && timed == PDQ_SOLO_WINDOW) {
            const uint64_t now = rqi_mono_ns();
            slow = now - t0 > PDQ_SOLO_WINDOW * PDQ_SOLO_SHORT_NS ? slow + 1 : 0;
            t0 = now;
            timed = 0;
            if (slow == PDQ_SOLO_SLOW_WINDOWS) { /* long messages: in parallel for a while */
                solo_back_off(q, now);
                solo_end(q, seq);
                return SOLO_LET_GO;
            }
        }
        /* A helper returns at once, the context let go, after `limit`
         * messages or when its lanes look dry: its caller may be waiting
         * for just this message.  Retaking the context to find the lanes
         * dry took 120-130 cycles from the handler's end to the caller's
         * look, against 55-85 for rq_poll's (dsmlat, multiplexed, 2
         * ranks).  The parked word is the helper's last store. */
        if (helper && (ran == limit || !lanes_busy(ctx))) {
            helper_park(q, seq);
            return SOLO_LET_GO;
        }
        if (ran == limit) {
            /* Short messages: a drain to a run may be asked for at once. */
            if (t0 != 0 && atomic_load_explicit(&q->solo_backoff_ns, memory_order_relaxed) != 0)
                atomic_store_explicit(&q->solo_backoff_ns, 0, memory_order_relaxed);
            solo_end(q, seq);
            return SOLO_LET_GO;
        }
        if (!intake_retake(q)) {
            solo_end(q, seq);
            return SOLO_LET_GO;
        }
        if (atomic_load_explicit(&q->solo_stop, memory_order_relaxed) != 0) {
            solo_end(q, seq); /* an arrival between messages */
            return SOLO_HELD;
        }
    }
    solo_end(q, seq);
    return SOLO_HELD;
}

/* A helper's solo run (solo_burst as a helper): in MULTIPLEXED mode, for
 * the one thread that helps q (the first helper's slot, no other handed
 * out), the way q's own threads run a quiet queue.  A direct run took
 * 120-200 ns from the helper's look to the handler (the next-ready scan,
 * in_lk, the key's claim and release, the entry), twice per DSM miss:
 * rqdsm's lu at 2 x 1 ran 1.15-1.29x `poll`'s time
 * (docs/data/pdq-help-dispatch-2026-11-28.txt).  Its run differs from a
 * thread's: it ends at the first dry look (its caller may be waiting for
 * just that message; right after a handler when the lanes look dry,
 * with the context let go), after `limit` messages (rq_pdq_help's max),
 * its lease wakes no sleeper, and the lease outlives the run, parked
 * (helper_park), for the next help to resume without in_lk.  A fallback
 * thread needs no wake to see a helper's run stall: it sleeps until a
 * deadline while helps come, and once they stop, or when the doorbell
 * (armed as it last slept) rings, it looks, finds the run elsewhere (solo_elsewhere), watches it with
 * RQ_PDQ_SPIN_US looks and takes the lanes in once its word has not
 * moved for PDQ_STALL_NS (a handler that blocks).  Several helpers keep
 * direct runs: a lease would serialize them. */
static int helper_may_run_solo(struct rq_pdq *q)
{
    return q->mode == RQ_PDQ_MULTIPLEXED && my_slot(q) == q->nthreads &&
           atomic_load_explicit(&q->helper_turn, memory_order_relaxed) == 1;
}

/* Take in the PDQ packets at the heads of our lanes, if the context is
 * free: the intake when nobody polls.  A lane whose head is another
 * queue's packet is left to the application's poll (or, once every PDQ
 * thread sleeps, to the progress thread).  With `direct` (the caller runs
 * q's handlers and has none ready), q's packets that may run now run at
 * once instead (a helper's solo run of up to `limit`, else the first by
 * direct_run), and the intake stops there: *direct = the handlers run.
 * Returns packets taken or run. */
static unsigned pump(struct rq_pdq *q, int *direct, struct freeb *fb, unsigned limit)
{
    rq_ctx_t *ctx = q->ctx;
    /* One of q's threads takes packets in at a time: the others' trylocks
     * would only pull the context lock's line away from it. */
    if (atomic_load_explicit(&q->intake, memory_order_relaxed) || solo_elsewhere(q))
        return 0;
    /* Nothing in the lanes (their shared words, no lock; a false "busy"
     * is possible, never a false "empty"): leave the context alone.  An
     * idle thread's trylock on every look took the lock from the
     * application's sends (a blocked pthread mutex: a futex sleep) and,
     * 1024 in a row, its bias (a membarrier at the application's next
     * call): on 16 cores an active message's round trip beside one idle
     * dedicated PDQ thread took 1.85 us against 0.59 with none, and a
     * DSM read miss 5.3 us against 1.1 under `poll`.  Other nodes'
     * packets show only to the intake's progress call. */
    if (ctx->ucx == NULL && !lanes_for_pdq(ctx))
        return 0;
    if (!rqi_mt_trylock(&ctx->mt))
        return 0;
    atomic_store_explicit(&q->intake, 1, memory_order_relaxed);
    struct pdq_ring *ring = pumping == q ? my_ring(q) : NULL;
    /* Direct and solo only with the context's lock taken here (not nested
     * in a call that holds it) and delivery not forced through the
     * buffer; solo by q's own threads. */
    const int alone = direct != NULL && rqi_mt_depth(&ctx->mt) == 1 && !ctx->buffer_always &&
                      !ctx->buffer_delay_ns;
    if (!alone || !light)
        direct = NULL;
    rqi_vni_enter(&ctx->vni, ctx);
    unsigned n = 0;
    /* Other nodes' PDQ messages are pushed as they are taken in. */
    if (RQI_UNLIKELY(ctx->ucx != NULL))
        n += (unsigned)ctx->net->progress(ctx);
    if (alone && ring != NULL) {
        const int r = solo_burst(q, fb, &n, PDQ_SOLO_BURST, 0);
        if (r == SOLO_LET_GO)
            return n;
        if (r == SOLO_WAIT) { /* the lanes wait until q is quiet (solo_want_ok) */
            intake_let_go(q);
            return n;
        }
        if (r == SOLO_HELD)
            direct = NULL; /* what is left queues */
    } else if (direct != NULL && helper_may_run_solo(q)) {
        unsigned ran = 0;
        const int r = solo_burst(q, fb, &ran, limit, 1);
        n += ran;
        if (ran != 0)
            *direct = (int)ran;
        if (r == SOLO_LET_GO)
            return n;
        if (ran != 0) { /* back to the caller, which may wait for one of these */
            intake_let_go(q);
            return n;
        }
    }
    for (unsigned l = 0; l < ctx->nlanes; l++) {
        struct rqi_ring_rx *rx = &ctx->rx[l];
        struct rqi_pkt *p;
        while ((p = rqi_rx_next_lane(ctx, rx)) != NULL && ctx->pdq[p->qid] != NULL) {
            if (direct != NULL && ctx->pdq[p->qid] == q && p->kind == RQI_PK_INLINE &&
                (*direct = direct_run(q, rx, p, fb)) != 0)
                return n + 1; /* it ran; the context (and intake) let go */
            direct = NULL; /* one try: behind a queued packet, queue */
            /* A PDQ thread takes in of q's packets only what it can admit
             * into its ring at once: the rest waits in the lane (copied
             * into a backlog, it would wait there too, cold in cache). */
            if (ring != NULL && ctx->pdq[p->qid] == q &&
                (ring_room(ring) == 0 ||
                 atomic_load_explicit(&q->nbacklog, memory_order_relaxed) != 0))
                break;
            if (rqi_ingest(ctx, rx, p) != 0)
                break;
            n++;
        }
    }
    intake_let_go(q);
    light = n <= 1;
    return n;
}

/* pump, by a thread that runs q's entries right after it: its pushes go
 * to its own ring and wake nobody. */
static unsigned pump_for(struct rq_pdq *q, int *direct, struct freeb *fb, unsigned limit)
{
    pumping = q;
    unsigned n = pump(q, direct, fb, limit);
    pumping = NULL;
    return n;
}

/* ---- threads ------------------------------------------------------------ */

static _Atomic uint64_t *idle_word(struct rq_pdq *q)
{
    return &rqi_shm_area(&q->ctx->shm, (uint32_t)q->ctx->rank)->vni.pdq_idle;
}

static _Atomic uint64_t *rung_word(struct rq_pdq *q)
{
    return &rqi_shm_area(&q->ctx->shm, (uint32_t)q->ctx->rank)->vni.pdq_rung;
}

/* The last awake thread arms the doorbell before it sleeps: the bit, then
 * a fresh `rung` (one sender rings per sleep: rqi_vni_pdq_sent).  In this
 * order, whoever sets `rung` after it is cleared rings after the bit is
 * set, so the progress thread finds the bit (cleared first, a sender's
 * ring could be taken, and find no bit, before the bit was set). */
static void sleep_arm(struct rq_pdq *q)
{
    atomic_fetch_or(idle_word(q), 1ull << q->qid);
    atomic_fetch_and(rung_word(q), ~(1ull << q->qid));
    /* The sleeper's half of the pdq_idle pair (at the top): a sender
     * registered for global membarriers fences with a compiler fence only
     * once this rank published pdq_mb (rqi_vni_pdq_sent), so its packet's
     * stores may still sit in its store buffer as it loads the bit.  The
     * membarrier makes them visible before the look below, or its load
     * comes after the bit.  (Documented from the start, never called: a
     * PDQ thread that went to sleep as its own rank sent to it missed the
     * packet and slept on, once in 75 runs of the PDQ tests: pdq_solo_2,
     * a message sent with no poll after it never ran.) */
    if (q->ctx->vni.mb_global)
        rqi_asym_heavy_global();
    /* Packets published before the bit was visible: have them taken in
     * (those a PDQ's intake takes: one behind an active message waits for
     * rq_poll either way, whose intake wakes this sleeper as it queues it;
     * ringing for the active message woke the thread to find nothing,
     * every RQ_PDQ_SPIN_US while the application did not poll).  Other
     * nodes' packets cannot ring: have the network armed instead. */
    if (lanes_for_pdq(q->ctx))
        rqi_vni_ring(q->ctx, q->ctx->rank, RQI_BELL_PDQ);
    if (q->ctx->vni.net_on)
        rqi_vni_ring(q->ctx, q->ctx->rank, RQI_BELL_NET);
}

static void wait_until_ns(struct rq_pdq *q, uint64_t deadline)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t d = deadline > now ? deadline - now : 0;
    ts.tv_sec += (time_t)(d / 1000000000u);
    ts.tv_nsec += (long)(d % 1000000000u);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&q->work, &q->mu, &ts);
}

/* Work a thread could take now (under mu, after joining `sleepers`): a
 * ready entry in a ring, or an admissible one in the backlog (unless the
 * thread just found the backlog stuck behind busy keys: their threads
 * admit what follows as they finish, and new arrivals wake a sleeper). */
static int work_left(struct rq_pdq *q, int stuck)
{
    if (rings_ready(q))
        return 1;
    if (stuck)
        return 0;
    if (atomic_load(&q->seq_queued) != 0) {
        in_lock(q);
        struct pdq_entry *e = q->seq_head;
        int may = e != NULL && e->gen == atomic_load(&q->gen_open) && sum_done(q, -1) == e->before;
        in_unlock(q);
        if (may)
            return 1;
    }
    if (atomic_load(&q->nbacklog) == 0)
        return 0;
    const uint64_t open = atomic_load(&q->gen_open);
    int may = 0;
    for (unsigned i = 0; i < q->nshards && !may; i++) {
        struct pdq_shard *sh = &q->shards[i];
        spin_lock(&sh->lk);
        may = sh->h != sh->t && sh_first(sh)->gen == open;
        spin_unlock(&sh->lk);
    }
    return may && window_open(q);
}

/* How a thread with nothing to do but look again later sleeps
 * (stuck_sleep): the watcher until its next look, the others until woken. */
enum { STUCK_WATCH = 1, STUCK_WAIT = 2 };

/* Sleep until signalled (or until deadline, 0: none), unless work came
 * meanwhile.  A thread sleeping until a helper's deadline (multiplexed
 * fallback, or a dedicated thread beside a helper) leaves the doorbell
 * unarmed: the helper takes packets in as it helps, and the thread itself
 * at the deadline; arming it would make every sender ring (and wake) the
 * progress thread for packets a helper takes. */
static void sleep_until(struct rq_pdq *q, uint64_t deadline, int stuck)
{
    /* A stuck thread sleeps until its next look, or until new work wakes
     * it: it counts among the sleepers that pushes wake.  Only the
     * watcher (STUCK_WATCH, with a deadline) counts in `stuck`: the
     * others (STUCK_WAIT) look only when woken. */
    const int wakeable = deadline == 0 || stuck;

    pthread_mutex_lock(&q->mu);
    if (wakeable)
        atomic_fetch_add(&q->sleepers, 1);
    if (stuck == STUCK_WATCH)
        atomic_fetch_add(&q->stuck, 1);
    if (stuck == STUCK_WAIT)
        atomic_fetch_add(&q->waiting, 1);
    atomic_thread_fence(memory_order_seq_cst); /* before work_left's loads */
    /* A waiter whose watcher stopped watching meanwhile (watch_end: it
     * clears the word, fences, then loads `waiting`) looks again now. */
    const int unwatched = stuck == STUCK_WAIT && atomic_load(&q->watcher) == 0;
    if (atomic_fetch_sub(&q->awake, 1) == 1) {
        if (deadline == 0)
            sleep_arm(q);
        else if (q->ctx->vni.net_on)
            rqi_vni_ring(q->ctx, q->ctx->rank, RQI_BELL_NET);
    }
    if (!atomic_load(&q->stop) && !unwatched &&
        ((deadline != 0 && !stuck) || !work_left(q, stuck))) {
        if (deadline != 0)
            wait_until_ns(q, deadline);
        else
            pthread_cond_wait(&q->work, &q->mu);
    }
    if (wakeable)
        atomic_fetch_sub(&q->sleepers, 1);
    /* Up, by a signal or not: one signal fewer outstanding (an undercount
     * only signals once more; the woken look for work either way). */
    if (atomic_load_explicit(&q->signalled, memory_order_relaxed) != 0)
        atomic_fetch_sub_explicit(&q->signalled, 1, memory_order_relaxed);
    if (stuck == STUCK_WATCH)
        atomic_fetch_sub(&q->stuck, 1);
    if (stuck == STUCK_WAIT)
        atomic_fetch_sub(&q->waiting, 1);
    if (atomic_fetch_add(&q->awake, 1) == 0)
        atomic_fetch_and(idle_word(q), ~(1ull << q->qid));
    pthread_mutex_unlock(&q->mu);
}

/* A PDQ thread with nothing to do but look again later: stuck behind
 * busy keys (or a SEQUENTIAL entry), or beside another thread's solo run.
 * One such thread at a time, the watcher, sleeps until its next look
 * (RQ_PDQ_SPIN_US; what unblocks the backlog may be a handler that waits
 * and never wakes anyone); the others sleep until work wakes them (a
 * push, ready work left in a ring, an admission that leaves work for a
 * second thread, or the watcher's hand-off).  Every stuck thread looking
 * on its own clock cost what the threads were idle for: 15 idle threads
 * beside a hot key of 0 ns handlers took 0.6-0.8 of a core on 2 vCPUs
 * (docs/pdq.md, "One watcher"), and each look reads lines the runner
 * writes (nbacklog, the shards' counts, `sleepers`).  *watching: this
 * thread holds the watch; it keeps it across its looks until it finds
 * something else to do (watch_end). */
static void stuck_sleep(struct rq_pdq *q, uint64_t now, int *watching)
{
    if (!*watching && atomic_load_explicit(&q->watcher, memory_order_relaxed) == 0 &&
        atomic_exchange(&q->watcher, 1) == 0)
        *watching = 1;
    if (*watching)
        sleep_until(q, now + (q->spin_ns != 0 ? q->spin_ns : 50000u), STUCK_WATCH);
    else
        sleep_until(q, 0, STUCK_WAIT);
}

/* The watcher found work (or is no longer stuck): give the watch up and
 * wake a waiter to take it.  Dekker pair with sleep_until's waiter: it
 * adds itself to `waiting`, fences, loads `watcher`; this clears
 * `watcher`, fences, loads `waiting`: one of the two sees the other. */
static void watch_end(struct rq_pdq *q, int *watching)
{
    if (!*watching)
        return;
    *watching = 0;
    atomic_store(&q->watcher, 0);
    if (atomic_load(&q->waiting) != 0)
        wake_one(q);
}

/* Multiplexed mode: an application thread helped within the bound; the
 * fallback threads stay out of its way until the time returned (0: step
 * in now).  `held`: the looks in a row this thread ended to find a help
 * within the bound; each doubles its next sleep, up to
 * 2^PDQ_FALLBACK_STRETCH x the bound (rq.h: they step in at most 4x
 * RQ_PDQ_FALLBACK_US after the last help).  A look every 200 us beside a
 * thread that keeps helping cost a wake-up each (~9 us of switches and
 * timer on a 2-vCPU VM, 700-1 400 a run of lu per rank): lu and water
 * at 2 x 1, multiplexed, 8-9% of their time. */
static uint64_t help_deadline(struct rq_pdq *q, unsigned held)
{
    if (q->mode != RQ_PDQ_MULTIPLEXED)
        return 0;
    const uint64_t last = rqi_load_relaxed(&q->last_help_ns);
    if (rqi_mono_ns() >= last + q->fallback_ns)
        return 0;
    return last + (q->fallback_ns << held);
}

struct worker_arg {
    struct rq_pdq *q;
    unsigned       index;
};

static void *worker_main(void *arg)
{
    struct rq_pdq *q = ((struct worker_arg *)arg)->q;
    me.q = q;
    me.gen = q->gen;
    me.slot = ((struct worker_arg *)arg)->index;
    me.own = 1;
    me.excl = 1;
    free(arg);
    char name[16]; /* what top, perf and gdb show: rq-pdq<qid>.<thread> */
    snprintf(name, sizeof name, "rq-pdq%u.%u", q->qid, me.slot);
    pthread_setname_np(pthread_self(), name);
    struct pdq_ring *ring = &q->rings[me.slot];
    struct freeb fb;
    fb.n = 0;
    uint64_t idle_since = 0;
    unsigned spins = 0, held = 0;
    int watching = 0; /* this thread holds q's watch (stuck_sleep) */
    while (!atomic_load_explicit(&q->stop, memory_order_acquire)) {
        uint64_t helped = help_deadline(q, held);
        if (helped != 0 && ring_empty(ring)) {
            fb_flush(q, &fb);
            watch_end(q, &watching);
            sleep_until(q, helped, 0);
            held += held < PDQ_FALLBACK_STRETCH;
            continue;
        }
        if (helped == 0)
            held = 0;
        struct pdq_entry *e = next_ready(q, ring);
        if (e != NULL) {
            watch_end(q, &watching);
            run_chain(q, e, &fb);
            idle_since = 0;
            spins = 0;
            continue;
        }
        /* With a backlog, the intake takes in nothing of q's (pump). */
        const int stuck = backlog_stuck;
        int direct = 0;
        unsigned got = stuck ? 0 : pump_for(q, &direct, &fb, PDQ_SOLO_BURST);
        if (got != 0) {
            watch_end(q, &watching);
            idle_since = 0;
            spins = 0;
            continue;
        }
        uint64_t now = rqi_mono_ns();
        /* Another thread runs q solo: nothing here for this one until
         * something is queued (a push wakes it) or that run stalls (its
         * next look).  Spinning beside it, on a shared CPU, took its time
         * slices: two threads ran a stream at half one thread's rate. */
        if (!stuck && solo_elsewhere(q)) {
            fb_flush(q, &fb);
            stuck_sleep(q, now, &watching);
            continue;
        }
        if (idle_since == 0) {
            idle_since = now;
            /* Idle: hand the freed entries back to the intake now. */
            fb_flush(q, &fb);
        }
        /* Look again at once for a few microseconds (a long pause between
         * looks is latency), then yield at every look: oversubscribed or
         * idle, be kind to the threads with work.  Stuck behind busy keys,
         * look less and less often (up to 64 pauses apart): what unblocks
         * the backlog is the running threads' progress. */
        if (++spins > PDQ_IDLE_SPINS)
            sched_yield();
        else /* each look reads lines that busy threads write: fewer and fewer */
            for (unsigned i = 1u << (stuck ? (spins < 6 ? spins : 6) : (spins < 40 ? spins / 8 : 5));
                 i != 0; i--)
                rqi_cpu_relax();
        /* Stuck behind busy keys with nothing else to do: sleep now, and
         * look again in RQ_PDQ_SPIN_US (what waits behind a busy key is
         * admitted by then even if its thread runs long), or when ready
         * work or new arrivals wake it.  Waking it each time a hot key's
         * thread admits more of that key cost that thread a futex call
         * per batch (0.8x of one thread). */
        if (stuck) {
            fb_flush(q, &fb);
            stuck_sleep(q, now, &watching);
            continue;
        }
        if (now - idle_since >= q->spin_ns) {
            fb_flush(q, &fb);
            pool_trim(q);
            watch_end(q, &watching); /* idle, not stuck: no backlog to watch */
            /* An application thread that helped within the spin time
             * takes packets in as it helps: sleep until then with the
             * doorbell unarmed, and look once at the deadline.  Otherwise
             * sleep until woken. */
            uint64_t until = rqi_load_relaxed(&q->last_help_ns) + q->spin_ns;
            if (until <= now || q->spin_ns == 0)
                until = 0;
            sleep_until(q, until, 0);
            if (until == 0) {
                idle_since = 0;
                spins = 0;
            }
        }
    }
    /* What this thread still holds ready runs before it leaves (close runs
     * the backlog itself, with every thread gone). */
    for (struct pdq_entry *e; (e = ring_pop(ring)) != NULL;) {
            run_chain(q, e, &fb);
    }
    fb_flush(q, &fb);
    return NULL;
}

/* ---- public calls ------------------------------------------------------ */

static int qid_ok(unsigned qid) { return qid > RQ_AM_QUEUE && qid < RQ_MAX_QUEUES; }

static void pdq_free(struct rq_pdq *q)
{
    struct pdq_entry *e;
    for (unsigned i = 0; i < q->nshards; i++) {
        struct pdq_shard *sh = &q->shards[i];
        while ((e = sh_first(sh)) != NULL) {
            sh->h++;
            if (e->how == RQI_PDQ_OWN)
                free(e->data);
            free(e);
        }
        free(sh->bl);
    }
    while ((e = q->seq_head) != NULL) {
        q->seq_head = e->next;
        if (e->how == RQI_PDQ_OWN)
            free(e->data);
        free(e);
    }
    for (int c = 0; c < 2; c++)
        while ((e = q->free_small[c]) != NULL) {
            q->free_small[c] = e->next;
            free(e);
        }
    pthread_cond_destroy(&q->work);
    pthread_mutex_destroy(&q->mu);
    pthread_mutex_destroy(&q->drain_mu);
    free(q->shards);
    free(q->threads);
    free(q->buckets);
    free(q->bucket_at);
    free(q->rings);
    free(q->slots);
    free(q);
}

/* Stop and join the threads (the PDQ stays attached). */
static void stop_threads(struct rq_pdq *q)
{
    pthread_mutex_lock(&q->mu);
    atomic_store_explicit(&q->stop, 1, memory_order_release);
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->mu);
    for (unsigned i = 0; i < q->started_threads; i++)
        pthread_join(q->threads[i], NULL);
    q->started_threads = 0;
}

/* Attach q to its qid, taking in what the queue kept before it opened.
 * The caller owns the context. */
static int attach(rq_ctx_t *ctx, struct rq_pdq *q)
{
    unsigned qid = q->qid;
    if (ctx->pdq[qid] != NULL || ctx->open[qid] || ctx->view[qid].n != 0)
        return RQ_EINVAL;
    struct rqi_vrec *v;
    while ((v = rqi_vfifo_head(&ctx->fifo[qid])) != NULL) {
        rq_msg_t m;
        rqi_msg_from_vrec(v, &m);
        int rc = entry_push(q, (uint32_t)m.src, m.handler, m.key, m.args, m.nargs, m.data,
                            m.len, RQI_PDQ_COPY);
        if (rc != 0)
            return rc;
        rqi_vbuf_pop(&ctx->vb, &ctx->fifo[qid]);
        ctx->stats.buffered++;
    }
    rqi_mode_update(ctx);
    ctx->pdq[qid] = q;
    return 0;
}

static struct rq_pdq *pdq_alloc(rq_ctx_t *ctx, unsigned qid, const rq_pdq_attr_t *attr)
{
    struct rq_pdq *q = aligned_alloc(64, (sizeof *q + 63) & ~(size_t)63);
    if (q == NULL)
        return NULL;
    memset(q, 0, sizeof *q);
    q->ctx = ctx;
    q->qid = qid;
    q->mode = attr->mode;
    q->nthreads = attr->threads;
    q->nslots = attr->threads + PDQ_EXTRA_SLOTS;
    q->gen = atomic_fetch_add(&pdq_gen, 1) + 1;
    /* The default window grows with the threads (32 each): every thread
     * keeps a batch ready (64 for 16 threads left most of them stealing).
     * A window the caller or RQ_PDQ_WINDOW names is kept as it is. */
    q->window = attr->window != 0 ? attr->window : (unsigned)ctx->cfg.v[RQI_CFG_PDQ_WINDOW];
    if (attr->window == 0 && !(ctx->cfg.set & (1ull << RQI_CFG_PDQ_WINDOW)) &&
        q->window < PDQ_WINDOW_PER_THREAD * attr->threads)
        q->window = PDQ_WINDOW_PER_THREAD * attr->threads;
    q->spin_ns = ctx->cfg.v[RQI_CFG_PDQ_SPIN_US] * 1000u;
    q->fallback_ns = ctx->cfg.v[RQI_CFG_PDQ_FALLBACK_US] * 1000u;
    q->help_stamp_ns = (q->fallback_ns < q->spin_ns ? q->fallback_ns : q->spin_ns) / 16u;
    if (q->help_stamp_ns > PDQ_HELP_STAMP_MAX_NS)
        q->help_stamp_ns = PDQ_HELP_STAMP_MAX_NS;
    q->help_rate = rqi_cycles_per_1024ns();
    q->help_half_cycles = q->help_stamp_ns / 2 * q->help_rate / 1024u;
    q->help_rebase_cycles = PDQ_HELP_REBASE_NS * q->help_rate / 1024u;
    q->limit = ctx->vb.limit;
    q->nshards = attr->threads;
    q->threads = calloc(attr->threads, sizeof *q->threads);
    q->buckets = aligned_alloc(64, PDQ_BUCKETS * sizeof *q->buckets);
    q->bucket_at = malloc(PDQ_BUCKETS * sizeof *q->bucket_at);
    q->rings = aligned_alloc(RQI_APART, sizeof *q->rings * attr->threads);
    q->slots = aligned_alloc(RQI_APART, sizeof *q->slots * q->nslots);
    q->shards = aligned_alloc(RQI_APART, sizeof *q->shards * q->nshards);
    if (q->threads == NULL || q->buckets == NULL || q->bucket_at == NULL || q->rings == NULL ||
        q->slots == NULL || q->shards == NULL) {
        free(q->shards);
        free(q->threads);
        free(q->buckets);
        free(q->bucket_at);
        free(q->rings);
        free(q->slots);
        free(q);
        return NULL;
    }
    memset(q->rings, 0, sizeof *q->rings * attr->threads);
    memset(q->buckets, 0, PDQ_BUCKETS * sizeof *q->buckets);
    for (unsigned at = 0, sh = 0; sh < q->nshards; sh++)
        for (unsigned b = sh; b < PDQ_BUCKETS; b += q->nshards)
            q->bucket_at[b] = (uint16_t)at++;
    memset(q->slots, 0, sizeof *q->slots * q->nslots);
    memset(q->shards, 0, sizeof *q->shards * q->nshards);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&q->mu, NULL);
    pthread_mutex_init(&q->drain_mu, NULL);
    pthread_cond_init(&q->work, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&q->awake, attr->threads);
    return q;
}

int rq_pdq_open(rq_ctx_t *ctx, unsigned qid, const rq_pdq_attr_t *attr, rq_pdq_t **pdq)
{
    if (pdq != NULL)
        *pdq = NULL;
    if (ctx == NULL || attr == NULL || pdq == NULL || !qid_ok(qid) ||
        (attr->mode != RQ_PDQ_DEDICATED && attr->mode != RQ_PDQ_MULTIPLEXED) ||
        attr->threads == 0 || attr->threads > PDQ_MAX_THREADS || attr->window > 65536u)
        return RQ_EINVAL;
    if (rqi_in_handler(ctx) || rqi_vni_on_progress)
        return RQ_EPERM;
    struct rq_pdq *q = pdq_alloc(ctx, qid, attr);
    if (q == NULL)
        return RQ_ENOMEM;

    /* From here on any thread may call into the context (sticky). */
    rqi_store_relaxed(&ctx->mt.on, 1u);
    int locked = rqi_ctx_enter(ctx);
    /* Places after this node's earlier ranks' threads and this rank's
     * other PDQs' (RQ_PDQ_BIND, place.h). */
    unsigned first = (unsigned)ctx->host_index * q->nthreads;
    for (unsigned i = 0; i < RQ_MAX_QUEUES; i++)
        if (ctx->pdq[i] != NULL)
            first += ctx->pdq[i]->nthreads;
    int rc = attach(ctx, q);
    rqi_ctx_leave(ctx, locked);
    int *cpu = rc == 0 ? malloc(q->nthreads * sizeof *cpu) : NULL;
    if (rc == 0 && cpu == NULL)
        rc = RQ_ENOMEM;
    if (rc != 0) {
        if (ctx->pdq[qid] == q) { /* attached: close detaches */
            atomic_fetch_sub(&q->awake, q->nthreads);
            rq_pdq_close(q);
        } else {
            pdq_free(q);
        }
        return rc;
    }
    rqi_pdq_place((int)ctx->cfg.v[RQI_CFG_PDQ_BIND], first, q->nthreads, cpu);
    /* Signals go to the application's threads, never to ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (; q->started_threads < q->nthreads; q->started_threads++) {
        struct worker_arg *wa = malloc(sizeof *wa);
        if (wa == NULL)
            break;
        wa->q = q;
        wa->index = q->started_threads;
        /* Started on its CPU (a thread started beside its parent and moved
         * later ran there for its first milliseconds). */
        pthread_attr_t ta;
        pthread_attr_init(&ta);
        if (cpu[q->started_threads] >= 0) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu[q->started_threads], &one);
            pthread_attr_setaffinity_np(&ta, sizeof one, &one);
        }
        int made = pthread_create(&q->threads[q->started_threads], &ta, worker_main, wa);
        pthread_attr_destroy(&ta);
        if (made == EINVAL && cpu[q->started_threads] >= 0) /* a CPU we may not use */
            made = pthread_create(&q->threads[q->started_threads], NULL, worker_main, wa);
        if (made != 0) {
            free(wa);
            break;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(cpu);
    if (q->started_threads < q->nthreads) {
        atomic_fetch_sub(&q->awake, q->nthreads - q->started_threads);
        rq_pdq_close(q);
        return RQ_ENOMEM;
    }
    *pdq = q;
    return 0;
}

int rq_pdq_enqueue(rq_ctx_t *ctx, int dst, unsigned qid, uint64_t key, unsigned handler,
                   const uint64_t *args, unsigned nargs, const void *data, size_t len,
                   unsigned flags)
{
    int rc = rqi_send_check(ctx, dst, args, nargs, data, len, flags);
    if (rc != 0)
        return rc;
    if (!qid_ok(qid) || handler >= RQ_MAX_HANDLERS)
        return RQ_EINVAL;
    /* The key rides as one more argument word (RQI_PF_KEY).  Thread-safe
     * mode: dst's lane lock alone when the packet fits (am.c). */
    if (rqi_load_relaxed(&ctx->mt.on) != 0 &&
        rqi_lane_send(ctx, dst, qid, handler, args, nargs, 1, key, data, len, flags) == 0)
        return 0;
    RQI_GUARDED(ctx, rqi_send_keyed(ctx, dst, qid, handler, args, nargs, key, data, len, flags));
}

/* Run up to max ready handlers on this thread (a helper: one entry at a
 * time, so nothing ready waits behind a handler it runs); take packets in
 * once when none is ready.  Returns handlers run. */
static int help_run(struct rq_pdq *q, unsigned max, int lanes_first)
{
    struct freeb fb;
    fb.n = 0;
    unsigned done = 0;
    int n = 0, pumped = 0;
    while (done < max) {
        /* lanes_first: the caller just found the rings and the backlog
         * empty and only the lanes busy; the next-ready scan (the rings,
         * the shards, the SEQUENTIAL list) would find nothing: go to the
         * intake, whose lease looks again under in_lk. */
        struct pdq_entry *e = lanes_first ? NULL : next_ready(q, NULL);
        lanes_first = 0;
        if (e == NULL) {
            if (pumped)
                break;
            pumped = 1;
            int direct = 0;
            unsigned in = pump_for(q, &direct, &fb, max - done);
            if (direct) { /* ran at once: return (the caller, maybe
                             waiting for just that one, looks sooner) */
                n += direct;
                done += (unsigned)direct;
                break;
            }
            if (in == 0)
                break;
            continue;
        }
        n += (int)run_chain(q, e, &fb);
        done++;
    }
    fb_flush(q, &fb);
    /* What this helper took in and left (max reached) is a sleeper's. */
    if (atomic_load(&q->nbacklog) != 0 && atomic_load(&q->awake) == 0)
        wake_if_sleeping(q);
    return n;
}

/* A helper's time stamp (last_help_ns), stored only once stale by half
 * of help_stamp_ns: each wait step of every helper stored it, and the
 * line went round the rank's waiting threads and the fallback thread at
 * every step.  The clock itself (23 ns here, a quarter of barnes' time
 * when rqdsm helped on every section) is read only when this thread has
 * not looked for half of help_stamp_ns by the cycle counter (its rate
 * measured once, rounded down: rqi_cycles_per_1024ns).  The counter is
 * not read on every call either (18 ns on a 2-vCPU Xeon VM: an idle
 * rq_pdq_help took 29-32 ns against rq_poll's 17-20, and barnes helping
 * on every section spent 13% of its time there): a thread whose calls
 * come densely checks once every `skip` calls, skip doubling (up to
 * PDQ_HELP_SKIP_MAX) while `skip` calls take under a quarter of
 * help_stamp_ns and falling back to 1 once they take half of it.  So
 * while a thread's calls come at a steady rate the stamp is at most 1.5
 * help_stamp_ns (<= 2 us) stale; the calls a thread skips just before it
 * slows down (at most PDQ_HELP_SKIP_MAX - 1) do not count (rq.h,
 * rq_pdq_help).  And the time stamped is the counter's, from the clock's
 * last reading (help_now): a clock read at every look was 3.7% of barnes'
 * samples under the multiplexed organisation (0.7% under poll), a look
 * every ~700 ns. */
#define PDQ_HELP_SKIP_MAX 16u
static _Thread_local struct {
    uint64_t gen;     /* the PDQ's (q->gen: never reused) */
    uint64_t cycles;  /* the cycle counter at this thread's last clock look */
    uint64_t checked; /* ... and at its last check */
    unsigned skip;    /* calls from one check to the next, 1..PDQ_HELP_SKIP_MAX */
    unsigned left;    /* calls before the next check */
    uint64_t base_cycles, base_ns; /* the counter and the clock at this
                                      thread's last read of the clock (any PDQ) */
} help_look __attribute__((tls_model("initial-exec")));

/* The time now, for a helper's stamp: the clock read at most every
 * PDQ_HELP_REBASE_NS, in between the last reading plus the counter's
 * ticks since, at the rate rounded down (so the time is never behind the
 * clock, and at most 1/15 of PDQ_HELP_REBASE_NS, 1.1 us, ahead of it: a
 * stamp ahead holds the fallback threads off that much longer).  A
 * counter that went back (another CPU's, unsynchronized) reads the clock. */
static uint64_t help_now(const struct rq_pdq *q, uint64_t c)
{
    const uint64_t since = c - help_look.base_cycles;
    if (help_look.base_ns != 0 && since < q->help_rebase_cycles)
        return help_look.base_ns + since * 1024u / q->help_rate;
    help_look.base_cycles = c;
    return help_look.base_ns = rqi_mono_ns();
}

static void help_stamp(struct rq_pdq *q)
{
    if (RQI_LIKELY(help_look.gen == q->gen) && help_look.left != 0) {
        help_look.left--;
        return;
    }
    const uint64_t half = q->help_half_cycles, c = rqi_cycles();
    if (help_look.gen == q->gen) {
        const uint64_t took = c - help_look.checked; /* by `skip` calls */
        if (took < half / 2) {
            if (help_look.skip < PDQ_HELP_SKIP_MAX)
                help_look.skip *= 2;
        } else if (took >= half) {
            help_look.skip = 1;
        }
        help_look.checked = c;
        help_look.left = help_look.skip - 1;
        if (c - help_look.cycles < half)
            return;
    } else {
        help_look.gen = q->gen;
        help_look.checked = c;
        help_look.skip = 1;
        help_look.left = 0;
    }
    help_look.cycles = c;
    const uint64_t now = help_now(q, c);
    if (now - rqi_load_relaxed(&q->last_help_ns) >= q->help_stamp_ns / 2)
        rqi_store_relaxed(&q->last_help_ns, now);
}

/* Nothing a helper could run or take in: no ready entry in a ring, none
 * in the backlog or waiting as RQ_KEY_SEQUENTIAL, no packet in a lane
 * (read from the shared words, without the context's lock).  A helper
 * that calls between its work (rqdsm on every section, under the
 * multiplexed organisation) then costs a few loads, not an intake's
 * trylock and scan.  Entries parked behind a running key are its
 * runner's.  Other nodes' packets show only to the intake: not with UCX.
 * *lanes_only: the lanes hold work and nothing else does. */
static int help_nothing(struct rq_pdq *q, int *lanes_only)
{
    *lanes_only = 0;
    if (q->ctx->ucx != NULL || atomic_load_explicit(&q->nbacklog, memory_order_relaxed) != 0 ||
        atomic_load_explicit(&q->seq_queued, memory_order_relaxed) != 0 || rings_ready(q))
        return 0;
    if (!lanes_for_pdq(q->ctx))
        return 1;
    *lanes_only = 1; /* work only in the lanes (help_run) */
    return 0;
}

/* This thread's last rq_pdq_help: its queue (and generation) and the
 * count of its polls then (rqi_pdq_defer). */
static _Thread_local struct {
    const struct rq_pdq *q;
    uint64_t             gen;
    uint32_t             polls;
} help_mark __attribute__((tls_model("initial-exec")));

int rqi_pdq_defer(struct rq_pdq *q)
{
    /* rqi_poll counted this poll before it looked at a lane: the help
     * came right before it.  The one helper of a multiplexed q: its
     * helps run q's quiet packets solo (helper_may_run_solo), with its
     * slot (me) taken as it helped; a thread that never ran one has no
     * slot, and its packets go in as before. */
    return help_mark.q == q && help_mark.gen == q->gen && help_mark.polls + 1 == rqi_poll_seq &&
           q->mode == RQ_PDQ_MULTIPLEXED && me.q == q && me.gen == q->gen &&
           me.slot == q->nthreads &&
           atomic_load_explicit(&q->helper_turn, memory_order_relaxed) == 1;
}

int rq_pdq_help(rq_pdq_t *pdq, unsigned max)
{
    if (pdq == NULL)
        return RQ_EINVAL;
    if (rqi_in_handler(pdq->ctx) || rqi_vni_on_progress)
        return RQ_EPERM;
    help_stamp(pdq);
    if (max == 0)
        return 0; /* takes nothing in: a poll after it leaves nothing to it */
    help_mark.q = pdq;
    help_mark.gen = pdq->gen;
    help_mark.polls = rqi_poll_seq;
    int lanes_only;
    if (help_nothing(pdq, &lanes_only))
        return 0;
    return help_run(pdq, max, lanes_only);
}

/* Every lane's scan has passed its mark (the tails drain saw). */
static int scanned_past(rq_ctx_t *ctx, const void *arg)
{
    const uint64_t *marks = arg;
    for (unsigned l = 0; l < ctx->nlanes; l++)
        if (ctx->rx[l].scan < marks[l])
            return 0;
    return 1;
}

static int drain_body(struct rq_pdq *q)
{
    rq_ctx_t *ctx = q->ctx;
    /* 1. Everything published to our lanes before this call is taken in
     *    (our polls take it, running AM handlers as any blocking call). */
    uint64_t marks[RQI_MAX_LANES];
    for (unsigned l = 0; l < ctx->nlanes; l++)
        marks[l] = rqi_load_acquire(&ctx->rx[l].ctrl->tail);
    int locked = rqi_ctx_enter(ctx);
    int rc = rqi_poll_until(ctx, scanned_past, marks);
    if (rc == 0 && ctx->fail.failed)
        rc = RQ_EPEER;
    rqi_ctx_leave(ctx, locked);
    if (rc != 0)
        return rc;
    /* 2. Everything taken in so far completes: close the epoch (later
     *    arrivals count in the other one) and wait until its every entry
     *    is done.  One drain at a time owns the epochs.  A multiplexed
     *    PDQ is run by idle application threads: this one is idle. */
    pthread_mutex_lock(&q->drain_mu);
    in_lock(q);
    solo_settle(q, 0); /* a solo message running now is waited for too */
    const int ep = (int)q->epoch;
    const uint64_t due = q->arrived[ep];
    q->epoch ^= 1u;
    in_unlock(q);
    unsigned spins = 0;
    while (sum_done(q, ep) < due) {
        if (q->mode == RQ_PDQ_MULTIPLEXED && help_run(q, 64, 0) > 0) {
            spins = 0;
            continue;
        }
        locked = rqi_ctx_enter(ctx);
        rc = rqi_poll(ctx) > 0 ? rqi_busy_step(ctx, &spins) : rqi_wait_step(ctx, &spins);
        rqi_ctx_leave(ctx, locked);
        if (rc != 0)
            break;
    }
    pthread_mutex_unlock(&q->drain_mu);
    return rc;
}

int rq_pdq_drain(rq_pdq_t *pdq)
{
    if (pdq == NULL)
        return RQ_EINVAL;
    if (rqi_in_handler(pdq->ctx) || rqi_vni_on_progress)
        return RQ_EPERM;
    return drain_body(pdq);
}

static void close_body(struct rq_pdq *q)
{
    rq_ctx_t *ctx = q->ctx;
    stop_threads(q);
    int locked = rqi_ctx_enter(ctx);
    ctx->pdq[q->qid] = NULL;
    rqi_ctx_leave(ctx, locked);
    atomic_fetch_and(idle_word(q), ~(1ull << q->qid));
    atomic_fetch_and(rung_word(q), ~(1ull << q->qid));
    /* What came in between the drain and the detach runs here, in order
     * (one thread: each entry's key's successors run right after it). */
    struct freeb fb;
    fb.n = 0;
    for (struct pdq_entry *e; (e = next_ready(q, NULL)) != NULL;)
        run_chain(q, e, &fb);
    fb_flush(q, &fb);
    pdq_free(q);
}

int rq_pdq_close(rq_pdq_t *pdq)
{
    if (pdq == NULL)
        return RQ_EINVAL;
    if (rqi_in_handler(pdq->ctx) || rqi_vni_on_progress)
        return RQ_EPERM;
    int rc = drain_body(pdq);
    close_body(pdq);
    return rc;
}
