/* fail_mpi.c - rqa_mpi_fail (see fail.h). */
#include <mpi.h>
#include <stdio.h>

#include "fail.h"

int rqa_mpi_fail(const char *msg)
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 0 && msg != NULL)
        printf("%s\n", msg);
    fflush(stdout);
    MPI_Finalize();
    return 1;
}
