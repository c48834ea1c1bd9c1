#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The documentation cites only files that exist. Checked: in README.md,
# docs/*.md and every other README.md, each path in backticks, and in the
# sources of the txkit command (tools/txkit/*.c: help text, comments) each
# repository path. A path with a '/' must exist from the top of the tree, from
# the citing file's directory or under include/; a bare source file name
# (`bank.c`) must be the name of a tracked file or of a documented example.
# Also: every TXKIT_* CMake option and (non-internal) cache variable is in README.md. Placeholders (<file>, *, {a,b},
# $VAR, P/, BUILD/...) and generated outputs (no source extension) are not checked.
# usage: check_paths.sh SOURCE_DIR
set -euo pipefail
cd "$1"
files=$(git ls-files 2>/dev/null || find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||')
dirs=$(sed -n 's|/[^/]*$||p' <<<"$files" | tr / '\n' | sort -u)
bad=0 n=0
check() { # CITING_FILE PATH
  local p=${2%%:*} d
  p=${p%.} p=${p%,} p=${p%)}
  case "$p" in *'<'*|*'>'*|*'*'*|*'{'*|*'...'*|*'$'*|*'['*|/*|http*|-*) return 0 ;; esac
  d=$(dirname "$1")
  if [[ $p == */* ]]; then
    # checked when it starts with a directory name of the tree (not P/, BUILD/, n/a)
    grep -qx "${p%%/*}" <<<"$dirs" || return 0
    n=$((n + 1))
    [ -e "$p" ] || [ -e "$d/$p" ] || [ -e "include/$p" ] && return 0
  else
    [[ $p =~ \.(c|h|hpp|cpp|sh|pml|lua|cmake|py|in)$ ]] || return 0
    n=$((n + 1))
    grep -qE "(^|/)${p//./\\.}\$" <<<"$files" && return 0
    grep -qF "<!-- example: $p" README.md docs/*.md && return 0 # an example file
  fi
  echo "FAIL: $1 cites $2: no such file in the repository" >&2
  bad=1
}
for f in README.md docs/*.md $(grep -E '(^|/)README\.md$' <<<"$files" | grep -v '^README.md$'); do
  while IFS= read -r p; do check "$f" "$p"; done < <(grep -oE '`[^` ]+`' "$f" | tr -d '`' || true)
done
top='(\.ci|bench|cache|cmake|docs|include|scripts|src|tests|tools)/'
for f in tools/txkit/*.c; do
  while IFS= read -r p; do check "$f" "$p"; done < <(
    grep -oE "(^|[^A-Za-z0-9_./<-])$top[A-Za-z0-9_./-]*[A-Za-z0-9_]" "$f" | sed -E 's/^[^A-Za-z.]//' || true)
done
# Every CMake option and cache variable of ours is documented in README.md.
no=0
for o in $(git ls-files '*CMakeLists.txt' '*.cmake' | xargs grep -ohE '(option|set)\((TXKIT_[A-Z0-9_]+)[^)]*(\)|$)' |
           grep -E '^option|CACHE' | grep -v 'CACHE INTERNAL' | sed -E 's/^(option|set)\(//; s/[ )].*//' | sort -u); do
  no=$((no + 1))
  grep -qF "\`$o\`" README.md || { echo "FAIL: the CMake option $o is not in README.md's table" >&2; bad=1; }
done
[ $bad -eq 0 ] || exit 1
echo "ok: $n cited paths exist, $no CMake options documented"
