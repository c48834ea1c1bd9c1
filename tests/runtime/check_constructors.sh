#!/bin/sh
# SPDX-License-Identifier: MIT
# check_constructors.sh SRC - libtxkit's constructors: every one has a
# priority (TK_CONSTRUCTOR, runtime/core.h, or an explicit number) except
# cx/self.c's, which the linker then runs last, and which is what lets the
# preload hooks see the program's locks (cx/self.h: a hook that ran before
# some module's constructor would use that module unset).
set -u
src=$1
bare=$(grep -rn '__attribute__((constructor))' "$src" --include='*.c' | grep -v '^[^:]*preload/' |
       grep -v '^[^:]*/cx/self\.c:')
self=$(grep -c '__attribute__((constructor))' "$src/cx/self.c")
fail=0
[ -z "$bare" ] || { echo "FAIL: constructors without a priority besides cx/self.c's (use TK_CONSTRUCTOR):"; echo "$bare"; fail=1; }
[ "$self" = 1 ] || { echo "FAIL: cx/self.c has $self constructors without a priority, expected 1"; fail=1; }
[ $fail = 0 ] && echo "ok: cx/self.c's constructor is the only one without a priority"
exit $fail
