#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check a cx protocol model with spin: its assertions (mutual exclusion) and
# no deadlock (invalid end states). Then check that the model can fail: each
# mutant (a sed expression that takes one rule out of the model) must make
# spin find a violation. Skips (77) where spin is not installed.
# usage: run_model.sh MODEL.pml [NAME SED_EXPRESSION]...
set -euo pipefail
model=$(realpath "$1")
shift
command -v spin >/dev/null || { echo "SKIP: spin is not installed (apt-get install spin)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

check() { # check FILE.pml -> prints pan's summary, returns its error count
  spin -a "$1" >/dev/null
  cc -O2 -DSAFETY -DCOLLAPSE -w -o pan pan.c
  ./pan -m100000 > pan.out 2>&1 || true
  grep -E 'errors:|assertion violated|invalid end state' pan.out | head -3 >&2
  sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.out | head -1
}

name=$(basename "$model" .pml)
cp "$model" model.pml
errors=$(check model.pml)
[ "$errors" = 0 ] || { echo "FAIL: spin found $errors error(s) in $name"; cat pan.out; exit 1; }
echo "$name: the assertions and deadlock freedom hold"

while [ $# -ge 2 ]; do
  sed "$2" model.pml > mutant.pml
  cmp -s model.pml mutant.pml && { echo "FAIL: could not build the mutant '$1'"; exit 1; }
  errors=$(check mutant.pml)
  [ "$errors" != 0 ] || { echo "FAIL: the mutant '$1' passed: the model checks nothing there"; exit 1; }
  echo "mutant '$1': violation found, as it must"
  shift 2
done
