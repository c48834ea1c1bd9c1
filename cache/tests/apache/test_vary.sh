#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Vary: a CGI answers per Accept-Language (Vary: Accept-Language) with a body
# naming the language and a stamp unique to each run of the CGI. Each language
# gets its own stored variant: a HIT must return that language's body from
# its own MISS (same stamp), never another language's.
# usage: test_vary.sh BUILD_DIR SOURCE_DIR PORT MODE
. "$(dirname "$0")/lib.sh"
need_basics
start "$MODE"

cat >"$T/srv/cgi/lang.sh" <<'CGI'
#!/bin/sh
lang=${HTTP_ACCEPT_LANGUAGE:-none}
echo "Content-Type: text/plain"
echo "Cache-Control: max-age=3600"
echo "Vary: Accept-Language"
echo "Last-Modified: Thu, 01 Jan 2015 00:00:00 GMT"
echo
echo "lang=$lang stamp=$(date +%s%N)-$$"
i=0
while [ $i -lt 20 ]; do echo "filler line $i for $lang"; i=$((i + 1)); done
CGI
chmod 755 "$T/srv/cgi/lang.sh"

declare -A body
for l in en de fr; do
  expect_get /tcgi/lang.sh 200 MISS -H "Accept-Language: $l"
  head -n1 "$T/body" | grep -q "^lang=$l " || fail "$l: CGI answered $(head -n1 "$T/body")"
  body[$l]=$(cat "$T/body")
done
expect_get /tcgi/lang.sh 200 MISS
head -n1 "$T/body" | grep -q "^lang=none " || fail "no Accept-Language: CGI answered $(head -n1 "$T/body")"
body[none]=$(cat "$T/body")

for round in 1 2; do
  for l in fr en de none; do
    if [ "$l" = none ]; then
      expect_get /tcgi/lang.sh 200 HIT
    else
      expect_get /tcgi/lang.sh 200 HIT -H "Accept-Language: $l"
    fi
    [ "$(cat "$T/body")" = "${body[$l]}" ] ||
      fail "round $round, $l: HIT served '$(head -n1 "$T/body")', stored was '$(head -n1 <<<"${body[$l]}")'"
    grep -qi '^Vary: Accept-Language' "$T/head" || fail "$l: the HIT lost its Vary header"
  done
done
echo "ok: 4 variants stored and served by Accept-Language"

# A new language is a new variant (a MISS), the others stay cached.
expect_get /tcgi/lang.sh 200 MISS -H "Accept-Language: it"
expect_get /tcgi/lang.sh 200 HIT -H "Accept-Language: de"
[ "$(cat "$T/body")" = "${body[de]}" ] || fail "de changed after another variant was stored"
objects=$(status_field TxCacheObjects)
# 5 variants and the one marker that lists the Vary headers.
[ "$objects" = 6 ] || fail "TxCacheObjects '$objects', expected 6 (5 variants + 1 vary marker)"
echo "ok: $MODE"
