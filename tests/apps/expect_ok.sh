#!/bin/sh
# expect_ok.sh REGEX COMMAND... - COMMAND exits 0 and prints a line
# matching REGEX (the program's own validation line).
re=$1; shift
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
if [ $rc -ne 0 ]; then echo "expect_ok: exit $rc"; exit 1; fi
printf '%s\n' "$out" | grep -Eq -- "$re" || { echo "expect_ok: no line matches '$re'"; exit 1; }
