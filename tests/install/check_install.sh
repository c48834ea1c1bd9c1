#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install txkit into a scratch prefix and check the layout, the exported symbols,
# and that a program builds against it through pkg-config and through CMake.
# usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
P=$work/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$P" >/dev/null
libdir=lib
[ -d "$P/lib" ] || fail "no $P/lib"
for f in include/txkit.h include/txkit.hpp include/txkit/tx.h include/txkit/stats.h include/txkit/cx.h \
         include/txkit/config.h lib/libtxkit.so lib/pkgconfig/txkit.pc \
         lib/cmake/txkit/txkitConfig.cmake bin/txkit lib/txkit/libitm.so.1; do
  [ -e "$P/$f" ] || fail "missing $f"
done
soname=$(objdump -p "$P/$libdir/libtxkit.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libtxkit.so.0" ] || fail "soname is '$soname', expected libtxkit.so.0"

# The libitm drop-in is a link to the library itself (one runtime per process).
[ "$(readlink "$P/lib/txkit/libitm.so.1")" = "../libtxkit.so.0" ] || fail "lib/txkit/libitm.so.1 is not a link to ../libtxkit.so.0"

# Only the public prefixes and the libitm ABI (_ITM_*, _ZGTt* clones) may be exported.
bad=$(nm -D --defined-only "$P/$libdir/libtxkit.so" | awk '{print $3}' | \
      grep -Ev '^(tx_|txkit_|_txkit_|cx_|TXKIT_|_ITM_|_ZGTt|LIBITM_)' || true)
[ -z "$bad" ] || fail "unexpected exported symbols: $bad"
nm -D --defined-only "$P/$libdir/libtxkit.so" | grep -q ' tx_stats_get' || fail "tx_stats_get not exported"
if nm -D --defined-only "$P/$libdir/libtxkit.so" | grep -q ' tk_'; then fail "internal tk_ symbols exported"; fi

# pkg-config consumer
export PKG_CONFIG_PATH=$P/$libdir/pkgconfig
cc -std=gnu11 -Wall -Wextra -Werror $(pkg-config --cflags txkit) "$src/tests/install/consumer/main.c" \
   -o "$work/pc-consumer" $(pkg-config --libs txkit) -Wl,-rpath,"$P/$libdir"
"$work/pc-consumer" || fail "pkg-config consumer failed"

# CMake consumer
cmake -S "$src/tests/install/consumer" -B "$work/cm" -DCMAKE_PREFIX_PATH="$P" >/dev/null
cmake --build "$work/cm" >/dev/null
LD_LIBRARY_PATH=$P/$libdir "$work/cm/consumer" || fail "CMake consumer failed"

# The installed CLI runs from the prefix.
"$P/bin/txkit" info | grep -q '^rtm:' || fail "installed txkit info"

# A gcc -fgnu-tm binary, built against GCC's libitm, runs on txkit through
# the installed drop-in: the transactions show in txkit's statistics.
if echo 'int main(void){return 0;}' | cc -fgnu-tm -x c - -o "$work/probe" 2>/dev/null; then
  cat > "$work/tm.c" <<'C'
#include <stdio.h>
static long n;
int main(void) {
    for (int i = 0; i < 1000; i++)
        __transaction_atomic { n++; }
    printf("%ld\n", n);
    return n != 1000;
}
C
  cc -O2 -fgnu-tm "$work/tm.c" -o "$work/tm"
  out=$("$P/bin/txkit" run --stats -- "$work/tm" 2>&1) || fail "txkit run of a -fgnu-tm binary: $out"
  grep -q '^1000$' <<<"$out" || fail "txkit run: wrong result: $out"
  grep -Eq 'commits +1000 ' <<<"$out" || fail "txkit run: transactions did not run on txkit: $out"
else
  echo "skipping the -fgnu-tm drop-in check: cc -fgnu-tm does not work here"
fi
echo "install ok"
