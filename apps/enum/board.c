/* board.c - the triangle puzzle's geometry, moves, position sets and the
 * serial search every parallel run is checked against. */
#include "board.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hole (row r, column c), 0 <= c <= r < side. */
static int hole(int r, int c) { return r * (r + 1) / 2 + c; }

int board_init(struct board *b, int side)
{
    memset(b, 0, sizeof *b);
    if (side < 3 || side > 10)
        return -1;
    b->side = side;
    b->holes = side * (side + 1) / 2;
    b->move = malloc((size_t)b->holes * 6 * sizeof *b->move);
    if (b->move == NULL)
        return -1;
    /* The six directions of the triangular grid, as (row, column) steps. */
    static const int dir[6][2] = {{0, 1}, {0, -1}, {1, 0}, {-1, 0}, {1, 1}, {-1, -1}};
    for (int r = 0; r < side; r++)
        for (int c = 0; c <= r; c++)
            for (int d = 0; d < 6; d++) {
                int r2 = r + 2 * dir[d][0], c2 = c + 2 * dir[d][1];
                if (r2 < 0 || r2 >= side || c2 < 0 || c2 > r2)
                    continue;
                uint8_t *m = b->move[b->nmoves++];
                m[0] = (uint8_t)hole(r, c);
                m[1] = (uint8_t)hole(r + dir[d][0], c + dir[d][1]);
                m[2] = (uint8_t)hole(r2, c2);
            }
    uint64_t all = b->holes == 64 ? ~0ull : (1ull << b->holes) - 1;
    b->start = all & ~1ull; /* the top hole empty */
    return 0;
}

void board_free(struct board *b)
{
    free(b->move);
    b->move = NULL;
}

int board_next(const struct board *b, uint64_t p, uint64_t *out)
{
    int n = 0;
    for (int i = 0; i < b->nmoves; i++) {
        const uint8_t *m = b->move[i];
        uint64_t from = 1ull << m[0], over = 1ull << m[1], to = 1ull << m[2];
        if ((p & from) && (p & over) && !(p & to))
            out[n++] = (p & ~(from | over)) | to;
    }
    return n;
}

int posset_init(struct posset *s, size_t cap)
{
    size_t c = 16;
    while (c < cap)
        c *= 2;
    s->slot = calloc(c, sizeof *s->slot);
    s->cap = c;
    s->n = 0;
    return s->slot == NULL ? -1 : 0;
}

static int grow(struct posset *s)
{
    struct posset t;
    if (posset_init(&t, s->cap * 2) != 0)
        return -1;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i] != 0)
            (void)posset_add(&t, s->slot[i]);
    free(s->slot);
    *s = t;
    return 0;
}

int posset_add(struct posset *s, uint64_t p)
{
    if (2 * (s->n + 1) > s->cap && grow(s) != 0)
        return -1;
    for (size_t i = board_hash(p) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->slot[i] == p)
            return 0;
        if (s->slot[i] == 0) {
            s->slot[i] = p;
            s->n++;
            return 1;
        }
    }
}

void posset_clear(struct posset *s)
{
    memset(s->slot, 0, s->cap * sizeof *s->slot);
    s->n = 0;
}

void posset_free(struct posset *s)
{
    free(s->slot);
    s->slot = NULL;
}

int board_search_serial(const struct board *b, uint64_t *count)
{
    struct posset cur, next;
    uint64_t *succ = malloc((size_t)b->nmoves * sizeof *succ);
    if (succ == NULL || posset_init(&cur, 16) != 0 || posset_init(&next, 16) != 0) {
        free(succ);
        return -1;
    }
    (void)posset_add(&cur, b->start);
    int rc = 0;
    for (int d = 0; d <= b->holes - 2; d++) {
        count[d] = cur.n;
        posset_clear(&next);
        for (size_t i = 0; i < cur.cap && rc == 0; i++) {
            if (cur.slot[i] == 0)
                continue;
            int k = board_next(b, cur.slot[i], succ);
            for (int j = 0; j < k && rc == 0; j++)
                rc = posset_add(&next, succ[j]) < 0 ? -1 : 0;
        }
        struct posset t = cur;
        cur = next;
        next = t;
    }
    posset_free(&cur);
    posset_free(&next);
    free(succ);
    return rc;
}

void board_print_result(const struct board *b, const uint64_t *count)
{
    uint64_t states = 0;
    for (int d = 0; d <= b->holes - 2; d++)
        states += count[d];
    printf("positions %llu, of them with one peg left %llu\n", (unsigned long long)states,
           (unsigned long long)count[b->holes - 2]);
}
