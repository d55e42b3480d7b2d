#!/bin/sh
# docs_index.sh SRC - the documentation indexes are complete: docs/README.md
# names every page of docs/, docs/data/README.md lists every data file, and
# (where python3 is present) the data index is what tools/docs/data_index.py
# makes of today's tree.
set -u
src=$(cd "$1" && pwd)
fail=0
for p in "$src"/docs/*.md; do
    b=$(basename "$p")
    [ "$b" = README.md ] && continue
    grep -q "\`$b\`" "$src/docs/README.md" || { echo "FAIL: docs/README.md does not name $b"; fail=1; }
done
for f in "$src"/docs/data/*; do
    b=$(basename "$f")
    [ "$b" = README.md ] && continue
    s=$(echo "$b" | sed -E 's/\.(txt|csv|json|svg|dat|gp|sh|awk|c)$//; s/-(run|round)[0-9]+$//')
    grep -q "\`$s\`\|\`$b\`" "$src/docs/data/README.md" || { echo "FAIL: docs/data/README.md does not list $b"; fail=1; }
done
if command -v python3 >/dev/null; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rq-docs.XXXXXX")
    cp -r "$src/docs" "$src/README.md" "$tmp/"
    mkdir -p "$tmp/tools" && cp -r "$src/tools/docs" "$tmp/tools/"
    python3 "$tmp/tools/docs/data_index.py" "$tmp" >/dev/null
    cmp -s "$tmp/docs/data/README.md" "$src/docs/data/README.md" ||
        { echo "FAIL: docs/data/README.md is stale: run tools/docs/data_index.py"; fail=1; }
    rm -rf "$tmp"
fi
[ $fail -eq 0 ] && echo "docs_index: every page and data file indexed: ok"
exit $fail
