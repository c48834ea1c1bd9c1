#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed module: cmake --install into a scratch prefix puts
# mod_cache_tx.so and cache_tx.load in <prefix>/lib*/txkit/apache2; the
# module finds the installed libtxkit (RUNPATH $ORIGIN/../..), and Apache
# loads it through the snippet and knows its directives (apache2 -t).
# usage: test_install.sh BUILD_DIR SOURCE_DIR PORT [MODE]
. "$(dirname "$0")/lib.sh"
need_basics
P=$T/prefix
cmake --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "cmake --install failed"; }
load=$(find "$P" -path '*/txkit/apache2/cache_tx.load' | head -n1)
[ -n "$load" ] || fail "no txkit/apache2/cache_tx.load under $P"
mod=$(dirname "$load")/mod_cache_tx.so
[ -f "$mod" ] || fail "no $mod"
grep -qx "LoadModule cache_tx_module $mod" "$load" || fail "cache_tx.load does not load $mod: $(cat "$load")"
libdir=$(cd "$(dirname "$load")/../.." && pwd)
resolved=$(env -u LD_LIBRARY_PATH ldd "$mod" | awk '/libtxkit\.so/ {print $3}')
[ -n "$resolved" ] || fail "the installed module does not find libtxkit: $(ldd "$mod")"
[ "$(cd "$(dirname "$resolved")" && pwd)" = "$libdir" ] || fail "the installed module uses $resolved, not $libdir's libtxkit"

mkdir -p "$T/srv"
cat >"$T/srv/httpd.conf" <<EOF
ServerRoot "$T/srv"
ServerName 127.0.0.1
Listen 127.0.0.1:$PORT
PidFile "$T/srv/httpd.pid"
ErrorLog "$T/srv/error.log"
LoadModule mpm_worker_module /usr/lib/apache2/modules/mod_mpm_worker.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule cache_module /usr/lib/apache2/modules/mod_cache.so
Include "$load"
CacheEnable tx /
TxCacheSync cx
TxCacheMaxBytes 10M
EOF
out=$(env -u LD_LIBRARY_PATH apache2 -t -f "$T/srv/httpd.conf" 2>&1) || fail "apache2 -t with the installed module: $out"
grep -q "Syntax OK" <<<"$out" || fail "apache2 -t: $out"
echo "ok: installed $mod loads, libtxkit from $libdir"
