/* enum-mpi - the triangle-puzzle search with MPI, as an MPI user writes a
 * level-synchronous search: each rank expands the positions it owns,
 * buckets the new ones by owner, and the level's exchange is one
 * MPI_Alltoall of counts and one MPI_Alltoallv of positions; the owner
 * adds them to its next level.  Same board, ownership, report and check
 * as enum.
 *
 * Usage: enum-mpi [side (default 6)] */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "board.h"
#include "fail.h"
#include "finegrain.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    uint64_t side = 6;
    if (argc > 2)
        return rqa_mpi_fail("Usage: enum-mpi [side]");
    if (argc == 2 && (rqa_parse_u64(argv[1], &side) != 0 || side < 3 || side > 8))
        return rqa_mpi_fail("ERROR: side must be in 3..8");
    struct board b;
    struct posset cur, next;
    if (board_init(&b, (int)side) != 0 || posset_init(&cur, 1024) != 0 ||
        posset_init(&next, 1024) != 0)
        return rqa_mpi_fail("ERROR: out of memory");
    int *scount = calloc((size_t)np, sizeof *scount), *rcount = calloc((size_t)np, sizeof *rcount);
    int *sdisp = calloc((size_t)np, sizeof *sdisp), *rdisp = calloc((size_t)np, sizeof *rdisp);
    uint64_t *succ = malloc((size_t)b.nmoves * sizeof *succ);
    uint64_t *count = calloc((size_t)b.holes, 8), *serial = calloc((size_t)b.holes, 8);
    size_t out_cap = 1024, in_cap = 1024;
    uint64_t *out = malloc(out_cap * 8), *in = malloc(in_cap * 8), *tmp = malloc(out_cap * 8);
    int *owner_of = malloc(out_cap * sizeof *owner_of);
    if (!scount || !rcount || !sdisp || !rdisp || !succ || !count || !serial || !out || !in || !tmp ||
        !owner_of)
        return rqa_mpi_fail("ERROR: out of memory");
    if ((int)(board_hash(b.start) % (uint64_t)np) == me)
        (void)posset_add(&cur, b.start);
    if (me == 0)
        printf("MPI enum: %d ranks, triangle of side %d (%d holes), Alltoallv per level\n", np,
               b.side, b.holes);
    struct rqa_fg fg = {0};
    uint64_t bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int d = 0; d <= b.holes - 2; d++) {
        uint64_t mine = cur.n;
        MPI_Allreduce(&mine, &count[d], 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        size_t n = 0;
        memset(scount, 0, (size_t)np * sizeof *scount);
        for (size_t i = 0; i < cur.cap; i++) {
            if (cur.slot[i] == 0)
                continue;
            int k = board_next(&b, cur.slot[i], succ);
            if (n + (size_t)k > out_cap) {
                out_cap = 2 * (n + (size_t)k);
                out = realloc(out, out_cap * 8);
                tmp = realloc(tmp, out_cap * 8);
                owner_of = realloc(owner_of, out_cap * sizeof *owner_of);
                if (out == NULL || tmp == NULL || owner_of == NULL)
                    return rqa_mpi_fail("ERROR: out of memory");
            }
            for (int j = 0; j < k; j++, n++) {
                tmp[n] = succ[j];
                owner_of[n] = (int)(board_hash(succ[j]) % (uint64_t)np);
                scount[owner_of[n]]++;
            }
        }
        for (int r = 1; r < np; r++)
            sdisp[r] = sdisp[r - 1] + scount[r - 1];
        int *fill = calloc((size_t)np, sizeof *fill);
        if (fill == NULL)
            return rqa_mpi_fail("ERROR: out of memory");
        for (size_t i = 0; i < n; i++)
            out[sdisp[owner_of[i]] + fill[owner_of[i]]++] = tmp[i];
        free(fill);
        MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
        size_t total = 0;
        for (int r = 0; r < np; r++) {
            rdisp[r] = (int)total;
            total += (size_t)rcount[r];
        }
        if (total > in_cap) {
            in_cap = 2 * total;
            if ((in = realloc(in, in_cap * 8)) == NULL)
                return rqa_mpi_fail("ERROR: out of memory");
        }
        MPI_Alltoallv(out, scount, sdisp, MPI_UINT64_T, in, rcount, rdisp, MPI_UINT64_T,
                      MPI_COMM_WORLD);
        fg.sent += n;
        fg.received += total;
        for (size_t i = 0; i < total; i++)
            bad += in[i] == 0 || posset_add(&next, in[i]) < 0;
        struct posset t = cur;
        cur = next;
        next = t;
        posset_clear(&next);
    }
    double secs = MPI_Wtime() - t0, slowest;
    MPI_Allreduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0) {
        if (board_search_serial(&b, serial) != 0)
            return rqa_mpi_fail("ERROR: out of memory");
        for (int d = 0; d <= b.holes - 2; d++)
            bad += count[d] != serial[d];
    }
    uint64_t tot_bad;
    MPI_Allreduce(&bad, &tot_bad, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    struct rqa_fg all;
    rqa_fg_sum_mpi(&fg, &all);
    if (me == 0) {
        if (tot_bad != 0) {
            printf("ERROR: the level counts differ from the serial search\n");
        } else {
            board_print_result(&b, count);
            rqa_fg_print("enum-mpi", np, slowest, &all);
            printf("Solution validates\n");
        }
    }
    fflush(stdout);
    board_free(&b);
    posset_free(&cur);
    posset_free(&next);
    free(scount), free(rcount), free(sdisp), free(rdisp), free(succ), free(count), free(serial);
    free(out), free(in), free(tmp), free(owner_of);
    MPI_Finalize();
    return tot_bad != 0;
}
