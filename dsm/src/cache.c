/* cache.c - the requester side: this rank's copy of each block, its
 * handlers (DATA, INV, RECALL) and the application's start / end / flush
 * calls.  The entry word's protocol and fences are in dsm.h. */
#include <string.h>

#include "dsm.h"

static unsigned char *block_mem(struct rqdsm_region *r, size_t b)
{
    return r->mem + (b << r->dsm->block_shift);
}

static void to_home(rqdsm_t *d, struct rqdsm_region *r, size_t b, int h, unsigned kind,
                    int with_data)
{
    uint64_t a[2] = {KEY(r->rid, b), kind};
    int bytes = with_data && r->home != d->me; /* the home's copy is the master */
    rqdsm_send(d, r->home, h, a[0], a, 2, bytes ? block_mem(r, b) : NULL, bytes ? d->block : 0);
}

/* A deferred INV or RECALL becomes due when the last holder leaves: w is
 * the word before the CAS that released it, nw the one after.  Sends the
 * answer the handler could not. */
static void answer_deferred(rqdsm_t *d, struct rqdsm_region *r, size_t b, uint32_t w)
{
    if (w & E_INV_DEF)
        to_home(d, r, b, H_INV_ACK, 0, 0);
    else if (w & (E_REC_S | E_REC_I))
        to_home(d, r, b, H_RECALL_DATA, (w & E_REC_S) ? E_S : E_I, 1);
}

/* The state a deferral leaves behind, with its bit cleared (and the
 * fast read holds on again: no reader is left to count). */
static uint32_t settle(uint32_t w)
{
    if (w & E_INV_DEF)
        return (w & ~(E_INV_DEF | E_STATE | E_NOFAST)) | E_I;
    if (w & E_REC_S)
        return (w & ~(E_REC_S | E_STATE | E_NOFAST)) | E_S;
    if (w & E_REC_I)
        return (w & ~(E_REC_I | E_STATE | E_NOFAST)) | E_I;
    return w;
}

#define E_DEFERRED (E_INV_DEF | E_REC_S | E_REC_I)

/* A deferral is answered by whoever finds no holder left: the CAS that
 * clears its bit is the one that answers. */
static void try_settle(rqdsm_t *d, struct rqdsm_region *r, size_t b)
{
    _Atomic uint32_t *e = &r->entry[b];
    uint32_t w = atomic_load_explicit(e, memory_order_acquire);
    while ((w & E_DEFERRED) && E_READERS(w) == 0 && !(w & E_WRITER) &&
           rqdsm_fast_readers(r, b) == 0)
        if (atomic_compare_exchange_weak_explicit(e, &w, settle(w), memory_order_acq_rel,
                                                  memory_order_acquire)) {
            answer_deferred(d, r, b, w);
            return;
        }
}

/* Before counting readers (r->rd): turn fast holds off (E_NOFAST, a
 * seq_cst CAS; the counters are then loaded seq_cst: of a fast reader,
 * whose seq_cst add precedes its seq_cst load of the word, and this, one
 * sees the other), then return the fast holds there are.  *w: the word
 * after.
 * The caller's next CAS must start from *w: if E_NOFAST was cleared
 * meanwhile (a grant, a write's end, a settle) it fails, and the caller
 * counts again, so no hold taken after this count is ever missed. */
static uint32_t count_fast(struct rqdsm_region *r, size_t b, uint32_t *w)
{
    if (r->rd == NULL)
        return 0;
    _Atomic uint32_t *e = &r->entry[b];
    while (!(*w & E_NOFAST) &&
           !atomic_compare_exchange_weak_explicit(e, w, *w | E_NOFAST, memory_order_seq_cst,
                                                  memory_order_acquire))
        ;
    if (!(*w & E_NOFAST))
        *w |= E_NOFAST;
    return rqdsm_fast_readers(r, b);
}

/* ---- handlers --------------------------------------------------------- */

