#!/bin/sh
# SPDX-License-Identifier: MIT
# many_threads.sh TXKIT MANY_THREADS - 200 threads (more than the statistics
# segment's 126 thread slots), 5000 mutexes (more than the elision table and
# the site table), 300 transaction sites (more than the site table), all
# under `txkit run`: the program succeeds, its own checks of tx_stats_get()
# pass, `txkit stat` sees every thread and exact totals while they are all
# alive, and the exit summary counts every acquisition of the shared mutex
# and says how many threads shared a statistics slot.
set -u
txkit=$1
prog=$2
threads=200 rounds=2000
tmp=$(mktemp -d) || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.out "$tmp"/*.err "$tmp"/*.json; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
unset LD_PRELOAD TXKIT_STATS
export TXKIT_STATS_DIR="$tmp/stats"

"$txkit" run --stats -- "$prog" $threads $rounds "$tmp/go" >"$tmp/prog.out" 2>"$tmp/prog.err" &
pid=$!
i=0
until grep -q '^ready' "$tmp/prog.out" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; fail "the program died (exit $?) before its checks were done"; }
    i=$((i + 1))
    [ $i -lt 1000 ] || fail "not ready after 50 s"
    sleep 0.05
done
want=$((threads * rounds))

# every thread alive: txkit stat sees them all, the totals are exact
if command -v python3 >/dev/null 2>&1; then
    "$txkit" stat --json >"$tmp/stat.json" 2>"$tmp/stat.err" || fail "txkit stat"
    python3 - "$tmp/stat.json" "$pid" "$threads" "$want" <<'PY' || fail "txkit stat --json disagrees"
import json, sys
d = json.load(open(sys.argv[1]))
pid, threads, want = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
p = [p for p in d["processes"] if p["pid"] == pid]
assert len(p) == 1, d["processes"]
p = p[0]
assert p["threads"] >= threads, ("threads", p["threads"])
assert p["shared_slot_threads"] >= threads - 126, ("shared_slot_threads", p["shared_slot_threads"])
assert p["transactions"] == want and p["commits"] == want, (p["transactions"], p["commits"], want)
print("txkit stat: %d threads (%d in the shared slot), %d commits" % (p["threads"], p["shared_slot_threads"], p["commits"]))
PY
else
    echo "(no python3: txkit stat --json not checked)"
fi
: >"$tmp/go"
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] || fail "the program exited $rc"
grep -q '^ok$' "$tmp/prog.out" || fail "the program did not finish its checks"

# the exit summary: all transactions, the threads that shared a slot, and
# every acquisition of the shared mutex (the workers' and main's one)
grep -q "statistics: [0-9]* threads, $want transactions" "$tmp/prog.err" || fail "summary: not $want transactions"
grep -q "^  commits  *$want " "$tmp/prog.err" || fail "summary: not $want commits"
grep -q "threads counted together in the shared statistics slot" "$tmp/prog.err" || fail "summary: no shared-slot line"
grep -q "acquisitions $((want + 1))," "$tmp/prog.err" || fail "summary: the shared mutex is not counted $((want + 1)) times"
grep -q "more than 127 threads" "$tmp/prog.err" && fail "the old limit message"
# the cx sections past the site table count in "(other locks)", and the exit
# summary says so (it skipped that line, taking its key 0 for a mutex's)
grep -q "^    (other locks): [1-9][0-9]* sections" "$tmp/prog.err" || fail "summary: no (other locks) line"

# a dump (TXKIT_STATS=FILE) holds the shared slot's counts too
"$txkit" run --stats="$tmp/dump.seg" -- "$prog" $threads $rounds >"$tmp/dump.out" 2>"$tmp/dump.err" ||
    fail "the run with a dump"
"$txkit" report "$tmp/dump.seg" >"$tmp/report.out" 2>&1 || fail "txkit report on the dump"
grep -q "^shared slot: pid [0-9]* (many_threads): [0-9]* threads counted together" "$tmp/report.out" ||
    fail "txkit report does not say that threads shared a slot"
awk -v w="$want" '$1 == "total" || ($1 ~ /^[0-9]+$/ && $2 == "many_threads") { if ($4 == w) ok = 1 } END { exit !ok }' \
    "$tmp/report.out" || fail "txkit report: not $want commits"
echo "ok: $threads threads, $want transactions at 300 sites, 5000 mutexes"
exit 0
