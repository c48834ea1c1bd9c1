#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The examples of README.md and docs/*.md work as written. A fenced block is an
# example when the line before it is a marker:
#   <!-- example: NAME -->              the block is the file NAME
#   <!-- example: NAME, built by X -->  the same, only used by example X
#   <!-- not-run: REASON -->            shown, not run (make demo, sudo ...)
# Every c, cpp, sh, cmake and apache block needs one of the markers (an
# output listing is a plain ``` block). Mode "run" (ctest docs.examples):
# each C/C++ example is compiled with -Wall -Wextra -Werror against the
# build tree and run (exit 0); then the shell examples run in order with
# bash -e in a directory holding every example file, the links include/ and
# build/ (the source tree's headers, the build tree), and a scratch
# `cmake --install` of the build as if installed: its bin/ on PATH, its
# pkg-config and CMake files found, its lib/ on LD_LIBRARY_PATH (standing
# in for ldconfig). Mode "apache" (ctest docs.apache_conf): each apache
# example, /usr/local replaced by the scratch prefix, added to a minimal
# server configuration, must pass `apache2 -t`.
# usage: check_examples.sh run|apache BUILD_DIR SOURCE_DIR [PORT]
set -euo pipefail
mode=$1 build=$(cd "$2" && pwd) src=$(cd "$3" && pwd) port=${4:-18990}
W=$(mktemp -d /tmp/txkit-examples.XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
mkdir -p "$W/ex" "$W/run"
cd "$src"
# Extract: NAME FLAG FILE:LINE per example into $W/list, the blocks into $W/ex.
awk -v dir="$W/ex" '
  FNR == 1 { prev = ""; fence = 0 }
  /^```/ {
    if (!fence) {
      fence = 1; lang = substr($0, 4); out = ""
      if (prev ~ /^<!-- example: [^ ,]+(, built by [^ ]+)? -->$/) {
        name = prev; sub(/^<!-- example: /, "", name); sub(/[ ,].*$/, "", name)
        if (seen[name]++) { print "DUP " name " " FILENAME ":" FNR; next }
        out = dir "/" name; printf "" > out
        print name " " (prev ~ /built by/ ? "used" : "run") " " FILENAME ":" FNR
      } else if (prev !~ /^<!-- not-run: .+ -->$/ && lang ~ /^(c|cpp|c\+\+|sh|bash|cmake|apache)$/) {
        print "UNMARKED - " FILENAME ":" FNR
      }
    } else { fence = 0; if (out != "") close(out); out = "" }
    next
  }
  fence && out != "" { print > out; next }
  !fence && $0 != "" { prev = $0 }
' README.md docs/*.md >"$W/list"
! grep -q '^UNMARKED' "$W/list" || fail "fenced examples without a marker (<!-- example: NAME --> or <!-- not-run: why -->): $(grep '^UNMARKED' "$W/list" | awk '{print $3}' | paste -sd' ')"
! grep -q '^DUP' "$W/list" || fail "two examples named $(grep '^DUP' "$W/list")"

P=$W/prefix
cmake --install "$build" --prefix "$P" >"$W/install.log" 2>&1 || { cat "$W/install.log"; fail "cmake --install"; }

if [ "$mode" = apache ]; then
  command -v apache2 >/dev/null || skip "apache2 is not installed"
  [ -f "$build/cache/apache/mod_cache_tx.so" ] || skip "mod_cache_tx.so was not built"
  n=0
  while read -r name flag where; do
    case "$name" in *.apache) ;; *) continue ;; esac
    mkdir -p "$W/srv"
    cat >"$W/srv/httpd.conf" <<CONF
ServerRoot "$W/srv"
ServerName 127.0.0.1
Listen 127.0.0.1:$port
PidFile "$W/srv/httpd.pid"
ErrorLog "$W/srv/error.log"
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
# the example ($where):
CONF
    sed "s|/usr/local/|$P/|g" "$W/ex/$name" >>"$W/srv/httpd.conf"
    out=$(env -u LD_LIBRARY_PATH apache2 -t -f "$W/srv/httpd.conf" 2>&1) ||
      fail "apache2 -t on the example $name ($where): $out"
    grep -q 'Syntax OK' <<<"$out" || fail "apache2 -t on $name ($where): $out"
    [ -z "$(grep -v 'Syntax OK' <<<"$out")" ] || fail "apache2 -t on $name ($where) warns: $out"
    echo "ok: $name ($where): Syntax OK"
    n=$((n + 1))
  done <"$W/list"
  [ $n -gt 0 ] || fail "no apache example found"
  exit 0
fi

cp "$W"/ex/* "$W/run/"
ln -s "$src/include" "$W/run/include"
ln -s "$build" "$W/run/build"
cd "$W/run"
nc=0 ns=0
while read -r name flag where; do
  [ "$flag" = run ] || continue
  case "$name" in
    *.c)   cc -std=gnu11 -Wall -Wextra -Werror -I"$src/include" "$name" -o "${name%.c}" \
              -L"$build/src" -ltxkit -Wl,-rpath,"$build/src" -pthread ||
             fail "$name ($where) does not compile" ;;
    *.cpp) c++ -std=c++17 -Wall -Wextra -Werror -I"$src/include" "$name" -o "${name%.cpp}" \
              -L"$build/src" -ltxkit -Wl,-rpath,"$build/src" -pthread ||
             fail "$name ($where) does not compile" ;;
    *) continue ;;
  esac
  out=$(timeout 30 "./${name%.*}" 2>&1) || fail "$name ($where) exits $?: $out"
  echo "ok: $name ($where)"
  nc=$((nc + 1))
done <"$W/list"
while read -r name flag where; do
  case "$name" in *.sh) ;; *) continue ;; esac
  out=$(PATH="$P/bin:$PATH" PKG_CONFIG_PATH="$P/lib/pkgconfig" CMAKE_PREFIX_PATH="$P" \
        LD_LIBRARY_PATH="$P/lib" timeout 60 bash -e "$name" 2>&1) ||
    fail "the shell example $name ($where) fails: $out"
  printf 'ok: %s (%s)\n%s\n' "$name" "$where" "$(sed 's/^/    /' <<<"$out" | tail -n 20)"
  ns=$((ns + 1))
done <"$W/list"
[ $nc -gt 0 ] && [ $ns -gt 0 ] || fail "found $nc C/C++ and $ns shell examples: expected some of each"
echo "ok: $nc C/C++ and $ns shell examples work as written"
