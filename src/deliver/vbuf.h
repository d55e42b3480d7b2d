/* vbuf.h - the virtual buffer: private, demand-allocated, unbounded FIFOs
 * of packets copied out of the inbound ring (buffered delivery).
 *
 * Each queue has one FIFO made of chunks (RQ_VBUF_CHUNK_BYTES, or one
 * packet's size when larger).  Records are appended contiguously and never
 * move, so a view of a buffered packet stays valid until it is popped.
 * Emptied chunks go to a small cache (RQI_VBUF_CACHE chunks); the rest are
 * freed, so memory goes back to the allocator/OS once drained.
 * Process-local: used by the owning rank only, no concurrency.
 */
#ifndef RQI_VBUF_H
#define RQI_VBUF_H

#include <stddef.h>
#include <stdint.h>

#define RQI_VBUF_CACHE 4
#define RQI_VR_OWNED  0x80u /* data is a malloc'd block freed on pop */
#define RQI_VR_INTR   0x40u /* parked send made with RQ_INTERRUPT */
/* An active message held here counts for the progress thread (bits 4-5:
 * its interrupt class, RQI_CLS_*, see deliver.h). */
#define RQI_VR_CLS_SHIFT 4
#define RQI_VR_CLS_MASK  0x30u

struct rqi_vrec {
    uint32_t bytes;   /* record size in its chunk */
    uint32_t src;
    uint32_t tag;
    uint16_t qid;
    uint8_t  nargs;
    uint8_t  flags;   /* RQI_PF_* | RQI_VR_* */
    uint32_t kind;    /* packet kind, for parked outgoing packets */
    uint32_t spare_;
    uint64_t len;
    void    *data;    /* inline after args, in the segment (long), or owned */
    uint64_t args[];
};

struct rqi_vchunk {
    struct rqi_vchunk *next;
    size_t             cap, rd, wr;
    _Alignas(8) char   buf[];
};

struct rqi_vfifo {
    struct rqi_vchunk *first, *last;
};

struct rqi_vbuf {
    size_t             chunk_bytes;
    struct rqi_vchunk *cache;
    unsigned           ncache;
    uint64_t           records;    /* in all FIFOs */
    uint64_t           bytes_now;  /* records + owned payloads */
    uint64_t           bytes_max;
    uint64_t           limit;      /* most bytes_now may reach; 0: unlimited */
};

void rqi_vbuf_init(struct rqi_vbuf *vb, size_t chunk_bytes);
/* Free every chunk of every FIFO given and the cache. */
void rqi_vbuf_destroy(struct rqi_vbuf *vb, struct rqi_vfifo *fifos, unsigned nfifos);

/* Nonzero when n more bytes stay within the limit. */
static inline int rqi_vbuf_room(const struct rqi_vbuf *vb, uint64_t n)
{
    return vb->limit == 0 || (n <= vb->limit && vb->bytes_now <= vb->limit - n);
}

/* Append a record with room for nargs args and inline_len payload bytes;
 * rec->data points at the inline room.  NULL when out of memory or past
 * the limit. */
struct rqi_vrec *rqi_vbuf_push(struct rqi_vbuf *vb, struct rqi_vfifo *f, unsigned nargs,
                               size_t inline_len);
/* Account an owned payload of len bytes attached to a pushed record. */
void rqi_vbuf_own(struct rqi_vbuf *vb, struct rqi_vrec *r, void *data, size_t len);

static inline struct rqi_vrec *rqi_vfifo_head(const struct rqi_vfifo *f)
{
    struct rqi_vchunk *c = f->first;
    return (c != NULL && c->rd < c->wr) ? (struct rqi_vrec *)(c->buf + c->rd) : NULL;
}

void rqi_vbuf_pop(struct rqi_vbuf *vb, struct rqi_vfifo *f);

#endif
