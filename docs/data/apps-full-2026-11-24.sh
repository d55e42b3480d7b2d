#!/bin/sh
# The full apps run of 2026-11-24 (issue 17): every program, variant,
# strategy and MPI peer at 1, 2, 4 and 8 ranks on this 2-vCPU machine and
# on two simulated nodes; one run per point (13 min 54 s).  Tables in
# apps-full-2026-11-24.txt, every run with its L in the .csv.
#   sh docs/data/apps-full-2026-11-24.sh
sh apps/run.sh --out apps-results
# Then, five alternating rounds of the closest target (sample at 4 ranks):
export RQ_SEGMENT_SIZE=268435456 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for i in 1 2 3 4 5; do
    build/rqrun -n 4 build/apps/sample --variant bulk --reps 5 2000000 | grep time_s
    mpirun -n 4 --oversubscribe build/apps/sample-mpi --reps 5 2000000 | grep time_s
done
# And three alternating rounds at 8 ranks of em3d (bulk), radix (bulk) and
# stencil (long) against their MPI versions, same sizes as run.sh's.
