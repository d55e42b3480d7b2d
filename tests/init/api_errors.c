/* api_errors - every public call rejects bad arguments with its documented
 * code and leaves the context usable (1-rank job, no launcher). */
#include <string.h>

#include <rq.h>

#include "check.h"

static int in_handler_checks;

static void h_checks(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)m;
    (void)arg;
    uint64_t w = 0;
    CHECK_EQ(rq_poll(ctx), 0);                     /* no nested handlers */
    CHECK_EQ(rq_wait_until(ctx, &w, 1), RQ_EPERM);
    CHECK_EQ(rq_barrier(ctx), RQ_EPERM);
    CHECK_EQ(rq_finalize(ctx), RQ_EPERM);
    CHECK_EQ(rq_broadcast(ctx, 0, &w, 8), RQ_EPERM);
    CHECK_EQ(rq_allreduce(ctx, &w, &w, 1, RQ_UINT64, RQ_SUM), RQ_EPERM);
    in_handler_checks++;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx = NULL;
    CHECK_EQ(rq_init(&argc, &argv, NULL), RQ_EINVAL);
    CHECK_EQ(rq_init(&argc, &argv, &ctx), 0);
    CHECK_EQ(rq_size(ctx), 1);
    CHECK_EQ(rq_rank(ctx), 0);
    CHECK_EQ(rq_rank(NULL), -1);
    CHECK_EQ(rq_size(NULL), 0);
    CHECK(rq_medium_max(ctx) >= 64 && rq_medium_max(NULL) == 0);

    /* strerror names every code */
    int codes[] = {RQ_OK, RQ_EAGAIN, RQ_EINVAL, RQ_ENOMEM, RQ_ERANGE, RQ_EPEER, RQ_ETIMEDOUT,
                   RQ_ENOTSUP, RQ_EPERM};
    for (unsigned i = 0; i < sizeof codes / sizeof codes[0]; i++)
        CHECK(strstr(rq_strerror(codes[i]), "RQ_") != NULL);
    CHECK(strcmp(rq_strerror(-999), "unknown error") == 0);

    uint64_t a[RQ_MAX_ARGS + 1] = {0};
    char buf[64] = {0};
    /* handlers */
    CHECK_EQ(rq_handler_register(NULL, 0, h_checks, NULL, 0), RQ_EINVAL);
    CHECK_EQ(rq_handler_register(ctx, RQ_MAX_HANDLERS, h_checks, NULL, 0), RQ_EINVAL);
    CHECK_EQ(rq_handler_register(ctx, 0, h_checks, NULL, 0x80), RQ_EINVAL);
    CHECK_EQ(rq_handler_register(ctx, 0, h_checks, NULL, 0x8), RQ_EINVAL);
    CHECK_EQ(rq_handler_register(ctx, 0, h_checks, NULL, RQ_HF_PLACE | RQ_HF_INTERRUPT), 0);
    CHECK_EQ(rq_handler_register(ctx, 0, h_checks, NULL, 0), 0);
    /* rq_place: only for the unplaced message of the running handler */
    {
        rq_msg_t fake = {0};
        char pb[8];
        uint64_t dn = 0;
        CHECK_EQ(rq_place(NULL, &fake, pb, &dn, NULL, NULL), RQ_EINVAL);
        CHECK_EQ(rq_place(ctx, NULL, pb, &dn, NULL, NULL), RQ_EINVAL);
        CHECK_EQ(rq_place(ctx, &fake, pb, &dn, NULL, NULL), RQ_EINVAL);
        CHECK_EQ(rq_place(ctx, &fake, NULL, &dn, NULL, NULL), RQ_EINVAL);
        CHECK_EQ(rq_place_segment(NULL, &fake, 0, &dn, NULL, NULL), RQ_EINVAL);
        CHECK_EQ(rq_place_segment(ctx, &fake, 0, &dn, NULL, NULL), RQ_EINVAL);
        CHECK_EQ(dn, 0);
    }
    /* requests */
    CHECK_EQ(rq_request(NULL, 0, 0, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_request(ctx, 1, 0, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_request(ctx, -1, 0, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_request(ctx, 0, RQ_MAX_HANDLERS, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_request(ctx, 0, 0, a, RQ_MAX_ARGS + 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_request(ctx, 0, 0, NULL, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_request(ctx, 0, 0, a, 1, NULL, 5, 0), RQ_EINVAL);
    CHECK_EQ(rq_request(ctx, 0, 0, a, 1, NULL, 0, 0x100), RQ_EINVAL);
    CHECK_EQ(rq_reply(ctx, NULL, 0, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_request_long(ctx, 0, 0, a, 1, buf, 8, (uint64_t)-4, 0), RQ_ERANGE);
    void *base;
    size_t segsz;
    CHECK_EQ(rq_segment(ctx, &base, &segsz), 0);
    CHECK_EQ(rq_request_long(ctx, 0, 0, a, 1, buf, 16, segsz - 8, 0), RQ_ERANGE);
    CHECK_EQ(rq_request_long(ctx, 0, 0, a, 1, NULL, 16, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_segment(NULL, &base, &segsz), RQ_EINVAL);
    CHECK_EQ(rq_segment(ctx, NULL, &segsz), RQ_EINVAL);
    CHECK(rq_segment_peer(ctx, 0) == base && rq_segment_peer(ctx, 1) == NULL);
    /* the context still works: the handler runs and checks in-handler rules */
    CHECK_EQ(rq_request(ctx, 0, 0, a, 1, NULL, 0, 0), 0);
    CHECK_EQ(rq_poll(ctx), 1);
    CHECK_EQ(in_handler_checks, 1);
    CHECK_EQ(rq_poll(NULL), RQ_EINVAL);
    CHECK_EQ(rq_wait_until(ctx, NULL, 1), RQ_EINVAL);
    /* queues */
    rq_msg_t v;
    CHECK_EQ(rq_queue_open(ctx, 0), RQ_EINVAL);
    CHECK_EQ(rq_queue_open(ctx, RQ_MAX_QUEUES), RQ_EINVAL);
    CHECK_EQ(rq_queue_open(NULL, 1), RQ_EINVAL);
    CHECK_EQ(rq_enqueue(ctx, 0, 0, 1, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_enqueue(ctx, 0, RQ_MAX_QUEUES, 1, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_enqueue(ctx, 2, 1, 1, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_peek(ctx, 1, &v), RQ_EINVAL); /* not open yet */
    CHECK_EQ(rq_pop(ctx, 1), RQ_EINVAL);
    CHECK_EQ(rq_peek_n(ctx, 1, &v, 1), RQ_EINVAL);
    CHECK_EQ(rq_pop_n(ctx, 1, 1), RQ_EINVAL);
    CHECK_EQ(rq_peek_n(NULL, 1, &v, 1), RQ_EINVAL);
    CHECK_EQ(rq_pop_n(NULL, 1, 1), RQ_EINVAL);
    CHECK_EQ(rq_dequeue(ctx, 1, a, 1, NULL, 0), RQ_EINVAL);
    CHECK_EQ(rq_enqueue(ctx, 0, 1, 9, a, 2, "abcd", 4, 0), 0); /* kept until opened */
    CHECK_EQ(rq_queue_open(ctx, 1), 0);
    CHECK_EQ(rq_peek(ctx, 1, NULL), RQ_EINVAL);
    {
        rq_msg_t vs[RQ_PEEK_MAX + 1];
        CHECK_EQ(rq_peek_n(ctx, 1, NULL, 1), RQ_EINVAL);
        CHECK_EQ(rq_peek_n(ctx, 1, vs, 0), RQ_EINVAL);
        CHECK_EQ(rq_peek_n(ctx, 1, vs, RQ_PEEK_MAX + 1), RQ_EINVAL);
        CHECK_EQ(rq_peek_n(ctx, 0, vs, 1), RQ_EINVAL);          /* the AM queue */
        CHECK_EQ(rq_peek_n(ctx, RQ_MAX_QUEUES, vs, 1), RQ_EINVAL);
        CHECK_EQ(rq_pop_n(ctx, 1, 0x80000000u), RQ_EINVAL);
        CHECK_EQ(rq_pop_n(ctx, 0, 1), RQ_EINVAL);
        CHECK_EQ(rq_peek_n(ctx, 1, vs, RQ_PEEK_MAX), 1);        /* the one kept */
        CHECK_EQ(vs[0].len, 4u);
        CHECK_EQ(rq_pop_n(ctx, 1, 0), 0);                       /* nothing removed */
        CHECK_EQ(rq_peek(ctx, 1, &v), 1);
        CHECK(v.data == vs[0].data);                            /* same view */
    }
    CHECK_EQ(rq_dequeue(ctx, 1, a, RQ_MAX_ARGS + 1, NULL, 0), RQ_EINVAL);
    CHECK_EQ(rq_dequeue(ctx, 1, NULL, 1, NULL, 0), RQ_EINVAL);
    CHECK_EQ(rq_dequeue(ctx, 1, a, 0, NULL, 4), RQ_EINVAL);
    CHECK_EQ(rq_dequeue(ctx, 1, a, 3, buf, 0), RQ_ERANGE);  /* head has 2 args */
    CHECK_EQ(rq_dequeue(ctx, 1, a, 2, buf, 5), RQ_ERANGE);  /* head has 4 bytes */
    CHECK_EQ(rq_dequeue(ctx, 1, a, 2, buf, 4), 1);          /* head stayed */
    CHECK(memcmp(buf, "abcd", 4) == 0);
    CHECK_EQ(rq_dequeue(ctx, 1, a, 0, NULL, 0), 0);
    CHECK_EQ(rq_pop(ctx, 1), 0);
    /* collectives */
    CHECK_EQ(rq_barrier(NULL), RQ_EINVAL);
    CHECK_EQ(rq_broadcast(ctx, 1, buf, 8), RQ_EINVAL);
    CHECK_EQ(rq_broadcast(ctx, 0, NULL, 8), RQ_EINVAL);
    CHECK_EQ(rq_allreduce(ctx, a, a, 1, 99, RQ_SUM), RQ_EINVAL);
    CHECK_EQ(rq_allreduce(ctx, a, a, 1, RQ_INT64, 99), RQ_EINVAL);
    CHECK_EQ(rq_allreduce(ctx, NULL, a, 1, RQ_INT64, RQ_SUM), RQ_EINVAL);
    /* global address (a 1-rank job: every operation is in place; the
     * multi-rank cases are in gas_ops) */
    CHECK_EQ(rq_put(ctx, 1, 0, buf, 8, 0), RQ_EINVAL);
    CHECK_EQ(rq_put(ctx, 0, segsz, buf, 8, 0), RQ_ERANGE);
    CHECK_EQ(rq_put(ctx, 0, 0, "12345678", 8, 0), 0);
    CHECK_EQ(rq_get(ctx, buf, 0, 0, 8, 0), 0);
    CHECK(memcmp(buf, "12345678", 8) == 0);
    CHECK_EQ(rq_read(ctx, buf, 0, segsz - 4, 8), RQ_ERANGE);
    CHECK_EQ(rq_amo(ctx, 0, 4, RQ_AMO_FADD, 1, 0, NULL), RQ_EINVAL);
    CHECK_EQ(rq_amo(ctx, 0, 0, 0, 1, 0, NULL), RQ_EINVAL);
    CHECK_EQ(rq_sync(NULL), RQ_EINVAL);
    CHECK_EQ(rq_sync(ctx), 0);
    /* non-blocking transfers: checked like their blocking forms; nothing
     * starts and no counter moves on an error */
    uint64_t nbd = 0;
    CHECK_EQ(rq_put_nb(NULL, 0, 0, buf, 8, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_put_nb(ctx, 1, 0, buf, 8, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_put_nb(ctx, -1, 0, buf, 8, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_put_nb(ctx, 0, 0, NULL, 8, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_put_nb(ctx, 0, 0, buf, 8, &nbd, 1), RQ_EINVAL);
    CHECK_EQ(rq_put_nb(ctx, 0, segsz - 4, buf, 8, &nbd, 0), RQ_ERANGE);
    CHECK_EQ(rq_put_nb(ctx, 0, segsz + 1, buf, 0, &nbd, 0), RQ_ERANGE);
    CHECK_EQ(rq_get_nb(NULL, buf, 0, 0, 8, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_get_nb(ctx, buf, 1, 0, 8, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_get_nb(ctx, NULL, 0, 0, 8, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_get_nb(ctx, buf, 0, 0, 8, &nbd, RQ_NONBLOCK), RQ_EINVAL);
    CHECK_EQ(rq_get_nb(ctx, buf, 0, (uint64_t)-4, 8, &nbd, 0), RQ_ERANGE);
    CHECK_EQ(rq_request_long_nb(NULL, 0, 0, a, 1, buf, 8, 0, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_request_long_nb(ctx, 1, 0, a, 1, buf, 8, 0, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_request_long_nb(ctx, 0, RQ_MAX_HANDLERS, a, 1, buf, 8, 0, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_request_long_nb(ctx, 0, 0, a, RQ_MAX_ARGS + 1, buf, 8, 0, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_request_long_nb(ctx, 0, 0, a, 1, NULL, 8, 0, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_request_long_nb(ctx, 0, 0, a, 1, buf, 8, 0, &nbd, RQ_NONBLOCK), RQ_EINVAL);
    CHECK_EQ(rq_request_long_nb(ctx, 0, 0, a, 1, buf, 8, 0, &nbd, 0x100), RQ_EINVAL);
    CHECK_EQ(rq_request_long_nb(ctx, 0, 0, a, 1, buf, 16, segsz - 8, &nbd, 0), RQ_ERANGE);
    CHECK_EQ(nbd, 0);
    CHECK_EQ(rq_test(NULL, &nbd, 0), RQ_EINVAL);
    CHECK_EQ(rq_test(ctx, NULL, 0), RQ_EINVAL);
    CHECK_EQ(rq_test(ctx, &nbd, 0), 1);
    CHECK_EQ(rq_test(ctx, &nbd, 1), 0);
    /* on one's own rank they complete within the call; 0 bytes too */
    CHECK_EQ(rq_put_nb(ctx, 0, 64, "abcdefgh", 8, &nbd, 0), 0);
    CHECK_EQ(nbd, 1);
    CHECK_EQ(rq_get_nb(ctx, buf, 0, 64, 8, &nbd, 0), 0);
    CHECK_EQ(rq_put_nb(ctx, 0, segsz, NULL, 0, &nbd, 0), 0);
    CHECK_EQ(rq_get_nb(ctx, buf, 0, 0, 0, NULL, 0), 0);
    CHECK_EQ(rq_test(ctx, &nbd, 3), 1);
    CHECK(memcmp(buf, "abcdefgh", 8) == 0);
    /* vni */
    CHECK_EQ(rq_atomic_end(ctx), RQ_EINVAL);
    CHECK_EQ(rq_atomic_begin(ctx), 0);
    CHECK_EQ(rq_atomic_begin(ctx), 0);
    CHECK_EQ(rq_atomic_end(ctx), 0);
    CHECK_EQ(rq_atomic_end(ctx), 0);
    CHECK_EQ(rq_interrupts(ctx, 7), RQ_EINVAL);
    CHECK_EQ(rq_interrupts(ctx, RQ_INTR_OFF), 0);
    CHECK_EQ(rq_interrupts(ctx, -1), RQ_EINVAL);
    CHECK_EQ(rq_interrupts(NULL, RQ_INTR_OFF), RQ_EINVAL);
    CHECK_EQ(rq_interrupts(ctx, RQ_INTR_SELECTIVE), 0);
    CHECK_EQ(rq_interrupts(ctx, RQ_INTR_ALL), 0);
    CHECK_EQ(rq_interrupts(ctx, RQ_INTR_OFF), 0);
    CHECK_EQ(rq_atomic_begin(NULL), RQ_EINVAL);
    CHECK_EQ(rq_atomic_end(NULL), RQ_EINVAL);
    rq_stats_t st;
    CHECK_EQ(rq_stats(ctx, NULL), RQ_EINVAL);
    CHECK_EQ(rq_stats(ctx, &st), 0);
    CHECK(st.sent == 2 && st.received == 2 && st.rejected == 0);
    /* pdq */
    rq_pdq_t *pdq = (rq_pdq_t *)&st, *pdq2;
    rq_pdq_attr_t at = {1, RQ_PDQ_DEDICATED, 16};
    CHECK_EQ(rq_pdq_open(ctx, 2, NULL, &pdq), RQ_EINVAL);
    CHECK(pdq == NULL); /* *pdq cleared on failure */
    CHECK_EQ(rq_pdq_open(NULL, 2, &at, &pdq), RQ_EINVAL);
    CHECK_EQ(rq_pdq_open(ctx, 2, &at, NULL), RQ_EINVAL);
    CHECK_EQ(rq_pdq_open(ctx, RQ_AM_QUEUE, &at, &pdq), RQ_EINVAL);
    CHECK_EQ(rq_pdq_open(ctx, RQ_MAX_QUEUES, &at, &pdq), RQ_EINVAL);
    CHECK_EQ(rq_pdq_open(ctx, 1, &at, &pdq), RQ_EINVAL); /* a plain queue already */
    rq_pdq_attr_t bad[] = {{0, RQ_PDQ_DEDICATED, 0}, {1025, RQ_PDQ_DEDICATED, 0},
                           {1, 0, 0}, {1, 3, 0}, {1, RQ_PDQ_MULTIPLEXED, 65537}};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(rq_pdq_open(ctx, 2, &bad[i], &pdq), RQ_EINVAL);
    CHECK_EQ(rq_pdq_help(NULL, 1), RQ_EINVAL);
    CHECK_EQ(rq_pdq_drain(NULL), RQ_EINVAL);
    CHECK_EQ(rq_pdq_close(NULL), RQ_EINVAL);
    CHECK_EQ(rq_pdq_open(ctx, 2, &at, &pdq), 0);
    CHECK_EQ(rq_pdq_open(ctx, 2, &at, &pdq2), RQ_EINVAL); /* one PDQ per qid */
    CHECK_EQ(rq_queue_open(ctx, 2), RQ_EINVAL);           /* nor a plain queue */
    CHECK_EQ(rq_peek(ctx, 2, &v), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(NULL, 0, 2, 1, 5, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(ctx, 1, 2, 1, 5, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(ctx, -1, 2, 1, 5, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(ctx, 0, RQ_AM_QUEUE, 1, 5, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(ctx, 0, RQ_MAX_QUEUES, 1, 5, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(ctx, 0, 2, 1, RQ_MAX_HANDLERS, a, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(ctx, 0, 2, 1, 5, a, RQ_MAX_ARGS + 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(ctx, 0, 2, 1, 5, NULL, 1, NULL, 0, 0), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(ctx, 0, 2, 1, 5, a, 1, NULL, 3, 0), RQ_EINVAL);
    CHECK_EQ(rq_pdq_enqueue(ctx, 0, 2, 1, 5, a, 1, NULL, 0, 0x80), RQ_EINVAL);
    /* A PDQ message for an id with no handler is dropped and counted. */
    rq_stats_t before_st, after_st;
    CHECK_EQ(rq_stats(ctx, &before_st), 0);
    CHECK_EQ(rq_pdq_enqueue(ctx, 0, 2, 1, 77, a, 1, NULL, 0, 0), 0);
    CHECK_EQ(rq_pdq_drain(pdq), 0);
    CHECK_EQ(rq_stats(ctx, &after_st), 0);
    CHECK_EQ(after_st.rejected - before_st.rejected, 1);
    CHECK_EQ(rq_pdq_help(pdq, 0), 0);
    CHECK_EQ(rq_pdq_close(pdq), 0);
    /* an unregistered handler id: rejected and counted, nothing runs */
    CHECK_EQ(rq_request(ctx, 0, 5, a, 1, NULL, 0, 0), 0);
    CHECK_EQ(rq_poll(ctx), 0);
    CHECK_EQ(rq_stats(ctx, &st), 0);
    CHECK_EQ(st.rejected, after_st.rejected + 1);
    CHECK_EQ(rq_finalize(ctx), 0);
    CHECK_EQ(rq_finalize(NULL), RQ_EINVAL);
    printf("api_errors: ok\n");
    return 0;
}
