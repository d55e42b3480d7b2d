/* fuzz_packets - the inbound packet decoder against arbitrary bytes.
 *
 * The input is laid into a receiver's lane as a run of packets: each takes
 * its header and body from the input, the harness publishes it (sets its
 * sequence word, the one thing a producer must get right to be read at
 * all) and then lets the receiver at it exactly as rq_poll, rq_peek and
 * rq_pop do: validation, in-place delivery to handlers that touch every
 * byte they are shown, buffering, fragment reassembly, the broken-framing
 * path.  AddressSanitizer turns any read or write outside the lane, the
 * segment or a buffer into a crash.
 *
 * Built two ways: with libFuzzer (clang, -DRQ_FUZZ=ON: LLVMFuzzerTestOneInput
 * only), and as a plain program (main below) that replays the files named
 * on its command line - the committed seed corpus runs that way in CTest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am/am.h"
#include "ctx.h"
#include "net/net.h"
#include "deliver/deliver.h"

#define NSLOTS  64u
#define SEG     4096u
#define RANKS   4

static volatile unsigned sink;

static void touch(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    unsigned s = 0;
    for (unsigned i = 0; i < m->nargs; i++)
        s += (unsigned)m->args[i];
    for (size_t i = 0; i < m->len; i++)
        s += ((const unsigned char *)m->data)[i];
    sink += s;
}

static void run_one(const uint8_t *in, size_t n)
{
    static _Alignas(64) char ring[NSLOTS * RQI_SLOT_BYTES];
    static _Alignas(64) char seg[SEG];
    static struct rqi_ring_ctrl ctrl;
    static struct rqi_job_hdr hdr;
    memset(ring, 0, sizeof ring);
    memset(&ctrl, 0, sizeof ctrl);
    memset(&hdr, 0, sizeof hdr);
    rq_ctx_t *ctx = calloc(1, sizeof *ctx);
    char *segs[RANKS] = {seg, seg, seg, seg};
    struct rqi_vfifo outbox[RANKS];
    memset(outbox, 0, sizeof outbox);
    ctx->rank = 0;
    ctx->size = RANKS;
    ctx->job32 = 0x5a5a1234u;
    ctx->medium_max = 16u * RQI_SLOT_BYTES - 128u;
    ctx->seg_bytes = SEG;
    ctx->seg = segs;
    ctx->outbox = outbox;
    ctx->shm.hdr = &hdr;
    rqi_fail_init(&ctx->fail, 0);
    rqi_hooks_init(&ctx->hooks);
    ctx->net = rqi_net_default();
    rqi_fail_attach(&ctx->fail, &hdr.failed);
    ctx->cfg.v[RQI_CFG_POLL_BATCH] = 8;
    ctx->nlanes = 1;
    ctx->rx[0] = (struct rqi_ring_rx){ring, &ctrl, NSLOTS, 0, 0, 0, NSLOTS / 8};
    ctx->vni.ovf_bytes = UINT64_MAX;
    rqi_vbuf_init(&ctx->vb, 4096);
    rqi_vbuf_init(&ctx->ob, 4096);
    for (unsigned h = 0; h < 8; h++)
        ctx->handlers[h].fn = touch;
    for (unsigned q = 1; q < 4; q++)
        rq_queue_open(ctx, q);

    /* Lay packets: header bytes from the input, seq set by us. */
    uint64_t pos = 0;
    size_t at = 0;
    while (at < n && !ctx->fail.failed && pos < 8u * NSLOTS) {
        struct rqi_pkt *p = rqi_ring_slot(ring, NSLOTS, pos);
        if (rqi_load_relaxed(&p->seq) != 0 && pos - ctx->rx[0].head >= NSLOTS)
            break; /* the receiver holds this slot still */
        uint64_t off = pos & (NSLOTS - 1);
        size_t room = (size_t)(NSLOTS - off) * RQI_SLOT_BYTES;
        size_t take = n - at < room ? n - at : room;
        size_t hdr_take = take < sizeof *p ? take : sizeof *p;
        memset((char *)p + 8, 0, sizeof *p - 8);
        if (hdr_take > 8)
            memcpy((char *)p + 8, in + at + 8, hdr_take - 8);
        /* The body: as many slots as the header claims (bounded by the
         * array's end), from the input. */
        unsigned ns = p->nslots == 0 ? 1u : p->nslots;
        size_t body = (size_t)(ns < NSLOTS - off ? ns : NSLOTS - off) * RQI_SLOT_BYTES;
        if (body > take)
            body = take;
        if (body > sizeof *p)
            memcpy((char *)p + sizeof *p, in + at + sizeof *p, body - sizeof *p);
        at += body > hdr_take ? body : hdr_take;
        rqi_store_release(&p->seq, pos + 1);
        /* Consume it the three ways a receiver does: handlers in place
         * first (direct case), then the queues (which also move AM packets
         * into the buffer), then handlers from the buffer. */
        while (rqi_poll(ctx) > 0)
            ;
        rq_msg_t m;
        for (unsigned q = 1; q < 4; q++)
            while (rq_peek(ctx, q, &m) == 1) {
                touch(ctx, &m, NULL);
                rq_pop(ctx, q);
            }
        while (rqi_poll(ctx) > 0)
            ;
        pos = ctx->rx[0].scan > pos ? ctx->rx[0].scan : pos + ns;
    }
    rqi_drain(ctx);
    while (rqi_poll(ctx) > 0)
        ;
    if (getenv("FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "received %llu direct %llu buffered %llu rejected %llu failed %d\n",
                (unsigned long long)ctx->stats.received, (unsigned long long)ctx->stats.direct,
                (unsigned long long)ctx->stats.buffered, (unsigned long long)ctx->stats.rejected,
                ctx->fail.failed);
    while (ctx->reasm != NULL) {
        struct rqi_reasm *r = ctx->reasm;
        ctx->reasm = r->next;
        free(r->buf);
        free(r);
    }
    rqi_vbuf_destroy(&ctx->vb, ctx->fifo, RQ_MAX_QUEUES);
    rqi_vbuf_destroy(&ctx->ob, outbox, RANKS);
    free(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run_one(data, size);
    return 0;
}

#ifndef RQ_LIBFUZZER
int main(int argc, char **argv)
{
    int ran = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (f == NULL) {
            perror(argv[i]);
            return 1;
        }
        static uint8_t buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        run_one(buf, n);
        ran++;
    }
    printf("fuzz_packets: %d inputs replayed\n", ran);
    return ran > 0 ? 0 : 1;
}
#endif
