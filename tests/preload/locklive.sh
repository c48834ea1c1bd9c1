#!/bin/sh
# SPDX-License-Identifier: MIT
# locklive.sh TXKIT LOCKREPORT_PROG - the live lock report: `txkit stat
# --sites` shows the locks of a program running under `txkit run --report`
# (its table published in the statistics directory) with the counts the
# program took, names and sites; with INTERVAL, each period's counts; the
# table's file goes when the program exits (the report at exit still comes),
# and a killed program's file is removed by the next reader.
set -u
txkit=$1
prog=$2
tmp=$(mktemp -d) || exit 1
pids=""
trap 'touch "$tmp/go"; for p in $pids; do kill -9 $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.txt "$tmp"/*.out; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
unset LD_PRELOAD TXKIT_LOCK_REPORT
export TXKIT_RTM=off TXKIT_LOCK_SAMPLE=1 # locks taken for real, counted exactly
export TXKIT_STATS_DIR="$tmp/stats"

# wait_for FILE PATTERN: up to 30 s for PATTERN in FILE
wait_for() {
    i=0
    while ! grep -q "$2" "$1" 2>/dev/null; do
        i=$((i + 1))
        [ $i -le 300 ] || fail "timed out waiting for '$2' in $1"
        sleep 0.1
    done
}

LINGER="$tmp/go" "$txkit" run --report="$tmp/exit.txt" -- "$prog" 2 >"$tmp/prog.out" 2>&1 &
pids="$!"
wait_for "$tmp/prog.out" '^counter '
pid=$(ls "$tmp/stats" | sed -n 's/^\([0-9]*\)\.locks$/\1/p' | head -n 1)
[ -n "$pid" ] || fail "no live table (<pid>.locks) in TXKIT_STATS_DIR: $(ls "$tmp/stats")"
expect() { sed -n "s/^expect $1 0x[0-9a-f]* \([0-9]*\)/\1/p" "$tmp/prog.out"; }
col() { awk -v l="$1" -v c="$2" '$2 == l && $1 ~ /^[0-9]+$/ { print $c; exit }' "$3"; }

"$txkit" stat --sites -p "$pid" >"$tmp/live.txt" 2>&1 || fail "txkit stat --sites -p $pid: exit $?"
grep -q "^txkit lock report: .*lockreport_prog (pid $pid; live, since it started)" "$tmp/live.txt" ||
    fail "no live lock report titled for pid $pid"
[ "$(col hot_mutex 4 "$tmp/live.txt")" = "$(expect hot_mutex)" ] ||
    fail "live: hot_mutex $(col hot_mutex 4 "$tmp/live.txt") acquired, the program took $(expect hot_mutex)"
[ "$(col spin 4 "$tmp/live.txt")" = "$(expect spin)" ] || fail "live: spinlock count"
grep -q "^ *at hot_path+0x[0-9a-f]* (lockreport_prog)" "$tmp/live.txt" || fail "live: no site line for hot_path()"
grep -q "^ *waited for from wrapped_path+0x[0-9a-f]* (lockreport_prog)" "$tmp/live.txt" ||
    fail "live: the wait through the wrapper is not attributed"
# JSON: the same report as "lock_reports" of the document (one line)
"$txkit" stat --sites --json -p "$pid" >"$tmp/live.json" 2>&1 || fail "txkit stat --sites --json: exit $?"
[ "$(wc -l <"$tmp/live.json")" = 1 ] || fail "--json: not one line"
grep -q "\"lock_reports\":\[{\"pid\":$pid,\"exe\":\"[^\"]*lockreport_prog\",\"period\":\"live, since it started\"" "$tmp/live.json" ||
    fail "--json: no lock_reports entry for pid $pid"
grep -q "\"name\":\"hot_mutex\",\"kind\":\"mutex\",\"acquired\":$(expect hot_mutex)," "$tmp/live.json" ||
    fail "--json: hot_mutex's count"
grep -q '"symbol":"hot_path+0x[0-9a-f]*","object":"lockreport_prog"' "$tmp/live.json" || fail "--json: hot_path's site"
# --top limits the locks shown
"$txkit" stat --sites --top 1 -p "$pid" >"$tmp/top1.txt" 2>&1 || fail "--top 1: exit $?"
n=$(awk '/^txkit lock report/ { f = 1 } f && $1 ~ /^[0-9]+$/ && NF > 8 { n++ } END { print n + 0 }' "$tmp/top1.txt")
[ "$n" = 1 ] || fail "--top 1 showed $n locks"
# another process selected: none of this one's locks
"$txkit" stat --sites -p 1 >"$tmp/other.txt" 2>&1
grep -q "^txkit lock report" "$tmp/other.txt" && fail "-p 1 showed pid $pid's locks"
# interval reports: the period's counts (the program is idle now)
"$txkit" stat --sites -p "$pid" 0.2 2 >"$tmp/interval.txt" 2>&1 || fail "txkit stat --sites 0.2 2: exit $?"
grep -q "(pid $pid; live, since it started)" "$tmp/interval.txt" || fail "interval: the first report is not the totals"
# the label gives the interval as measured: past 1 s when the machine is loaded
grep -q "(pid $pid; live, the last [0-9][0-9.]* s): no lock taken" "$tmp/interval.txt" ||
    fail "interval: the second report does not show an idle period"
echo "live report ok"

# exit: the table's file goes, the report at exit comes
touch "$tmp/go"
wait $pids || fail "the program under txkit run exited $?"
pids=""
[ -e "$tmp/stats/$pid.locks" ] && fail "$pid.locks left after the program exited"
[ "$(col hot_mutex 4 "$tmp/exit.txt")" = "$(expect hot_mutex)" ] || fail "the report at exit lost its counts"

# killed: the next reader removes the dead program's table
rm -f "$tmp/go" "$tmp/prog.out"
LINGER="$tmp/go" "$txkit" run --report="$tmp/killed.txt" -- "$prog" 1 >"$tmp/prog.out" 2>&1 &
pids="$!"
wait_for "$tmp/prog.out" '^counter '
pid=$(ls "$tmp/stats" | sed -n 's/^\([0-9]*\)\.locks$/\1/p' | head -n 1)
[ -n "$pid" ] || fail "no live table for the second program"
kill -9 "$pid"
i=0
while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
"$txkit" stat --sites -p "$pid" >"$tmp/dead.txt" 2>&1
grep -q "^txkit lock report" "$tmp/dead.txt" && fail "a killed program's table was reported"
[ -e "$tmp/stats/$pid.locks" ] && fail "a killed program's table was not removed"
wait $pids 2>/dev/null
pids=""
echo "PASS [preload.lockreport.live]"
