#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Malformed and hostile requests against cached URLs: bad methods, garbage
# request lines, huge headers, very long URLs, Range requests (206 with the
# right bytes from a cached entry), HEAD (never cached as a body for GET),
# conditional requests, POST (invalidates). Each is answered correctly, and
# afterwards a normal request is still a right HIT and no reference leaked.
# usage: test_hostile.sh BUILD_DIR SOURCE_DIR PORT MODE
. "$(dirname "$0")/lib.sh"
need_basics
start "$MODE"

for i in $(seq 1 300); do echo "line $i of the hostile test's file"; done >"$T/srv/htdocs/page.txt"
cp "$T/srv/htdocs/page.txt" "$T/srv/htdocs/head.txt"
touch -d '2020-01-01 00:00:00' "$T/srv/htdocs/page.txt" "$T/srv/htdocs/head.txt"
cat >"$T/srv/cgi/any.sh" <<'CGI'
#!/bin/sh
[ "$REQUEST_METHOD" = POST ] && cat >/dev/null
echo "Content-Type: text/plain"
echo "Cache-Control: max-age=3600"
echo
echo "any.sh answered $REQUEST_METHOD at $(date +%s%N)"
CGI
chmod 755 "$T/srv/cgi/any.sh"
full=$T/srv/htdocs/page.txt
size=$(wc -c <"$full")

expect_get /page.txt 200 MISS
expect_get /page.txt 200 HIT

# raw REQUEST: the status line of the answer to raw bytes.
raw() {
  timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$0; printf "%b" "$1" >&3; head -n1 <&3' "$PORT" "$1" |
    tr -d '\r' || true
}
expect_raw() {
  local req=$1 want=$2 line
  line=$(raw "$req")
  [[ $line =~ ^HTTP/1\.[01]\ ($want) ]] || fail "raw $(printf '%q' "$req" | cut -c1-60): answered '$line', expected $want"
}
expect_raw 'GARBAGE\r\n\r\n' 400
# HTTP/0.9: refused, or (HttpProtocolOptions Unsafe) the bare right body.
line=$(raw 'GET /page.txt\r\n\r\n')
[[ $line =~ ^HTTP/1\.[01]\ 400 ]] || [ "$line" = "$(head -n1 "$T/srv/htdocs/page.txt")" ] ||
  fail "HTTP/0.9 request: answered '$line'"
expect_raw 'GET /page.txt HTTP/1.1\r\n\r\n' 400 # no Host
expect_raw 'GET /../../etc/passwd HTTP/1.0\r\n\r\n' 400
expect_raw 'G\001T /page.txt HTTP/1.0\r\n\r\n' '400|501'
echo "ok: garbage request lines answered 4xx/5xx"

for m in FOO PROPFIND DELETE; do
  code=$(get /page.txt -X "$m")
  [[ $code =~ ^[45] ]] || fail "method $m on a cached URL: status $code"
  [ "$(xcache)" != HIT ] || fail "method $m was served from the cache"
done
echo "ok: bad methods refused, not served from the cache"

big=$(head -c 100000 /dev/zero | tr '\0' a)
code=$(get /page.txt -H "X-Big: $big")
[ "$code" = 400 ] || fail "a 100 KB header: status $code, expected 400"
hdrs=()
for i in $(seq 1 150); do hdrs+=(-H "X-Many-$i: $i"); done
code=$(get /page.txt "${hdrs[@]}")
[ "$code" = 400 ] || fail "150 headers: status $code, expected 400"
long=$(head -c 20000 /dev/zero | tr '\0' b)
code=$(get "/page.txt?$long")
[ "$code" = 414 ] || fail "a 20000-byte URL: status $code, expected 414"
code=$(get "/$long")
[ "$code" = 414 ] || fail "a 20000-byte path: status $code, expected 414"
echo "ok: huge headers 400, long URLs 414"

