#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/harness/selftest.sh BUILD_DIR - checks of the harness (ctest label
# bench): lib.sh's CSV lookup, ratios and TARGET lines, and one tiny run of
# txkit-bench-intset through the measurement library: 3 runs per point, the
# median between min and max, every point marked oversubscribed or not; the
# skip list verified under every kind of method; txkit-bench-fixed's check and
# its --count mode.
set -u
. "$(dirname "$0")/lib.sh"
bench_init selftest.sh "${1:?usage: selftest.sh BUILD_DIR}"
T=$(mktemp -d /tmp/txkit-bench-selftest.XXXXXX)
trap 'rm -rf "$T"' EXIT
bad=0
expect() { # WHAT GOT WANTED
    if [ "$2" != "$3" ]; then
        echo "FAIL: $1: got '$2', expected '$3'"
        bad=1
    else
        echo "ok: $1"
    fi
}

printf 'method,threads,mops\nauto,1,2.0\nauto,2,3.5\nmutex,2,1.0\n' >"$T/a.csv"
expect "csv_get by two columns" "$(csv_get "$T/a.csv" mops method=auto threads=2)" 3.5
expect "csv_get without a match" "$(csv_get "$T/a.csv" mops method=stm threads=2)" ""
printf 'method,threads,mops\nauto,1,5\nauto,1,1\nauto,2,9\nauto,1,3\nauto,1,2\n' >"$T/m.csv"
expect "csv_median, even count" "$(csv_median "$T/m.csv" mops method=auto threads=1)" 2.500000
expect "csv_median, odd count" "$(csv_median "$T/m.csv" mops method=auto)" 3.000000
expect "csv_median, one row" "$(csv_median "$T/m.csv" mops threads=2)" 9.000000
expect "csv_median without a match" "$(csv_median "$T/m.csv" mops method=stm)" ""
printf 'method,threads,mops,mops_min,mops_max\nauto,1,4.0,3.0,5.0\nmutex,1,0,0,0\n' >"$T/s.csv"
expect "csv_spread" "$(csv_spread "$T/s.csv" method=auto threads=1)" 50
expect "csv_spread of a zero median" "$(csv_spread "$T/s.csv" method=mutex)" ""
expect "csv_spread without a match" "$(csv_spread "$T/s.csv" method=stm)" ""
expect "noisy_note when a row spreads by more than half" "$(noisy_note 10 51 "the lock's")" \
    "    (a noisy point: its runs spread by 10% of their median, the lock's by 51%)"
expect "noisy_note quiet at half" "$(noisy_note 50 "")" ""
expect "ratio_of" "$(ratio_of 3.5 1.0)" 3.5000
expect "ratio_of without data" "$(ratio_of "" 1.0)" ""
expect "target PASS" "$(target t 3.5 ">=" 2 | grep -c ': PASS  3.5')" 1
expect "target MISS (<=)" "$(target t 3.5 "<=" 2 | grep -c ': MISS  3.5')" 1
expect "target without data is a MISS" "$(target t "" ">=" 2 | grep -c ': MISS')" 1
target t 1 ">=" 0.5 >/dev/null
target t 1 ">=" 5 >/dev/null
expect "PASS/MISS counted" "$BENCH_PASS/$BENCH_MISS" 1/1
printf 'TARGET x (target >= 1): PASS  2\nTARGET y (target >= 1): MISS  0\n' >"$T/t.txt"
count_targets "$T/t.txt"
expect "count_targets" "$BENCH_PASS/$BENCH_MISS" 2/2
expect "csv_cat keeps one header" "$(csv_cat "$T/a.csv" "$T/a.csv" | grep -c '^method,')" 1

INTSET=$(need_bin txkit-bench-intset) || exit 2
cpus=$(nproc)
over=$((cpus + 1))
[ "$over" -le 256 ] || over=256 # BENCH_MAX_THREADS
if ! "$INTSET" --struct hash --size 256 --method mutex,stm --threads "1,$over" --seconds 0.02 \
    --quiet --csv "$T/i.csv" >"$T/i.out" 2>&1; then
    echo "FAIL: txkit-bench-intset failed:"
    cat "$T/i.out"
    bad=1
fi
expect "runs per point (default 3)" "$(csv_get "$T/i.csv" runs method=stm threads=1)" 3
expect "1 thread not oversubscribed" "$(csv_get "$T/i.csv" oversubscribed method=stm threads=1)" 0
expect "$over threads on $cpus CPUs oversubscribed" \
    "$(csv_get "$T/i.csv" oversubscribed method=stm threads=$over)" $((over > cpus))
expect "median within [min, max]" "$(awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { n++; if (!($c["mops_min"] <= $c["mops"] + 0 && $c["mops"] <= $c["mops_max"] + 0)) bad = 1 }
    END { print (n > 0 && !bad) ? "yes" : "no" }' "$T/i.csv")" yes
expect "header names the machine" "$(grep -c '^rtm \|^cpu \|^threads .*oversubscribed' "$T/i.out")" 3
# the skip list, checked after every run under locks, software TM and GCC's
# libitm (its invariants: bench/README.md, --verify)
if ! "$INTSET" --struct skip --size 512 --update 50 --method seq,mutex,stm,serial,itm@libitm:ml_wt \
    --threads 1,2 --seconds 0.05 --runs 1 --verify --quiet >"$T/s.out" 2>&1; then
    echo "FAIL: txkit-bench-intset --struct skip --verify failed:"
    cat "$T/s.out"
    bad=1
fi
expect "skip list verified" "$(grep -c '^verify: ok' "$T/s.out")" 1

# txkit-bench-fixed (bench/run-fixed.sh): the timed mode's oracle under locks,
# software TM and GCC's libitm, and --count's exact number of operations
FIXED=$(need_bin txkit-bench-fixed) || exit 2
if ! "$FIXED" --shape r2w2 --method seq,mutex,auto,stm,serial,itm@libitm:ml_wt --threads 1,2 \
    --seconds 0.05 --runs 1 --quiet --csv "$T/f.csv" >"$T/f.out" 2>&1; then
    echo "FAIL: txkit-bench-fixed --shape r2w2 failed:"
    cat "$T/f.out"
    bad=1
fi
expect "fixed r2w2 checked" "$(grep -c '^check: ok' "$T/f.out")" 1
expect "fixed r2w2 stm@2 measured" "$(csv_get "$T/f.csv" status method=stm threads=2)" ok
for s in empty r4 r2w2; do
    expect "fixed --count, $s under stm" \
        "$("$FIXED" --count 1000 --shape "$s" --method stm | grep -c "^count: 1000 operations of $s under stm")" 1
done
expect "fixed --count takes one method" "$("$FIXED" --count 10 --method mutex,stm >/dev/null 2>&1; echo $?)" 2
exit $bad
