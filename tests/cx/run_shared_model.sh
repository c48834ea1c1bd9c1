#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Check the model of cx's shared mode (cx_shared_model.pml) with spin: the
# assertions (no shared holder beside an exclusive holder or a subscriber's
# write-back) and no deadlock. Then three mutants, each of which spin must
# find wrong: writers that do not wait for the readers, a first subscriber
# that does not, readers that do not look at the subscribed flag.
# Skips (77) where spin is not installed.
# usage: run_shared_model.sh MODEL.pml
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
[ "$errors" = 0 ] || { echo "FAIL: spin found $errors error(s) in the shared-mode model"; cat pan.out; exit 1; }
echo "shared-mode model: exclusion and deadlock freedom hold"

mutant() { # name, sed expression
  sed "$2" model.pml > mutant.pml
  cmp -s model.pml mutant.pml && { echo "FAIL: could not build the mutant '$1'"; exit 1; }
  errors=$(check mutant.pml)
  [ "$errors" != 0 ] || { echo "FAIL: the mutant '$1' passed: the model checks nothing there"; exit 1; }
  echo "mutant '$1': violation found, as it must"
}
mutant "writers do not wait for readers" 's/^    drain(i);$/    skip;/'
mutant "the first subscriber does not wait" 's/:: !noshared -> drain(i); noshared = true/:: !noshared -> noshared = true/'
mutant "readers ignore the subscribed flag" 's/        :: subscribed ->$/        :: false ->/'
