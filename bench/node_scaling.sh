#!/bin/sh
# node_scaling.sh - the scaling measurements a many-core node is lent for,
# in one run of a few minutes: fine-grain rates per rank against the number
# of ranks (rqbench scale), the PDQ against its threads and the handlers'
# occupancy (rqbench pdq, alternated with another build when --old names
# one), and the DSM programs under each protocol organisation at 2, 4 and
# 8 ranks beside their MPI versions, and the PDQ paper's clustering shape
# at every CPU (R nodes x T application threads, R x T = CPUs, R >= 2).
# Everything lands in DIR; the end of the output is the summary (medians
# over the rounds).
#
#   bench/node_scaling.sh [--bin DIR] [--old DIR] [--out DIR] [--rounds R]
#                         [--parts "scale pdq dsm clustering"] [--no-mpi]
#
# --bin: the build directory (rqbench, rqrun, apps/), default the current
# directory; --old: another build directory (its rqbench, which links librq
# statically, so its PDQ is that build's; and its librq.so and
# dsm/librqdsm.so, which the DSM programs of --bin load in turn with this
# build's, alternated per configuration: rows named CONFIG@old); --no-mpi:
# leave out the MPI versions of the DSM programs.  The default parts are
# "scale pdq dsm".
set -u
bin=. old= out=node-scaling rounds=3 parts="scale pdq dsm" mpi=1
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$2; shift ;;
    --old) old=$2; shift ;;
    --out) out=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --parts) parts=$2; shift ;;
    --no-mpi) mpi=0 ;;
    *) echo "usage: $0 [--bin DIR] [--old DIR] [--out DIR] [--rounds R] [--parts LIST] [--no-mpi]" >&2; exit 2 ;;
    esac
    shift
done
case $rounds in '' | *[!0-9]* | 0) echo "$0: --rounds takes a positive count" >&2; exit 2 ;; esac
[ -x "$bin/rqbench" ] || { echo "$0: no rqbench in $bin" >&2; exit 2; }
[ -z "$old" ] || [ -x "$old/rqbench" ] || { echo "$0: no rqbench in $old" >&2; exit 2; }
[ -z "$old" ] || { [ -e "$old/librq.so" ] && [ -e "$old/dsm/librqdsm.so" ]; } ||
    { echo "$0: no librq.so and dsm/librqdsm.so in $old" >&2; exit 2; }
for p in $parts; do
    case $p in scale | pdq | dsm | clustering) ;; *) echo "$0: --parts takes scale, pdq, dsm, clustering" >&2; exit 2 ;; esac
done
want() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$out" || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cpus=$(nproc)
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*" >&2; }

{ date -u; uname -r; echo "cpus $cpus"; lscpu 2>/dev/null | grep -E '^(Model name|Socket|Core|Thread|NUMA node)'; } > "$out/machine.txt"
cat "$out/machine.txt" >&2

# 1. Rates per rank from 2 ranks to every CPU, each beside raw rings.
want scale && stamp "rqbench scale, 2..$cpus ranks" &&
timeout 200 "$bin/rqbench" --quick -n "$cpus" scale --csv "$out/scale.csv" > "$out/scale.txt" 2>&1

# 2. The PDQ against threads and occupancy, alternated with --old.
want pdq && for r in $(seq 1 "$rounds"); do
    stamp "rqbench pdq round $r"
    timeout 150 "$bin/rqbench" --quick pdq --csv "$out/pdq-new-$r.csv" > "$out/pdq-new-$r.txt" 2>&1
    [ -z "$old" ] || timeout 150 "$old/rqbench" --quick pdq --csv "$out/pdq-old-$r.csv" > "$out/pdq-old-$r.txt" 2>&1
done

# 3. The DSM programs: organisations x ranks, and MPI, every round.
args_of() {
    case $1 in
    lu) echo "768 32" ;;
    water) echo "1000 10" ;;
    barnes) echo "4000 3" ;;
    esac
}
orgs="poll:--protocol poll
pdq-1:--protocol pdq --threads 1
pdq-2:--protocol pdq --threads 2
pdq-4:--protocol pdq --threads 4
multiplexed-1:--protocol multiplexed --threads 1
multiplexed-2:--protocol multiplexed --threads 2
pdq-1-spin1ms:RQ_PDQ_SPIN_US=1000 --protocol pdq --threads 1
pdq-2-spin1ms:RQ_PDQ_SPIN_US=1000 --protocol pdq --threads 2"
parse() { sed -n 's/^[a-z-]*: ranks [0-9]*, time \([0-9.]*\) s.*/\1/p' | head -1; }
# The builds a DSM configuration runs with: this one, and --old's
# libraries under the same programs.
builds=new
[ -z "$old" ] || builds="new old"
libs_of() { if [ "$1" = old ]; then echo "$old:$old/dsm${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; else echo "${LD_LIBRARY_PATH:-}"; fi; }
tag_of() { if [ "$1" = old ]; then echo "@old"; fi; }
echo "program,ranks,config,round,time_s" > "$out/dsm.csv"
want dsm && for r in $(seq 1 "$rounds"); do
    stamp "dsm round $r"
    for n in 2 4 8; do
        for prog in lu water barnes; do
            a=$(args_of $prog)
            echo "$orgs" | while IFS=: read -r name opts; do
                # more protocol threads than the node has CPUs measures the oversubscription, not the PDQ
                th=$(echo "$opts" | sed -n 's/.*--threads \([0-9]*\).*/\1/p')
                [ $((n * (1 + ${th:-0}))) -le "$cpus" ] || continue
                # leading VAR=VALUE words are the run's environment
                # shellcheck disable=SC2086
                set -- $opts
                envs=
                while [ $# -gt 0 ]; do
                    case $1 in RQ_*=*) envs="$envs $1"; shift ;; *) break ;; esac
                done
                for b in $builds; do
                    # shellcheck disable=SC2086
                    t=$(env LD_LIBRARY_PATH="$(libs_of $b)" $envs timeout 60 "$bin/rqrun" -n $n \
                        "$bin/apps/$prog" "$@" $a 2>>"$out/dsm.err" | parse)
                    echo "$prog,$n,$name$(tag_of $b),$r,${t:-fail}" >> "$out/dsm.csv"
                done
            done
            if [ "$mpi" = 1 ] && [ -x "$bin/apps/$prog-mpi" ] && command -v mpirun >/dev/null; then
                # shellcheck disable=SC2086
                t=$(timeout 60 mpirun -n $n --bind-to core "$bin/apps/$prog-mpi" $a 2>>"$out/dsm.err" | parse)
                echo "$prog,$n,mpi,$r,${t:-fail}" >> "$out/dsm.csv"
            fi
        done
    done
