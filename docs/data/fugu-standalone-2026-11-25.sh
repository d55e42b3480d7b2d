#!/bin/sh
# FUGU Table 7-2 analog at 2 ranks: librq beside MPI, alternating, 3 rounds.
# Run from the build directory.  Prints each program's report line.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for round in 1 2 3; do
  echo "== round $round"
  ./rqbench --quick am 2>/dev/null | head -1
  ./rqrun -n 2 --bind core apps/barrier 10000 | grep "^barrier"
  mpirun -n 2 --bind-to core apps/barrier-mpi --variant p2p 10000 | grep "^barrier"
  ./rqrun -n 2 --bind core apps/barrier --variant coll 10000 | grep "^barrier"
  mpirun -n 2 --bind-to core apps/barrier-mpi 10000 | grep "^barrier"
  for N in 10 100 1000; do
    ./rqrun -n 2 --bind core apps/synth --interval 1000 --stall 100 $N 50000 | grep "^synth"
    mpirun -n 2 --bind-to core apps/synth-mpi --interval 1000 --stall 100 $N 50000 | grep "^synth"
  done
  ./rqrun -n 2 --bind core apps/synth --delivery intr --interval 1000 --stall 100 100 50000 | grep "^synth"
  ./rqrun -n 2 --bind core apps/null 50000 1000 | grep "^null"
done
