#!/bin/sh
# SPDX-License-Identifier: MIT
# check_format.sh SRCDIR - every C and C++ file git tracks is formatted as
# .clang-format says (clang-format --dry-run -Werror). Skipped (77) without
# clang-format 14 (Debian 12's; other versions format differently) or
# outside a git checkout.
set -u
cd "$1" || exit 1
command -v clang-format >/dev/null || { echo "SKIP: no clang-format (apt-get install clang-format)"; exit 77; }
ver=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$ver" = 14 ] || { echo "SKIP: clang-format $ver, the style is kept with version 14"; exit 77; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "SKIP: not a git checkout"; exit 77; }
files=$(git ls-files -- '*.c' '*.h' '*.cpp' '*.hpp')
# shellcheck disable=SC2086 # file names without blanks
if ! out=$(clang-format --dry-run -Werror $files 2>&1); then
    echo "FAIL: not formatted as .clang-format says (clang-format -i FILE):"
    printf '%s\n' "$out" | grep -E '^[^ ].*: error:' | sed 's/:[0-9]*:[0-9]*: error:.*//' | sort -u
    exit 1
fi
echo "ok: $(printf '%s\n' "$files" | wc -l) files formatted"
