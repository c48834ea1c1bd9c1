#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A burst of concurrent requests (wrk, 16 connections, 3 s) over 40 files
# into a cache limited to 12 objects, so that entries are replaced and
# evicted while other threads serve them; meanwhile a slow client reads an
# 8 MB cached object that the burst evicts. Oracle: every body is checked
# by the wrk script (right file, right length, right bytes); no errors or
# non-2xx; afterwards no entry is referenced by anyone but the cache (live
# entries == objects), the limits hold, and every file is still served right.
# usage: test_burst.sh BUILD_DIR SOURCE_DIR PORT MODE
. "$(dirname "$0")/lib.sh"
need_basics
need_wrk
N=40
export TXHTTPD_EXTRA="TxCacheMaxObjects 12
TxCacheMaxBytes 16M
TxCacheMaxObjectSize 12M"
[ "$MODE" = socache ] && export TXHTTPD_EXTRA=""
mkdir -p "$T/srv/htdocs/b"
for i in $(seq 0 $((N - 1))); do
  len=$((100 + (i * 7919) % 60000))
  head="FILE $i $len"
  c=$(printf "\\$(printf '%03o' $((97 + i % 26)))")
  { echo "$head"; head -c $((len - ${#head} - 1)) /dev/zero | tr '\0' "$c"; } >"$T/srv/htdocs/b/$i.txt"
  touch -d '2020-01-01 00:00:00' "$T/srv/htdocs/b/$i.txt"
done
# A big object, read slowly while the burst evicts it: the response keeps
# its entry alive (zero-copy buckets hold a reference) until it is sent.
head -c $((8 << 20)) /dev/urandom >"$T/srv/htdocs/big.bin"
touch -d '2020-01-01 00:00:00' "$T/srv/htdocs/big.bin"
chmod -R a+rX "$T/srv/htdocs"
start "$MODE" 4
if [ "$MODE" != socache ]; then
  expect_get /big.bin 200 MISS
  curl -s --max-time 30 --limit-rate 3M -D "$T/slowhead" -o "$T/slowbody" "$BASE/big.bin" &
  slow=$!
  # The burst starts once the slow response is under way (its headers are
  # in): GDSF would otherwise evict the big object before it is looked up.
  for i in $(seq 1 100); do
    grep -q '^X-Cache' "$T/slowhead" 2>/dev/null && break
    sleep 0.05
  done
fi

wrk -t2 -c16 -d3s --timeout 10s -s "$(dirname "$0")/burst.lua" "$BASE/" -- "$N" >"$T/wrk.out" 2>&1 ||
  { cat "$T/wrk.out"; fail "wrk failed"; }
cat "$T/wrk.out"
grep -q "Non-2xx or 3xx" "$T/wrk.out" && fail "non-2xx responses in the burst"
grep -q "Socket errors" "$T/wrk.out" && fail "socket errors in the burst"
oracle=$(grep '^ORACLE' "$T/wrk.out") || fail "the wrk script printed no result"
read -r ok bad hits < <(sed -E 's/ORACLE ok=([0-9]+) bad=([0-9]+) hits=([0-9]+)/\1 \2 \3/' <<<"$oracle")
[ "$bad" = 0 ] || fail "$bad wrong bodies under concurrency ($ok right)"
[ "$ok" -ge 100 ] || fail "only $ok requests completed in 3 s"
[ "$hits" -gt 0 ] || fail "no HIT during the burst"
echo "ok: $ok requests, $hits hits, every body right"

if [ "$MODE" != socache ]; then
  wait "$slow" || fail "the slow download of big.bin failed"
  grep -q '^X-Cache: HIT' "$T/slowhead" || fail "the slow download of big.bin was not a HIT"
  cmp -s "$T/slowbody" "$T/srv/htdocs/big.bin" || fail "big.bin, evicted while being sent, arrived corrupted"
  # It was evicted during the burst (so it was sent from an evicted entry).
  expect_get /big.bin 200 MISS
  cmp -s "$T/body" "$T/srv/htdocs/big.bin" || fail "big.bin after the burst: wrong body"
  echo "ok: big.bin served whole from an entry evicted meanwhile"
fi

# Every file is still served right (whether cached or not).
for i in $(seq 0 $((N - 1))); do
  code=$(get "/b/$i.txt")
  [ "$code" = 200 ] || fail "/b/$i.txt after the burst: status $code"
  cmp -s "$T/body" "$T/srv/htdocs/b/$i.txt" || fail "/b/$i.txt after the burst: wrong body ($(xcache))"
done

[ "$MODE" = socache ] && exit 0
objects=$(status_field TxCacheObjects)
bytes=$(status_field TxCacheBytes)
live=$(status_field TxCacheLiveEntries)
evictions=$(status_field TxCacheEvictions)
aborts=$(status_field TxCacheTxAborts)
commits=$(status_field TxCacheTxCommits)
echo "after: objects=$objects bytes=$bytes live=$live evictions=$evictions txkit commits=$commits aborts=$aborts"
[ "$objects" -le 12 ] || fail "$objects objects cached, TxCacheMaxObjects is 12"
[ "$bytes" -le $((16 << 20)) ] || fail "$bytes bytes cached, TxCacheMaxBytes is 16M"
[ "$evictions" -gt 0 ] || fail "no evictions: the burst did not exercise them"
[ "$live" = "$objects" ] || fail "$live live entries for $objects cached objects: a reference leaked"
echo "ok: $MODE"
