# SPDX-License-Identifier: MIT
# cache/tests/apache/lib.sh - helpers for the mod_cache_tx end-to-end tests.
# Sourced by the test scripts, which run as:  TEST BUILD_DIR SOURCE_DIR PORT [MODE]
# Each test starts its own Apache (cache/bench/apache/txhttpd.sh) in a scratch
# directory on its own port, and on exit stops it and checks that it shut
# down cleanly (no child killed by a signal, no process left behind).
set -euo pipefail

BUILD=$1 SRC=$2 PORT=$3 MODE=${4:-tx}
export TXKIT_BUILD=$BUILD
TXHTTPD=$SRC/cache/bench/apache/txhttpd.sh
BASE=http://127.0.0.1:$PORT
T=$(mktemp -d /tmp/txkit-apache-test.XXXXXX)
chmod 755 "$T" # the server runs as www-data when we are root
SERVER_PIDS=""
STARTED=0

skip() { echo "SKIP: $*"; exit 77; }
fail() {
  echo "FAIL: $*" >&2
  if [ -f "$T/srv/error.log" ]; then
    echo "--- error.log (last 30 lines)" >&2
    tail -n 30 "$T/srv/error.log" >&2
  fi
  exit 1
}

need_basics() {
  command -v apache2 >/dev/null || skip "apache2 is not installed (scripts/deps.sh test, or make test as root)"
  command -v apxs >/dev/null || skip "apxs is not installed (apache2-dev)"
  command -v curl >/dev/null || skip "curl is not installed"
  case "$MODE" in
    nocache|socache) ;;
    *) [ -f "$BUILD/cache/apache/mod_cache_tx.so" ] || skip "mod_cache_tx.so was not built" ;;
  esac
}
need_man2html() {
  [ -x /usr/lib/cgi-bin/man/man2html ] || skip "man2html is not installed"
  ls /usr/share/man/man1/ls.1* >/dev/null 2>&1 || skip "no man pages here (ls.1 is missing)"
}
need_wrk() { command -v wrk >/dev/null || skip "wrk is not installed"; }

# The statistics segments belong to the children's user.
as_server_user() {
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid=www-data --regid=www-data --clear-groups "$@"
  else
    "$@"
  fi
}

finish() {
  local rc=$?
  set +e
  if [ "$STARTED" -eq 1 ]; then
    "$TXHTTPD" stop "$T/srv" >/dev/null 2>&1
    local p left=""
    for p in $SERVER_PIDS; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
    if [ -n "$left" ]; then
      echo "FAIL: processes left after stop:$left" >&2
      kill -KILL $left 2>/dev/null
      rc=1
    fi
    if grep -E "exit signal|Segmentation|AH00060|AH00052|double free|corrupted" "$T/srv/error.log" >&2; then
      echo "FAIL: unclean shutdown (see the lines above)" >&2
      rc=1
    fi
  fi
  [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || { [ -f "$T/srv/error.log" ] && tail -n 20 "$T/srv/error.log" >&2; }
  rm -rf "$T"
  exit "$rc"
}
trap finish EXIT

# start MODE [THREADS]: start the server (fails the test if it does not start).
start() {
  mkdir -p "$T/srv"
  "$TXHTTPD" start "$T/srv" "$PORT" "$1" "${2:-4}" || fail "txhttpd.sh start $1 failed"
  STARTED=1
  local parent
  parent=$(cat "$T/srv/httpd.pid")
  SERVER_PIDS="$parent $(pgrep -P "$parent" | tr '\n' ' ')"
}

# get PATH [curl args...]: body to $T/body, headers to $T/head; prints the status.
get() {
  local path=$1
  shift
  curl -s --max-time 20 -D "$T/head" -o "$T/body" -w '%{http_code}' "$@" "$BASE$path"
}
xcache() { awk 'tolower($1) == "x-cache:" {print $2}' "$T/head" | tr -d '\r'; }

# status_field NAME: a TxCache* field of /server-status?auto (this child).
status_field() {
  curl -s --max-time 10 "$BASE/server-status?auto" | awk -F': ' -v k="$1" '$1 == k {print $2}' | tr -d '\r'
}

# expect_get PATH WANT_STATUS WANT_XCACHE [curl args...]: checks both.
expect_get() {
  local path=$1 want=$2 wantx=$3 code x
  shift 3
  code=$(get "$path" "$@")
  [ "$code" = "$want" ] || fail "GET $path: status $code, expected $want"
  x=$(xcache)
  [ -z "$wantx" ] || [ "$x" = "$wantx" ] || fail "GET $path: X-Cache '$x', expected $wantx"
}
