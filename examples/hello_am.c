/* hello_am - every rank sends "hello" to the next one; the handler replies
 * with an 8-byte argument; each rank waits for its reply.
 *   rqrun -n 4 ./hello_am */
#include <stdio.h>
#include <string.h>

#include <rq.h>

enum { H_HELLO, H_REPLY };

static volatile uint64_t replies;

static void hello(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)arg;
    printf("rank %d: \"%.*s\" from rank %d\n", rq_rank(ctx), (int)m->len, (const char *)m->data,
           m->src);
    uint64_t me = (uint64_t)rq_rank(ctx);
    rq_reply(ctx, m, H_REPLY, &me, 1, NULL, 0, 0); /* handlers may send */
}

static void reply(rq_ctx_t *ctx, const rq_msg_t *m, void *arg)
{
    (void)ctx;
    (void)m;
    (void)arg;
    replies++;
}

int main(int argc, char **argv)
{
    rq_ctx_t *ctx;
    int rc = rq_init(&argc, &argv, &ctx);
    if (rc != 0) {
        fprintf(stderr, "rq_init: %s\n", rq_strerror(rc));
        return 1;
    }
    rq_handler_register(ctx, H_HELLO, hello, NULL, 0);
    rq_handler_register(ctx, H_REPLY, reply, NULL, 0);
    rq_barrier(ctx); /* every rank has its handlers before anyone sends */

    const char *text = "hello";
    int next = (rq_rank(ctx) + 1) % rq_size(ctx);
    rq_request(ctx, next, H_HELLO, NULL, 0, text, strlen(text), 0);
    rc = rq_wait_until(ctx, &replies, 1);
    rq_finalize(ctx);
    return rc == 0 ? 0 : 1;
}
