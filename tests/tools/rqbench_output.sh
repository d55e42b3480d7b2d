#!/bin/sh
# rqbench_output.sh RQRUN RQBENCH RANKS - run every rqbench subcommand in
# --smoke mode on RANKS ranks and check its outputs: the text tables, a CSV
# whose every record has the header's 13 fields, valid JSON with one
# result per CSV record (checked with jq when installed), and the SVG plots
# (when gnuplot is installed).
set -eu
rqrun=$1 rqbench=$2 ranks=$3
dir=$(mktemp -d /tmp/rqbench_out.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$rqrun" -n "$ranks" --bind core "$rqbench" --smoke all \
    --csv "$dir/r.csv" --json "$dir/r.json" --plot "$dir/plots" >"$dir/out.txt"
fail() { echo "rqbench_output: $*"; cat "$dir/out.txt"; exit 1; }
for fam in limits am loaded xfer poll splitc rq vni pdq compare large intr overflow; do
    grep -q "^\[$fam\]" "$dir/out.txt" || fail "no [$fam] table"
    grep -q "^$fam,librq,\|^$fam,limit," "$dir/r.csv" || fail "no $fam rows in the CSV"
done
grep -q "cache-line one-way latency L" "$dir/out.txt" || fail "no physical limit"
# The seeds' own figures beside librq's (paper.c): one row of each table.
grep -q "one-to-one (gap g).*L&C T1 CMAML_request 2.00 us" "$dir/out.txt" || fail "no L&C Table 1 beside am"
grep -q "ring (per message).*L&C T4 ring 4.59 us" "$dir/out.txt" || fail "no L&C Table 4 beside loaded"
grep -q "swap, double-word: bandwidth.*L&C T5" "$dir/out.txt" || fail "no L&C Table 5 beside xfer"
grep -q "gap (exchange): store.*SC T1: CM-5 7.3 us" "$dir/out.txt" || fail "no Split-C Table 1 beside splitc"
grep -q "send (null message).*FUGU T4-4" "$dir/out.txt" || fail "no FUGU Table 4-4 beside vni"
grep -q "latency L (derived)" "$dir/out.txt" || fail "no derived LogP L"
grep -q "successful poll (intersection)" "$dir/out.txt" || fail "no poll intersection row"
grep -q "one-to-one blocking, double-word: bandwidth" "$dir/out.txt" || fail "no xfer fit"
grep -q "medium cliff beyond memcpy" "$dir/out.txt" || fail "no large cliff rows"
grep -q "^large,librq,medium rise," "$dir/r.csv" || fail "no paired rises"
grep -q "^intr,librq,interrupt overhead," "$dir/r.csv" || fail "no interrupt overhead points"
grep -q "model deviation, worst" "$dir/out.txt" || fail "no interrupt model fit"
head -1 "$dir/r.csv" | grep -qx "family,impl,name,param,unit,median,min,max,ci90_lo,ci90_hi,n,cycles,note" \
    || fail "bad CSV header"
# Every record has 13 fields (quoted fields, which may hold commas, are
# collapsed first; POSIX awk), and a measured row's median lies in
# [min, max].
awk '{ l = $0; gsub(/"([^"]|"")*"/, "Q", l); n = split(l, f, ",")
       if (n != 13) { print "bad record " NR ": " $0; bad = 1 }
       else if (NR > 1 && f[11] > 0 && f[8] != "" &&
                (f[6] + 0 < f[7] - 1e-9 || f[6] + 0 > f[8] + 1e-9)) {
           print "median outside range: " $0; bad = 1 } }
     END { exit bad }' "$dir/r.csv" || fail "malformed CSV"
if [ "$ranks" -lt 3 ]; then
    grep -q "one-to-two (send overhead).*needs 3 ranks" "$dir/out.txt" || fail "3-rank rows not marked"
else
    grep "one-to-two (send overhead)" "$dir/out.txt" | grep -qv "n/a" || fail "3-rank rows missing"
    [ "$(grep -c "^am,librq,round-trip by destination," "$dir/r.csv")" -eq $((ranks - 1)) ] \
        || fail "round trip not measured to every destination"
fi
rows=$(($(wc -l <"$dir/r.csv") - 1))
if command -v jq >/dev/null; then
    [ "$(jq '.results | length' "$dir/r.json")" -eq "$rows" ] || fail "JSON and CSV disagree"
    [ "$(jq '.meta.ranks' "$dir/r.json")" -eq "$ranks" ] || fail "JSON meta.ranks"
    bad=$(jq -c '[.results[] | select(.n > 0 and .median == null)]' "$dir/r.json")
    [ "$bad" = "[]" ] || fail "measured rows without a median: $bad"
else
    echo "rqbench_output: jq not installed; JSON checked for shape only"
    grep -q '"results": \[' "$dir/r.json" || fail "no results array"
fi
if command -v gnuplot >/dev/null; then
    for p in xfer-bandwidth xfer-alignment poll-intersection traverse compare-bandwidth intr-overhead; do
        grep -q "<svg" "$dir/plots/$p.svg" || fail "no plot $p.svg"
    done
else
    [ -s "$dir/plots/poll-intersection.gp" ] || fail "no gnuplot script"
fi
# --pdq-threads: bad values refused with a clear error; N = 1 measures
# one thread only (the smoke run has up to 2).
for v in 0 65 2x; do
    if "$rqbench" --pdq-threads "$v" pdq >/dev/null 2>"$dir/err"; then
        fail "--pdq-threads $v accepted"
    fi
    grep -q "bad --pdq-threads $v" "$dir/err" || fail "--pdq-threads $v: no clear error"
done
"$rqrun" -n "$ranks" --bind core "$rqbench" --smoke --pdq-threads 1 pdq --csv "$dir/p1.csv" \
    >/dev/null || fail "--pdq-threads 1 failed"
grep -q '"backlog 0 ns, uniform: (c) PDQ",1,' "$dir/p1.csv" || fail "--pdq-threads 1: no 1-thread row"
if grep -q '"backlog 0 ns, uniform: (c) PDQ",2,' "$dir/p1.csv"; then
    fail "--pdq-threads 1 measured 2 threads"
fi
echo "rqbench_output: $ranks ranks, $rows rows: ok"
