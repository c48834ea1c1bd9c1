#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Debian's way of enabling a module: `make install-apache` (the install
# component apache2) puts mod_cache_tx.so in `apxs -q LIBEXECDIR` and
# cache_tx.load + cache_tx.conf in mods-available; then `a2enmod cache_tx`
# (which enables mod_cache too, "# Depends: cache") and `apachectl configtest`
# must pass, with the module loaded (apachectl -M).
# This installs into the system's Apache directories, so it runs as root only,
# one at a time (a lock), and puts everything back as it was: files it would
# replace are saved and restored, and the modules it enabled are disabled.
# libtxkit goes to a scratch prefix (cache_tx.load names it in a LoadFile).
# usage: test_a2enmod.sh BUILD_DIR
set -euo pipefail
BUILD=$1
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
for t in apache2 apxs a2enmod a2dismod apachectl; do
  command -v $t >/dev/null || skip "$t is not installed (Debian: apache2, apache2-dev)"
done
[ -f "$BUILD/cache/apache/mod_cache_tx.so" ] || skip "mod_cache_tx.so was not built"
[ "$(id -u)" -eq 0 ] || skip "installs into Apache's system directories: root only"
moddir=$(apxs -q LIBEXECDIR) confdir=$(apxs -q SYSCONFDIR)
[ -d "$moddir" ] && [ -d "$confdir/mods-available" ] || skip "no $moddir or $confdir/mods-available"
configured=$(sed -n 's/^TXKIT_APACHE_MODULEDIR:PATH=//p' "$BUILD/CMakeCache.txt")
[ "$configured" = "$moddir" ] || skip "the build installs modules into '$configured', not $moddir"
apachectl configtest >/dev/null 2>&1 || skip "apachectl configtest fails before anything is installed"

exec 9>/run/lock/txkit-test-a2enmod.lock
flock -w 50 9 || fail "another run holds /run/lock/txkit-test-a2enmod.lock"
T=$(mktemp -d /tmp/txkit-a2enmod.XXXXXX)
chmod 755 "$T"
files=("$moddir/mod_cache_tx.so" "$confdir/mods-available/cache_tx.load" "$confdir/mods-available/cache_tx.conf")
for i in "${!files[@]}"; do
  [ -e "${files[$i]}" ] && cp -a "${files[$i]}" "$T/saved.$i"
done
enabled_before=""
for m in cache cache_tx; do
  [ -e "$confdir/mods-enabled/$m.load" ] && enabled_before="$enabled_before $m"
done
restore() {
  local rc=$? i m
  set +e
  for m in cache_tx cache; do
    case " $enabled_before " in
      *" $m "*) ;;
      *) [ -e "$confdir/mods-enabled/$m.load" ] && a2dismod -q -f "$m" >/dev/null ;;
    esac
  done
  for i in "${!files[@]}"; do
    if [ -e "$T/saved.$i" ]; then cp -a "$T/saved.$i" "${files[$i]}"; else rm -f "${files[$i]}"; fi
  done
  rm -rf "$T"
  exit $rc
}
trap restore EXIT

cmake --install "$BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "cmake --install"; }
cmake --install "$BUILD" --prefix "$T/prefix" --component apache2 >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "cmake --install --component apache2"; }
for f in "${files[@]}"; do [ -f "$f" ] || fail "the apache2 component did not install $f"; done
grep -qx "LoadModule cache_tx_module $moddir/mod_cache_tx.so" "$confdir/mods-available/cache_tx.load" ||
  fail "cache_tx.load: $(cat "$confdir/mods-available/cache_tx.load")"
grep -q "^LoadFile $T/prefix/.*/libtxkit.so.0\$" "$confdir/mods-available/cache_tx.load" ||
  fail "cache_tx.load does not load the installed libtxkit: $(cat "$confdir/mods-available/cache_tx.load")"

out=$(a2enmod cache_tx 2>&1) || fail "a2enmod cache_tx: $out"
[ -L "$confdir/mods-enabled/cache_tx.load" ] && [ -L "$confdir/mods-enabled/cache_tx.conf" ] ||
  fail "a2enmod cache_tx did not link cache_tx.load and .conf: $out"
[ -e "$confdir/mods-enabled/cache.load" ] || fail "a2enmod cache_tx did not enable its dependency cache: $out"
out=$(apachectl configtest 2>&1) || fail "apachectl configtest after a2enmod cache_tx: $out"
grep -q "Syntax OK" <<<"$out" || fail "apachectl configtest: $out"
out=$(apachectl -M 2>&1) || fail "apachectl -M: $out"
grep -q 'cache_tx_module' <<<"$out" || fail "cache_tx_module is not among the loaded modules: $out"
echo "ok: a2enmod cache_tx && apachectl configtest (module $moddir/mod_cache_tx.so, libtxkit $T/prefix)"
