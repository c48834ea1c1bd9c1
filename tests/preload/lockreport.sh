#!/bin/sh
# SPDX-License-Identifier: MIT
# lockreport.sh TXKIT LOCKREPORT_PROG - `txkit run --report` on a plain
# pthread program with known lock traffic (lockreport_prog.c): the report's
# counts are the program's, the hot mutex ranks first, every call site is
# named by its function, forked processes report too, CMD's exit status comes
# back, and bad combinations are usage errors. TXKIT_RTM=off: the locks are
# taken for real (with RTM most sections would be elided, not waited for).
set -u
txkit=$1
prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
unset LD_PRELOAD TXKIT_LOCK_REPORT
export TXKIT_RTM=off
export TXKIT_LOCK_SAMPLE=1 # exact counts (by default 1 uncontended acquisition in 8 is counted)

"$txkit" run --report="$tmp/report.txt" -- "$prog" 2 >"$tmp/prog.out" 2>"$tmp/prog.err" ||
    fail "txkit run --report exit $?"
[ -s "$tmp/report.txt" ] || fail "no report written"
grep -q '^txkit lock report: .*lockreport_prog (pid [0-9]*; run as: ' "$tmp/report.txt" ||
    fail "no report title naming the program"
grep -q '^time lost waiting for locks: ' "$tmp/report.txt" || fail "no time-lost line"

# expect NAME ADDRESS COUNT -> the report's line for ADDRESS has COUNT acquired
acq_of() { awk -v a="$1" '$2 == a && $1 ~ /^[0-9]+$/ { print $4; exit }' "$tmp/report.txt"; }
rank_of() { awk -v a="$1" '$2 == a && $1 ~ /^[0-9]+$/ { print $1; exit }' "$tmp/report.txt"; }
contended_of() { awk -v a="$1" '$2 == a && $1 ~ /^[0-9]+$/ { print $5; exit }' "$tmp/report.txt"; }
addr() { sed -n "s/^expect $1 \(0x[0-9a-f]*\) .*/\1/p" "$tmp/prog.out"; }
count() { sed -n "s/^expect $1 0x[0-9a-f]* \([0-9]*\)/\1/p" "$tmp/prog.out"; }
hot=$(addr hot_mutex)
cold=$(addr cold_mutex)
rw=$(addr table_lock-read)
spin=$(addr spin)
[ -n "$hot" ] && [ -n "$cold" ] && [ -n "$rw" ] && [ -n "$spin" ] || fail "the program printed no addresses"
# (the report names a lock in a global by its variable)
[ "$(acq_of hot_mutex)" = "$(count hot_mutex)" ] || fail "hot mutex: $(acq_of hot_mutex) acquired, the program took $(count hot_mutex)"
[ "$(acq_of cold_mutex)" = "$(count cold_mutex)" ] || fail "cold mutex: $(acq_of cold_mutex) acquired, expected $(count cold_mutex)"
want_rw=$(($(count table_lock-read) + $(count table_lock-write)))
[ "$(acq_of table_lock)" = "$want_rw" ] || fail "rwlock: $(acq_of table_lock) acquired, expected $want_rw"
[ "$(acq_of spin)" = "$(count spin)" ] || fail "spinlock: $(acq_of spin) acquired, expected $(count spin)"
[ "$(contended_of cold_mutex)" = 0 ] || fail "the cold mutex (one thread) counted as contended"
# the timed and clocked variants (pthread_mutex_clocklock, pthread_cond_clockwait,
# the rwlock ones) are counted like the others, and a condition wait gives the
# mutex up: no hold lasts the 20 ms of a wait (not interposed, a clockwait's
# hold ran through it; a clocklock was not counted), and so are C11's mtx_t
# locks (glibc's mtx_* call its pthread functions inside libc: none counted)
for l in timed_mutex wait_mutex timed_rw c11_mutex; do
    [ "$(acq_of $l)" = "$(count $l)" ] || fail "$l: $(acq_of $l) acquired, expected $(count $l)"
