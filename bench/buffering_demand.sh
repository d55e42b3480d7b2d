#!/bin/sh
# buffering_demand.sh - FUGU's buffering-demand experiments (thesis section
# 7.4), with rqgang gang-scheduling a program against a busy-waiting null
# job and skewing the ranks' slices:
#
#   skew     Figures 7-18, 7-19, 7-20: the fraction of messages buffered,
#            the largest buffer of any rank (4 KiB pages) and the run time
#            relative to skew 0, against the skew (0 .. 0.9).
#   interval Figure 7-21: synth-N's fraction buffered against the mean
#            send interval, N = 10, 100, 1000, at 1% skew.
#   delay    Figure 7-22: synth-N's fraction buffered against a delay
#            added to every insertion into the virtual buffer
#            (RQ_BUFFER_DELAY_NS, a measurement aid), at 1% skew and a
#            fixed interval.
#
#   bench/buffering_demand.sh [--ranks N] [--rounds R] [--slice MS]
#                             [--experiments "skew interval delay"] [--out FILE]
#
# FUGU's network interface held a handful of messages, so a message for a
# descheduled process was buffered at once; librq's lanes hold
# RQ_RING_BYTES each (256 KiB by default: thousands of short messages).
# The experiments therefore run with 4 KiB lanes (64 slots) and a 100 us
# atomicity timer unless RQ_RING_BYTES / RQ_ATOMIC_TIMEOUT_US are set.
# Run from the build directory.  Output: CSV on FILE (default
# buffering-demand.csv) and the medians over the rounds on stdout.
set -u
ranks=2 rounds=3 slice=20 experiments="skew interval delay" out=buffering-demand.csv
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --slice) slice=$2; shift ;;
    --experiments) experiments=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--ranks N] [--rounds R] [--slice MS] [--experiments LIST] [--out FILE]" >&2
       exit 2 ;;
    esac
    shift
done
export RQ_RING_BYTES=${RQ_RING_BYTES:-4096} RQ_ATOMIC_TIMEOUT_US=${RQ_ATOMIC_TIMEOUT_US:-100}
cpus=$(nproc)
over=""; [ "$ranks" -gt "$cpus" ] && over=" (oversubscribed: $ranks ranks on $cpus cpus)"

# time, buffered fraction and buffer peak (bytes) from a program's report
parse() {
    sed -n 's/^[a-z0-9-]*: ranks [0-9]*, time \([0-9.]*\) s.*buffered \([0-9.]*\), buffer max \([0-9]*\) B.*/\1 \2 \3/p' |
        head -1
}
# run PROGRAM-ARGS under gang scheduling against null, at skew $1
gang() {
    skew=$1; shift
    # shellcheck disable=SC2068
    ./rqgang --slice "$slice" --skew "$skew" -- ./rqrun -n "$ranks" --bind core $@ \
        --also ./rqrun -n "$ranks" --bind core apps/null 1000000000 2>/dev/null | parse
}
record() { # experiment round program x time buffered peak
    echo "$1,$2,$3,$4,$5,$6,$7" >> "$out"
}

echo "experiment,round,program,x,time_s,buffered,buffer_max_bytes" > "$out"
echo "buffering demand: $ranks ranks$over, slice $slice ms, lanes $RQ_RING_BYTES B," \
     "atomicity timer $RQ_ATOMIC_TIMEOUT_US us, $rounds rounds"
synth_cmd="apps/synth --delivery intr --stall 200"
for round in $(seq 1 "$rounds"); do
    echo "== round $round: $(./rqbench --quick am 2>/dev/null | head -1 | sed 's/;.*placement/ placement/')"
    for e in $experiments; do
        case $e in
        skew)
            for s in 0 0.05 0.1 0.25 0.5 0.9; do
                set -- $(gang "$s" "$synth_cmd" --interval 2000 1000 $((200000 / ranks)))
                record skew "$round" synth-1000 "$s" "$1" "$2" "$3"
                set -- $(gang "$s" apps/enum --variant fine --delivery intr 6)
                record skew "$round" enum "$s" "$1" "$2" "$3"
                set -- $(gang "$s" apps/barrier --variant am 20000)
                record skew "$round" barrier "$s" "$1" "$2" "$3"
            done ;;
        interval)
            for n in 10 100 1000; do
                for iv in 100 200 500 1000 2000 5000; do
                    set -- $(gang 0.01 "$synth_cmd" --interval "$iv" "$n" $((100000 / ranks)))
                    record interval "$round" "synth-$n" "$iv" "$1" "$2" "$3"
                done
            done ;;
        delay)
            for n in 10 100 1000; do
                for d in 0 200 500 1000 2000 5000; do
                    set -- $(RQ_BUFFER_DELAY_NS=$d gang 0.01 "$synth_cmd" --interval 500 "$n" \
                             $((100000 / ranks)))
                    record delay "$round" "synth-$n" "$d" "$1" "$2" "$3"
                done
            done ;;
        *) echo "unknown experiment $e" >&2; exit 2 ;;
        esac
    done
done
echo
echo "experiment program      x        buffered  buffer max (pages)  time / time at x0"
awk -F, 'NR > 1 { k = $1 " " $3 " " $4; n[k]++; t[k, n[k]] = $5; b[k, n[k]] = $6; m[k, n[k]] = $7
                  if (!(k in seen)) { seen[k] = 1; order[++c] = k } }
     function med(a, k, cnt,   i, j, x, v) { for (i = 1; i <= cnt; i++) v[i] = a[k, i];
         for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
         return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2 }
     END { for (i = 1; i <= c; i++) { k = order[i]; split(k, w, " ")
             base = w[1] " " w[2]; if (!(base in t0)) t0[base] = med(t, k, n[k])
             printf "%-10s %-12s %-8s %-9.4f %-19.1f %.3f\n", w[1], w[2], w[3], med(b, k, n[k]),
                    med(m, k, n[k]) / 4096, med(t, k, n[k]) / t0[base] } }' "$out"
