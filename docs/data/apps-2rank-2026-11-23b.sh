#!/bin/sh
# 2-rank measurements of issue 16 (second session): ROUNDS rounds, each
# program run once per round in turn; every run prints its own placement
# (line latency L between ranks 0 and 1), so the summary groups runs by
# placement (near: L < 80 ns, far: L >= 80 ns) and compares medians
# within a group only (apps-2rank-summary.awk).  sptrsv also runs on 8
# oversubscribed ranks (no placement: L printed as 0).  Usage: apps-2rank-2026-11-23b.sh BUILD_DIR [ROUNDS]
b=${1:-build} rounds=${2:-10}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RQ_SEGMENT_SIZE=268435456
L() { awk '/^Line latency/ {print $5}'; }
for r in $(seq 1 "$rounds"); do
  $b/rqrun -n 2 --bind core $b/rqbench --quick rq 2>&1 | awk '
    function med() { for (k = 2; k <= NF; k++) if ($k == "ns") return $(k - 1) }
    /cache-line one-way/ {l = med()} /key redistribution: AM handler/ {h = med()}
    /key redistribution: inlined dequeue/ {i = med()}
    END {print "rqbench", l, h / i}'
  for m in poll inlined intr; do
    o=$($b/rqrun -n 2 --bind core $b/apps/sptrsv --mode $m --levels --block 8 --reps 51 pwr10)
    echo "sptrsv-$m $(echo "$o" | L) $(echo "$o" | sed -n 's/.*time_s=\([0-9.e-]*\).*/\1/p')"
  done
  o=$(mpirun -n 2 --bind-to core $b/apps/sptrsv-mpi --levels --block 8 --reps 51 pwr10)
  echo "sptrsv-mpi $(echo "$o" | L) $(echo "$o" | sed -n 's/.*time_s=\([0-9.e-]*\).*/\1/p')"
  # 8 ranks on the 2 cores: oversubscribed, no placement figure (L 0).
  for m in poll inlined; do
    o=$($b/rqrun -n 8 $b/apps/sptrsv --mode $m --levels --block 8 --reps 51 pwr10)
    echo "sptrsv8-$m 0 $(echo "$o" | sed -n 's/.*time_s=\([0-9.e-]*\).*/\1/p')"
  done
  o=$(mpirun -n 8 --oversubscribe $b/apps/sptrsv-mpi --levels --block 8 --reps 51 pwr10)
  echo "sptrsv8-mpi 0 $(echo "$o" | sed -n 's/.*time_s=\([0-9.e-]*\).*/\1/p')"
  for v in direct rq-alt rq; do
    o=$($b/rqrun -n 2 --bind core $b/apps/transpose --variant $v 10 4096 32)
    echo "tp-$v $(echo "$o" | L) $(echo "$o" | awk '/^Rate/ {r = $3} /^Ideal/ {i = $4} END {print r, i}')"
  done
  for v in isend alltoall; do
    o=$(mpirun -n 2 --bind-to core $b/apps/transpose-mpi --variant $v 10 4096 32)
    echo "tp-mpi-$v $(echo "$o" | L) $(echo "$o" | awk '/^Rate/ {print $3}')"
  done
done
# Figure 12's bars (run separately, same rounds scheme):
#   for r in 1 2 3 4 5; do for v in am rq rq-bw rq-alt; do
#     o=$($b/rqrun -n 2 --bind core $b/apps/transpose --variant $v 10 4096 32)
#     echo "fig12-$v $(echo "$o" | L) $(echo "$o" | awk '/^Rate/ {print $3}')"; done; done
