#!/bin/sh
# SPDX-License-Identifier: MIT
# early_ctor.sh PRELOAD EARLY PROG - a mutex locked by a library constructor
# that the loader runs before libtxkit's (cx/self.h). PRELOAD then EARLY in
# LD_PRELOAD: EARLY's dependency is loaded after libtxkit.so, so initialized
# before it, and its constructor locks, trylocks and unlocks a mutex. Before
# the fix the hook registered that lock's site, which took the statistics'
# lock through the hook again and waited forever for the site it was
# registering: the process hung before main. Then PROG (test_preload torture)
# must run as usual, its own mutexes elided and counted (TXKIT_STATS=1).
set -u
preload=$1 early=$2 prog=$3
out=${TMPDIR:-/tmp}/txkit-early-$$
trap 'rm -f "$out"' EXIT
timeout 30 env TXKIT_STATS=1 LD_PRELOAD="$preload $early" "$prog" torture >"$out" 2>&1
rc=$?
fail=0
if [ $rc = 124 ]; then
    echo "FAIL: hung (killed after 30 s)"; fail=1
elif [ $rc != 0 ]; then
    echo "FAIL: exit status $rc"; fail=1
fi
grep -q 'early_dep: constructor: lock 0, trylock EBUSY, unlock 0, trylock 0, unlock 0' "$out" ||
    { echo "FAIL: the constructor's lock calls did not return what glibc's do"; fail=1; }
# the program's own mutexes: still seen by the hooks once libtxkit is set up
grep -q 'first locked at .*(test_preload)' "$out" ||
    { echo "FAIL: no per-mutex line of the program in the exit summary"; fail=1; }
if [ $fail != 0 ]; then
    sed 's/^/  | /' "$out" | head -40
    exit 1
fi
echo "ok: constructor locks before libtxkit's set-up went to glibc; the program ran, its mutexes counted"
