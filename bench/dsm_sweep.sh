#!/bin/sh
# dsm_sweep.sh - the PDQ paper's measurements (Figures 7-11) for the
# programs on rqdsm, from the build directory: run time against the
# protocol organisation (dedicated PDQ with 1, 2, 4 threads; multiplexed;
# the spin-lock-per-block baseline with 1, 2, 4 threads; handlers run by
# rq_poll on the main thread), against the coherence block size (32 to
# 4096 bytes), and against the clustering degree (ranks per simulated
# node, UCX between nodes; needs mpirun), every configuration in every
# round, medians over the rounds.  Each round starts with the placement
# (rqbench's cache-line latency L).
#
# --clustering P: instead, the PDQ paper's clustering shape (its Figures
# 7-9) at P processors: every split of P into R ranks (nodes) x T
# application threads with R >= 1 a power of two (16 x 1, 8 x 2, 4 x 4,
# 2 x 8 ... 1 x P), each under the protocol organisations: poll (the
# threads run the handlers as they poll), dedicated PDQ threads 1, 2 and
# 4 per node, and multiplexed (the node's idle application threads run
# the handlers, Hurricane-1 Mult; one fallback thread).
#
#   bench/dsm_sweep.sh [--ranks N] [--rounds R] [--programs "lu water barnes"] [--out FILE]
#                      [--clustering P]
set -u
ranks=2 rounds=3 programs="lu water barnes" out=dsm-sweep.csv clustering=0
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --programs) programs=$2; shift ;;
    --out) out=$2; shift ;;
    --clustering) clustering=$2; shift ;;
    *) echo "usage: $0 [--ranks N] [--rounds R] [--programs LIST] [--out FILE] [--clustering P]" >&2
       exit 2 ;;
    esac
    shift
done
case $clustering in '' | *[!0-9]*) echo "$0: --clustering takes a processor count" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
args_of() {
    case $1 in
    lu) echo "768 32" ;;
    water) echo "1000 10" ;;
    barnes) echo "4000 3" ;;
    *) echo "unknown program $1" >&2; exit 2 ;;
    esac
}
configs="pdq-1:--protocol pdq --threads 1
pdq-2:--protocol pdq --threads 2
pdq-4:--protocol pdq --threads 4
multiplexed-1:--protocol multiplexed --threads 1
multiplexed-2:--protocol multiplexed --threads 2
spinlock-1:--protocol spinlock --threads 1
spinlock-2:--protocol spinlock --threads 2
spinlock-4:--protocol spinlock --threads 4
poll:--protocol poll
block-32:--protocol pdq --dsm-block 32
block-1024:--protocol pdq --dsm-block 1024
block-4096:--protocol pdq --dsm-block 4096"
parse() { sed -n 's/^[a-z-]*: ranks [0-9]*, time \([0-9.]*\) s, messages \([0-9]*\), T_interhandler \([0-9]*\) ns, T_handler \([0-9]*\) ns.*/\1,\2,\3,\4/p' | head -1; }
if [ "$clustering" -gt 0 ]; then
    orgs="poll:--protocol poll
