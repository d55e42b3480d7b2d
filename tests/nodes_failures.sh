#!/bin/sh
# nodes_failures.sh MPIRUN TWO_NODES CRASHER HELLO - failures of a job
# across two (simulated) nodes: a rank that dies fails the job within
# seconds, RQ_TRANSPORT=shm refuses a job that spans nodes, and nothing is
# left in /dev/shm.
set -u
mpirun=$1 two=$2 crasher=$3 hello=$4
fail=0
before=$(ls /dev/shm | wc -l)
for mode in sigkill abort exit3; do
    start=$(date +%s)
    "$mpirun" -n 4 --oversubscribe "$two" "$crasher" $mode >/tmp/rq-nodes-$$.log 2>&1
    rc=$? took=$(( $(date +%s) - start ))
    if [ $rc -eq 0 ] || [ $took -gt 20 ]; then
        echo "FAIL: crasher $mode: exit $rc after ${took}s"; cat /tmp/rq-nodes-$$.log; fail=1
    else
        echo "ok: crasher $mode: job failed (exit $rc) in ${took}s"
    fi
done
# librq's own detection, without mpirun's help: with recovery on, mpirun
# leaves the survivors running after rank 1 dies, so each of ranks 0, 2 and
# 3 must learn of the death itself (rank 0 on the same node, 2 and 3 across
# UCX) and get RQ_EPEER, within seconds.
start=$(date +%s)
timeout 60 "$mpirun" --mca orte_enable_recovery 1 -n 4 --oversubscribe "$two" "$crasher" sigkill \
    >/tmp/rq-nodes-$$.log 2>&1
took=$(( $(date +%s) - start ))
seen=$(grep -c "returned RQ_EPEER" /tmp/rq-nodes-$$.log)
if [ "$seen" -ne 3 ] || [ $took -gt 20 ]; then
    echo "FAIL: $seen of 3 survivors reported RQ_EPEER, after ${took}s"
    grep -v "PMIX ERROR" /tmp/rq-nodes-$$.log; fail=1
else
    echo "ok: every survivor got RQ_EPEER on its own in ${took}s"
fi
RQ_TRANSPORT=shm "$mpirun" -n 2 --oversubscribe "$two" "$hello" >/tmp/rq-nodes-$$.log 2>&1
if [ $? -eq 0 ] || ! grep -q "RQ_TRANSPORT=shm but the job spans nodes" /tmp/rq-nodes-$$.log; then
    echo "FAIL: RQ_TRANSPORT=shm across nodes was not refused"; cat /tmp/rq-nodes-$$.log; fail=1
else
    echo "ok: RQ_TRANSPORT=shm across nodes refused"
fi
"$mpirun" -n 4 --oversubscribe "$two" "$crasher" ok || { echo "FAIL: crasher ok"; fail=1; }
rm -f /tmp/rq-nodes-$$.log
after=$(ls /dev/shm | wc -l)
[ "$after" -le "$before" ] || { echo "FAIL: /dev/shm grew: $(ls /dev/shm)"; fail=1; }
[ $fail -eq 0 ] && echo "nodes_failures: ok"
exit $fail
