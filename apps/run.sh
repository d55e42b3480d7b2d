#!/bin/sh
# apps/run.sh - run every application and kernel (transpose, sptrsv,
# random, p2p, stencil, the Split-C programs radix, sample, bitonic,
# cannon, mm, fft, em3d under each strategy, and FUGU's barrier, null,
# synth and enum), every variant and its MPI
# peer in one invocation, at 1, 2, 4 and 8 ranks on this node (counts above the
# cores marked '*': oversubscribed) and across two simulated nodes
# (tests/two_nodes.sh: UCX between the halves), then print one table per
# application: time, speedup over 1 rank, and librq / MPI.
#
#   apps/run.sh [--quick] [--only GROUPS] [--out DIR]
#
# --only: a comma-separated subset of fugu, dsm, kernels, splitc,
# transpose, sptrsv, nodes (default: all of them).
# --quick: small inputs and, for the Split-C programs, the default variant
# of each (radix and radixb, sample and sampleb, fft and fftb: both),
# about 1.5 minutes on 2 cores.  DIR receives apps.csv, apps.json (jq) and one SVG per
# application (gnuplot), like rqbench's outputs; by default the build
# tree's apps-results/ (build/apps-results) when run from a source tree,
# else a new directory under $TMPDIR (printed at the end): never the
# current directory unless asked (--out apps-results).  Binaries:
# $RQAPP_BIN (default: next to this script when installed, else
# build/apps); rqrun from $RQRUN or PATH; two_nodes.sh next to this script
# when installed, else tests/.
set -u
quick=0 out= only=fugu,dsm,kernels,splitc,transpose,sptrsv,nodes
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --only) only=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) echo "usage: $0 [--quick] [--only GROUPS] [--out DIR]"; exit 0 ;;
    *) echo "usage: $0 [--quick] [--only GROUPS] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done
for g in $(echo "$only" | tr , ' '); do
    case $g in fugu|dsm|kernels|splitc|transpose|sptrsv|nodes) ;;
    *) echo "run.sh: unknown group '$g' (fugu, dsm, kernels, splitc, transpose, sptrsv, nodes)" >&2; exit 2 ;;
    esac
done
want() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${RQAPP_BIN:-}" ]; then bin=$RQAPP_BIN
elif [ -f "$here/transpose" ] && [ -x "$here/transpose" ]; then bin=$here
else bin=$here/../build/apps; fi
# rqrun: $RQRUN, the build tree's, an installed tree's bin/, or PATH.
if [ -n "${RQRUN:-}" ]; then rqrun=$RQRUN
elif [ -x "$bin/../rqrun" ]; then rqrun=$bin/../rqrun
elif [ -x "$here/../../../bin/rqrun" ]; then rqrun=$here/../../../bin/rqrun
else rqrun=$(command -v rqrun || echo rqrun); fi
if [ -x "$here/two_nodes.sh" ]; then two_nodes=$here/two_nodes.sh
else two_nodes=$here/../tests/two_nodes.sh; fi
if want nodes && [ ! -x "$two_nodes" ]; then
    echo "run.sh: --only nodes needs two_nodes.sh beside this script or in ../tests" >&2
    exit 2
fi
if [ -z "$out" ]; then
    if [ -f "$bin/../CMakeCache.txt" ]; then out=$(cd "$bin/.." && pwd)/apps-results
    else out=$(mktemp -d "${TMPDIR:-/tmp}/librq-apps-results.XXXXXX") || exit 1; fi
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
mkdir -p "$out"
csv=$out/apps.csv
echo "app,impl,variant,where,ranks,oversubscribed,time_s,rate,line_ns" > "$csv"

if [ $quick = 1 ]; then
    tp_args="5 1024 32" sp_args="--levels --block 8 --reps 11 pwr10"
    gu_args="2 20" p2_args="10 500 500" st_args="10 500" rx_args="--reps 3 100000"
    bi_args="--reps 3 100000" ca_args="--reps 3 256" mm_args="--reps 3 --block 16 128"
    ff_args="--reps 3 16" em_args="--reps 3 5000 10 0.2 20"
    fb_args="20000" fn_args="200000 1000" fs_args="--interval 1000 100 50000" fe_args="6"
    lu_args="256 16" wa_args="256 5" bh_args="1000 2" ed_args="--reps 3 2000 10 0.2 10"
    sx_vars="radix:store,bulk sample:store,bulk bitonic:get cannon:get mm:get fft:store,bulk em3d:bulk"
