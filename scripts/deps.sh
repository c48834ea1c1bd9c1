#!/usr/bin/env bash
# Install the Debian packages txkit needs, only those missing.
#   scripts/deps.sh build      compiler, cmake, pkg-config, spin (model check),
#                              Apache + apache2-dev, man2html, wrk, curl (mod_cache_tx)
#   scripts/deps.sh demo       + gnuplot (PNG plots of the benchmarks)
set -euo pipefail
want=(build-essential cmake pkg-config spin apache2 apache2-dev man2html wrk curl)
case "${1:-build}" in
  build) ;;
  demo) want+=(gnuplot-nox) ;;
  *) echo "usage: $0 build|demo" >&2; exit 2 ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "txkit: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "txkit: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
