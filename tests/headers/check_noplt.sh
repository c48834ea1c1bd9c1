#!/bin/sh
# SPDX-License-Identifier: MIT
# check_noplt.sh CC CXX INCLUDEDIR - the macros' calls into the runtime
# (TX_ATOMIC's begin and end, TX_LOAD / TX_STORE's out-of-line paths,
# txkit::atomic's begin and commit) go through the GOT, not through PLT stubs
# (tx.h declares them noplt): compiled to assembly as position-independent code
# at -O2, C and C++, each call must be "call *NAME@GOTPCREL(%rip)".
set -u
cc=$1 cxx=$2 inc=$3
fail=0
check() { # what, assembly, names...
    what=$1 asm=$2
    shift 2
    for n in "$@"; do
        if ! printf '%s\n' "$asm" | grep -q "call[[:space:]]*\*$n@GOTPCREL(%rip)"; then
            echo "FAIL: $what: no call of $n through the GOT"
            fail=1
        fi
    done
    plt=$(printf '%s\n' "$asm" | grep -E 'call[[:space:]]+_txkit_[a-z_]*(@PLT)?$')
    if [ -n "$plt" ]; then
        echo "FAIL: $what: calls through the PLT:"
        printf '%s\n' "$plt"
        fail=1
    fi
}
c_asm=$(printf '%s\n' '#include <txkit.h>' 'static long x;' \
    'long f(void) { volatile long v = 0; TX_ATOMIC { v = TX_LOAD(&x); TX_STORE(&x, v + 1); } return v; }' |
    "$cc" -std=gnu11 -O2 -fPIC -I"$inc" -S -o - -x c -) || { echo "FAIL: C probe did not compile"; exit 1; }
check C "$c_asm" _txkit_begin _txkit_end _txkit_load_bytes _txkit_store_bytes
cxx_asm=$(printf '%s\n' '#include <txkit.hpp>' 'static long x;' \
    'long f() { return txkit::atomic([&] { long v = TX_LOAD(&x); TX_STORE(&x, v + 1); return v; }); }' |
    "$cxx" -std=c++17 -O2 -fPIC -I"$inc" -S -o - -x c++ -) || { echo "FAIL: C++ probe did not compile"; exit 1; }
check C++ "$cxx_asm" _txkit_begin_cxx _txkit_commit_cxx
[ $fail = 0 ] && echo "ok: the macros call the runtime through the GOT"
exit $fail
