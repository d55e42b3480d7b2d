/* sptrsv-gen - write a generated input of sptrsv as a Matrix Market file:
 *   sptrsv-gen SPEC [--levels] > file.mtx
 * SPEC: grid2d:K, grid3d:K, power:ROWS:EDGES[:SEED], pwr05, pwr06, pwr10
 * (matrix.h).  The note about the input goes to stderr. */
#include <stdio.h>
#include <string.h>

#include "matrix.h"

int main(int argc, char **argv)
{
    int levels = argc == 3 && strcmp(argv[2], "--levels") == 0;
    if (argc != 2 && !levels) {
        fprintf(stderr, "usage: sptrsv-gen SPEC [--levels] > file.mtx\n");
        return 1;
    }
    struct sp_csr L;
    char note[256], err[256];
    if (sp_load(argv[1], &L, note, sizeof note, err, sizeof err) != 0) {
        fprintf(stderr, "sptrsv-gen: %s\n", err);
        return 1;
    }
    if (levels && sp_permute_levels(&L) != 0) {
        fprintf(stderr, "sptrsv-gen: out of memory\n");
        return 1;
    }
    fprintf(stderr, "%s: %d rows, %lld nonzeros, %d level sets\n", note, L.n, (long long)L.nnz,
            sp_levels(&L));
    sp_write_mtx(stdout, &L);
    sp_free(&L);
    return fflush(stdout) == 0 ? 0 : 1;
}
