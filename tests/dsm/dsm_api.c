/* dsm_api.c - every rqdsm call's error paths, and region life cycles:
 * bad attributes refused on every rank (even when only one rank is
 * wrong), bad ids and ranges refused without changing anything, destroy
 * dropping every rank's copy. */
#include <stdint.h>
#include <string.h>

#include <rq.h>
#include <rqdsm.h>

#include "check.h"

static void refused(rq_ctx_t *ctx, rqdsm_attr_t a)
{
    rqdsm_t *d = (rqdsm_t *)1;
    CHECK_EQ(rqdsm_init(ctx, &a, &d), RQ_EINVAL);
    CHECK(d == NULL);
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    int me = rq_rank(ctx), np = rq_size(ctx);

    /* ---- attributes ---- */
    rqdsm_t *d;
    CHECK_EQ(rqdsm_init(NULL, NULL, &d), RQ_EINVAL);
    CHECK_EQ(rqdsm_init(ctx, NULL, NULL), RQ_EINVAL);
    refused(ctx, (rqdsm_attr_t){.block = 48});
    refused(ctx, (rqdsm_attr_t){.block = 16});
    refused(ctx, (rqdsm_attr_t){.block = 8192});
    refused(ctx, (rqdsm_attr_t){.protocol = 9});
    refused(ctx, (rqdsm_attr_t){.threads = 2000});
    refused(ctx, (rqdsm_attr_t){.app_threads = 1025});
    refused(ctx, (rqdsm_attr_t){.pdq_mode = 7});
    refused(ctx, (rqdsm_attr_t){.qid = RQ_MAX_QUEUES});
    refused(ctx, (rqdsm_attr_t){.handler_base = RQ_MAX_HANDLERS - 1});
    if (np > 1) /* one rank disagrees: every rank is told */
        refused(ctx, (rqdsm_attr_t){.block = me == np - 1 ? 64 : 128});

    /* ---- a working instance ---- */
    CHECK_EQ(rqdsm_init(ctx, &(rqdsm_attr_t){.block = 64, .threads = 2}, &d), 0);
    CHECK_EQ(rqdsm_block(d), 64);
    CHECK_EQ(rqdsm_block(NULL), 0);
    rqdsm_rid_t rid = 0;
    CHECK_EQ(rqdsm_create(NULL, 10, &rid), RQ_EINVAL);
    CHECK_EQ(rqdsm_create(d, 0, &rid), RQ_EINVAL);
    CHECK_EQ(rqdsm_create(d, 10, NULL), RQ_EINVAL);
    CHECK_EQ(rqdsm_create(d, ((size_t)1 << 40) + 1, &rid), RQ_EINVAL);
    CHECK_EQ(rqdsm_create(d, 1000, &rid), 0); /* 16 blocks, the last partial */

    rqdsm_region_t *r = NULL;
    CHECK_EQ(rqdsm_map(NULL, rid, &r), RQ_EINVAL);
    CHECK_EQ(rqdsm_map(d, rid, NULL), RQ_EINVAL);
    CHECK_EQ(rqdsm_map(d, ~0ull, &r), RQ_EINVAL);
    CHECK(r == NULL);
    CHECK_EQ(rqdsm_map(d, (uint64_t)np << 20, &r), RQ_EINVAL); /* home out of range */
    CHECK_EQ(rqdsm_map(d, rid + 5, &r), RQ_ERANGE);              /* no such region here */
    /* another rank's region that does not exist: its home says so */
    int peer = (me + 1) % np;
    rqdsm_rid_t peer_rid = 0;
    rqdsm_rid_t rids[64] = {0}, all[64] = {0};
    CHECK(np <= 64);
    rids[me] = rid;
    CHECK_EQ(rq_allreduce(ctx, rids, all, (size_t)np, RQ_UINT64, RQ_SUM), 0);
    peer_rid = all[peer];
    CHECK_EQ(rqdsm_map(d, peer_rid + 7, &r), RQ_ERANGE);

    CHECK_EQ(rqdsm_map(d, rid, &r), 0);
    CHECK_EQ(rqdsm_size(r), 1000);
    CHECK_EQ(rqdsm_rid(r), rid);
    CHECK(rqdsm_ptr(r) != NULL);
    CHECK(rqdsm_ptr(NULL) == NULL);
    CHECK_EQ(rqdsm_size(NULL), 0);

    /* ranges */
    CHECK_EQ(rqdsm_start_read(NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rqdsm_start_read(r, 1000, 1), RQ_ERANGE);
    CHECK_EQ(rqdsm_start_read(r, 999, 2), RQ_ERANGE);
    CHECK_EQ(rqdsm_start_read(r, 1, SIZE_MAX), RQ_ERANGE);
    CHECK_EQ(rqdsm_start_write(r, 2000, 0), RQ_ERANGE);
    CHECK_EQ(rqdsm_end_read(r, 0, 0), RQ_ERANGE);   /* nothing held */
    CHECK_EQ(rqdsm_end_write(r, 0, 10), RQ_ERANGE); /* nothing held */

    /* sections: boundaries, nesting, refusals that change nothing */
    CHECK_EQ(rqdsm_start_write(r, 0, 0), 0);
    memset(rqdsm_ptr(r), me + 1, 1000);
    CHECK_EQ(rqdsm_start_write(r, 63, 2), RQ_EINVAL); /* nested write */
    CHECK_EQ(rqdsm_start_read(r, 999, 1), 0);          /* read within write */
    CHECK_EQ(rqdsm_unmap(r), RQ_EINVAL);               /* a section is open */
    CHECK_EQ(rqdsm_end_read(r, 999, 1), 0);
    CHECK_EQ(rqdsm_end_write(r, 0, 0), 0);
    CHECK_EQ(rqdsm_start_read(r, 64, 64), 0); /* exactly one block */
    CHECK_EQ(rqdsm_start_write(r, 0, 0), RQ_EINVAL); /* upgrade inside a read */
    CHECK_EQ(rqdsm_end_read(r, 0, 65), RQ_ERANGE);   /* block 0 is not held */
    CHECK_EQ(rqdsm_end_read(r, 64, 64), 0);
    CHECK_EQ(rqdsm_end_read(r, 64, 64), RQ_ERANGE);  /* twice */

    CHECK_EQ(rqdsm_flush(NULL), RQ_EINVAL);
    CHECK_EQ(rqdsm_poll(NULL), RQ_EINVAL);
    CHECK(rqdsm_poll(d) >= 0);
    rqdsm_stats_t st;
    CHECK_EQ(rqdsm_stats(NULL, &st), RQ_EINVAL);
    CHECK_EQ(rqdsm_stats(d, NULL), RQ_EINVAL);

    /* destroy: only at the home, only once, and every copy goes */
    CHECK_EQ(rq_barrier(ctx), 0);
    rqdsm_region_t *pr;
    CHECK_EQ(rqdsm_map(d, peer_rid, &pr), 0);
    CHECK_EQ(rqdsm_start_read(pr, 0, 0), 0);
    const unsigned char *pb = rqdsm_ptr(pr);
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(pb[i], peer + 1);
    CHECK_EQ(rqdsm_end_read(pr, 0, 0), 0);
    /* a one-block miss is timed in Table 1's parts; the home's reply too */
    CHECK_EQ(rqdsm_flush(pr), 0);
    CHECK_EQ(rqdsm_start_read(pr, 0, 1), 0);
    CHECK_EQ(((const unsigned char *)rqdsm_ptr(pr))[0], peer + 1);
    CHECK_EQ(rqdsm_end_read(pr, 0, 1), 0);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rqdsm_stats(d, &st), 0);
    if (np > 1) {
        CHECK(st.timed_misses >= 1 && st.fills >= st.timed_misses && st.replies >= 1);
        CHECK(st.miss_ns >= st.request_ns && st.miss_ns >= st.resume_ns);
        CHECK(st.reply_ns >= st.reply_send_ns && st.reply_send_ns > 0 && st.fill_ns > 0);
    } else {
        CHECK_EQ(st.timed_misses + st.fills + st.replies, 0); /* all home: no misses */
    }
    CHECK_EQ(rqdsm_unmap(pr), 0);
    CHECK_EQ(rqdsm_unmap(pr), np == 1 ? 0 : RQ_EINVAL); /* np 1: mapped twice */
    CHECK_EQ(rq_barrier(ctx), 0);
    if (np > 1)
        CHECK_EQ(rqdsm_destroy(d, peer_rid), RQ_EINVAL); /* not its home */
    CHECK_EQ(rqdsm_destroy(NULL, rid), RQ_EINVAL);
    CHECK_EQ(rqdsm_unmap(r), np == 1 ? RQ_EINVAL : 0); /* np 1: r is pr */
    CHECK_EQ(rqdsm_destroy(d, rid), 0);
    CHECK_EQ(rqdsm_destroy(d, rid), RQ_ERANGE);
    CHECK_EQ(rq_barrier(ctx), 0);
    CHECK_EQ(rqdsm_map(d, rid, &r), RQ_ERANGE);
    CHECK_EQ(rqdsm_map(d, peer_rid, &r), RQ_ERANGE);
    CHECK_EQ(rqdsm_stats(d, &st), 0);
    CHECK_EQ(st.dropped, 0);

    CHECK_EQ(rqdsm_finalize(NULL), RQ_EINVAL);
    CHECK_EQ(rqdsm_finalize(d), 0);
    /* the resources are free again: a second instance starts */
    CHECK_EQ(rqdsm_init(ctx, NULL, &d), 0);
    CHECK_EQ(rqdsm_finalize(d), 0);
    if (me == 0)
        printf("dsm_api: %d ranks ok\n", np);
    CHECK_EQ(rq_finalize(ctx), 0);
    return 0;
}
