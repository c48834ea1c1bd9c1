#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check.sh - the manual pages' tests (docs/man/CMakeLists.txt).
#   check.sh lint PAGE...            groff -ww and man --warnings: no warning
#   check.sh env TXKIT.7 DIR...      the TXKIT_* variables the C code of DIRs
#                                    reads = those txkit(7)'s ENVIRONMENT describes
#   check.sh api LIBTXKIT.3 INCDIR   every TXKIT_API function is in libtxkit(3)
#   check.sh install BUILDDIR        installed to a temporary prefix, `man -M`
#                                    finds txkit(1), txkit(7), libtxkit(3)
# Exit: 0 pass, 1 fail, 77 skip (groff or man missing).
set -uo pipefail
mode=$1
shift
fail() { echo "FAIL [man.$mode]: $*" >&2; exit 1; }
skip() { echo "SKIP [man.$mode]: $*"; exit 77; }

case $mode in
lint)
  command -v groff >/dev/null || skip "no groff (Debian: groff-base)"
  for page in "$@"; do
    out=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $page: $out"
    [ -z "$out" ] || fail "groff warns about $page:
$out"
    if command -v man >/dev/null; then
      out=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
      [ -z "$out" ] || fail "man --warnings on $page:
$out"
    fi
    # Every page has the sections a reader looks for.
    for s in NAME DESCRIPTION "SEE ALSO"; do
      grep -q "^\.SH \"\?$s\"\?\$" "$page" || fail "$page has no $s section"
    done
    echo "ok: $page"
  done
  ;;
env)
  page=$1
  shift
  # What the code reads: getenv("TXKIT_X") and the names given to its parsers
  # (a string literal that is exactly a TXKIT_ name).
  read_vars=$(grep -rhoE --include='*.c' --include='*.h' '"TXKIT_[A-Z0-9_]+"' "$@" | tr -d '"' | sort -u)
  [ -n "$read_vars" ] || fail "found no TXKIT_* variable in $*"
  # What the page describes: .B NAME tags between .SH ENVIRONMENT and the next .SH.
  doc_vars=$(awk '/^\.SH /{ in_env = ($2 == "ENVIRONMENT") } in_env && /^\.B TXKIT_/ { print $2 }' "$page" | sort -u)
  missing=$(comm -23 <(echo "$read_vars") <(echo "$doc_vars"))
  extra=$(comm -13 <(echo "$read_vars") <(echo "$doc_vars"))
  [ -z "$missing" ] || fail "read by the code, not in txkit(7) ENVIRONMENT: $(echo $missing)"
  [ -z "$extra" ] || fail "in txkit(7) ENVIRONMENT, read nowhere in the code: $(echo $extra)"
  echo "ok: $(echo $read_vars)"
  ;;
api)
  page=$1 inc=$2
  funcs=$(grep -rhoE 'TXKIT_API[^;(]*[ *]([a-z][a-z0-9_]*)\(' "$inc" | sed -E 's/.*[ *]([a-z][a-z0-9_]*)\($/\1/' | sort -u)
  [ -n "$funcs" ] || fail "found no TXKIT_API function in $inc"
  for f in $funcs; do
    grep -qE "(^|[^a-z0-9_])$f([^a-z0-9_]|\$)" "$page" || fail "libtxkit(3) does not mention $f()"
  done
  echo "ok: $(echo "$funcs" | wc -l) functions"
  ;;
install)
  build=$1
  command -v man >/dev/null || skip "no man (Debian: man-db)"
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/txkit-man.XXXXXX") || fail mktemp
  trap 'rm -rf "$tmp"' EXIT
  cmake --install "$build" --prefix "$tmp" >"$tmp/install.log" 2>&1 || fail "cmake --install: $(tail -5 "$tmp/install.log")"
  mandir=$(find "$tmp" -type d -name man -path '*/share/man' | head -1)
  [ -n "$mandir" ] || fail "no share/man installed"
  for p in "1 txkit" "7 txkit" "3 libtxkit"; do
    set -- $p
    f=$(man -M "$mandir" -w "$1" "$2" 2>&1) || fail "man -M $mandir -w $1 $2: $f"
    [ "$f" = "$mandir/man$1/$2.$1" ] || fail "man $1 $2 found $f"
    MANWIDTH=80 man -M "$mandir" "$1" "$2" 2>/dev/null | grep -q "^NAME" || fail "man $1 $2 shows no NAME"
  done
  # `man txkit` with the installed MANPATH: txkit(1) first.
  f=$(MANPATH=$mandir man -w txkit) || fail "man -w txkit"
  [ "$f" = "$mandir/man1/txkit.1" ] || fail "man txkit: $f"
  echo "ok: $mandir"
  ;;
*)
  fail "unknown mode"
  ;;
esac
