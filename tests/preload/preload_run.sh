#!/bin/sh
# SPDX-License-Identifier: MIT
# preload_run.sh TXKIT TEST_PRELOAD - `txkit run` puts libtxkit-preload.so in
# LD_PRELOAD (not with --no-elide), and the per-mutex statistics see the
# program's mutex: in the exit summary (--stats) and in a dump (txkit report).
set -u
txkit=$1
prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.out "$tmp"/*.err "$tmp"/*.txt; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }

unset LD_PRELOAD TXKIT_STATS

# the tests proper, preloaded by txkit run
"$txkit" run --stats -- "$prog" torture >"$tmp/torture.out" 2>"$tmp/torture.err" || fail "torture through txkit run"
# every acquisition of its two mutexes is counted (no RTM: all exclusive)
want=$(sed -n 's/.*counted \([0-9]*\), expected.*/\1/p' "$tmp/torture.out")
got=$(awk '$1 == "acquisitions" { gsub(",", "", $2); s += $2 } END { print s + 0 }' "$tmp/torture.err")
[ -n "$want" ] && [ "$got" = "$want" ] || fail "torture: statistics count $got acquisitions, the program $want"
echo "torture ok: $got acquisitions counted"
"$txkit" run -- "$prog" kinds >"$tmp/kinds.out" 2>&1 || fail "kinds through txkit run"

# exit summary: the mutex, named by the function that first locked it
"$txkit" run --stats -- "$prog" stats >"$tmp/stats.out" 2>"$tmp/stats.err" || fail "stats run"
grep -q '^txkit elided mutexes: ' "$tmp/stats.err" || fail "no elided-mutex summary"
addr=$(sed -n 's/^stats: mutex \(0x[0-9a-f]*\) locked.*/\1/p' "$tmp/stats.out")
[ -n "$addr" ] || fail "the program did not print its mutex"
grep -q "^  mutex $addr first locked at stats_lock_many+0x[0-9a-f]* (test_preload)" "$tmp/stats.err" ||
    fail "no summary line for mutex $addr at stats_lock_many"
grep -A1 "^  mutex $addr " "$tmp/stats.err" | grep -q 'acquisitions 1000, optimistic [0-9.]*%, exclusive [0-9.]*%' ||
    fail "mutex $addr: not 1000 acquisitions"
# one thread: every acquisition real, RTM or not (elide.c: lone_process; with
# RTM an elided section costs more than the lock when nobody contends)
grep -A1 "^  mutex $addr " "$tmp/stats.err" | grep -q 'optimistic 0.0%, exclusive 100.0%' ||
    fail "mutex $addr of a single-threaded program: not taken for real every time"
# ... and with threads, elided again where RTM works: torture's sections (real
# RTM only: the simulator, -DTXKIT_SIM_RTM=ON, elides no section of plain code)
"$txkit" info >"$tmp/info.txt" 2>&1
if grep -Eq '^rtm:[[:space:]]+yes' "$tmp/info.txt" && ! grep -q 'simulated' "$tmp/info.txt"; then
    awk '$1 == "acquisitions" && $3 == "optimistic" && $4 != "0.0%," { n++ } END { exit n ? 0 : 1 }' "$tmp/torture.err" ||
        fail "torture (threads, RTM): no mutex had an optimistic section"
    echo "threads with RTM: optimistic sections ok"
fi
# ... once: not again among the cx locks of the runtime's summary
[ "$(grep -c "$addr" "$tmp/stats.err")" = 1 ] || fail "mutex $addr listed more than once: $(cat "$tmp/stats.err")"
echo "exit summary ok: $(grep -A1 "^  mutex $addr " "$tmp/stats.err" | tr -s ' \n' ' ')"

# a dump, read by txkit report: a lock site with that address
"$txkit" run --stats="$tmp/dump.seg" -- "$prog" stats >"$tmp/dump.out" 2>"$tmp/dump.err" || fail "dump run"
addr=$(sed -n 's/^stats: mutex \(0x[0-9a-f]*\) locked.*/\1/p' "$tmp/dump.out")
"$txkit" report "$tmp/dump.seg" >"$tmp/report.txt" 2>&1 || fail "txkit report"
grep -q "lock $addr" "$tmp/report.txt" || fail "txkit report does not list lock $addr"
grep -A3 "lock $addr" "$tmp/report.txt" | grep -q 'of 1000 entries' || fail "report: not 1000 entries"
echo "dump ok"

# --no-elide: nothing preloaded
"$txkit" run --no-elide --stats -- "$prog" bench 1000 >"$tmp/noelide.out" 2>"$tmp/noelide.err" ||
    fail "--no-elide run"
grep -q '(plain)' "$tmp/noelide.out" || fail "--no-elide still preloaded the library"
grep -q 'elided mutexes' "$tmp/noelide.err" && fail "--no-elide printed an elided-mutex summary"
echo "--no-elide ok"
exit 0
