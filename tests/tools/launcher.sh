#!/usr/bin/env bash
# launcher.sh RQRUN CRASHER - rqrun's contract: the first failing status is
# propagated, a dead rank stops the job within seconds, signals are
# forwarded, bad usage is refused, and /dev/shm is left as it was.
set -u
RQRUN=$1 CRASHER=$2
fail() { echo "launcher: FAIL: $*"; exit 1; }
shm_before=$(ls -A /dev/shm 2>/dev/null | sort)

expect() { # expect NAME WANT_STATUS MAX_SECONDS cmd...
    local name=$1 want=$2 max=$3; shift 3
    local t0=$(date +%s%N)
    timeout 60 "$@" >/dev/null 2>&1
    local st=$? t1=$(date +%s%N)
    local ms=$(( (t1 - t0) / 1000000 ))
    [ "$st" = "$want" ] || fail "$name: status $st, want $want"
    [ "$ms" -le $((max * 1000)) ] || fail "$name: took ${ms} ms, limit ${max} s"
    echo "launcher: $name: status $st in ${ms} ms: ok"
}

expect "abort (SIGABRT)"   134 5 "$RQRUN" -n 3 "$CRASHER" abort
expect "self SIGKILL"      137 5 "$RQRUN" -n 3 "$CRASHER" sigkill
expect "exit status 3"       3 5 "$RQRUN" -n 4 "$CRASHER" exit3
expect "8 ranks, abort"    134 10 "$RQRUN" -n 8 "$CRASHER" abort
expect "clean job"           0 10 "$RQRUN" -n 3 "$CRASHER" ok
expect "bad rank count"      2 2 "$RQRUN" -n 0 "$CRASHER" ok
expect "bad --bind"          2 2 "$RQRUN" -n 2 --bind socket "$CRASHER" ok
expect "missing program"   127 5 "$RQRUN" -n 2 /nonexistent/program

# Signal forwarding: SIGTERM to rqrun reaches every rank.
"$RQRUN" -n 3 "$CRASHER" hang >/dev/null 2>&1 &
pid=$!
sleep 0.5
kill -TERM $pid
t0=$(date +%s%N)
wait $pid
st=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$st" = 143 ] || fail "SIGTERM forwarding: status $st, want 143"
[ "$ms" -le 5000 ] || fail "SIGTERM forwarding took ${ms} ms"
echo "launcher: SIGTERM forwarded: status $st in ${ms} ms: ok"

# SIGINT and SIGQUIT: a job started with & by a script (no job control)
# inherits both ignored; rqrun restores them, so forwarding them works.
for sig in INT QUIT; do
    "$RQRUN" -n 3 "$CRASHER" hang >/dev/null 2>&1 &
    pid=$!
    sleep 0.5
    kill -$sig $pid
    t0=$(date +%s%N)
    ( sleep 10; kill -KILL $pid 2>/dev/null ) &
    guard=$!
    wait $pid
    st=$?
    kill $guard 2>/dev/null; wait $guard 2>/dev/null
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    want=$(( 128 + $(kill -l $sig) ))
    [ "$st" = "$want" ] || fail "SIG$sig forwarding from a background job: status $st, want $want"
    echo "launcher: SIG$sig forwarded from a background job: status $st in ${ms} ms: ok"
done

# SIGKILL of rqrun itself: ranks die with it (PR_SET_PDEATHSIG).
"$RQRUN" -n 3 "$CRASHER" hang >/dev/null 2>&1 &
pid=$!
sleep 0.5
kids=$(pgrep -P $pid | tr '\n' ' ')
kill -KILL $pid
wait $pid 2>/dev/null
sleep 0.5
for k in $kids; do
    # A zombie is dead: it only waits for whoever adopted it to reap it.
    state=$(ps -o stat= -p "$k" 2>/dev/null | cut -c1)
    if [ -n "$state" ] && [ "$state" != Z ]; then fail "rank $k survived SIGKILL of rqrun"; fi
done
echo "launcher: ranks die with a SIGKILLed rqrun: ok"

shm_after=$(ls -A /dev/shm 2>/dev/null | sort)
[ "$shm_before" = "$shm_after" ] || fail "/dev/shm changed: before [$shm_before] after [$shm_after]"
echo "launcher: /dev/shm unchanged: ok"
