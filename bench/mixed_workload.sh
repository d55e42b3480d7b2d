#!/bin/sh
# mixed_workload.sh - FUGU's mixed-workload experiment (thesis section
# 7.2, Figures 7-7 to 7-12): a parallel program beside an interactive load
# (rqload) that takes the fraction f of every CPU, under plain Linux
# scheduling, under fixed-timeslice gang scheduling (rqgang --policy gang:
# the program and the load alternate) and under coscheduling (--policy
# cosched: the program alone, then both).  For each f and scheduling it
# reports the program's slowdown over its standalone run (measured in the
# same round), the ideal 1/(1-f), the fraction of its messages delivered
# from the virtual buffer (rq_stats, summed over ranks) and the fraction
# the load achieved.
#
#   bench/mixed_workload.sh [--ranks N] [--rounds R] [--fractions "0 0.1 0.25 0.5"]
#                           [--programs "synth null barrier enum lu lu-poll barnes barnes-poll"] [--slice MS] [--out FILE]
#
# Run from the build directory (rqrun, rqload, rqgang, apps/ there).
# Ranks above the CPU count are oversubscribed (the output says so).
# Output: CSV on FILE (default mixed-workload.csv) and a summary table of
# the medians over the rounds on stdout.
set -u
ranks=2 rounds=3 fractions="0 0.1 0.25 0.5" programs="synth null barrier" slice=20
out=mixed-workload.csv
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --fractions) fractions=$2; shift ;;
    --programs) programs=$2; shift ;;
    --slice) slice=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--ranks N] [--rounds R] [--fractions LIST] [--programs LIST] [--slice MS] [--out FILE]" >&2
       exit 2 ;;
    esac
    shift
done
cpus=$(nproc)
over=""; [ "$ranks" -gt "$cpus" ] && over=" (oversubscribed: $ranks ranks on $cpus cpus)"
bind="--bind core"

# Each program sized to run about a second alone on 2 ranks.
cmd_of() {
    case $1 in
    synth) echo "apps/synth --delivery intr --interval 2000 --stall 200 100 $((400000 / ranks))" ;;
    null) echo "apps/null 1000000 1000" ;;
    barrier) echo "apps/barrier --variant am 50000" ;;
    enum) echo "apps/enum --variant fine --delivery intr 6" ;;
    lu) echo "apps/lu --protocol pdq 768 32" ;;  # on rqdsm (PDQ, dedicated): issue 20
    lu-poll) echo "apps/lu --protocol poll 768 32" ;;
    barnes) echo "apps/barnes --protocol pdq 8000 4" ;;  # the finest grain of the three
    barnes-poll) echo "apps/barnes --protocol poll 8000 4" ;;
    *) echo "unknown program $1" >&2; exit 2 ;;
    esac
}

# time and buffered fraction from a program's report line
parse() { sed -n 's/^[a-z0-9-]*: ranks [0-9]*, time \([0-9.]*\) s.*buffered \([0-9.]*\).*/\1 \2/p' | head -1; }
achieved() { sed -n 's/^rqload: fraction [0-9.]* requested, \([0-9.]*\) achieved.*/\1/p' | head -1; }

echo "program,round,policy,f,f_achieved,time_s,standalone_s,slowdown,ideal,buffered" > "$out"
echo "mixed workload: $ranks ranks$over, slice $slice ms, fractions $fractions, $rounds rounds"
for round in $(seq 1 "$rounds"); do
    echo "== round $round: $(./rqbench --quick am 2>/dev/null | head -1 | sed 's/;.*placement/ placement/')"
    for prog in $programs; do
        cmd=$(cmd_of "$prog")
        # shellcheck disable=SC2086
        base=$(./rqrun -n "$ranks" $bind $cmd | parse)
        t0=${base%% *}
        for f in $fractions; do
            for pol in linux gang cosched; do
                if [ "$pol" = linux ]; then
                    ./rqload --fraction "$f" --cpus "$cpus" > /tmp/mixed-load.$$ 2>&1 &
                    lp=$!
                    sleep 0.2
                    # shellcheck disable=SC2086
                    res=$(./rqrun -n "$ranks" $bind $cmd | parse)
                    kill -TERM $lp; wait $lp
                    fa=$(achieved < /tmp/mixed-load.$$)
                else
                    # shellcheck disable=SC2086
                    all=$(./rqgang --slice "$slice" --policy "$pol" -- ./rqrun -n "$ranks" $bind $cmd \
                          --also ./rqload --fraction "$f" --cpus "$cpus" 2>&1)
                    res=$(printf '%s\n' "$all" | parse)
                    fa=$(printf '%s\n' "$all" | achieved)
                fi
                t=${res%% *} b=${res##* }
                awk -v p="$prog" -v r="$round" -v pol="$pol" -v f="$f" -v fa="${fa:-0}" -v t="$t" \
                    -v t0="$t0" -v b="$b" 'BEGIN {
                        printf "%s,%s,%s,%s,%s,%s,%s,%.4f,%.4f,%s\n", p, r, pol, f, fa, t, t0,
                               t / t0, 1 / (1 - f), b }' >> "$out"
            done
        done
    done
done
rm -f /tmp/mixed-load.$$
# Medians over the rounds.
echo
echo "program policy    f     f_achieved  slowdown  ideal 1/(1-f)  slowdown/ideal  buffered"
awk -F, 'NR > 1 { k = $1 " " $3 " " $4; n[k]++; s[k, n[k]] = $8; fa[k, n[k]] = $5; bu[k, n[k]] = $10;
                  id[k] = $9; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
     function med(a, k, c,   i, j, t, v) { for (i = 1; i <= c; i++) v[i] = a[k, i];
         for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
         return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2 }
     END { for (i = 1; i <= m; i++) { k = order[i]; split(k, w, " ");
         sd = med(s, k, n[k]);
         printf "%-7s %-9s %-5s %-11.3f %-9.3f %-14.3f %-15.3f %.4f\n", w[1], w[2], w[3],
                med(fa, k, n[k]), sd, id[k], sd / id[k], med(bu, k, n[k]) } }' "$out"
