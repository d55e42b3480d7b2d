#!/usr/bin/env bash
# stress.sh KIND ROUNDS BINDIR - repeat one interleaving test many times
# with random timing (the `stress` CTest label, -DRQ_STRESS=ON; .ci/run).
#   vni       interrupts x atomicity sections x revocations: vni_async
#             stream / chain / outbox with random timer, section lengths,
#             ring sizes, lanes and rank counts, half the rounds beside a
#             CPU hog on each core;
#   gas       spin locks under a random strategy (gas_spin), 2..8 ranks;
#   pdq       PDQ drain/close with messages in flight (pdq_semantics),
#             dedicated or multiplexed, 1..4 threads, small windows;
#   finalize  quiescent rq_finalize (fin_quiesce), random mode and ranks;
#   kill      a rank SIGKILLed mid-stream (order_soak): the job must fail
#             within 5 s with the rank's status, /dev/shm unchanged.
# The seed is printed (RQ_STRESS_SEED replays a run); a failing round
# prints its command line.
set -u
kind=$1 rounds=$2 bin=$3
seed=${RQ_STRESS_SEED:-$(( $(date +%s%N) % 32768 ))}
RANDOM=$seed
echo "stress $kind: $rounds rounds, RQ_STRESS_SEED=$seed"
rqrun=$bin/rqrun t=$bin/tests
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }
hogs=()
hog_on() { for _ in 1 2; do (while :; do :; done) & hogs+=($!); done; }
hog_off() { [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null; hogs=(); }
trap hog_off EXIT
fail() { echo "stress $kind: FAIL (round $1, RQ_STRESS_SEED=$seed): $2"; exit 1; }
run() { # run ROUND TIMEOUT env... -- cmd...
    local r=$1 to=$2; shift 2
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    if ! env "${envs[@]}" timeout "$to" "$@" >/tmp/stress.$$.out 2>&1; then
        tail -5 /tmp/stress.$$.out
        fail "$r" "${envs[*]} $*"
    fi
}
shm_before=$(ls -A /dev/shm 2>/dev/null | sort)

for ((r = 1; r <= rounds; r++)); do
    case $kind in
    vni)
        [ $((RANDOM % 2)) = 0 ] && hog_on
        to=$(pick 100 200 500 1000 3000)
        case $(pick stream chain outbox) in
        stream) run $r 120 RQ_ATOMIC_TIMEOUT_US=$to RQ_RING_BYTES=$(pick 4096 16384 65536) -- \
                    "$rqrun" -n 2 "$t/vni_async" stream $((20000 + RANDOM * 4)) \
                    $(pick 50 100 300 1000 3000) $(pick 5 20 100) ;;
        chain)  run $r 120 RQ_ATOMIC_TIMEOUT_US=$to RQ_RING_BYTES=$(pick 4096 8192) \
                    RQ_LANES=$(pick 1 2 8) -- \
                    "$rqrun" -n $(pick 2 3 4 8) "$t/vni_async" chain $(pick 100 300 1000) ;;
        outbox) run $r 120 RQ_RING_BYTES=$(pick 4096 8192 65536) -- \
                    "$rqrun" -n 2 "$t/vni_async" outbox $(pick 500 2000 5000) ;;
        esac
        hog_off ;;
    gas)
        run $r 120 RQ_GAS_STRATEGY=$(pick direct np proc) RQ_RING_BYTES=$(pick 4096 65536) -- \
            "$rqrun" -n $(pick 2 3 4 8) "$t/gas_spin" $(pick 50 200 1000) ;;
    pdq)
        n=$(pick 1 2 3 8)
        run $r 300 RQ_PDQ_WINDOW=$(pick 2 16 256) RQ_RING_BYTES=$(pick 4096 65536) -- \
            "$rqrun" -n $n "$t/pdq_semantics" $(pick dedicated multiplexed) $(pick 1 2 3 4) \
            $(( n >= 8 ? 1000 : 5000 + RANDOM % 20000 )) ;;
    finalize)
        [ $((RANDOM % 2)) = 0 ] && hog_on
        run $r 120 RQ_RING_BYTES=$(pick 4096 65536) -- \
            "$rqrun" -n $(pick 2 3 8) "$t/fin_quiesce" $(pick reply chain intr) $(pick 100 2000 5000)
        hog_off ;;
    kill)
        n=$(pick 2 3 8)
        "$rqrun" -n $n "$t/order_soak" 100000000 >/dev/null 2>&1 &
        pid=$!
        sleep 0.$((2 + RANDOM % 7))
        victims=($(pgrep -P $pid))
        [ ${#victims[@]} -gt 0 ] || fail $r "no rank to kill"
        kill -KILL "$(pick "${victims[@]}")"
        t0=$(date +%s%N)
        wait $pid
        st=$?
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        [ "$st" = 137 ] || fail $r "$n ranks: status $st, want 137"
        [ "$ms" -le 5000 ] || fail $r "$n ranks: the job took ${ms} ms to fail"
        ;;
    *) echo "usage: stress.sh vni|gas|pdq|finalize|kill ROUNDS BINDIR"; exit 2 ;;
    esac
done
rm -f /tmp/stress.$$.out
shm_after=$(ls -A /dev/shm 2>/dev/null | sort)
[ "$shm_before" = "$shm_after" ] || fail end "/dev/shm changed: [$shm_before] -> [$shm_after]"
echo "stress $kind: $rounds rounds: ok"