void rqdsm_h_data(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    rqdsm_t *d = arg;
    size_t b;
    struct rqdsm_region *r = rqdsm_msg_region(d, m, 2, &b);
    if (r == NULL)
        return;
    unsigned kind = (unsigned)m->args[1];
    _Atomic uint32_t *e = &r->entry[b];
    const int timed = kind == E_S && r->home != d->me; /* Table 1's fill */
    rqdsm_lock(r, b);
    uint64_t t0 = timed ? rqdsm_ticks() : 0;
    /* Acquire: the copy below comes after the last section on the old
     * bytes, whose end released the word (a settle, an end call) before
     * the request's CAS.  Under the PDQ no block lock orders it, and the
     * path through the home is in another process (TSan saw this copy
     * race a reader's load in dsm_one_block with a relaxed load here). */
    uint32_t w = atomic_load_explicit(e, memory_order_acquire);
    if (m->src != r->home || !(w & E_PEND) || (kind != E_S && kind != E_E) ||
        (kind == E_S && (w & E_PEND_W))) {
        STAT(d, dropped); /* nothing asked for this */
        rqdsm_unlock(r, b);
        return;
    }
    if (m->len == d->block && r->home != d->me)
        memcpy(block_mem(r, b), m->data, d->block);
    uint32_t nw;
    do {
        nw = (w & ~(E_STATE | E_PEND | E_PEND_W | E_WANT_R | E_WANT_W | E_NOFAST)) | kind;
        if (w & E_WANT_W)
            nw |= E_WRITER;
        else if (w & E_WANT_R)
            nw += E_RD_ONE;
    } while (!atomic_compare_exchange_weak_explicit(e, &w, nw, memory_order_acq_rel,
                                                    memory_order_relaxed));
    if (timed) {
        uint64_t t1 = rqdsm_ticks();
        atomic_store_explicit(&d->last_grant, t1, memory_order_relaxed);
        STAT(d, fills);
        STAT_ADD(d, fill_ticks, t1 - t0);
    }
    rqdsm_unlock(r, b);
}

/* An INV for this rank's copy: 1 if it is gone now (answer at once), 0 if
 * a holder defers it to the last end call.  Under the block's serialisation. */
int rqdsm_local_inv(rqdsm_t *d, struct rqdsm_region *r, size_t b)
{
    STAT(d, invalidations);
    _Atomic uint32_t *e = &r->entry[b];
    uint32_t w = atomic_load_explicit(e, memory_order_relaxed), nw;
    int now;
    do {
        const uint32_t fast = count_fast(r, b, &w);
        /* Not shared here (dropped, or already invalid): just ack. */
        now = (w & E_STATE) != E_S || (E_READERS(w) == 0 && fast == 0);
        nw = now ? ((w & E_STATE) == E_S ? (w & ~E_STATE) | E_I : w) & ~E_NOFAST
                 : w | E_INV_DEF;
        /* seq_cst: a fast reader's drop, then its look at the word, and
         * this CAS, then try_settle's look at the counters (Dekker). */
    } while (!atomic_compare_exchange_weak_explicit(e, &w, nw, memory_order_seq_cst,
                                                    memory_order_relaxed));
    if (!now) {
        STAT(d, deferred);
        try_settle(d, r, b); /* the fast readers counted may all be gone */
    }
    return now;
}

void rqdsm_h_inv(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    rqdsm_t *d = arg;
    size_t b;
    struct rqdsm_region *r = rqdsm_msg_region(d, m, 1, &b);
    if (r == NULL || m->src != r->home) {
        if (r != NULL)
            STAT(d, dropped);
        return;
    }
    rqdsm_lock(r, b);
    if (rqdsm_local_inv(d, r, b))
        to_home(d, r, b, H_INV_ACK, 0, 0);
    rqdsm_unlock(r, b);
}

/* A RECALL of this rank's exclusive copy to kind (E_S or E_I): 1 if done
 * now (the caller sends the bytes), 0 if a holder defers it. */
int rqdsm_local_recall(rqdsm_t *d, struct rqdsm_region *r, size_t b, unsigned kind)
{
    STAT(d, recalls);
    _Atomic uint32_t *e = &r->entry[b];
    uint32_t w = atomic_load_explicit(e, memory_order_relaxed), nw;
    int now;
    do {
        const uint32_t fast = count_fast(r, b, &w);
        now = E_READERS(w) == 0 && !(w & E_WRITER) && fast == 0;
        nw = now ? (w & ~(E_STATE | E_NOFAST)) | kind : w | (kind == E_S ? E_REC_S : E_REC_I);
    } while (!atomic_compare_exchange_weak_explicit(e, &w, nw, memory_order_seq_cst,
                                                    memory_order_relaxed)); /* as in local_inv */
    if (!now) {
        STAT(d, deferred);
        try_settle(d, r, b);
    }
    return now;
}

