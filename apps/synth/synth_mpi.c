/* synth-mpi - synth-N with MPI, as a competent MPI user writes a
 * request/reply exchange with unpredictable senders: a receive for
 * requests and one for replies stay posted (MPI_ANY_SOURCE), tested after
 * each interval of work as librq's version polls; a request is answered
 * after the same stall with an MPI_Isend from a ring of send requests;
 * once its own requests are done a rank keeps serving until every rank
 * is (MPI_Ibarrier).  Same inputs, checks and report as synth.
 *
 * Usage: synth-mpi [--stall NS] [--interval NS] <N> <requests per rank> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>

#include "app.h"
#include "fail.h"
#include "finegrain.h"

enum { TAG_REQ = 1, TAG_ACK = 2, RING = 256 };

static struct rqa_fg fg;
static uint64_t acks, req_sum, ack_sum, stall_in, ack_in;
static double stall_ns;
static MPI_Request req_rx, ack_rx, ring[RING];
static unsigned ring_next;

/* Send one word; its buffer is its ring slot's, reused once that send
 * has completed. */
static void send_small(uint64_t v, int dst, int tag)
{
    static uint64_t val[RING];
    unsigned k = ring_next++ % RING;
    if (ring[k] != MPI_REQUEST_NULL)
        MPI_Wait(&ring[k], MPI_STATUS_IGNORE);
    val[k] = v;
    MPI_Isend(&val[k], 1, MPI_UINT64_T, dst, tag, MPI_COMM_WORLD, &ring[k]);
}

/* Serve what has arrived: requests (stall, reply) and replies. */
static void progress(void)
{
    for (;;) {
        int got = 0;
        MPI_Status st;
        MPI_Test(&req_rx, &got, &st);
        if (got) {
            uint64_t t0 = rqa_ticks();
            rqa_fg_spin_ns(stall_ns);
            req_sum += stall_in;
            fg.received++;
            send_small(stall_in, st.MPI_SOURCE, TAG_ACK);
            fg.sent++;
            fg.handlers++;
            fg.handler_ticks += rqa_ticks() - t0;
            MPI_Irecv(&stall_in, 1, MPI_UINT64_T, MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &req_rx);
            continue;
        }
        MPI_Test(&ack_rx, &got, MPI_STATUS_IGNORE);
        if (!got)
            return;
        uint64_t t0 = rqa_ticks();
        ack_sum += ack_in;
        acks++;
        fg.received++;
        fg.handlers++;
        fg.handler_ticks += rqa_ticks() - t0;
        MPI_Irecv(&ack_in, 1, MPI_UINT64_T, MPI_ANY_SOURCE, TAG_ACK, MPI_COMM_WORLD, &ack_rx);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    double interval;
    uint64_t n, count;
    if (rqa_take_double(&argc, argv, "stall", 100, 0, &stall_ns) != 0 ||
        rqa_take_double(&argc, argv, "interval", 1000, 0, &interval) != 0 ||
        stall_ns > 1e9 || interval > 1e9)
        return rqa_mpi_fail("ERROR: --stall and --interval must be numbers of ns in [0, 1e9]");
    if (argc != 3)
        return rqa_mpi_fail("Usage: synth-mpi [--stall NS] [--interval NS] <N> <requests per rank>");
    if (rqa_parse_count(argv[1], 1, &n) != 0)
        return rqa_mpi_fail("ERROR: N must be in [1, " RQA_COUNT_MAX_S "]");
    if (rqa_parse_count(argv[2], 1, &count) != 0)
        return rqa_mpi_fail("ERROR: requests per rank must be in [1, " RQA_COUNT_MAX_S "]");
    for (int i = 0; i < RING; i++)
        ring[i] = MPI_REQUEST_NULL;
    MPI_Irecv(&stall_in, 1, MPI_UINT64_T, MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &req_rx);
    MPI_Irecv(&ack_in, 1, MPI_UINT64_T, MPI_ANY_SOURCE, TAG_ACK, MPI_COMM_WORLD, &ack_rx);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
        printf("MPI synth-%llu: %d ranks, %llu requests per rank, interval %.0f ns, "
               "stall %.0f ns, polled delivery\n",
               (unsigned long long)n, np, (unsigned long long)count, interval, stall_ns);
    uint64_t seed = 0x5eed0000u + (uint64_t)me, sent_sum = 0;
    double t0 = MPI_Wtime();
    for (uint64_t i = 0; i < count;) {
        for (uint64_t g = 0; g < n && i < count; g++, i++) {
            rqa_fg_spin_ns(2 * interval * rqa_uniform(&seed));
            progress();
            int dst = np == 1 ? 0 : (me + 1 + (int)(rqa_splitmix(&seed) % (uint64_t)(np - 1))) % np;
            uint64_t id = (uint64_t)me << 40 | i;
            sent_sum += id;
            send_small(id, dst, TAG_REQ);
            fg.sent++;
        }
        while (acks < i)
            progress(); /* the group's synchronization point */
    }
    double secs = MPI_Wtime() - t0, slowest;
    MPI_Request bar;
    MPI_Ibarrier(MPI_COMM_WORLD, &bar);
    for (int done = 0; !done;) {
        progress();
        MPI_Test(&bar, &done, MPI_STATUS_IGNORE);
    }
    MPI_Waitall(RING, ring, MPI_STATUSES_IGNORE);
    MPI_Cancel(&req_rx);
    MPI_Cancel(&ack_rx);
    MPI_Wait(&req_rx, MPI_STATUS_IGNORE);
    MPI_Wait(&ack_rx, MPI_STATUS_IGNORE);
    MPI_Allreduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    uint64_t sums[3] = {sent_sum, req_sum, ack_sum}, all[3];
    MPI_Allreduce(sums, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    uint64_t bad = acks != count || ack_sum != sent_sum, tot_bad;
    MPI_Allreduce(&bad, &tot_bad, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    tot_bad += all[1] != all[0];
    struct rqa_fg tot;
    rqa_fg_sum_mpi(&fg, &tot);
    if (me == 0) {
        if (tot_bad != 0) {
            printf("ERROR: requests or replies lost or doubled\n");
        } else {
            char name[32];
            snprintf(name, sizeof name, "synth-%llu-mpi", (unsigned long long)n);
            rqa_fg_print(name, np, slowest, &tot);
            printf("Solution validates\n");
        }
    }
    fflush(stdout);
    MPI_Finalize();
    return tot_bad != 0;
}
