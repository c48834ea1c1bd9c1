#!/bin/sh
# SPDX-License-Identifier: MIT
# check_spdx.sh SRCDIR - every file of the repository that can carry a comment
# names its licence in its first lines (SPDX-License-Identifier: MIT, as
# LICENSE), and LICENSE is there. Needs git (the files git tracks); without a
# git checkout: skipped (77).
set -u
src=$1
cd "$src" || exit 1
[ -f LICENSE ] && grep -q '^MIT License' LICENSE || { echo "FAIL: no MIT LICENSE file in $src"; exit 1; }
command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
    { echo "SKIP: not a git checkout"; exit 77; }
missing=$(git ls-files -- '*.c' '*.h' '*.S' '*.cpp' '*.hpp' '*.sh' '*.py' '*.cmake' '*.in' \
              '*.pml' '*.map' '*.lua' '*.conf' 'CMakeLists.txt' '*/CMakeLists.txt' Makefile .ci/run |
          while read -r f; do
              [ -f "$f" ] || continue
              head -n 3 "$f" | grep -q 'SPDX-License-Identifier: MIT' || echo "$f"
          done)
if [ -n "$missing" ]; then
    echo "FAIL: no 'SPDX-License-Identifier: MIT' in the first 3 lines of:"
    echo "$missing"
    exit 1
fi
echo "ok: every source file names its licence"
