/* lifecycle - rq_init and rq_finalize as a process's life sees them.
 *
 *   once       rq_init succeeds; a second rq_init in the process returns
 *              RQ_EPERM and leaves the first context working; rq_finalize
 *              twice returns RQ_EINVAL the second time; rq_init after
 *              rq_finalize returns RQ_EPERM.
 *   attach     prints "attach: <rq_strerror>" and, when attached, meets the
 *              other ranks (barrier) and finalizes (tests/init/lifecycle.sh runs
 *              it twice per rank, in sequence and at once).
 *   exit       exits at once without rq_init (tests/init/lifecycle.sh). */
#include <stdio.h>
#include <string.h>

#include <rq.h>

#include "check.h"

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    if (strcmp(argv[1], "exit") == 0)
        return 0;
    rq_ctx_t *ctx, *again = NULL;
    int rc = rq_init(&argc, &argv, &ctx);
    if (strcmp(argv[1], "attach") == 0) {
        printf("attach: %s\n", rc == 0 ? "ok" : rq_strerror(rc));
        fflush(stdout);
        if (rc != 0)
            return 0;
        CHECK_EQ(rq_barrier(ctx), 0);
        CHECK_EQ(rq_finalize(ctx), 0);
        return 0;
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(rq_init(&argc, &argv, &again), RQ_EPERM);
    CHECK(again == NULL);
    CHECK_EQ(rq_barrier(ctx), 0); /* the first context still works */
    CHECK_EQ(rq_finalize(ctx), 0);
    CHECK_EQ(rq_finalize(ctx), RQ_EINVAL);
    CHECK_EQ(rq_init(&argc, &argv, &again), RQ_EPERM);
    printf("lifecycle once: ok\n");
    return 0;
}
