#!/bin/sh
# First measurements of the issue-17 kernels (random, p2p, stencil): each
# round runs every librq variant and the MPI version at 1, 2 and 8 ranks.
# Lines: "<program>-<impl>-<ranks> <L ns or 0> <rate>" (rates: GUPS/s,
# MFlops/s); summarize with docs/data/apps-2rank-summary.awk.
# Usage: kernels-2026-11-23.sh BUILD_DIR [ROUNDS]
b=${1:-build} rounds=${2:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RQ_SEGMENT_SIZE=268435456
line() { awk -v p="$1" '/^Line latency/ {l = $5} /^Rate \(/ {r = $3; sub(",", "", r)}
                        END {print p, (l == "" ? 0 : l), r}'; }
run() { # name ranks cmd...
    name=$1 n=$2; shift 2
    if [ "$n" = 1 ]; then "$@" | line "$name-$n"
    elif [ "$n" = 2 ]; then "$@" | line "$name-$n"
    else "$@" | awk -v p="$name-$n" '/^Rate \(/ {r = $3; sub(",", "", r)} END {print p, 0, r}'; fi
}
for r in $(seq 1 "$rounds"); do
  for n in 1 2 8; do
    bind=""; mbind="--oversubscribe"; [ $n = 2 ] && bind="--bind core" && mbind="--bind-to core"
    for v in rq amo am; do
      [ $v = am ] && [ $n = 8 ] && continue
      run random-$v $n $b/rqrun -n $n $bind $b/apps/random --variant $v 4 24
    done
    run random-mpi $n mpirun -n $n $mbind $b/apps/random-mpi 4 24
    for m in 1000 2000; do
      for v in store am; do run p2p$m-$v $n $b/rqrun -n $n $bind $b/apps/p2p --variant $v 20 $m $m; done
      run p2p$m-mpi $n mpirun -n $n $mbind $b/apps/p2p-mpi 20 $m $m
    done
    for v in put long; do run stencil-$v $n $b/rqrun -n $n $bind $b/apps/stencil --variant $v 20 2000; done
    run stencil-mpi $n mpirun -n $n $mbind $b/apps/stencil-mpi 20 2000
  done
done
