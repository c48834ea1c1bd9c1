#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run-cx.sh BUILD_DIR - cx locks against pthread_mutex (txkit-bench-cx).
#
# Runs txkit-bench-cx three times, at threads 1,2,4,8 and I/O shares 0,1,10,50%
# (about 45-55 s on 2 cores with the defaults):
#   - plainly: mutex (pthread_mutex) and cx (cx_optimistic / cx_unlock)
#   - with GLIBC_TUNABLES=glibc.elision.enable=1: mutex+elision
#   - through libtxkit-preload.so (`txkit run`, or LD_PRELOAD + LD_BIND_NOW
#     when there is no txkit program): mutex+preload
# on the 1024-bucket hash set (4096 keys, range 8192, 10% updates), the shared
# counter, and the uncontended lock + unlock cost, then prints a summary of the
# targets as ratios, all from this run:
#   - hash set, cx@2 / mutex@2:              >= 3    (on RTM machines)
#   - hash set, cx@2 / mutex+elision@2:      >= 2    (on RTM machines)
#   - uncontended ns, cx / mutex:            <= 1.3  (on RTM machines)
# Without usable RTM every cx section runs exclusive and glibc elision does
# nothing: the ratios are printed, and the targets are reported as needing RTM.
# CSV: BUILD_DIR/bench-results/cx.csv (rewritten); plot: cx.png (bench/plot.py).
#
# Environment:
#   TXKIT_BENCH_SECONDS  seconds per measurement (default 0.1)
#   TXKIT_BENCH_RUNS     runs per measurement, median reported (default 3)
# Exit status: 0, 1 if a correctness check failed or a measurement crashed,
# 2 if the binary is missing. A missed target is reported, not an error.
set -u
. "$(dirname "$0")/harness/lib.sh"
bench_init run-cx.sh "${1:-build}"
bench_settings 0.1 3
BIN=$(need_bin txkit-bench-cx) || exit 2

PRELOAD_LIB=$BUILD/lib/libtxkit-preload.so
TXKIT=$BUILD/tools/txkit
if [ -x "$TXKIT" ] && [ -f "$PRELOAD_LIB" ]; then
    PRELOAD=("$TXKIT" run --)
    HOW="$TXKIT run --"
elif [ -f "$PRELOAD_LIB" ]; then
    PRELOAD=(env "LD_PRELOAD=$(cd "$(dirname "$PRELOAD_LIB")" && pwd)/libtxkit-preload.so" LD_BIND_NOW=1)
    HOW="LD_PRELOAD=$PRELOAD_LIB LD_BIND_NOW=1"
else
    PRELOAD=()
    HOW=
fi

OUT=$BUILD/bench-results
mkdir -p "$OUT" || exit 2
CSV=$OUT/cx.csv
rm -f "$CSV"

COMMON=(--threads 1,2,4,8 --io 0,1,10,50 --seconds "$SECS" --runs "$RUNS" --timeout "$TIMEOUT"
        --csv "$CSV" --quiet)

echo "txkit cx benchmark: $SECS s x $RUNS runs per measurement (TXKIT_BENCH_SECONDS, TXKIT_BENCH_RUNS)"

# The plain run must not inherit elision or a preload from the caller.
run "plain" env -u GLIBC_TUNABLES -u LD_PRELOAD "$BIN" --lock mutex,cx,cx+shared "${COMMON[@]}"
run "glibc elision" env -u LD_PRELOAD GLIBC_TUNABLES=glibc.elision.enable=1 \
    "$BIN" --lock mutex "${COMMON[@]}"