void rqdsm_h_recall(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    rqdsm_t *d = arg;
    size_t b;
    struct rqdsm_region *r = rqdsm_msg_region(d, m, 2, &b);
    if (r == NULL)
        return;
    unsigned kind = (unsigned)m->args[1];
    rqdsm_lock(r, b);
    uint32_t w = atomic_load_explicit(&r->entry[b], memory_order_relaxed);
    if (m->src != r->home || (w & E_STATE) != E_E || (kind != E_S && kind != E_I))
        STAT(d, dropped);
    else if (rqdsm_local_recall(d, r, b, kind))
        to_home(d, r, b, H_RECALL_DATA, kind, 1);
    rqdsm_unlock(r, b);
}

/* ---- application calls ------------------------------------------------ */

static _Thread_local unsigned poll_calls __attribute__((tls_model("initial-exec")));
/* Multiplexed, one application thread: calls from one help to the next
 * (1 while helps find work, doubling up to HELP_GAP_MAX while not). */
#define HELP_GAP_MAX 16u
static _Thread_local unsigned help_gap __attribute__((tls_model("initial-exec"))) = 1;

static int range(struct rqdsm_region *r, size_t off, size_t len, size_t *b0, size_t *b1)
{
    if (r == NULL || r->maps <= 0)
        return RQ_EINVAL;
    /* Handlers run by polling serve other ranks' misses: give them a turn
     * on every call, even one that only hits. */
    if (r->dsm->protocol == RQDSM_PROTO_POLL) {
        /* With several threads, each polls on one call in 64: on every
         * call they only took turns on the context lock (barnes 1 rank x
         * 2 threads: 0.29 s, 0.12 with a flag that let one poll at a
         * time, 0.097 with none) and any of them serves the others. */
        rqdsm_t *d = r->dsm;
        if (!d->app_mt || ++poll_calls % 64 == 0) {
            int rc = rq_poll(d->ctx);
            if (rc < 0)
                return rc;
        }
    } else if (r->dsm->serve_sections) {
        /* Multiplexed (or dedicated protocol threads without CPUs of
         * their own: serves_in_sections): the node's processors are its
         * application threads, so they serve now and then while busy, not
         * only when idle (else a request waits for a miss here, a barrier,
         * or the fallback thread's RQ_PDQ_FALLBACK_US): on 2 ranks, barnes 115.8 -> 90.8
         * ms, lu 104.0 -> 92.4, water 21.4 -> 19.7.  Several threads do
         * it one call in 64, as under poll: on every 16th they fought
         * over the intake (barnes 1 x 2 108 -> 273 ms).  A single thread
         * helps again on its next call while its helps find work, and
         * one call in 2, 4, ... 16 while they find none: a request that
         * comes while the protocol is busy is served at once, and a
         * thread that only hits pays for a help one call in 16 (2 ranks
         * on 2 vCPUs, medians of 3 alternated runs, ms: lu 227 -> 177,
         * barnes 227 -> 235, water 47 -> 47; poll 151, 239, 43; helping
         * on every call: lu 156, barnes 362). */
        rqdsm_t *d = r->dsm;
        if (++poll_calls >= (d->app_mt ? 64u : help_gap)) {
            poll_calls = 0;
            int rc = rq_pdq_help(d->pdq, 16);
            if (rc < 0)
                return rc;
            if (!d->app_mt)
                help_gap = rc > 0 ? 1u : help_gap < HELP_GAP_MAX ? 2u * help_gap : HELP_GAP_MAX;
        }
    }
    if (off >= r->size || (len != 0 && len > r->size - off))
        return RQ_ERANGE;
    if (len == 0)
        len = r->size - off;
    *b0 = off >> r->dsm->block_shift;
    *b1 = (off + len - 1) >> r->dsm->block_shift;
    return 0;
}

/* ---- this thread's sections -------------------------------------------
 * Several threads of a rank may hold sections on the same blocks; what a
 * thread holds itself decides nesting (a read inside its own write
 * section, a write inside its own read: refused), what others hold makes
 * it wait.  Each thread keeps its open sections (thread-local: no other
 * thread reads them). */
#define MAX_OPEN 64

