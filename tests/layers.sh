#!/bin/sh
# layers.sh SRC BUILD - the library's files call each other only downward:
# no circle of files in librq or in rqdsm, and no call against the layer
# order of docs/architecture.md (tools/layer-cycles reads the object files).
set -u
src=$1 build=$2
command -v python3 >/dev/null || { echo "layers: python3 is not installed"; exit 77; }
command -v nm >/dev/null || { echo "layers: nm is not installed"; exit 77; }
order=$(sed -n 's/^Layer order, lowest first: `\(.*\)`.*/\1/p' "$src/docs/architecture.md")
[ -n "$order" ] || { echo "layers: no layer order in docs/architecture.md"; exit 1; }
python3 "$src/tools/layer-cycles" "$build" --order "$order"