else
    tp_args="10 4096 32" sp_args="--levels --block 8 --reps 51 pwr10"
    gu_args="4 24" p2_args="20 1000 1000" st_args="20 2000" rx_args="--reps 5 2000000"
    bi_args="--reps 5 1000000" ca_args="--reps 3 768" mm_args="--reps 5 --block 16 256"
    ff_args="--reps 5 20" em_args="--reps 5 20000 10 0.2 50"
    fb_args="100000" fn_args="1000000 1000" fs_args="--interval 1000 100 200000" fe_args="6"
    lu_args="256 16" wa_args="512 4" bh_args="2048 4" # FUGU Table 7-1
    ed_args="--reps 3 5000 10 0.2 20" # em3d-dsm: a miss per remote block each half-step
    sx_vars="radix:store,bulk,am sample:store,bulk,am bitonic:get,store cannon:get,read
             mm:get,read fft:store,bulk em3d:get,store,bulk,am"
fi
sx_args() { # the arguments of a Split-C program
    case $1 in
    radix|sample) echo "$rx_args" ;; bitonic) echo "$bi_args" ;; cannon) echo "$ca_args" ;;
    mm) echo "$mm_args" ;; fft) echo "$ff_args" ;; em3d) echo "$em_args" ;;
    esac
}
# The direct variant keeps A in the segment (order * order / ranks doubles).
export RQ_SEGMENT_SIZE=$((256 << 20))

row() { # app impl variant where ranks time rate line_ns
    over=no; [ "$5" -gt "$cores" ] && over=yes
    echo "$1,$2,$3,$4,$5,$over,$6,$7,$8" >> "$csv"
}
# The run's placement: the cache-line latency between ranks 0 and 1 that
# every program measures and prints (empty: one rank, or other nodes).
line_of() { echo "$1" | awk '/^Line latency \(ns\)/ {print $5}'; }
run_tp() { # impl variant where ranks cmd...
    impl=$1 v=$2 w=$3 n=$4; shift 4
    r=$("$@" 2>&1) || { echo "run.sh: transpose $impl $v $n ranks ($w) failed:" >&2; echo "$r" | tail -3 >&2; return; }
    l=$(line_of "$r")
    set -- $(echo "$r" | awk '/^Rate \(MB\/s\)/ {print $7, $3}')
    row transpose "$impl" "$v" "$w" "$n" "$1" "$2" "$l"
    id=$(echo "$r" | awk '/^Ideal rate/ {print $8, $4}')
    [ -n "$id" ] && [ "$v" = rq ] && row transpose ideal "local work alone" "$w" "$n" $id "$l"
}
run_sp() { # impl variant where ranks cmd...
    impl=$1 v=$2 w=$3 n=$4; shift 4
    r=$("$@" 2>&1) || { echo "run.sh: sptrsv $impl $v $n ranks ($w) failed:" >&2; echo "$r" | tail -3 >&2; return; }
    t=$(echo "$r" | sed -n 's/.*time_s=\([0-9.e+-]*\).*/\1/p')
    row sptrsv "$impl" "$v" "$w" "$n" "$t" "" "$(line_of "$r")"
}

