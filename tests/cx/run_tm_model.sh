#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check the hybrid TM protocol model (tm_model.pml) with spin.
# usage: run_tm_model.sh MODEL.pml holds|violated [-DNAME=VALUE ...]
#   holds:    every assertion holds and no deadlock (0 errors);
#   violated: the model (built with the given defines, e.g. a defect put
#             back) must FAIL: spin has to find a violation, which shows the
#             model can see that defect.
# Skips (77) where spin is not installed.
set -euo pipefail
model=$(realpath "$1") expect=$2
shift 2
command -v spin >/dev/null || { echo "SKIP: spin is not installed (apt-get install spin)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$model" model.pml
spin "$@" -a model.pml >/dev/null
cc -O2 -DSAFETY -DCOLLAPSE -w -o pan pan.c
start=$(date +%s.%N)
./pan -m100000 > pan.out 2>&1 || true
end=$(date +%s.%N)
grep -E 'assertion violated|invalid end state|errors:|states, stored' pan.out | head -4
awk -v a="$start" -v b="$end" 'BEGIN { printf "pan: %.2f s\n", b - a }'
errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.out | head -1)
[ -n "$errors" ] || { echo "FAIL: no result from pan"; cat pan.out; exit 1; }
grep -q 'max search depth too small' pan.out && { echo "FAIL: search truncated (depth)"; exit 1; }
case $expect in
holds)
    [ "$errors" = 0 ] || { echo "FAIL: spin found a violation ($*)"; spin -t -p model.pml | tail -60; exit 1; }
    echo "tm model ($*): mutual exclusion, opacity, no lost update, no deadlock hold" ;;
violated)
    [ "$errors" != 0 ] || { echo "FAIL: the model with $* passed: it cannot see that defect"; exit 1; }
    echo "tm model ($*): violation found, as it must" ;;
*) echo "usage: $0 MODEL.pml holds|violated [-DNAME=VALUE ...]"; exit 2 ;;
esac
