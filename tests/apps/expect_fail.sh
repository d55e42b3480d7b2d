#!/bin/sh
# expect_fail.sh REGEX COMMAND... - bad input must fail cleanly: COMMAND
# exits non-zero (not by a signal, within the test's timeout) and prints a
# line matching REGEX (the clear error).
re=$1; shift
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
if [ $rc -eq 0 ]; then echo "expect_fail: exit 0, expected a failure"; exit 1; fi
if [ $rc -gt 128 ]; then echo "expect_fail: killed by signal $((rc - 128))"; exit 1; fi
printf '%s\n' "$out" | grep -Eq -- "$re" || { echo "expect_fail: no line matches '$re'"; exit 1; }
echo "expect_fail: ok (exit $rc)"