# The kernels with public interfaces (PRK, HPCC): "Rate (...): r" and a
# time after "time (s):" (random: the whole pass; the others: per iteration).
run_k() { # app impl variant where ranks cmd...
    app=$1 impl=$2 v=$3 w=$4 n=$5; shift 5
    r=$("$@" 2>&1) || { echo "run.sh: $app $impl $v $n ranks ($w) failed:" >&2; echo "$r" | tail -3 >&2; return; }
    set -- $(echo "$r" | awk '/^Rate \(/ { rate = $3; sub(",", "", rate)
                                          for (i = 1; i < NF; i++) if ($i == "(s):") t = $(i + 1)
                                          print t, rate }')
    row "$app" "$impl" "$v" "$w" "$n" "$1" "$2" "$(line_of "$r")"
}
kernels() { # where ranks launcher...: every kernel, every variant (across
    # nodes random runs rq only: amo and am pay a TCP round trip or
    # message per update, minutes at these sizes)
    w=$1 n=$2; shift 2
    gv="amo am rq"; [ "$w" = node ] || gv=rq
    for v in $gv; do run_k random librq $v "$w" $n "$@" "$bin/random" --variant $v $gu_args; done
    for v in store am; do run_k p2p librq $v "$w" $n "$@" "$bin/p2p" --variant $v $p2_args; done
    for v in put long; do run_k stencil librq $v "$w" $n "$@" "$bin/stencil" --variant $v $st_args; done
}
# The Split-C programs: every variant under every strategy (the NP paper's
# Table 2 compares who moves the data).  Their line: "... time_s=t".
run_s() { # app impl variant where ranks cmd...
    app=$1 impl=$2 v=$3 w=$4 n=$5; shift 5
    r=$("$@" 2>&1) || { echo "run.sh: $app $impl $v $n ranks ($w) failed:" >&2; echo "$r" | tail -3 >&2; return; }
    t=$(echo "$r" | sed -n 's/.* time_s=\([0-9.e+-]*\).*/\1/p')
    row "$app" "$impl" "$v" "$w" "$n" "$t" "" "$(line_of "$r")"
}
splitc() { # where ranks launcher...: each program's variants ($sx_vars)
    # under each strategy; bitonic needs a power of two (1, 2, 4, 8 are)
    w=$1 n=$2; shift 2
    # (run_s sets app, v, w, n: the loops use names of their own)
    for pv in $sx_vars; do
        sx=${pv%%:*}
        for sv in $(echo "${pv#*:}" | tr , ' '); do
            for ss in direct np proc; do
                RQ_GAS_STRATEGY=$ss run_s $sx librq "$sv-$ss" "$w" $n "$@" "$bin/$sx" --variant $sv $(sx_args $sx)
            done
        done
    done
}
splitc_mpi() { # ranks: each Split-C program's MPI version
    for sx in radix sample bitonic cannon mm fft em3d; do
        run_s $sx mpi mpi node $1 mpirun -n $1 --oversubscribe "$bin/$sx-mpi" $(sx_args $sx)
    done
}

# FUGU's standalone programs (thesis Tables 7-2, 7-3): "<name>: ranks n,
# time t s, ..." (finegrain.h).
run_f() { # app impl variant where ranks cmd...
    app=$1 impl=$2 v=$3 w=$4 n=$5; shift 5
    r=$("$@" 2>&1) || { echo "run.sh: $app $impl $v $n ranks ($w) failed:" >&2; echo "$r" | tail -3 >&2; return; }
    t=$(echo "$r" | sed -n 's/^[a-z0-9-]*: ranks [0-9]*, time \([0-9.]*\) s.*/\1/p' | head -1)
    row "$app" "$impl" "$v" "$w" "$n" "$t" "" "$(line_of "$r")"
}
fugu() { # ranks: each program and delivery, then its MPI version
    n=$1
    for v in am coll; do run_f barrier librq $v node $n "$rqrun" -n $n "$bin/barrier" --variant $v $fb_args; done
    run_f null librq busy node $n "$rqrun" -n $n "$bin/null" $fn_args
    for d in poll intr; do
        run_f synth librq $d node $n "$rqrun" -n $n "$bin/synth" --delivery $d $fs_args
        run_f enum librq $d node $n "$rqrun" -n $n "$bin/enum" --variant fine --delivery $d $fe_args
    done
    run_f enum librq bulk node $n "$rqrun" -n $n "$bin/enum" --variant bulk $fe_args
    if [ -x "$bin/synth-mpi" ]; then
        for v in coll p2p; do run_f barrier mpi $v node $n mpirun -n $n --oversubscribe "$bin/barrier-mpi" --variant $v $fb_args; done
        run_f null mpi busy node $n mpirun -n $n --oversubscribe "$bin/null-mpi" $fn_args
        run_f synth mpi poll node $n mpirun -n $n --oversubscribe "$bin/synth-mpi" $fs_args
        run_f enum mpi alltoallv node $n mpirun -n $n --oversubscribe "$bin/enum-mpi" $fe_args
    fi
}

