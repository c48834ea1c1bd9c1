#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `txkit stat` adds up the cache_tx.* application counters of all Apache
# children: two children, 200 requests from 4 parallel clients over 5 URLs,
# each response's X-Cache recorded. Oracle: the summed cache_tx.hits and
# cache_tx.misses equal the HIT and MISS responses counted by the clients,
# and both children publish the counters.
# usage: test_stat.sh BUILD_DIR SOURCE_DIR PORT MODE
. "$(dirname "$0")/lib.sh"
need_basics
TXKIT=$BUILD/tools/txkit
[ -x "$TXKIT" ] || skip "the txkit CLI was not built ($TXKIT)"
if [ "$(id -u)" -eq 0 ]; then
  command -v setpriv >/dev/null || skip "setpriv is needed to read www-data's statistics"
fi
for i in 0 1 2 3 4; do
  for k in $(seq 1 50); do echo "object $i line $k"; done >"$T/f$i.txt"
done
mkdir -p "$T/srv/htdocs"
cp "$T"/f*.txt "$T/srv/htdocs/"
touch -d '2020-01-01 00:00:00' "$T"/srv/htdocs/f*.txt
# The CLI runs as the children's user, who may not reach the build tree: a
# copy next to its library in the (world-readable) scratch directory.
mkdir -p "$T/cli"
cp "$TXKIT" "$T/cli/txkit"
cp -L "$BUILD/src/libtxkit.so.0" "$T/cli/" || fail "no $BUILD/src/libtxkit.so.0"
chmod -R a+rX "$T/cli"
TXKIT="env LD_LIBRARY_PATH=$T/cli $T/cli/txkit"
TXHTTPD_CHILDREN=2 start "$MODE" 4
parent=$(cat "$T/srv/httpd.pid")

for j in 1 2 3 4; do
  (
    for k in $(seq 1 50); do
      i=$(((k + j) % 5))
      curl -s --max-time 20 -D - -o /dev/null "$BASE/f$i.txt" | tr -d '\r' | awk '/^X-Cache:/ {print $2}'
    done >"$T/client$j"
  ) &
done
wait
cat "$T"/client* >"$T/all"
total=$(wc -l <"$T/all")
chits=$(grep -c '^HIT$' "$T/all" || true)
cmiss=$(grep -c '^MISS$' "$T/all" || true)
[ "$total" = 200 ] || fail "$total X-Cache headers for 200 requests"
[ $((chits + cmiss)) = 200 ] || fail "clients saw $chits HIT + $cmiss MISS, not 200"

# Our children: those with a statistics segment (not the cgid daemon).
segdir=$(as_server_user sh -c 'echo "${TXKIT_STATS_DIR:-/dev/shm/txkit-$(id -u)}"')
pids=""
for p in $(pgrep -P "$parent"); do
  as_server_user test -e "$segdir/$p.seg" && pids="$pids${pids:+,}$p"
done
[ -n "$pids" ] || fail "no statistics segment for any child of $parent in $segdir"
json=$(cd / && as_server_user $TXKIT stat -p "$pids" --json) || fail "txkit stat -p $pids failed: $json"
counter() {
  grep -o "\"name\":\"$1\",\"kind\":\"[a-z]*\",\"value\":[0-9-]*,\"processes\":[0-9]*" <<<"$json" |
    tail -n1 | sed -E 's/.*"value":([0-9-]+),"processes":([0-9]+)/\1 \2/'
}
read -r shits hprocs < <(counter cache_tx.hits) || fail "no cache_tx.hits in: $json"
read -r smiss mprocs < <(counter cache_tx.misses) || fail "no cache_tx.misses in: $json"
read -r sobj oprocs < <(counter cache_tx.objects) || fail "no cache_tx.objects in: $json"
echo "clients: $chits HIT, $cmiss MISS; txkit stat ($pids): hits=$shits misses=$smiss objects=$sobj over $hprocs processes"
[ "$hprocs" = 2 ] || fail "cache_tx.hits comes from $hprocs processes, expected the 2 children"
[ "$shits" = "$chits" ] || fail "txkit stat: cache_tx.hits $shits, clients saw $chits HITs"
[ "$smiss" = "$cmiss" ] || fail "txkit stat: cache_tx.misses $smiss, clients saw $cmiss MISSes"
# Each child caches each URL at most once: 5 to 10 objects in all.
[ "$sobj" -ge 5 ] && [ "$sobj" -le 10 ] || fail "cache_tx.objects $sobj, expected 5..10 over 2 children"
plain=$(cd / && as_server_user $TXKIT stat -p "$pids") || fail "txkit stat (plain) failed"
grep -q "cache_tx.hits" <<<"$plain" || fail "plain txkit stat does not list cache_tx.hits: $plain"
echo "ok: $MODE"
