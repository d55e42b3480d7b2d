#!/bin/sh
# FUGU Figure 7-2 analog: each program's run time with every message
# through the virtual buffer (RQ_BUFFER_ALWAYS=1) over its run time with
# direct delivery, 2 ranks bound to the 2 cores, alternating, 5 rounds.
# Run from the build directory; prints the report lines.
for round in 1 2 3 4 5; do
  echo "== round $round: $(./rqbench --quick am 2>/dev/null | head -1 | sed 's/;.*placement/ placement/')"
  for ba in 0 1; do
    export RQ_BUFFER_ALWAYS=$ba
    echo "-- RQ_BUFFER_ALWAYS=$ba"
    ./rqrun -n 2 --bind core apps/synth --delivery intr --interval 1000 --stall 100 100 100000 | grep "^synth"
    ./rqrun -n 2 --bind core apps/synth --interval 1000 --stall 100 100 100000 | grep "^synth"
    ./rqrun -n 2 --bind core apps/enum 6 | grep "^enum"
    ./rqrun -n 2 --bind core apps/barrier 50000 | grep "^barrier"
  done
done