done
# (holds in the buckets above 10 ms, which hold the 20 ms waits: 3 before; one
# allowed, a hold that a loaded machine preempted)
awk '/^ *[0-9]+ wait_mutex / { f = 1; next }
     f && /^ +holds:/ {
         for (i = 2; i < NF; i += 2) {
             v = $i; sub(/^</, "", v); u = v; sub(/^[0-9.]+/, "", u); v += 0
             ns = u == "ns" ? v : u == "us" ? v * 1e3 : u == "ms" ? v * 1e6 : v * 1e9
             if (ns > 1e7) long += $(i + 1)
         }
         f = 0; seen = 1
     }
     END { if (!seen) print "no holds line"; else if (long > 1) print long " holds over 10 ms"; exit !(seen && long <= 1) }' \
    "$tmp/report.txt" || fail "wait_mutex: holds as long as a condition wait (the wait counted as held)"
# the lock waited for longest (held 30 ms while another thread wanted it)
# comes first (whether the hot one is contended depends on the scheduling)
[ "$(rank_of wrapped_mutex)" -le 3 ] || fail "wrapped_mutex ranks $(rank_of wrapped_mutex), not in the first three"
grep -q " rwlock " "$tmp/report.txt" || fail "no rwlock line"
grep -q " spinlock " "$tmp/report.txt" || fail "no spinlock line"
for f in hot_path cold_path reader writer spinner; do
    grep -q "^ *at $f+0x[0-9a-f]* (lockreport_prog)" "$tmp/report.txt" || fail "no site line for $f()"
done
# the distributions (log2 buckets by 4x) of the top locks
awk '/^ *[0-9]+ wrapped_mutex / { f = 1; next } f && /^ +waits: <[0-9.]+[mun]?s 1$/ { ok = 1 } /^ *[0-9]+ / { f = 0 } END { exit !ok }' \
    "$tmp/report.txt" || fail "no wait histogram line (one wait) under wrapped_mutex"
grep -q '^ *holds: <' "$tmp/report.txt" || fail "no hold histogram lines"
# 20 mutexes held at once (the report times 16 per thread), released in the
# order taken, 10 times: every one acquired 10 times, and every hold of the
# top ten locks still timed (each taken and released as often: TXKIT_LOCK_SAMPLE=1)
[ "$(acq_of deep)" = "$(count deep)" ] || fail "deep[0]: $(acq_of deep) acquired, expected $(count deep)"
awk '/^ *[0-9]+ / { a = $4; r = $1 } /^ +holds:/ { n = 0; for (i = 3; i <= NF; i += 2) n += $i; if (n != a) { print "rank " r ": " a " acquired, holds:", $0; bad = 1 } } END { exit bad }' \
    "$tmp/report.txt" || fail "a lock's holds were not all timed, or timed twice"
# a wait through a wrapper library is attributed to the caller past it
grep -q "^ *at wrap_lock+0x[0-9a-f]* (liblockreport_wrap.so)" "$tmp/report.txt" || fail "no site in the wrapper"
grep -q "^ *waited for from wrapped_path+0x[0-9a-f]* (lockreport_prog).*: 1 contended" "$tmp/report.txt" ||
    fail "the wait through the wrapper is not attributed to wrapped_path()"
# with RTM: the most threads inside each elidable mutex's sections at once
# (the run above had TXKIT_RTM=off: ask txkit info whether this CPU has it)
if TXKIT_RTM= "$txkit" info 2>/dev/null | grep -Eq '^rtm:[[:space:]]+yes'; then
    TXKIT_RTM= "$txkit" run --report="$tmp/rtm.txt" -- "$prog" 2 >/dev/null 2>&1 || fail "RTM run exit $?"
    grep -q ' elided% maxin$' "$tmp/rtm.txt" || fail "RTM: no maxin column"
    m=$(awk '$2 == "hot_mutex" && $1 ~ /^[0-9]+$/ { print $NF; exit }' "$tmp/rtm.txt")
    [ -n "$m" ] && [ "$m" -ge 1 ] && [ "$m" -le 3 ] || fail "RTM: hot_mutex maxin '$m' not in 1..3 (2 threads)"
    grep -q '^ *[0-9]* hot_mutex .*%' "$tmp/rtm.txt" || fail "RTM: no elided share for hot_mutex"
else
    echo "SKIP (part): RTM maxin and elided shares (no usable RTM here)"
