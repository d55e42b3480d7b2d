/* crasher - a job in which one rank fails, for the launcher tests.
 *   crasher abort     rank 1 calls abort() after init; the rest wait in a barrier
 *   crasher sigkill   rank 1 kills itself with SIGKILL
 *   crasher exit3     rank 1 exits with status 3 without finalizing
 *   crasher hang      every rank waits in a barrier rank 0 never joins (for signals)
 *   crasher ok        every rank finalizes and exits 0
 * The surviving ranks must see RQ_EPEER or be stopped by rqrun. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rq.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "abort";
    rq_ctx_t *ctx;
    int rc = rq_init(&argc, &argv, &ctx);
    if (rc != 0) {
        /* A peer that died while this rank was still connecting. */
        fprintf(stderr, "crasher: rq_init returned %s\n", rq_strerror(rc));
        return 10;
    }
    int me = rq_rank(ctx);
    if (strcmp(mode, "ok") == 0) {
        rq_barrier(ctx);
        return rq_finalize(ctx) == 0 ? 0 : 11;
    }
    if (strcmp(mode, "hang") == 0) {
        if (me == 0)
            for (;;)
                pause();
        rq_barrier(ctx);
        return 12;
    }
    if (me == 1) {
        if (strcmp(mode, "abort") == 0)
            abort();
        if (strcmp(mode, "sigkill") == 0)
            raise(SIGKILL);
        if (strcmp(mode, "exit3") == 0)
            _exit(3);
    }
    rc = rq_barrier(ctx);
    /* A survivor either is killed by rqrun or learns of the failure. */
    fprintf(stderr, "crasher: rank %d: barrier returned %s\n", me, rq_strerror(rc));
    return rc == RQ_EPEER ? 20 : 21;
}
