#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Lifecycle: a graceful restart gives new children with new, empty caches
# (child_init after fork; post_config checks again); a stop while requests
# are in flight is clean: no child killed by a signal in the error log, no
# process left, the port closed, and a second stop is a no-op.
# usage: test_shutdown.sh BUILD_DIR SOURCE_DIR PORT MODE
. "$(dirname "$0")/lib.sh"
need_basics
for i in $(seq 1 400); do echo "shutdown test line $i"; done >"$T/page.txt"
mkdir -p "$T/srv/htdocs"
cp "$T/page.txt" "$T/srv/htdocs/page.txt"
touch -d '2020-01-01 00:00:00' "$T/srv/htdocs/page.txt"
start "$MODE"
parent=$(cat "$T/srv/httpd.pid")

expect_get /page.txt 200 MISS
expect_get /page.txt 200 HIT
old_child=$(status_field TxCachePid)

apache2 -f "$T/srv/httpd.conf" -k graceful || fail "graceful restart failed"
# Wait for the new generation to answer from a new child.
new_child=$old_child
for i in $(seq 1 100); do
  new_child=$(status_field TxCachePid || true)
  [ -n "$new_child" ] && [ "$new_child" != "$old_child" ] && break
  sleep 0.1
done
[ "$new_child" != "$old_child" ] || fail "no new child after the graceful restart"
[ "$(cat "$T/srv/httpd.pid")" = "$parent" ] || fail "the parent changed on a graceful restart"
SERVER_PIDS="$SERVER_PIDS $(pgrep -P "$parent" | tr '\n' ' ')"
expect_get /page.txt 200 MISS # a new child, a new cache
expect_get /page.txt 200 HIT
cmp -s "$T/body" "$T/page.txt" || fail "wrong body after the restart"
[ "$(status_field TxCacheObjects)" = 1 ] || fail "the new child's cache holds $(status_field TxCacheObjects) objects"
echo "ok: graceful restart: new child $new_child (was $old_child), fresh cache"

# Stop under load: clients in flight while the server goes.
for j in 1 2 3 4; do
  (for k in $(seq 1 200); do curl -s -o /dev/null --max-time 5 "$BASE/page.txt" || true; done) &
done
sleep 0.7
SERVER_PIDS="$SERVER_PIDS $(pgrep -P "$parent" | tr '\n' ' ')"
"$TXHTTPD" stop "$T/srv" || fail "stop failed"
wait
for p in $SERVER_PIDS; do
  kill -0 "$p" 2>/dev/null && fail "process $p is still alive after stop"
done
curl -s -o /dev/null --max-time 2 "$BASE/" && fail "something still answers on port $PORT"
"$TXHTTPD" stop "$T/srv" || fail "a second stop failed"
grep -q "shutting down gracefully" "$T/srv/error.log" || fail "no graceful shutdown in the error log"
echo "ok: stopped under load, cleanly ($MODE)"