if [ ${#PRELOAD[@]} -gt 0 ]; then
    run "preload" env -u GLIBC_TUNABLES "${PRELOAD[@]}" "$BIN" --lock mutex "${COMMON[@]}"
else
    echo "run-cx.sh: $PRELOAD_LIB not found: no mutex+preload rows" >&2
fi

# ------------------------------------------------------------------ summary

# get WORKLOAD LOCK THREADS IO FIELD: that row's field (mops, ns_per_op,
# status), or nothing.
get() {
    csv_get "$CSV" "$5" workload="$1" lock="$2" threads="$3" io_pct="$4"
}

RTM=$(csv_get "$CSV" rtm)
RTM=${RTM:-none}

# versus LABEL WORKLOAD NUM_LOCK DEN_LOCK THREADS IO FIELD GOAL CMP
# FIELD mops: NUM/DEN throughput; ns_per_op: NUM/DEN cost. CMP ">=" or "<=".
versus() {
    local label=$1 w=$2 nl=$3 dl=$4 t=$5 io=$6 f=$7 goal=$8 cmp=$9 sa sb note=""
    sa=$(get "$w" "$nl" "$t" "$io" status)
    sb=$(get "$w" "$dl" "$t" "$io" status)
    [ "$sa" = ok ] && [ "$sb" = ok ] || note="not a valid result: $nl is ${sa:-missing}, $dl is ${sb:-missing}"
    [ -z "$note" ] && [ "$goal" != - ] && [ "$RTM" != usable ] && note="needs RTM"
    ratio "$label, $nl@$t / $dl@$t ($f)" "$(get "$w" "$nl" "$t" "$io" "$f")" \
        "$(get "$w" "$dl" "$t" "$io" "$f")" "$cmp" "$goal" "$note"
}

ELISION=$(grep -c ',hash,mutex+elision,' "$CSV" 2>/dev/null)
echo
echo "=== cx benchmark summary (all ratios from this run; hash set: 1024 buckets, 4096 keys, 10% updates) ==="
if [ "$RTM" != "usable" ]; then
    echo "NOTE: no usable RTM on this machine: cx sections all run exclusive (cx opt% = 0; cx+shared"
    echo "      holds the lock shared for the hash set's lookups), glibc"
    echo "      elision and the preload library fall back to the plain mutex. The targets need RTM;"
    echo "      the ratios below only show the fallback's cost."
fi
echo "targets:"
versus "hash, 2 threads" hash cx mutex 2 0 mops 3 ">="
versus "hash, 2 threads" hash cx mutex+elision 2 0 mops 2 ">="
versus "uncontended lock+unlock" uncontended cx mutex 1 0 ns_per_op 1.3 "<="
echo "for reference (no target):"
versus "hash, 2 threads" hash cx+shared mutex 2 0 mops - -
versus "hash, 2 threads" hash cx+shared cx 2 0 mops - -
versus "hash, 2 threads" hash cx mutex+preload 2 0 mops - -
versus "hash, 2 threads" hash mutex+preload mutex 2 0 mops - -
versus "counter, 2 threads" counter cx mutex 2 0 mops - -
versus "counter, 2 threads" counter cx mutex+elision 2 0 mops - -
versus "uncontended lock+unlock" uncontended mutex+preload mutex 1 0 ns_per_op - -
for t in 1 4 8; do
    versus "hash, $t thread(s)" hash cx mutex "$t" 0 mops - -
done
echo "I/O inside the section (write(2) to /dev/null; cx after cx_need_exclusive()), hash, 2 threads:"
for io in 0 1 10 50; do
    versus "hash, io $io%" hash cx mutex 2 "$io" mops - -
done

echo "Mops/s at io 0% (threads 1 / 2 / 4 / 8):"
for w in hash counter; do
    for l in mutex mutex+elision mutex+preload cx cx+shared; do
        line=$(for t in 1 2 4 8; do v=$(get "$w" "$l" "$t" 0 mops); printf ' %9s' "${v:--}"; done)
        printf '  %-8s %-14s%s\n' "$w" "$l" "$line"
    done
done
[ "${ELISION:-0}" -gt 0 ] || echo "  (no mutex+elision rows)"

echo "preload: ${HOW:-not found}"
plot_csv cx "$CSV" --out "$OUT/cx.png" --scale "median of $RUNS x $SECS s"
echo "results: $CSV"
bench_finish