dsm() { # ranks: the programs on rqdsm under each protocol organisation, then MPI
    n=$1
    for o in "pdq:--protocol pdq" "pdq-2:--protocol pdq --threads 2" \
             "multiplexed:--protocol multiplexed" "poll:--protocol poll" \
             "spinlock-2:--protocol spinlock --threads 2"; do
        # shellcheck disable=SC2086
        run_f lu librq "${o%%:*}" node $n "$rqrun" -n $n "$bin/lu" ${o#*:} $lu_args
        # shellcheck disable=SC2086
        run_f water librq "${o%%:*}" node $n "$rqrun" -n $n "$bin/water" ${o#*:} $wa_args
        # shellcheck disable=SC2086
        run_f em3d-dsm librq "${o%%:*}" node $n "$rqrun" -n $n "$bin/em3d-dsm" ${o#*:} $ed_args
        # shellcheck disable=SC2086
        run_f barnes librq "${o%%:*}" node $n "$rqrun" -n $n "$bin/barnes" ${o#*:} $bh_args
    done
    [ -x "$bin/lu-mpi" ] && run_f lu mpi bcast node $n mpirun -n $n --oversubscribe "$bin/lu-mpi" $lu_args
    [ -x "$bin/water-mpi" ] && run_f water mpi collectives node $n mpirun -n $n --oversubscribe "$bin/water-mpi" $wa_args
    [ -x "$bin/barnes-mpi" ] && run_f barnes mpi replicated node $n mpirun -n $n --oversubscribe "$bin/barnes-mpi" $bh_args
}

for n in 1 2 4 8; do
    echo "run.sh: $n ranks" >&2
    want fugu && fugu $n
    want dsm && dsm $n
    want kernels && kernels node $n "$rqrun" -n $n
    want splitc && splitc node $n "$rqrun" -n $n
    if [ -x "$bin/random-mpi" ]; then
        want splitc && splitc_mpi $n
        if want kernels; then
            run_k random mpi alltoallv node $n mpirun -n $n --oversubscribe "$bin/random-mpi" $gu_args
            run_k p2p mpi sendrecv node $n mpirun -n $n --oversubscribe "$bin/p2p-mpi" $p2_args
            run_k stencil mpi isend node $n mpirun -n $n --oversubscribe "$bin/stencil-mpi" $st_args
        fi
    fi
    if want transpose; then
        for v in am rq rq-bw rq-alt rq-credit direct; do
            run_tp librq $v node $n "$rqrun" -n $n "$bin/transpose" --variant $v $tp_args
        done
    fi
    if want sptrsv; then
        for m in intr poll inlined; do
            run_sp librq $m node $n "$rqrun" -n $n "$bin/sptrsv" --mode $m $sp_args
        done
    fi
    if [ -x "$bin/transpose-mpi" ]; then
        if want transpose; then
            for v in alltoall isend; do
                run_tp mpi $v node $n mpirun -n $n --oversubscribe "$bin/transpose-mpi" --variant $v $tp_args
            done
        fi
        want sptrsv && run_sp mpi isend node $n mpirun -n $n --oversubscribe "$bin/sptrsv-mpi" $sp_args
    fi
done
if want nodes && ! command -v mpirun >/dev/null; then
    echo "run.sh: no mpirun: the two-node runs are skipped" >&2
fi
if want nodes && [ -x "$two_nodes" ] && command -v mpirun >/dev/null; then
    echo "run.sh: two simulated nodes" >&2
    for n in 2 4; do
        for v in am rq rq-alt direct; do
            UCX_TLS=tcp run_tp librq $v two-nodes $n mpirun -n $n --oversubscribe "$two_nodes" "$bin/transpose" --variant $v $tp_args
        done
        for m in poll inlined; do
            UCX_TLS=tcp run_sp librq $m two-nodes $n mpirun -n $n --oversubscribe "$two_nodes" "$bin/sptrsv" --mode $m $sp_args
        done
        UCX_TLS=tcp kernels two-nodes $n mpirun -n $n --oversubscribe "$two_nodes"
    done
fi

# Tables: per application and placement, every variant's time and speedup
# over its own 1-rank time; the range of the runs' cache-line latency L
# (the vCPUs' placement may change between runs: compare runs of one L);
# then the best librq over the best MPI.
awk -F, -v cores="$cores" '
NR == 1 { next }
{ key = $1 SUBSEP $4; apps[key] = 1; v = $2 "/" $3; vars[key, v] = 1; t[key, v, $5] = $7
  ranks[$5] = 1
  if ($9 != "") { if (lmin[key, $5] == "" || $9 < lmin[key, $5]) lmin[key, $5] = $9
                  if (lmax[key, $5] == "" || $9 > lmax[key, $5]) lmax[key, $5] = $9 }
  if ($2 == "librq" && (best_l[key, $5] == "" || $7 < best_l[key, $5])) best_l[key, $5] = $7
  if ($2 == "mpi" && (best_m[key, $5] == "" || $7 < best_m[key, $5])) best_m[key, $5] = $7 }
END {
  n = split("1 2 4 8", R, " ")
  for (key in apps) {
    split(key, k, SUBSEP)
    printf "\n%s (%s): time in seconds (%s), %s\n", k[1], k[2],
           k[1] == "sptrsv" ? "per solve" : k[1] == "random" ? "the timed pass" : k[1] ~ /^(radix|sample|bitonic)$/ ? "per sort" : k[1] ~ /^(cannon|mm)$/ ? "per product" : k[1] == "fft" ? "per transform" : k[1] == "em3d" ? "all iterations" : k[1] ~ /^(barrier|null|synth|enum)$/ ? "the whole run" : "per iteration",
           k[1] ~ /^(radix|sample|bitonic|em3d|null|synth)$/ ? "1-rank time / time in () (the same work per rank: 1.00 is ideal)" : "speedup over 1 rank in ()"
    printf "  %-28s", "impl/variant"
    for (i = 1; i <= n; i++) printf " %18s", R[i] (R[i] > cores ? "*" : "")
    printf "\n"
    for (kv in vars) {
      split(kv, q, SUBSEP); if (q[1] SUBSEP q[2] != key) continue
      printf "  %-28s", q[3]
      for (i = 1; i <= n; i++) {
        x = t[key, q[3], R[i]]; b = t[key, q[3], 1]
        if (x == "") printf " %18s", "-"
        else if (b != "" && x > 0) printf " %9.6f (%5.2f)", x, b / x
        else printf " %9.6f        ", x
      }
      printf "\n"
    }
    # Weak scaling (a fixed size per rank: the sorts, em3d): the ideal
    # time stays the 1-rank time; strong scaling: it falls as 1 / ranks.
    weak = k[1] ~ /^(radix|sample|bitonic|em3d|null|synth)$/
    printf "  %-28s", weak ? "ideal: best 1-rank (per rank)" : "ideal: best 1-rank / ranks"
    for (i = 1; i <= n; i++) {
      b1 = ""
      for (kv in vars) { split(kv, q, SUBSEP); if (q[1] SUBSEP q[2] != key) continue
                         x = t[key, q[3], 1]; if (x != "" && (b1 == "" || x < b1)) b1 = x }
      if (b1 == "") printf " %18s", "-"; else printf " %9.6f         ", weak ? b1 : b1 / R[i]
    }
    printf "\n"
    printf "  %-28s", "line latency L (ns), runs"
    for (i = 1; i <= n; i++) {
      a = lmin[key, R[i]]; b = lmax[key, R[i]]
      if (a == "") printf " %18s", "-"; else printf " %18s", sprintf("%.0f-%.0f", a, b)
    }
    printf "\n"
    printf "  %-28s", "librq best / MPI best (x)"
    for (i = 1; i <= n; i++) {
      l = best_l[key, R[i]]; m = best_m[key, R[i]]
      if (l == "" || m == "" || l <= 0) printf " %18s", "-"; else printf " %18.2f", m / l
    }
    printf "\n"
  }
  printf "\n* more ranks than the %d cores: oversubscribed\n", cores
}' "$csv"

# The Split-C NP paper's Table 2 / Figures 9-10: per program and variant,
# the time under np normalised to proc (above 1: the network processor
# costs more than the target moving the data itself), and direct to proc,
# at each rank count; then the paper's np/proc (Meiko CS-2 | Paragon).
awk -F, '
BEGIN {
  split("radix/store radix/bulk sample/store sample/bulk bitonic/get cannon/get mm/get fft/store fft/bulk", K, " ")
  split("radix radixb sample sampleb bitonic cannon mm fft fftb", N, " ")
  split("1.57|0.93 0.94|1.00 1.21|0.87 1.00|0.98 0.94|1.00 0.89|1.00 0.80|0.98 0.77|0.87 0.92|0.96", P, " ")
  for (i in K) { paper_name[K[i]] = N[i]; paper[K[i]] = P[i] }
}
NR > 1 && $2 == "librq" && $4 == "node" && $1 ~ /^(radix|sample|bitonic|cannon|mm|fft|em3d)$/ {
  n = split($3, vs, "-"); s = vs[n]; v = $1 "/" substr($3, 1, length($3) - length(s) - 1)
  t[v, s, $5] = $7; vars[v] = 1; ranks[$5] = 1 }
END {
  printf "\nSplit-C programs (node): time under np / proc and direct / proc (Split-C NP paper, Table 2, Figures 9-10)\n"
  printf "  %-16s %-8s", "program/variant", "paper"
  for (r = 1; r <= 8; r *= 2) if (r in ranks) printf " %17s", r " ranks np|direct"
  printf " %12s\n", "paper np/proc"
  m = 0
  for (v in vars) { order[++m] = v
                    for (j = m; j > 1 && order[j - 1] > order[j]; j--) { x = order[j]; order[j] = order[j - 1]; order[j - 1] = x } }
  for (i = 1; i <= m; i++) {
    v = order[i]
    printf "  %-16s %-8s", v, (v in paper_name) ? paper_name[v] : "-"
    for (r = 1; r <= 8; r *= 2) {
      if (!(r in ranks)) continue
      p = t[v, "proc", r]; a = t[v, "np", r]; d = t[v, "direct", r]
      if (p == "" || p <= 0 || a == "" || d == "") printf " %17s", "-"
      else printf " %8.2f %8.2f", a / p, d / p
    }
    printf " %12s\n", (v in paper) ? paper[v] : "-"
  }
}' "$csv"

if command -v jq >/dev/null; then
    jq -R -s 'split("\n") | map(select(length > 0) | split(",")) | .[0] as $h | .[1:] |
              map([$h, .] | transpose | map({(.[0]): .[1]}) | add)' "$csv" > "$out/apps.json"
fi
if command -v gnuplot >/dev/null; then
    for app in transpose sptrsv random p2p stencil radix sample bitonic cannon mm fft em3d; do
        dat=$out/$app.dat
        : > "$dat"
        awk -F, -v a=$app 'NR > 1 && $1 == a && $4 == "node" {print $2 "/" $3 "," $5 "," $7}' "$csv" |
            sort -t, -k1,1 -k2,2n > "$dat.tmp"
        awk -F, 'BEGIN {p = ""} { if ($1 != p) { if (p != "") print "\n"; print "# " $1; p = $1 } print $2, $3 }' "$dat.tmp" > "$dat"
        rm -f "$dat.tmp"
        names=$(grep '^# ' "$dat" | sed 's/^# //' | tr '\n' ' ')
        [ -n "$names" ] || { rm -f "$dat"; continue; } # not run (--only)
        {
            printf 'set title "%s\\n{/*0.8 %s cores, %s}" enhanced\n' \
                "$app on one node: time against ranks (lower is better)" "$cores" "$(date +%Y-%m-%d)"
            echo "set xlabel 'ranks'; set ylabel 'seconds'; set logscale y; set logscale x 2"
            echo "set xtics (1, 2, 4, 8, 16, 32, 64, 128); set xrange [0.8:$(awk 'NF==2 && $1+0>m {m=$1+0} END {print m*1.25}' "$dat")]"
            echo "set key below left horizontal maxcols 3 noenhanced; set grid"
            printf 'PLOT = "'
            i=0
            for nm in $names; do
                [ $i -gt 0 ] && printf ", "
                printf "'%s' index %d using 1:2 with linespoints title '%s'" "$dat" $i "$nm"
                i=$((i + 1))
            done
            echo '"'
            echo "set terminal svg size 900,620 dynamic enhanced font 'sans,12'; set output '$out/$app.svg'; plot @PLOT"
            echo "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 1000,690 enhanced font 'sans,11'; set output '$out/$app.png'; plot @PLOT }"
        } | gnuplot 2>/dev/null || echo "run.sh: gnuplot failed for $app" >&2
    done
fi
echo "run.sh: $csv, $out/apps.json, $out/*.svg" >&2
