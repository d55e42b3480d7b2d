#!/bin/sh
# lifecycle.sh RQRUN LIFECYCLE - a rank slot is attached once per job, and
# a rank that leaves before joining fails the others at once.
set -u
rqrun=$1 prog=$2
fail() { echo "lifecycle.sh: $*" >&2; exit 1; }

# Two programs in sequence in each rank process: the second inherits the
# job and must be refused (it would read the first one's packets again).
out=$("$rqrun" -n 2 sh -c "'$prog' attach; '$prog' attach" 2>/dev/null) || fail "sequence: job failed"
[ "$(echo "$out" | grep -c 'attach: ok')" = 2 ] || fail "sequence: want 2 attached: $out"
[ "$(echo "$out" | grep -c 'attach: RQ_EPERM')" = 2 ] || fail "sequence: want 2 refused: $out"

# Two processes of one rank at once: exactly one of each pair attaches.
out=$("$rqrun" -n 2 sh -c "'$prog' attach & '$prog' attach; wait" 2>/dev/null) || fail "concurrent: job failed"
[ "$(echo "$out" | grep -c 'attach: ok')" = 2 ] || fail "concurrent: want 2 attached: $out"
[ "$(echo "$out" | grep -c 'attach: RQ_EPERM')" = 2 ] || fail "concurrent: want 2 refused: $out"

# Rank 0 exits before rq_init: rank 1 must fail with RQ_EPEER long before
# RQ_INIT_TIMEOUT_MS (60 s here).
start=$(date +%s)
out=$(RQ_INIT_TIMEOUT_MS=60000 "$rqrun" -n 2 sh -c "if [ \$RQ_RANK = 0 ]; then '$prog' exit; else sleep 0.3; '$prog' attach; fi" 2>/dev/null)
took=$(( $(date +%s) - start ))
echo "$out" | grep -q 'attach: RQ_EPEER' || fail "early exit: want RQ_EPEER: $out"
[ "$took" -lt 10 ] || fail "early exit: took ${took}s"
echo "lifecycle.sh: sequence, concurrent and early exit: ok"
