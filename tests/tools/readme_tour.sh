#!/bin/sh
# readme_tour.sh README INCLUDE_DIR LIB_DIR RQRUN - the README's tour is a
# complete program: its first C block compiles warning-free against rq.h
# and runs on 3 ranks, every rank reporting its "hi".
set -u
readme=$1 inc=$2 lib=$3 rqrun=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/rq-tour.XXXXXX")
trap 'rm -rf "$dir"' EXIT
awk '/^```c$/ {on = 1; next} on && /^```$/ {exit} on' "$readme" > "$dir/tour.c"
[ -s "$dir/tour.c" ] || { echo "readme_tour: no C block in $readme"; exit 1; }
cc -std=c11 -Wall -Wextra -Werror -I"$inc" "$dir/tour.c" -L"$lib" -lrq -Wl,-rpath,"$lib" \
    -o "$dir/tour" || { echo "readme_tour: the tour does not compile"; exit 1; }
"$rqrun" -n 3 "$dir/tour" > "$dir/out" 2>&1 || { cat "$dir/out"; echo "readme_tour: exit $?"; exit 1; }
n=$(grep -c "^rank [0-2]: hi from rank [0-2]$" "$dir/out")
[ "$n" -eq 3 ] || { cat "$dir/out"; echo "readme_tour: $n of 3 greetings"; exit 1; }
echo "readme_tour: compiles and runs: ok"
