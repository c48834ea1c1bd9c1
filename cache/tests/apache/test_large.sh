#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Objects above TxCacheMaxObjectSize (64K here) pass through uncached: a
# static file (length known: create_entity declines) and a CGI that streams
# its body with no length (the store gives up past the limit, mid-body).
# Both are served whole every time and never HIT; a small object next to
# them still is a HIT; the TooLarge count says why.
# usage: test_large.sh BUILD_DIR SOURCE_DIR PORT MODE
. "$(dirname "$0")/lib.sh"
need_basics
export TXHTTPD_MAX_OBJECT=65536
start "$MODE"

seq 1 40000 >"$T/srv/htdocs/big.txt" # about 200 KB
touch -d '2020-01-01 00:00:00' "$T/srv/htdocs/big.txt"
cat >"$T/srv/cgi/big.sh" <<'CGI'
#!/bin/sh
echo "Content-Type: text/plain"
echo "Cache-Control: max-age=3600"
echo
seq 1 40000
CGI
chmod 755 "$T/srv/cgi/big.sh"
seq 1 40000 >"$T/expect"
echo "small" >"$T/srv/htdocs/small.txt"
touch -d '2020-01-01 00:00:00' "$T/srv/htdocs/small.txt"

for path in /big.txt /tcgi/big.sh; do
  for i in 1 2 3; do
    code=$(get "$path")
    [ "$code" = 200 ] || fail "$path (#$i): status $code"
    cmp -s "$T/body" "$T/expect" || fail "$path (#$i): body is not the whole object ($(wc -c <"$T/body") bytes)"
    [ "$(xcache)" != HIT ] || fail "$path (#$i): an object above TxCacheMaxObjectSize was a HIT"
  done
  echo "ok: $path served whole 3 times, never from the cache"
done
expect_get /small.txt 200 MISS
expect_get /small.txt 200 HIT
[ "$(cat "$T/body")" = small ] || fail "/small.txt: wrong body"

toolarge=$(status_field TxCacheTooLarge)
objects=$(status_field TxCacheObjects)
live=$(status_field TxCacheLiveEntries)
echo "server-status: too_large=$toolarge objects=$objects live=$live"
[ "$toolarge" -ge 6 ] || fail "TxCacheTooLarge is '$toolarge', expected at least 6"
[ "$objects" = 1 ] || fail "TxCacheObjects '$objects', expected 1 (only small.txt)"
[ "$live" = 1 ] || fail "TxCacheLiveEntries '$live': an abandoned store leaked"
echo "ok: $MODE"
