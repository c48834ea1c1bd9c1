#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A bad TxCache* value stops the server at start with a message naming the
# directive: bad syntax (at parse time) and inconsistent combinations (in
# post_config). Nothing is left running; a good value then starts fine.
# usage: test_badconf.sh BUILD_DIR SOURCE_DIR PORT [MODE]
. "$(dirname "$0")/lib.sh"
need_basics

try_bad() {
  local directive=$1 extra=$2 out
  mkdir -p "$T/srv"
  if out=$(TXHTTPD_EXTRA="$extra" TXHTTPD_TIMEOUT=5 "$TXHTTPD" start "$T/srv" "$PORT" tx 2>&1); then
    STARTED=1
    fail "'$extra' did not stop the server"
  fi
  grep -q "$directive" <<<"$out" || fail "'$extra': the message does not name $directive: $out"
  if [ -f "$T/srv/httpd.pid" ] && kill -0 "$(cat "$T/srv/httpd.pid")" 2>/dev/null; then
    fail "'$extra': a server is still running"
  fi
  if curl -s -o /dev/null --max-time 2 "$BASE/"; then
    fail "'$extra': something answers on port $PORT"
  fi
  echo "ok: '$(tr '\n' ';' <<<"$extra")' -> $(grep -m1 "$directive" <<<"$out" | sed 's/.*\] //' | cut -c1-120)"
}

try_bad TxCacheSync "TxCacheSync bogus"
try_bad TxCacheSync "TxCacheSync"
try_bad TxCacheRemovalAlgorithm "TxCacheRemovalAlgorithm FIFO"
try_bad TxCacheMaxObjects "TxCacheMaxObjects -5"
try_bad TxCacheMaxObjects "TxCacheMaxObjects 10K"
try_bad TxCacheMaxBytes "TxCacheMaxBytes 12X"
try_bad TxCacheMaxBytes "TxCacheMaxBytes 99999999999999999999"
try_bad TxCacheMaxObjectSize "TxCacheMaxObjectSize lots"
try_bad TxCacheMinObjectSize "TxCacheMinObjectSize 2M"
try_bad TxCacheMaxBytes "TxCacheMaxBytes 64K"
try_bad TxCacheSync "<VirtualHost 127.0.0.1:$PORT>
TxCacheSync cx
</VirtualHost>"

# Good values with suffixes start.
start_extra="TxCacheMaxBytes 2G
TxCacheMaxObjects 5000
TxCacheMinObjectSize 0
TxCacheMaxObjectSize 1m
TxCacheRemovalAlgorithm lru"
TXHTTPD_EXTRA="$start_extra" start tx
[ "$(status_field TxCacheMaxBytes)" = 2147483648 ] || fail "TxCacheMaxBytes 2G read as $(status_field TxCacheMaxBytes)"
[ "$(status_field TxCacheMaxObjectSize)" = 1048576 ] || fail "TxCacheMaxObjectSize 1m read as $(status_field TxCacheMaxObjectSize)"
[ "$(status_field TxCachePolicy)" = LRU ] || fail "TxCacheRemovalAlgorithm lru read as $(status_field TxCachePolicy)"
echo "ok: good values accepted"
