#!/bin/sh
# SPDX-License-Identifier: MIT
# check_checkpoint_cet.sh CC CHECKPOINT_S - the checkpoint's shadow-stack
# pointer (jmpbuf ssp, offset 64) is read and saved by each of the three saves
# (_txkit_begin's two, _ITM_beginTransaction's) when the build has
# shadow-stack support (-fcf-protection: __CET__ & 2), and neither read nor
# stored when it has not (longjmp.S reads it only in the first case).
set -u
cc=$1 src=$2
tmp=${TMPDIR:-/tmp}/txkit-cet-$$
trap 'rm -f "$tmp".o' EXIT
fail=0
count() { # flags... : prints "rdssp stores"
    "$cc" "$@" -c "$src" -o "$tmp.o" || { echo "FAIL: $src does not assemble with $*"; exit 1; }
    d=$(objdump -d "$tmp.o") || { echo "FAIL: objdump"; exit 1; }
    echo "$(printf '%s\n' "$d" | grep -c 'rdssp') $(printf '%s\n' "$d" | grep -c 'mov[a-z]* *%rcx,0x40(%rax)')"
}
with=$(count -fcf-protection)
without=$(count -fcf-protection=none)
[ "$with" = "3 3" ] || { echo "FAIL: with shadow stacks: rdssp and ssp stores $with, expected 3 3"; fail=1; }
[ "$without" = "0 0" ] || { echo "FAIL: without: rdssp and ssp stores $without, expected 0 0"; fail=1; }
[ $fail = 0 ] && echo "ok: ssp saved in the 3 saves with shadow stacks, untouched without"
exit $fail