# Range requests are answered from the cached entry.
check_range() {
  local spec=$1 from=$2 count=$3
  code=$(get /page.txt -r "$spec")
  [ "$code" = 206 ] || fail "Range $spec: status $code, expected 206"
  [ "$(xcache)" = HIT ] || fail "Range $spec: X-Cache '$(xcache)', expected HIT"
  dd if="$full" of="$T/slice" bs=1 skip="$from" count="$count" status=none
  cmp -s "$T/slice" "$T/body" || fail "Range $spec: wrong bytes"
}
check_range 100-199 100 100
check_range 0-0 0 1
check_range -50 $((size - 50)) 50
check_range "$((size - 10))-" $((size - 10)) 10
code=$(get /page.txt -r 0-9,20-29)
[ "$code" = 206 ] || fail "two ranges: status $code"
grep -q "multipart/byteranges" "$T/head" || fail "two ranges: not multipart/byteranges"
grep -q "$(head -c 10 "$full")" "$T/body" || fail "two ranges: the first part is missing"
code=$(get /page.txt -r "$((size + 100))-")
[ "$code" = 416 ] || fail "an unsatisfiable range: status $code, expected 416"
echo "ok: ranges served from the cached entry"

# HEAD on a cached URL: headers only. HEAD first on another URL: the GET
# after it must get the whole body, not an empty cached one.
timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$0; printf "HEAD /page.txt HTTP/1.0\r\n\r\n" >&3; cat <&3' \
  "$PORT" >"$T/headraw" || true
head -n1 "$T/headraw" | grep -q '^HTTP/1.1 200' || fail "HEAD: answered '$(head -n1 "$T/headraw")'"
grep -q '^X-Cache: HIT' "$T/headraw" || fail "HEAD of a cached URL: not a HIT"
grep -q "^Content-Length: $size" "$T/headraw" || fail "HEAD: no Content-Length $size"
[ "$(tail -c 4 "$T/headraw" | od -An -c | tr -d ' ')" = '\r\n\r\n' ] || fail "HEAD: a body came back"
curl -s --max-time 10 -I -o /dev/null "$BASE/head.txt"
code=$(get /head.txt)
[ "$code" = 200 ] || fail "GET after HEAD: status $code"
cmp -s "$T/body" "$T/srv/htdocs/head.txt" || fail "GET after HEAD: wrong body ($(wc -c <"$T/body") bytes, $(xcache))"
expect_get /head.txt 200 HIT
cmp -s "$T/body" "$T/srv/htdocs/head.txt" || fail "HIT after HEAD: wrong body"
echo "ok: HEAD"

# Conditional requests against the cached entry.
etag=$(grep -i '^ETag:' "$T/head" | cut -d' ' -f2- | tr -d '\r')
[ -n "$etag" ] || fail "no ETag on /head.txt"
code=$(get /head.txt -H "If-None-Match: $etag")
[ "$code" = 304 ] || fail "If-None-Match with the ETag: status $code, expected 304"
code=$(get /head.txt -H 'If-None-Match: "nope"')
[ "$code" = 200 ] || fail "If-None-Match with another ETag: status $code"
cmp -s "$T/body" "$T/srv/htdocs/head.txt" || fail "If-None-Match miss: wrong body"
echo "ok: conditional requests"

# POST invalidates the cached entity (RFC 7234 4.4).
expect_get /tcgi/any.sh 200 MISS
cp "$T/body" "$T/any1"
expect_get /tcgi/any.sh 200 HIT
cmp -s "$T/any1" "$T/body" || fail "any.sh: HIT body differs"
code=$(get /tcgi/any.sh -d 'x=1')
[ "$code" = 200 ] || fail "POST: status $code"
grep -q "answered POST" "$T/body" || fail "POST was not passed to the CGI: $(cat "$T/body")"
expect_get /tcgi/any.sh 200 MISS
cmp -s "$T/any1" "$T/body" && fail "GET after POST: the invalidated body was served"
expect_get /tcgi/any.sh 200 HIT
echo "ok: POST invalidates"

# After all that: a normal request is a right HIT; nothing leaked.
expect_get /page.txt 200 HIT
cmp -s "$T/body" "$full" || fail "the final HIT has the wrong body"
if [ "$MODE" != socache ]; then
  objects=$(status_field TxCacheObjects)
  live=$(status_field TxCacheLiveEntries)
  [ "$live" = "$objects" ] || fail "$live live entries for $objects cached objects: a reference leaked"
fi
echo "ok: $MODE"
