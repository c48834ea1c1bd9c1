#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages a make target needs, only those missing.
#   scripts/deps.sh build   the library: compiler, cmake, pkg-config
#   scripts/deps.sh test    + what the tests use: spin (model checks), apache2,
#                           apache2-dev (mod_cache_tx is built only when apxs is
#                           there at configure time), man2html, wrk, curl,
#                           groff-base and man-db (the manual pages),
#                           clang-format (docs.format), python3-matplotlib
#                           (bench.plot: the figures of every benchmark),
#                           libjemalloc2 and libtcmalloc-minimal4
#                           (preload.mallocs: programs with another malloc)
#   scripts/deps.sh demo    + python3-matplotlib (bench/plot.py, the figures)
#   scripts/deps.sh results + memcached, libmemcached-tools (memcaslap), pigz,
#                           xz-utils (bench/run-locks.sh, make results)
# As root it installs them with apt-get. Otherwise it names the missing ones
# and fails, unless --if-root is given: then it only names them and succeeds
# (`make test` as a user: the tests that need a missing tool skip, exit 77,
# and ctest lists them as "Not Run").
set -euo pipefail
mode=${1:-build}
if_root=0
[ "${2:-}" = --if-root ] && if_root=1
want=(build-essential cmake pkg-config)
case "$mode" in
  build) ;;
  test) want+=(spin apache2 apache2-dev man2html wrk curl groff-base man-db clang-format python3-matplotlib
               libjemalloc2 libtcmalloc-minimal4) ;;
  demo) want+=(spin apache2 apache2-dev man2html wrk curl groff-base man-db python3-matplotlib) ;;
  results) want+=(spin apache2 apache2-dev man2html wrk curl groff-base man-db python3-matplotlib
                  memcached libmemcached-tools pigz xz-utils) ;;
  *) echo "usage: $0 build|test|demo|results [--if-root]" >&2; exit 2 ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  if [ $if_root -eq 1 ]; then
    echo "txkit: not root, not installing: ${missing[*]}; the tests that need them will skip" \
         "(sudo apt-get install ${missing[*]} to run them)" >&2
    exit 0
  fi
  echo "txkit: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "txkit: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