struct open_sec {
    const struct rqdsm_region *r;
    size_t                     b0, b1;
    int                        write;
};
static _Thread_local struct {
    unsigned        n, writes; /* open sections; of them, write sections */
    struct open_sec s[MAX_OPEN];
} mine __attribute__((tls_model("initial-exec"))); /* no __tls_get_addr per call */

/* This thread holds block b of r: 0 no, 1 for reading, 2 for writing. */
static int own_hold(const struct rqdsm_region *r, size_t b)
{
    int h = 0;
    for (unsigned i = 0; i < mine.n; i++)
        if (mine.s[i].r == r && b >= mine.s[i].b0 && b <= mine.s[i].b1)
            h = mine.s[i].write ? 2 : (h != 0 ? h : 1);
    return h;
}

static int own_overlap(const struct rqdsm_region *r, size_t b0, size_t b1)
{
    for (unsigned i = 0; i < mine.n; i++)
        if (mine.s[i].r == r && b0 <= mine.s[i].b1 && mine.s[i].b0 <= b1)
            return 1;
    return 0;
}

/* The most recent open section of this thread naming exactly these
 * blocks, or -1. */
static int own_find(const struct rqdsm_region *r, size_t b0, size_t b1, int write)
{
    for (unsigned i = mine.n; i-- > 0;)
        if (mine.s[i].r == r && mine.s[i].b0 == b0 && mine.s[i].b1 == b1 &&
            mine.s[i].write == write)
            return (int)i;
    return -1;
}

static void own_drop(unsigned i)
{
    mine.writes -= (unsigned)mine.s[i].write;
    mine.s[i] = mine.s[--mine.n];
}

/* Wait while busy(word) holds, running handlers (rqdsm_wait_step). */
enum { W_PEND, W_WRITE, W_HELD };
static int busy(uint32_t w, int what)
{
    switch (what) {
    case W_PEND: /* a request to the home is out */
        return (w & E_PEND) != 0;
    case W_WRITE: /* another thread writes, or a write grant is on its way */
        return (w & (E_WRITER | E_PEND_W)) != 0;
    default: /* W_HELD: another thread holds it */
        return E_READERS(w) != 0 || (w & E_WRITER) != 0;
    }
}