done

# 4. The clustering shape: R nodes x T application threads on every CPU,
#    poll, one dedicated PDQ thread a node, multiplexed; the handlers'
#    time per message beside each run's time.
parse_h() { sed -n 's/^[a-z-]*: ranks [0-9]*, time \([0-9.]*\) s, messages [0-9]*, T_interhandler [0-9]* ns, T_handler \([0-9]*\) ns.*/\1,\2/p' | head -1; }
echo "program,nodes,threads,config,round,time_s,t_handler_ns" > "$out/clustering.csv"
want clustering && for r in $(seq 1 "$rounds"); do
    stamp "clustering round $r"
    for prog in lu water barnes; do
        a=$(args_of $prog)
        th=1
        while [ $((cpus / th)) -ge 2 ]; do
            n=$((cpus / th))
            if [ $((n * th)) -eq "$cpus" ]; then
                for org in "poll:--protocol poll" "pdq-1:--protocol pdq --threads 1" \
                           "multiplexed:--protocol multiplexed --threads 1"; do
                    name=${org%%:*}
                    for b in $builds; do
                        # shellcheck disable=SC2086
                        v=$(env LD_LIBRARY_PATH="$(libs_of $b)" timeout 60 "$bin/rqrun" -n $n \
                            "$bin/apps/$prog" ${org#*:} --app-threads $th $a 2>>"$out/dsm.err" | parse_h)
                        echo "$prog,$n,$th,$name$(tag_of $b),$r,${v:-fail,}" >> "$out/clustering.csv"
                    done
                done
            fi
            th=$((th * 2))
        done
    done
done
stamp "done"

# Summary: medians over the rounds, [min .. max] beside them.
command -v python3 >/dev/null || { echo "no python3: no summary (the data is in $out)"; exit 0; }
python3 - "$out" "$rounds" <<'PY'
import csv, glob, os, statistics, sys
out, rounds = sys.argv[1], sys.argv[2]
def show(title, rows):
    print("\n" + title)
    for k, vs in rows.items():
        print("  %-62s %8.3f   [%.3f .. %.3f]" % (k, statistics.median(vs), min(vs), max(vs)))
def collect(files, keep):
    rows = {}
    for f in sorted(files):
        for r in csv.DictReader(open(f)):
            if keep(r):
                rows.setdefault("%s, %s" % (r["name"], r["param"] or "-"), []).append(float(r["median"]))
    return rows
machine = open(os.path.join(out, "machine.txt")).read().split("\n")
print("machine: " + "; ".join(l for l in machine if l.startswith(("cpus", "Model"))))
if os.path.exists(os.path.join(out, "scale.csv")):
    show("rqbench scale: rate per rank (M/s) and ratios, by ranks",
         collect([os.path.join(out, "scale.csv")], lambda r: r["family"] == "scale"))
for b in ("new", "old"):
    files = glob.glob(os.path.join(out, "pdq-%s-*.csv" % b))
    if files:
        show("rqbench pdq, %s build, %s rounds: ratios" % (b, rounds),
             collect(files, lambda r: r["unit"] == "x"))
        show("rqbench pdq, %s build: PDQ and limit Mmsg/s by threads" % b,
             collect(files, lambda r: r["unit"] == "Mmsg/s" and ("(c) PDQ" in r["name"] or "limit" in r["name"] or "rq_poll" in r["name"])))
dsm = {}
for r in csv.DictReader(open(os.path.join(out, "dsm.csv"))):
    if r["time_s"] != "fail":
        dsm.setdefault((r["program"], r["ranks"], r["config"]), []).append(float(r["time_s"]))
print("\nDSM programs: seconds, median [min .. max] over the rounds")
for (p, n, c), vs in dsm.items():
    print("  %-7s %2s ranks  %-14s %9.4f   [%.4f .. %.4f]" % (p, n, c, statistics.median(vs), min(vs), max(vs)))
clus = {}
cpath = os.path.join(out, "clustering.csv")
if os.path.exists(cpath):
    for r in csv.DictReader(open(cpath)):
        if r["time_s"] not in ("fail", ""):
            k = (r["program"], r["nodes"], r["threads"], r["config"])
            clus.setdefault(k, ([], []))
            clus[k][0].append(float(r["time_s"]))
            clus[k][1].append(float(r["t_handler_ns"]))
if clus:
    print("\nClustering: R nodes x T threads, seconds and T_handler (ns), medians over the rounds")
    for (p, n, t, c), (ts, hs) in clus.items():
        print("  %-7s %2s x %-2s  %-16s %9.4f   [%.4f .. %.4f]  T_handler %6.0f" %
              (p, n, t, c, statistics.median(ts), min(ts), max(ts), statistics.median(hs)))
PY
