#!/bin/sh
# SPDX-License-Identifier: MIT
# robust.sh TXKIT PROG - robust.c's return codes under `txkit run` and
# `txkit run --report` must be those of the program alone. With the lock
# report the hook tried every lock first: a robust mutex whose owner died
# deadlocked on itself (normal), was taken twice (recursive) or said EDEADLK
# (errorcheck), and a priority-protect lock succeeded where glibc says EINVAL.
set -u
txkit=$1 prog=$2
tmp=${TMPDIR:-/tmp}/txkit-robust-$$
trap 'rm -f "$tmp".*' EXIT
timeout 30 "$prog" >"$tmp.native" 2>&1 || { echo "FAIL: the program alone: status $?"; cat "$tmp.native"; exit 1; }
fail=0
for how in "run" "run --report=$tmp.report"; do
    # shellcheck disable=SC2086
    timeout 30 "$txkit" $how -- "$prog" >"$tmp.out" 2>&1
    rc=$?
    if [ $rc != 0 ] || ! cmp -s "$tmp.native" "$tmp.out"; then
        echo "FAIL: txkit $how: status $rc$( [ $rc = 124 ] && echo ' (hung)'), output differs from the program alone:"
        diff "$tmp.native" "$tmp.out" | sed 's/^/  | /' | head -20
        fail=1
    fi
done
[ $fail = 0 ] && { echo "ok: the same return codes under txkit run and txkit run --report:"; sed 's/^/  /' "$tmp.native"; }
exit $fail
