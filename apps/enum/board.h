/* board.h - the triangle peg puzzle of FUGU's enum (thesis Table 7-1: "6
 * pegs/side"): a triangular board of side S (S(S+1)/2 holes, at most 64),
 * every hole filled but the top one; a move jumps a peg over a neighbour
 * into an empty hole in a line and removes the jumped peg.  enum finds
 * every position reachable from the start, level by level (a level is a
 * number of moves made), breadth first.  A position is a bitmask of the
 * filled holes (never 0: a peg always remains).  Shared by the librq and
 * MPI versions; no communication here. */
#ifndef RQAPP_BOARD_H
#define RQAPP_BOARD_H

#include <stddef.h>
#include <stdint.h>

struct board {
    int      side, holes;
    int      nmoves;
    uint8_t  (*move)[3];  /* from, over, to */
    uint64_t start;
};

/* 0, or -1 (side outside 3..10, or out of memory). */
int  board_init(struct board *b, int side);
void board_free(struct board *b);

/* The positions one move from p, into out (room for b->nmoves); returns
 * how many. */
int board_next(const struct board *b, uint64_t p, uint64_t *out);

/* A well-mixed hash of a position (its owner rank: hash % ranks). */
static inline uint64_t board_hash(uint64_t p)
{
    p ^= p >> 33;
    p *= 0xff51afd7ed558ccdull;
    p ^= p >> 33;
    p *= 0xc4ceb9fe1a85ec53ull;
    return p ^ (p >> 33);
}

/* A set of positions (open addressing, grows at half full). */
struct posset {
    uint64_t *slot;
    size_t    cap, n;
};
int  posset_init(struct posset *s, size_t cap);   /* 0 or -1 */
/* 1 added, 0 already there, -1 out of memory. */
int  posset_add(struct posset *s, uint64_t p);
void posset_clear(struct posset *s);
void posset_free(struct posset *s);

/* Rank 0's result lines: the positions found (count[d] for d = 0 ..
 * holes - 2) and those with one peg left. */
void board_print_result(const struct board *b, const uint64_t *count);

/* The whole search on one process: count[d] = positions after d moves,
 * d = 0 .. holes - 2 (count has holes - 1 entries).  0 or -1. */
int board_search_serial(const struct board *b, uint64_t *count);

#endif
