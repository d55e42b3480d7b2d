#!/bin/sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RQ_SEGMENT_SIZE=134217728
cd /work/main/build
for round in 1 2 3; do
  echo "=== round $round"
  ./rqrun -n 2 --bind core ./rqbench --quick rq 2>&1 | grep -E "cache-line one-way|key redistribution|handler vs"
  for m in poll inlined intr; do ./rqrun -n 2 --bind core apps/sptrsv --mode $m --levels --block 8 --reps 51 pwr10 | grep time_s; done
  mpirun -n 2 --bind-to core apps/sptrsv-mpi --levels --block 8 --reps 51 pwr10 | grep time_s
  for m in poll inlined; do ./rqrun -n 2 --bind core apps/sptrsv --mode $m --block 8 --reps 51 pwr10 | grep time_s; done
  mpirun -n 2 --bind-to core apps/sptrsv-mpi --block 8 --reps 51 pwr10 | grep time_s
  for v in rq rq-alt direct am; do echo "tp $v $(./rqrun -n 2 --bind core apps/transpose --variant $v 10 4096 32 | grep -E '^Rate|^Ideal' | tr '\n' ' ')"; done
  for v in alltoall isend; do echo "tp mpi-$v $(mpirun -n 2 --bind-to core apps/transpose-mpi --variant $v 10 4096 32 | grep -E '^Rate' | tr '\n' ' ')"; done
done