fi
echo "counts, ranking and sites ok"

# sampled (the default): counts are estimates, close to the truth
TXKIT_LOCK_SAMPLE= "$txkit" run --report="$tmp/sampled.txt" -- "$prog" 2 >"$tmp/prog3.out" 2>&1 ||
    fail "sampled run exit $?"
est=$(awk '$2 == "hot_mutex" && $1 ~ /^[0-9]+$/ { print $4; exit }' "$tmp/sampled.txt")
want=$(sed -n 's/^expect hot_mutex 0x[0-9a-f]* \([0-9]*\)/\1/p' "$tmp/prog3.out")
[ -n "$est" ] && [ "$est" -ge $((want * 3 / 4)) ] && [ "$est" -le $((want * 5 / 4)) ] ||
    fail "sampled: hot_mutex estimated at ${est:-nothing}, taken $want times"
"$txkit" run --report -- true 2>/dev/null # (a bad TXKIT_LOCK_SAMPLE is said, not fatal)
TXKIT_LOCK_SAMPLE=0 "$txkit" run --report -- "$prog" 1 >/dev/null 2>"$tmp/badsample.err" ||
    fail "TXKIT_LOCK_SAMPLE=0 made the run fail"
grep -q 'TXKIT_LOCK_SAMPLE=0: not a number from 1 to 4096' "$tmp/badsample.err" ||
    fail "TXKIT_LOCK_SAMPLE=0: no message naming the variable"
echo "sampling ok: hot_mutex $est estimated, $want taken"

# the CSV form: a header, the hot mutex first with its exact count and site
"$txkit" run --report-csv="$tmp/report.csv" -- "$prog" 2 >"$tmp/prog2.out" 2>"$tmp/report2.txt" ||
    fail "txkit run --report-csv exit $?"
head -n 1 "$tmp/report.csv" | grep -q '^cmd,pid,exe,seconds,threads,rtm,rank,lock,kind,acquired,contended,' ||
    fail "--report-csv: no header"
hot2=$(sed -n 's/^expect hot_mutex \(0x[0-9a-f]*\) .*/\1/p' "$tmp/prog2.out")
row=$(awk -F, -v a="$hot2" '$8 == a' "$tmp/report.csv")
# sorted by the time lost waiting, per process
awk -F, 'NR > 2 && $2 == pid && $12 + 0 > prev + 0 { bad = 1 } NR > 1 { pid = $2; prev = $12 } END { exit bad }' \
    "$tmp/report.csv" || fail "--report-csv: not sorted by wait time"
[ "$(echo "$row" | cut -d, -f10)" = "$(count hot_mutex)" ] || fail "--report-csv: hot mutex count: $row"
echo "$row" | grep -q ',hot_path+0x[0-9a-f]*,lockreport_prog,hot_mutex,[0-9]*$' || fail "--report-csv: top site and name: $row"
grep -q '^txkit lock report: ' "$tmp/report2.txt" || fail "--report-csv without --report: no report on stderr"

# forked processes write their own reports; CMD's exit status comes back
"$txkit" run --report="$tmp/sh.txt" -- sh -c "\"$prog\" 1 >/dev/null; exit 3"
rc=$?
[ $rc -eq 3 ] || fail "exit status $rc, expected CMD's 3"
grep -q 'lockreport_prog (pid [0-9]*; run as: sh)' "$tmp/sh.txt" || fail "the forked program's report is missing"
# stderr by default; a program without locks says so
"$txkit" run --report -- true 2>"$tmp/true.err" || fail "txkit run --report -- true failed"
grep -q 'no pthread lock was taken' "$tmp/true.err" || fail "no 'no lock' line for true"
# usage errors
"$txkit" run --report --no-elide -- true 2>"$tmp/noelide.err"
[ $? -eq 2 ] || fail "--report --no-elide: expected exit 2"
grep -q 'preload' "$tmp/noelide.err" || fail "--report --no-elide: the error does not say why"
"$txkit" run --report=/nonexistent-dir/x -- true 2>"$tmp/baddir.err"
[ $? -eq 1 ] || fail "--report to an unwritable file: expected exit 1"
echo "PASS [preload.lockreport]"
