#!/bin/sh
# mpirun_private_check.sh MPIRUN - mpirun_private.sh gives every mpirun of a
# concurrent batch a directory of its own and removes it: 6 mpiruns started
# together each print their ranks' TMPDIR; every run succeeds, each run's
# ranks share one directory that no other run has, and none is left.
set -u
here=$(dirname "$0")
mpirun=$1
out=$(mktemp -d)
i=0
while [ $i -lt 6 ]; do
    ( "$here/mpirun_private.sh" "$mpirun" -n 2 --oversubscribe sh -c 'echo "$TMPDIR"' \
        >"$out/run.$i" 2>"$out/err.$i"; echo $? >"$out/rc.$i" ) &
    i=$((i + 1))
done
fail=0
wait
i=0
while [ $i -lt 6 ]; do
    n=$(sort -u "$out/run.$i" | grep -c .)
    if [ "$(cat "$out/rc.$i")" != 0 ] || [ "$n" -ne 1 ] || [ "$(grep -c . "$out/run.$i")" -ne 2 ]; then
        echo "FAIL: run $i: ranks saw $(cat "$out/run.$i" | tr '\n' ' ')"; cat "$out/err.$i"; fail=1
    fi
    i=$((i + 1))
done
dirs=$(cat "$out"/run.* | sort -u)
if [ "$(echo "$dirs" | grep -c .)" -ne 6 ]; then
    echo "FAIL: runs shared a directory: $dirs"; fail=1
fi
for d in $dirs; do
    [ -e "$d" ] && { echo "FAIL: $d left behind"; fail=1; }
done
rm -rf "$out"
[ $fail -eq 0 ] && echo "mpirun_private: 6 concurrent runs, 6 private directories, none left: ok"
exit $fail