pdq-1:--protocol pdq --threads 1
pdq-2:--protocol pdq --threads 2
pdq-4:--protocol pdq --threads 4
multiplexed:--protocol multiplexed --threads 1"
    echo "program,round,nodes,threads,config,time_s,messages,t_inter_ns,t_handler_ns" > "$out"
    for round in $(seq 1 "$rounds"); do
        echo "== clustering round $round" >&2
        for prog in $programs; do
            a=$(args_of "$prog")
            r=$clustering
            while [ "$r" -ge 1 ]; do
                t=$((clustering / r))
                if [ $((r * t)) -eq "$clustering" ]; then
                    echo "$orgs" | while IFS=: read -r name opts; do
                        # shellcheck disable=SC2086
                        v=$(timeout 120 ./rqrun -n "$r" "apps/$prog" $opts --app-threads "$t" $a | parse)
                        echo "$prog,$round,$r,$t,$name,${v:-fail}" >> "$out"
                    done
                fi
                r=$((r / 2))
            done
        done
    done
    echo
    echo "program nodes x threads  config        time (median, s)  vs poll"
    awk -F, 'NR > 1 && $6 != "fail" { k = $1 "," $3 "x" $4 "," $5; n[k]++; t[k, n[k]] = $6;
                      if (!(k in seen)) { seen[k] = 1; order[++c] = k } }
         function med(a, k, c,   i, j, x, v) { for (i = 1; i <= c; i++) v[i] = a[k, i];
             for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
             return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2 }
         END { for (i = 1; i <= c; i++) { k = order[i]; split(k, w, ","); md[k] = med(t, k, n[k]);
                   if (w[3] == "poll") base[w[1] "," w[2]] = md[k] }
               for (i = 1; i <= c; i++) { k = order[i]; split(k, w, ","); b = base[w[1] "," w[2]];
                   printf "%-7s %-16s %-13s %-17.4f %s\n", w[1], w[2], w[3], md[k],
                          (b > 0 ? sprintf("%.2f", md[k] / b) : "-") } }' "$out"
    exit 0
fi
echo "program,round,config,ranks,L_ns,time_s,messages,t_inter_ns,t_handler_ns" > "$out"
for round in $(seq 1 "$rounds"); do
    l=$(./rqbench --quick am 2>/dev/null | head -1 | sed -n 's/.*(L = \([0-9.]*\) ns).*/\1/p')
    echo "== round $round: L = $l ns" >&2
    for prog in $programs; do
        a=$(args_of "$prog")
        one=$(./rqrun -n 1 "apps/$prog" $a | parse)
        echo "$prog,$round,1 rank,1,$l,$one" >> "$out"
        echo "$configs" | while IFS=: read -r name opts; do
            # shellcheck disable=SC2086
            r=$(./rqrun -n "$ranks" "apps/$prog" $opts $a | parse)
            echo "$prog,$round,$name,$ranks,$l,$r" >> "$out"
        done
        if [ -x "apps/$prog-mpi" ]; then
            # shellcheck disable=SC2086
            r=$(mpirun -n "$ranks" --bind-to core "apps/$prog-mpi" $a | parse)
            echo "$prog,$round,mpi,$ranks,$l,$r" >> "$out"
        fi
        if command -v mpirun >/dev/null; then # clustering degree, 4 ranks
            for c in 1 2 4; do
                # shellcheck disable=SC2086
                r=$(UCX_TLS=tcp mpirun -n 4 --oversubscribe "$here/nodes_of.sh" $c \
                    "apps/$prog" --protocol pdq $a | parse)
                echo "$prog,$round,cluster-$c,4,$l,$r" >> "$out"
            done
        fi
    done
done
echo
echo "program config        ranks  time (median, s)  vs pdq-1  messages  T_handler (ns)"
awk -F, 'NR > 1 { k = $1 "," $3 "," $4; n[k]++; t[k, n[k]] = $6; m[k] = $7; h[k, n[k]] = $9;
                  if (!(k in seen)) { seen[k] = 1; order[++c] = k } }
     function med(a, k, c,   i, j, x, v) { for (i = 1; i <= c; i++) v[i] = a[k, i];
         for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
         return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2 }
     END { for (i = 1; i <= c; i++) { k = order[i]; split(k, w, ",");
               md[k] = med(t, k, n[k]); base[w[1] "," w[3]] = w[2] == "pdq-1" ? md[k] : base[w[1] "," w[3]] }
           for (i = 1; i <= c; i++) { k = order[i]; split(k, w, ",");
               b = base[w[1] ",2"]; printf "%-7s %-13s %-6s %-17.4f %-8s %-9s %.0f\n", w[1], w[2], w[3], md[k],
               (b > 0 && w[3] == 2) ? sprintf("%.2f", md[k] / b) : "-", m[k], med(h, k, n[k]) } }' "$out"
