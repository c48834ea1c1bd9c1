#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MISS, then HIT with the identical body: a man2html page (CGI output of
# unknown length) and a static file; /server-status reports the cache's
# numbers. In tx modes the txkit transaction counts show who ran the
# transactions: txkit (commits > 0), or GCC's libitm (tx-libitm: none).
# usage: test_hit.sh BUILD_DIR SOURCE_DIR PORT MODE
. "$(dirname "$0")/lib.sh"
need_basics
need_man2html
start "$MODE"

check_url() {
  local path=$1
  if [ "$MODE" = nocache ]; then
    # No cache: every answer comes from the origin, with no X-Cache.
    for i in 1 2; do
      expect_get "$path" 200 ""
      [ -z "$(xcache)" ] || fail "$path: X-Cache '$(xcache)' without a cache"
    done
    cp "$T/body" "$T/first"
    echo "ok: $path served uncached"
    return
  fi
  expect_get "$path" 200 MISS
  cp "$T/body" "$T/first"
  [ -s "$T/first" ] || fail "$path: empty body"
  for i in 1 2 3; do
    expect_get "$path" 200 HIT
    cmp -s "$T/first" "$T/body" || fail "$path: HIT body differs from the MISS body"
  done
  # The body the origin would send, without the cache.
  echo "ok: $path MISS then HIT, $(wc -c <"$T/first") bytes"
}

check_url "/cgi-bin/man/man2html?1+ls"
grep -q "Man page of LS" "$T/first" || fail "man2html answered something else: $(head -c 200 "$T/first")"
printf 'static file %s\n' "$(date +%s%N)" >"$T/srv/htdocs/static.txt"
for i in $(seq 1 200); do echo "line $i of a static file for the hit test"; done >>"$T/srv/htdocs/static.txt"
# Old enough that mod_cache's heuristic expiry (10% of its age) keeps it fresh.
touch -d '2020-01-01 00:00:00' "$T/srv/htdocs/static.txt"
check_url "/static.txt"
cmp -s "$T/first" "$T/srv/htdocs/static.txt" || fail "static.txt: served body differs from the file"

# Revalidation: a file modified 2 s ago expires after 0.2 s (10% of its
# age); the next request asks the origin, gets a 304, and the provider
# replaces the entry with one carrying the new headers and the same body.
# (Not younger: Apache's ETag of a file changed within the second is weak and
# turns strong later, which mod_cache takes for a different entity.)
[ "$MODE" = nocache ] && exit 0
cp "$T/srv/htdocs/static.txt" "$T/srv/htdocs/fresh.txt"
touch -d "@$(($(date +%s) - 2))" "$T/srv/htdocs/fresh.txt"
expect_get /fresh.txt 200 MISS
cp "$T/body" "$T/fresh"
sleep 1.2
code=$(get /fresh.txt)
[ "$code" = 200 ] || fail "/fresh.txt after expiry: status $code"
[ "$(xcache)" = REVALIDATE ] || fail "/fresh.txt after expiry: X-Cache '$(xcache)', expected REVALIDATE"
cmp -s "$T/fresh" "$T/body" || fail "/fresh.txt: revalidated body differs"
echo "ok: /fresh.txt revalidated with the same body"

case "$MODE" in
  socache|nocache) exit 0 ;;
esac

hits=$(status_field TxCacheHits)
objects=$(status_field TxCacheObjects)
sync=$(status_field TxCacheSync)
live=$(status_field TxCacheLiveEntries)
commits=$(status_field TxCacheTxCommits)
echo "server-status: sync=$sync hits=$hits objects=$objects live=$live txkit commits=$commits"
[ "$hits" = 6 ] || fail "/server-status: TxCacheHits '$hits', expected 6"
[ "$objects" = 3 ] || fail "/server-status: TxCacheObjects '$objects', expected 3"
reval=$(status_field TxCacheRevalidations)
[ "$reval" = 1 ] || fail "/server-status: TxCacheRevalidations '$reval', expected 1"
# Every request is over: only the cache holds entries.
[ "$live" = "$objects" ] || fail "/server-status: $live live entries for $objects cached objects (a leaked reference?)"
curl -s "$BASE/server-status" | grep -q "mod_cache_tx" || fail "/server-status (HTML) has no mod_cache_tx section"

case "$MODE" in
  lock|lock-preload) want_sync=lock ;;
  cx) want_sync=cx ;;
  *) want_sync=tx ;;
esac
[ "$sync" = "$want_sync" ] || fail "TxCacheSync is '$sync', expected $want_sync"
case "$MODE" in
  tx|tx-stm|tx-htm) [ "${commits:-0}" -gt 0 ] || fail "$MODE: no txkit transaction committed" ;;
  tx-libitm) [ "$commits" = 0 ] || fail "tx-libitm: txkit counted $commits commits: libitm does not run the transactions" ;;
esac
echo "ok: $MODE"
