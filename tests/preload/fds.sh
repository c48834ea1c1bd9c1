#!/bin/sh
# SPDX-License-Identifier: MIT
# fds.sh PRELOAD PROG - fds.c's three cases under the preload: the
# statistics' files must not hold a descriptor of the program's (a daemon's
# file lost in a fork's child; stdin and stdout taken over when closed).
set -u
preload=$1 prog=$2
dir=${TMPDIR:-/tmp}/txkit-fds-$$
trap 'rm -rf "$dir"' EXIT
mkdir -m 700 "$dir"
fail=0
TXKIT_STATS_DIR=$dir LD_PRELOAD=$preload timeout 30 "$prog" closeall || { echo "FAIL: closeall"; fail=1; }
TXKIT_STATS_DIR=$dir LD_PRELOAD=$preload timeout 30 "$prog" stdout >&- || { echo "FAIL: stdout closed"; fail=1; }
TXKIT_STATS_DIR=$dir LD_PRELOAD=$preload timeout 30 "$prog" stdin <&- || { echo "FAIL: stdin closed"; fail=1; }
[ $fail = 0 ] && echo "ok: a daemon's descriptor kept across fork, closed stdin and stdout stay closed"
exit $fail