static int wait_while(rqdsm_t *d, _Atomic uint32_t *e, int what)
{
    struct rqdsm_wait wait = {0, 0};
    while (busy(atomic_load_explicit(e, memory_order_acquire), what)) {
        int rc = rqdsm_wait_step(d, &wait);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static void count_request(rqdsm_t *d, uint32_t w, int wr)
{
    if (wr) {
        STAT(d, write_misses);
        if ((w & E_STATE) == E_S)
            STAT(d, upgrades);
    } else {
        STAT(d, read_misses);
    }
}

/* After this thread's seq_cst CAS set E_WRITER or E_PEND_W on block b:
 * wait until no fast read hold of b is left.  The count a writer took
 * before its CAS (count_fast) was of the word as it was then; if E_NOFAST
 * was cleared and set again since (a write's end, then another writer's
 * count), a fast reader may have come in between and the CAS still
 * matched the word (ABA).  Readers that come after the CAS see the bit
 * and back off (their seq_cst add, then their seq_cst look at the word:
 * of such a reader and this count one sees the other), so the count only
 * falls.  0, or a negative error (rqdsm_wait_step). */
static int fast_drain(rqdsm_t *d, struct rqdsm_region *r, size_t b)
{
    struct rqdsm_wait wait = {0, 0};
    while (r->rd != NULL && rqdsm_fast_readers(r, b) != 0) {
        int rc = rqdsm_wait_step(d, &wait);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Ask the home for block b (exclusive if wr) unless a request is out or
 * the copy is already good enough (another thread's grant landed since
 * the caller looked: a second read grant would copy the bytes in again
 * under that thread's readers); want (E_WANT_R / E_WANT_W) makes the
 * grant carry the caller's hold.
 * Returns 1 if this call sent the request, 0 if it sent none. */
static int request(rqdsm_t *d, struct rqdsm_region *r, size_t b, int wr, uint32_t want)
{
    _Atomic uint32_t *e = &r->entry[b];
    uint32_t w = atomic_load_explicit(e, memory_order_acquire), nw;
    do {
        if ((w & E_PEND) || (w & E_STATE) == E_E || (!wr && (w & E_STATE) != E_I))
            return 0;
        nw = w | E_PEND | (wr ? E_PEND_W : 0) | want;
    } while (!atomic_compare_exchange_weak_explicit(e, &w, nw, memory_order_seq_cst,
                                                    memory_order_acquire));
    count_request(d, w, wr);
    if (wr) /* a failed job: the caller's wait for the grant says RQ_EPEER */
        (void)fast_drain(d, r, b);
    to_home(d, r, b, wr ? H_WR_REQ : H_RD_REQ, 0, 0);
    return 1;
}

/* This thread's row of fast read holds in d's regions, or -1 (more
 * threads than attr.app_threads: they use the word). */
static _Thread_local struct {
    const rqdsm_t *d;
    uint64_t       gen;
    int            row;
} my_row __attribute__((tls_model("initial-exec")));

/* Checked by generation, not by address alone: an instance made after
 * another was freed may sit at its address, with fewer rows. */
static int row_of(rqdsm_t *d)
{
    if (my_row.d != d || my_row.gen != d->gen) {
        unsigned i = atomic_fetch_add_explicit(&d->next_thread, 1, memory_order_relaxed);
        my_row.d = d;
        my_row.gen = d->gen;
        my_row.row = i < d->app_threads ? (int)i : -1;
    }
    return my_row.row;
}

static _Atomic uint32_t *fast_slot(struct rqdsm_region *r, size_t b, int row)
{
    return &r->rd[(size_t)row * r->rowstride + b];
}


/* The counter is this thread's alone, but its changes are seq_cst RMWs
 * (a locked add on x86, as cheap as a fence, and what TSan can follow):
 * each precedes the seq_cst load of the word that decides. */
static void fast_add(struct rqdsm_region *r, size_t b, int row, uint32_t n)
{
    atomic_fetch_add_explicit(fast_slot(r, b, row), n, memory_order_seq_cst);
}

/* Read holds on blocks b0..b1 without writing their words: 1 if every
 * one stands; else none is kept (the caller takes them in block order
 * through the words: a fast hold kept above a block that waits would
 * break that order). */
static int fast_hold_range(rqdsm_t *d, struct rqdsm_region *r, size_t b0, size_t b1, int row)
{
    for (size_t b = b0; b <= b1; b++)
        fast_add(r, b, row, 1);
    size_t b = b0;
    for (; b <= b1; b++) {
        uint32_t w = atomic_load_explicit(&r->entry[b], memory_order_seq_cst);
        if ((w & E_STATE) == E_I || (w & (E_NOFAST | E_WRITER | E_PEND_W)))
            break;
    }
    if (b > b1)
        return 1;
    for (b = b0; b <= b1; b++) /* take them all back */
        fast_add(r, b, row, (uint32_t)-1);
    for (b = b0; b <= b1; b++)
        if (atomic_load_explicit(&r->entry[b], memory_order_seq_cst) & E_DEFERRED)
            try_settle(d, r, b);
    return 0;
}

/* Take a read hold on block b: a hit, or wait for a request's grant.
 * own_write: this thread holds b for writing (its read nests inside). */
static int hold_read(rqdsm_t *d, struct rqdsm_region *r, size_t b, int own_write, int *missed)
{
    _Atomic uint32_t *e = &r->entry[b];
    for (;;) {
        uint32_t w = atomic_load_explicit(e, memory_order_acquire), nw;
        if (!own_write && busy(w, W_WRITE)) { /* another thread's write first */
            *missed = 1;
            int rc = wait_while(d, e, W_WRITE);
            if (rc != 0)
                return rc;
            continue;
        }
        if ((w & E_STATE) != E_I) {
            nw = w + E_RD_ONE;
        } else if (w & E_PEND) {
            *missed = 1;
            if (w & E_WANT_R) { /* another thread's grant: let it land, look again */
                int rc = wait_while(d, e, W_PEND);
                if (rc != 0)
                    return rc;
                continue;
            }
            nw = w | E_WANT_R; /* the grant will carry our hold */
        } else {
            uint64_t t0 = rqdsm_ticks();
            if (!request(d, r, b, 0, E_WANT_R))
                continue; /* another thread asked meanwhile */
            uint64_t t1 = rqdsm_ticks();
            *missed = 1;
            int rc = wait_while(d, e, W_PEND); /* the grant carries the hold */
            uint64_t t2 = rqdsm_ticks(),
                     g = atomic_load_explicit(&d->last_grant, memory_order_relaxed);
            if (rc == 0 && r->home != d->me) { /* Table 1's breakdown */
                STAT(d, timed_misses);
                STAT_ADD(d, miss_ticks, t2 - t0);
                STAT_ADD(d, request_ticks, t1 - t0);
                STAT_ADD(d, resume_ticks, g > t1 && g < t2 ? t2 - g : 0);
            }
            return rc;
        }
        if (atomic_compare_exchange_weak_explicit(e, &w, nw, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            if (!(nw & E_WANT_R))
                return 0; /* held */
            return wait_while(d, e, W_PEND);
        }
    }
}

/* Room for one more open section of this thread. */
static int own_room(void) { return mine.n < MAX_OPEN; }

int rqdsm_start_read(rqdsm_region_t *r, size_t off, size_t len)
{
    size_t b0, b1;
    int rc = range(r, off, len, &b0, &b1);
    if (rc != 0)
        return rc;
    rqdsm_t *d = r->dsm;
    if (d->app_mt && !own_room())
        return RQ_ENOMEM;
    const int row = r->rd != NULL ? row_of(d) : -1;
    /* Ask for every missing block at once (no hold: a copy that arrives
     * may still be invalidated), then hold them in order: holding only in
     * block order keeps two ranges from waiting on each other. */
    if (row >= 0 && mine.writes == 0 && fast_hold_range(d, r, b0, b1, row)) {
        STAT_ADD(d, read_hits, b1 - b0 + 1);
        mine.s[mine.n++] = (struct open_sec){r, b0, b1, 0};
        return 0;
    }
    if (b1 > b0)
        for (size_t b = b0; b <= b1; b++)
            if ((atomic_load_explicit(&r->entry[b], memory_order_relaxed) & E_STATE) == E_I)
                request(d, r, b, 0, 0);
    for (size_t b = b0; b <= b1; b++) {
        int missed = 0;
        /* Reading inside this thread's own write section: with one
         * application thread the word's writer is ours; with several,
         * only a thread with a write section open looks at its records. */
        int own_write = d->app_mt ? mine.writes != 0 && own_hold(r, b) == 2
                                  : (atomic_load_explicit(&r->entry[b], memory_order_relaxed) &
                                     E_WRITER) != 0;
        rc = hold_read(d, r, b, own_write, &missed);
        if (rc != 0)
            return rc;
        if (!missed)
            STAT(d, read_hits);
    }
    if (d->app_mt)
        mine.s[mine.n++] = (struct open_sec){r, b0, b1, 0};
    return 0;
}

/* Drop one read hold; answer a deferral if it was the last holder.  The
 * fast holds counted before the CAS may end before it: such a reader's
 * seq_cst drop, then its look at the word, still saw this hold and left
 * the deferral to it, and a CAS that stood on that count answered
 * nobody (the home waited for the ack for ever: dsm_threads hung about
 * once in 150 runs beside other load).  So after a seq_cst CAS that left
 * no word holder with a deferral, look at the counters again
 * (try_settle): of that reader and this thread one sees the other. */
static void release_read(rqdsm_t *d, struct rqdsm_region *r, size_t b)
{
    _Atomic uint32_t *e = &r->entry[b];
    uint32_t w = atomic_load_explicit(e, memory_order_relaxed), nw;
    int settled;
    do {
        nw = w - E_RD_ONE;
        settled = E_READERS(nw) == 0 && !(nw & E_WRITER) && (nw & E_DEFERRED) &&
                  rqdsm_fast_readers(r, b) == 0;
        if (settled)
            nw = settle(nw);
    } while (!atomic_compare_exchange_weak_explicit(e, &w, nw, memory_order_seq_cst,
                                                    memory_order_relaxed));
    if (settled)
        answer_deferred(d, r, b, w);
    else if (E_READERS(nw) == 0 && !(nw & E_WRITER) && (nw & E_DEFERRED))
        try_settle(d, r, b);
}

int rqdsm_end_read(rqdsm_region_t *r, size_t off, size_t len)
{
    size_t b0, b1;
    int rc = range(r, off, len, &b0, &b1);
    if (rc != 0)
        return rc;
    if (r->dsm->app_mt) {
        int i = own_find(r, b0, b1, 0);
        if (i < 0)
            return RQ_ERANGE; /* no matching start on this thread: change nothing */
        own_drop((unsigned)i);
    } else {
        for (size_t b = b0; b <= b1; b++)
            if (E_READERS(atomic_load_explicit(&r->entry[b], memory_order_relaxed)) == 0)
                return RQ_ERANGE; /* no matching start: change nothing */
    }
    const int row = r->rd != NULL ? row_of(r->dsm) : -1;
    /* Each block's hold is fast if this thread has one there (holds of a
     * block are alike), else in the word; a fast one is dropped (its
     * seq_cst RMW orders this thread's reads of the bytes before a
     * checker's load of the counter), then its deferral looked at. */
    for (size_t b = b0; b <= b1; b++)
        if (row >= 0 && atomic_load_explicit(fast_slot(r, b, row), memory_order_relaxed) != 0) {
            fast_add(r, b, row, (uint32_t)-1);
            if (atomic_load_explicit(&r->entry[b], memory_order_seq_cst) & E_DEFERRED)
                try_settle(r->dsm, r, b);
        } else {
            release_read(r->dsm, r, b);
        }
    return 0;
}

/* Give the write hold on block b back: settle a deferral if no reader is
 * left, and let fast reads in again unless one is still deferred. */
static void write_release(rqdsm_t *d, struct rqdsm_region *r, size_t b)
{
    _Atomic uint32_t *e = &r->entry[b];
    uint32_t w = atomic_load_explicit(e, memory_order_relaxed), nw;
    do {
        nw = w & ~E_WRITER;
        if (E_READERS(nw) == 0)
            nw = settle(nw);
        if (!(nw & E_DEFERRED))
            nw &= ~E_NOFAST; /* readable again, nobody to count */
    } while (!atomic_compare_exchange_weak_explicit(e, &w, nw, memory_order_acq_rel,
                                                    memory_order_relaxed));
    if (E_READERS(nw) == 0)
        answer_deferred(d, r, b, w);
}

/* Take the write hold on block b (this thread holds nothing on it):
 * once no other thread holds it, a hit in E, or a request whose grant
 * carries the hold.  While a write request is out, new readers of the
 * rank wait (hold_read), so the grant finds no reader here. */
static int hold_write(rqdsm_t *d, struct rqdsm_region *r, size_t b, int *missed)
{
    _Atomic uint32_t *e = &r->entry[b];
    for (;;) {
        uint32_t w = atomic_load_explicit(e, memory_order_acquire), nw;
        int rc;
        if (r->rd != NULL && count_fast(r, b, &w) != 0) { /* their fast reads end */
            *missed = 1;
            struct rqdsm_wait wait = {0, 0};
            if ((rc = rqdsm_wait_step(d, &wait)) < 0)
                return rc;
            continue;
        }
        if (busy(w, W_HELD)) { /* other threads' sections end first */
            *missed = 1;
            if ((rc = wait_while(d, e, W_HELD)) != 0)
                return rc;
            continue;
        }
        if (w & E_PEND) {
            if ((w & E_PEND_W) && !(w & E_WANT_W)) {
                nw = w | E_WANT_W; /* a write request is out: its grant is ours */
            } else { /* a read request, or another thread's write: let it land */
                *missed = 1;
                if ((rc = wait_while(d, e, W_PEND)) != 0)
                    return rc;
                continue;
            }
        } else if ((w & E_STATE) == E_E) {
            nw = w | E_WRITER;
        } else {
            nw = w | E_PEND | E_PEND_W | E_WANT_W;
        }
        if (!atomic_compare_exchange_weak_explicit(e, &w, nw, memory_order_seq_cst,
                                                   memory_order_acquire))
            continue;
        if (nw & E_WRITER) {
            /* Count again (fast_drain's ABA): a fast reader that came in
             * since the count above makes this hit give the hold back and
             * wait, as the count would have. */
            if (r->rd == NULL || rqdsm_fast_readers(r, b) == 0)
                return 0; /* a hit */
            write_release(d, r, b);
            *missed = 1;
            continue;
        }
        *missed = 1;
        if (!(w & E_PEND)) { /* this CAS asked */
            count_request(d, w, 1);
            if ((rc = fast_drain(d, r, b)) != 0)
                return rc;
            to_home(d, r, b, H_WR_REQ, 0, 0);
        }
        return wait_while(d, e, W_PEND); /* the grant carries the hold */
    }
}

int rqdsm_start_write(rqdsm_region_t *r, size_t off, size_t len)
{
    size_t b0, b1;
    int rc = range(r, off, len, &b0, &b1);
    if (rc != 0)
        return rc;
    rqdsm_t *d = r->dsm;
    if (d->app_mt) {
        if (own_overlap(r, b0, b1))
            return RQ_EINVAL; /* upgrade inside this thread's read, or a nested write */
        if (!own_room())
            return RQ_ENOMEM;
    } else {
        for (size_t b = b0; b <= b1; b++) {
            uint32_t w = atomic_load_explicit(&r->entry[b], memory_order_relaxed);
            if (E_READERS(w) != 0 || (w & E_WRITER))
                return RQ_EINVAL; /* upgrade inside a read, or nested write */
        }
    }
    if (b1 > b0)
        for (size_t b = b0; b <= b1; b++) {
            uint32_t w = atomic_load_explicit(&r->entry[b], memory_order_relaxed);
            if ((w & E_STATE) != E_E && !busy(w, W_HELD))
                request(d, r, b, 1, 0);
        }
    for (size_t b = b0; b <= b1; b++) {
        int missed = 0;
        rc = hold_write(d, r, b, &missed);
        if (rc != 0)
            return rc;
        if (!missed)
            STAT(d, write_hits);
    }
    if (d->app_mt) {
        mine.s[mine.n++] = (struct open_sec){r, b0, b1, 1};
        mine.writes++;
    }
    return 0;
}

int rqdsm_end_write(rqdsm_region_t *r, size_t off, size_t len)
{
    size_t b0, b1;
    int rc = range(r, off, len, &b0, &b1);
    if (rc != 0)
        return rc;
    rqdsm_t *d = r->dsm;
    if (d->app_mt) {
        int i = own_find(r, b0, b1, 1);
        if (i < 0)
            return RQ_ERANGE; /* no matching start on this thread: change nothing */
        own_drop((unsigned)i);
    } else {
        for (size_t b = b0; b <= b1; b++)
            if (!(atomic_load_explicit(&r->entry[b], memory_order_relaxed) & E_WRITER))
                return RQ_ERANGE;
    }
    for (size_t b = b0; b <= b1; b++)
        write_release(d, r, b);
    return 0;
}

int rqdsm_flush(rqdsm_region_t *r)
{
    if (r == NULL || r->maps <= 0)
        return RQ_EINVAL;
    rqdsm_t *d = r->dsm;
    /* Shared copies go at once; exclusive ones are recalled by the home
     * (it serialises the give-back with other requests), then awaited. */
    for (size_t b = 0; b < r->nblocks; b++) {
        _Atomic uint32_t *e = &r->entry[b];
        uint32_t w = atomic_load_explicit(e, memory_order_acquire);
        if (E_READERS(w) != 0 || (w & (E_WRITER | E_PEND | E_DEFERRED)))
            continue;
        if ((w & E_STATE) == E_S) {
            /* A block read fast stays (fast reads off until its next
             * state change: a grant, a write, an invalidation). */
            uint32_t fast = count_fast(r, b, &w);
            if (fast == 0 && E_READERS(w) == 0 && !(w & (E_WRITER | E_PEND | E_DEFERRED)) &&
                atomic_compare_exchange_strong_explicit(e, &w, (w & ~(E_STATE | E_NOFAST)) | E_I,
                                                        memory_order_acq_rel,
                                                        memory_order_relaxed))
                to_home(d, r, b, H_DROP, 0, 0);
        } else if ((w & E_STATE) == E_E) {
            to_home(d, r, b, H_FLUSH_REQ, 0, 0);
        }
    }
    for (size_t b = 0; b < r->nblocks; b++) {
        _Atomic uint32_t *e = &r->entry[b];
        struct rqdsm_wait wait = {0, 0};
        for (;;) {
            uint32_t w = atomic_load_explicit(e, memory_order_acquire);
            if ((w & E_STATE) != E_E || E_READERS(w) != 0 || (w & E_WRITER) ||
                rqdsm_fast_readers(r, b) != 0)
                break; /* gone, or held (a holder's end answers the recall) */
            int rc = rqdsm_wait_step(d, &wait);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}
