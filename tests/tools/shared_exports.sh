#!/usr/bin/env bash
# shared_exports.sh LIBRQ_SO RQ_H - the shared library exports exactly the
# functions rq.h declares with RQ_API, and nothing else.
set -eu
so=$1 header=$2
exported=$(nm -D --defined-only "$so" | awk '$2 == "T" {print $3}' | sort)
declared=$(grep -oE '^RQ_API [^(]*\(' "$header" | grep -oE 'rq_[a-z_]+' | sort)
if [ "$exported" != "$declared" ]; then
    echo "shared_exports: FAIL"
    diff <(echo "$declared") <(echo "$exported") | sed 's/^/  /'
    exit 1
fi
echo "shared_exports: $(echo "$declared" | wc -l) functions exported, nothing else: ok"
