/* backpressure - (1) RQ_NONBLOCK against a receiver that does not poll
 * commits until the ring is full, then says RQ_EAGAIN and sends nothing;
 * all committed packets arrive in order.  (2) Two ranks flood each other
 * with blocking sends and never poll: the senders drain their own rings
 * into the virtual buffer and finish; everything arrives, in order, from
 * the buffer.  (3) Handlers that flood each other while their own lanes
 * are pinned: sends are parked, nothing deadlocks, order holds.
 * Needs 2 ranks. */
#define _DEFAULT_SOURCE
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <rq.h>

#include "check.h"

enum { H_SEQ = 1, H_TRIGGER = 2, H_FLOOD = 3 };
static uint64_t got, next_seq, flood_got, flood_next;
static int trigger_sent;
#define FLOOD 50000 /* more packets than any lane holds */

/* Runs in place, so its own lane is pinned while it floods the peer, whose
 * trigger handler floods us the same way.  Each rank's trigger precedes its
 * flood (a rank that gets the peer's trigger before sending its own, still
 * inside the barrier, sends its own first, from here), so each trigger is
 * the first packet of its lane and both handlers pin their lanes: a flood
 * larger than a lane cannot drain, and whoever blocks must park. */
static void on_trigger(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)a;
    if (!trigger_sent) {
        trigger_sent = 1;
        CHECK_EQ(rq_request(c, m->src, H_TRIGGER, NULL, 0, NULL, 0, 0), 0);
    }
    for (uint64_t i = 0; i < FLOOD; i++)
        CHECK_EQ(rq_request(c, m->src, H_FLOOD, &i, 1, NULL, 0, 0), 0);
}

static void on_flood(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->args[0], flood_next++); /* order holds through the outbox */
    flood_got++;
}

static void on_seq(rq_ctx_t *c, const rq_msg_t *m, void *a)
{
    (void)c;
    (void)a;
    CHECK_EQ(m->args[0], next_seq++);
    got++;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    int me = rq_rank(ctx);
    CHECK_EQ(rq_size(ctx), 2);
    rq_handler_register(ctx, H_SEQ, on_seq, NULL, 0);
    rq_handler_register(ctx, H_TRIGGER, on_trigger, NULL, 0);
    rq_handler_register(ctx, H_FLOOD, on_flood, NULL, 0);
    CHECK_EQ(rq_barrier(ctx), 0);

    /* (1) non-blocking until full.  Rank 1 may still be inside the barrier,
     * polling, when rank 0 leaves it; a packet it drains then frees ring
     * space after rank 0 has seen the ring full.  So rank 1 raises a flag in
     * its segment once it has stopped polling, and rank 0 waits for it. */
    uint64_t committed = 0;
    _Atomic uint64_t *quiet = (_Atomic uint64_t *)rq_segment_peer(ctx, 1);
    if (me == 0) {
        while (atomic_load_explicit(quiet, memory_order_acquire) == 0)
            ;
        for (;;) {
            uint64_t a = committed;
            int rc = rq_request(ctx, 1, H_SEQ, &a, 1, NULL, 0, RQ_NONBLOCK);
            if (rc == RQ_EAGAIN)
                break;
            CHECK_EQ(rc, 0);
            committed++;
        }
        CHECK(committed > 0);
        /* A long request that cannot be committed writes nothing at all. */
        unsigned char *peer = rq_segment_peer(ctx, 1);
        unsigned char src[256];
        memset(src, 0xab, sizeof src);
        CHECK_EQ(rq_request_long(ctx, 1, H_SEQ, &committed, 1, src, sizeof src, 4096,
                                 RQ_NONBLOCK), RQ_EAGAIN);
        for (size_t i = 0; i < sizeof src; i++)
            CHECK(peer[4096 + i] == 0);
    } else {
        atomic_store_explicit(quiet, 1, memory_order_release);
        usleep(200000); /* not polling: rank 0 fills our ring */
    }
    CHECK_EQ(rq_allreduce(ctx, &committed, &committed, 1, RQ_UINT64, RQ_SUM), 0);
    if (me == 1)
        CHECK_EQ(rq_wait_until(ctx, &got, committed), 0);
    /* No barrier before the flood: a rank leaving it early would flood a
     * peer still inside it, which is fine for librq but not for counts
     * taken after it.  Each rank's base is known exactly instead. */

    /* (2) mutual flood, no polling between sends */
    const uint64_t flood = 200000;
    uint64_t base = me == 1 ? committed : 0;
    for (uint64_t i = 0; i < flood; i++) {
        uint64_t a = (me == 0 ? committed : 0) + i;
        CHECK_EQ(rq_request(ctx, 1 - me, H_SEQ, &a, 1, NULL, 0, 0), 0);
    }
    CHECK_EQ(rq_wait_until(ctx, &got, base + flood), 0);

    /* (3) floods from handlers running in place.  The barrier makes both
     * lanes idle first, so each trigger is read in place (not copied out
     * by a sender still draining phase 2) and its handler pins its lane. */
    CHECK_EQ(rq_barrier(ctx), 0);
    if (!trigger_sent) {
        trigger_sent = 1;
        CHECK_EQ(rq_request(ctx, 1 - me, H_TRIGGER, NULL, 0, NULL, 0, 0), 0);
    }
    CHECK_EQ(rq_wait_until(ctx, &flood_got, FLOOD), 0);
    rq_stats_t st;
    rq_stats(ctx, &st);
    uint64_t parked = st.parked, all_parked;
    CHECK_EQ(rq_allreduce(ctx, &parked, &all_parked, 1, RQ_UINT64, RQ_SUM), 0);
    CHECK(all_parked > 0);
    CHECK(st.buffered > 0);        /* the second case really happened */
    CHECK(st.mode_switches >= 2);  /* into buffered mode and back */
    /* Drained memory is given back (a few packets may be in transit now;
     * exact return to zero is unit_vbuf's job). */
    CHECK(st.buffer_bytes_now * 4 < st.buffer_bytes_max);
    CHECK_EQ(rq_finalize(ctx), 0);
    if (me == 0)
        printf("backpressure: %llu committed non-blocking; flood buffered %llu (peak %llu bytes); "
               "%llu sends parked by pinned handlers: ok\n",
               (unsigned long long)committed, (unsigned long long)st.buffered,
               (unsigned long long)st.buffer_bytes_max, (unsigned long long)all_parked);
    return 0;
}
