#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check the cx lock protocol model with spin: mutual exclusion (assertions)
# and no deadlock (invalid end states). Then check that the model can fail:
# without the abort of optimistic holders on an exclusive acquisition, spin
# must find a violation. Skips (77) where spin is not installed.
# usage: run_model.sh MODEL.pml
set -euo pipefail
model=$1
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

cp "$model" model.pml
errors=$(check model.pml)
[ "$errors" = 0 ] || { echo "FAIL: spin found $errors error(s) in the cx model"; cat pan.out; exit 1; }
echo "cx model: mutual exclusion and deadlock freedom hold"

sed 's/atomic { !locked -> locked = true; write_word() }/atomic { !locked -> locked = true }/' \
    model.pml > mutant.pml
cmp -s model.pml mutant.pml && { echo "FAIL: could not build the mutant model"; exit 1; }
errors=$(check mutant.pml)
[ "$errors" != 0 ] || { echo "FAIL: the mutant (no abort on exclusive acquisition) passed: the model checks nothing"; exit 1; }
echo "mutant model: violation found, as it must"
