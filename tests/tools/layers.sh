#!/bin/sh
# layers.sh SRC BUILD - the library's files call each other only downward:
# no circle of files in librq or in rqdsm, and no call against the layer
# order of docs/architecture.md (tools/layer-cycles reads the object files).
# Objects whose source file no longer exists (left in a build tree by a
# rename) are left out, so that only today's files are judged.
set -u
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
command -v python3 >/dev/null || { echo "layers: python3 is not installed"; exit 77; }
command -v nm >/dev/null || { echo "layers: nm is not installed"; exit 77; }
order=$(sed -n 's/^Layer order, lowest first: `\(.*\)`.*/\1/p' "$src/docs/architecture.md")
[ -n "$order" ] || { echo "layers: no layer order in docs/architecture.md"; exit 1; }
tree=$(mktemp -d "${TMPDIR:-/tmp}/rq-layers.XXXXXX")
trap 'rm -rf "$tree"' EXIT
find "$build" -path '*/CMakeFiles/*.dir/*' -name '*.o' | while read -r o; do
    rel=${o#"$build"/}                 # SUB/CMakeFiles/T.dir/PATH.c.o
    sub=${rel%%CMakeFiles/*}           # SUB/ (may be empty)
    path=${rel#*CMakeFiles/*.dir/}     # PATH.c.o
    if [ -f "$src/$sub${path%.o}" ]; then
        mkdir -p "$tree/$(dirname "$rel")"
        ln -s "$o" "$tree/$rel"
    else
        echo "layers: skipping $rel (no $sub${path%.o} in the source tree)"
    fi
done
python3 "$src/tools/layer-cycles" "$tree" --order "$order"
