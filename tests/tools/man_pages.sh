#!/bin/sh
# man_pages.sh SRC - the manual pages in SRC/man: every page renders with
# groff -man -ww and no warning (.so links resolved), every public call of
# rq.h, rqdsm.h and rqtag.h has a page, and, where python3 is present, the pages are
# what tools/man/genman.py makes of today's headers and docs (edit those,
# then rerun it).
set -u
src=$(cd "$1" && pwd)
fail=0
command -v groff >/dev/null || { echo "man_pages: groff is not installed (groff-base)"; exit 1; }
cd "$src/man" || exit 1
n=0
for page in man1/*.1 man3/*.3 man7/*.7; do
    out=$(groff -man -Tutf8 -ww -z -I . "$page" 2>&1)
    if [ -n "$out" ]; then echo "FAIL: $page: $out"; fail=1; fi
    n=$((n + 1))
done
for f in $(grep -ho 'RQ_API[^(]*(' "$src/include/rq.h" | grep -o 'rq_[a-z_0-9]*') \
         $(grep -ho '^[a-z][a-z_ *]*rqdsm_[a-z_]*(' "$src/dsm/include/rqdsm.h" | grep -o 'rqdsm_[a-z_]*(' | tr -d '(') \
         $(grep -ho '^int rq_[a-z_]*(' "$src/tag/include/rqtag.h" | grep -o 'rq_[a-z_]*'); do
    [ -f "man3/$f.3" ] || { echo "FAIL: no page for $f"; fail=1; }
done
for p in man1/rqrun.1 man1/rqinfo.1 man1/rqbench.1 man1/rqload.1 man1/rqgang.1 \
         man3/librq.3 man7/librq-environment.7; do
    [ -f "$p" ] || { echo "FAIL: no $p"; fail=1; }
done
if command -v python3 >/dev/null; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rq-man.XXXXXX")
    python3 "$src/tools/man/genman.py" "$src" "$tmp" >/dev/null || { echo "FAIL: genman.py"; fail=1; }
    if ! diff -r "$tmp" "$src/man" >/dev/null; then
        echo "FAIL: man/ is stale: run tools/man/genman.py"; diff -r "$tmp" "$src/man" | head -20; fail=1
    fi
    rm -rf "$tmp"
else
    echo "man_pages: no python3: freshness not checked"
fi
[ $fail -eq 0 ] && echo "man_pages: $n pages render without warnings: ok"
exit $fail
