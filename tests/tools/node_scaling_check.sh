#!/bin/sh
# node_scaling_check.sh BUILD_DIR SRC_DIR - bench/node_scaling.sh refuses
# bad arguments (exit 2, nothing run) and, on whatever cores this machine
# has, runs its DSM and clustering parts once and writes the CSVs and the
# summary.
set -u
build=$1 src=$2
script=$src/bench/node_scaling.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$build" || exit 1
for bad in "--rounds 0" "--rounds x" "--parts bogus" "--bin /nonexistent" "--old /nonexistent" "--frob"; do
    # shellcheck disable=SC2086
    sh "$script" $bad --out "$out/bad" >/dev/null 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "'$bad' exited $rc, not 2"
    [ ! -e "$out/bad" ] || fail "'$bad' wrote $out/bad"
done
sh "$script" --rounds 1 --parts "dsm clustering" --no-mpi --out "$out/run" > "$out/summary" 2> "$out/log" ||
    fail "the DSM part failed: $(cat "$out/log")"
grep -q '^lu,2,1,pdq-1,1,[0-9.]*,[0-9]*$' "$out/run/clustering.csv" ||
    fail "no lu 2 x 1 pdq-1 row in clustering.csv: $(cat "$out/run/clustering.csv")"
grep -q '^lu,2,poll,1,[0-9.]*$' "$out/run/dsm.csv" || fail "no lu poll time in dsm.csv: $(cat "$out/run/dsm.csv")"
if command -v python3 >/dev/null; then
    grep -q 'DSM programs: seconds' "$out/summary" || fail "no summary: $(cat "$out/summary")"
    grep -q 'lu  *2 ranks  poll' "$out/summary" || fail "no lu row in the summary"
    grep -q 'lu  *2 x 1  *multiplexed' "$out/summary" || fail "no clustering row in the summary"
fi
echo "node_scaling.sh: arguments checked, DSM and clustering parts ran"
