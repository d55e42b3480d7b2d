/* gups_unit - the RandomAccess stream (gups.h): the jump-ahead lands where
 * stepping does, and for every rank count the ranks' streams together make
 * exactly updates x_1 .. x_U of the serial stream, each once. */
#include <stdio.h>
#include <stdlib.h>

#include "gups.h"

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    int fails = 0;
    uint64_t x = 1;
    for (uint64_t n = 0; n < 5000; n++, x = gups_next(x))
        if (gups_starts(n) != x) {
            printf("gups_starts(%llu) differs from stepping\n", (unsigned long long)n);
            return 1;
        }
    char a0[] = "gups_unit", a1[] = "3", a2[] = "11";
    char *argv[] = {a0, a1, a2, NULL};
    for (int np = 1; np <= 8; np++) {
        struct gups_args a;
        char err[200];
        if (gups_parse(3, argv, np, &a, err, sizeof err) != 0) {
            printf("%s\n", err);
            return 1;
        }
        uint64_t *all = malloc(a.updates * sizeof *all), *ref = malloc(a.updates * sizeof *ref);
        uint64_t got = 0, words = 0;
        for (int r = 0; r < np; r++) {
            static uint64_t s0[GUPS_STREAMS], len[GUPS_STREAMS];
            int s = gups_streams(&a, r, np, s0, len);
            for (int j = 0; j < s; j++)
                for (uint64_t i = 0; i < len[j] && got < a.updates; i++)
                    all[got++] = s0[j] = gups_next(s0[j]);
            words += gups_local_words(&a, r);
        }
        x = 1;
        for (uint64_t g = 0; g < a.updates; g++)
            ref[g] = x = gups_next(x);
        qsort(all, got, sizeof *all, cmp);
        qsort(ref, a.updates, sizeof *ref, cmp);
        int same = got == a.updates && words == a.n;
        for (uint64_t g = 0; same && g < got; g++)
            same = all[g] == ref[g];
        if (!same) {
            printf("np %d: the ranks' streams are not the serial updates\n", np);
            fails++;
        }
        free(all);
        free(ref);
    }
    if (fails == 0)
        printf("gups_unit: ok\n");
    return fails != 0;
}
