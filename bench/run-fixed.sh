#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run-fixed.sh BUILD_DIR - what a critical section costs when nothing
# conflicts: each method's fixed cost (txkit-bench-fixed; each thread works on
# a cell of its own), for three shapes: empty (nothing inside), r4 (four
# loads), r2w2 (two words loaded and incremented).
#
# Two measurements (about 60 s on 2 cores with the defaults):
#   - time: Mops/s at 1 and 2 threads, median of the runs, for seq, mutex,
#     auto, htm, stm, serial and gcc transactions on GCC's libitm (default
#     and ml_wt); CSV fixed-SHAPE.csv;
#   - instructions per operation at 1 thread, counted by callgrind (when
#     valgrind is installed): exact and repeatable, which this machine's
#     timings are not; the numbers to quote for a change of the fixed cost.
#     CSV fixed-instructions.csv (shape, method, instructions).
# Targets (a lone thread's fixed cost against a mutex's, issue 14): auto at 1
# thread >= mutex at 1 thread in time, every shape. The rest is reference:
# stm and libitm's ml_wt at 1 and 2 threads (r2w2 at 2 threads: every
# writing commit of both takes a global clock, so disjoint writers still
# share one line).
# Note: gcc drops an empty __transaction_atomic (no _ITM_ call at all), so
# the itm rows of the empty shape measure a function call.
#
# Environment:
#   TXKIT_BENCH_SECONDS  seconds per timed measurement (default 0.3)
#   TXKIT_BENCH_RUNS     runs per timed measurement, median reported (default 3)
#   TXKIT_FIXED_COUNT    operations per callgrind run (default 20000)
# Exit status: 0, or 1 if a benchmark failed its check or crashed.
set -u
. "$(dirname "$0")/harness/lib.sh"
bench_init run-fixed.sh "${1:-build}"
bench_settings 0.3 3
FIXED=$(need_bin txkit-bench-fixed) || exit 2
COUNT=${TXKIT_FIXED_COUNT:-20000}
bench_pos_int TXKIT_FIXED_COUNT "$COUNT"
OUT=$BUILD/bench-results
mkdir -p "$OUT" || exit 2
rm -f "$OUT"/fixed-*.csv "$OUT/fixed.png"
unset ITM_DEFAULT_METHOD

SHAPES="empty r4 r2w2"
METHODS=seq,mutex,auto,htm,stm,serial,itm@libitm:default,itm@libitm:ml_wt

echo "txkit fixed-cost benchmark: $SECS s x $RUNS runs per timed point (TXKIT_BENCH_SECONDS," \
    "TXKIT_BENCH_RUNS); $COUNT operations per callgrind run (TXKIT_FIXED_COUNT)"
for s in $SHAPES; do
    run "fixed $s" "$FIXED" --shape "$s" --threads 1,2 --method "$METHODS" --seconds "$SECS" \
        --runs "$RUNS" --timeout "$TIMEOUT" --quiet --csv "$OUT/fixed-$s.csv"
done

# ------------------------------------------------------------ instructions
INSN=$OUT/fixed-instructions.csv
echo
echo "=== instructions per operation, 1 thread (callgrind: fixed_count(), $COUNT operations" \
    "after 64 untimed) ==="
if ! command -v valgrind >/dev/null 2>&1; then
    echo "no valgrind: no instruction counts (apt-get install valgrind)"
else
    echo "shape,method,instructions" >"$INSN"
    T=$(mktemp -d /tmp/txkit-fixed.XXXXXX)
    printf '%-8s' shape
    for m in ${METHODS//,/ }; do printf ' %20s' "$m"; done
    echo
    for s in $SHAPES; do
        printf '%-8s' "$s"
        for m in ${METHODS//,/ }; do
            v=n/a
            if valgrind --tool=callgrind --toggle-collect='fixed_count*' \
                --callgrind-out-file="$T/cg.out" "$FIXED" --count "$COUNT" --shape "$s" \
                --method "$m" >"$T/out" 2>"$T/err"; then
                if grep -q '^count: [0-9]' "$T/out"; then
                    v=$(awk -v n="$COUNT" '/^summary:/ { printf "%.1f", $2 / (n + 64) }' "$T/cg.out")
                    echo "$s,$m,$v" >>"$INSN"
                fi
            else
                v=FAIL
                FAILED+=("callgrind $s $m")
                sed 's/^/    /' "$T/out" "$T/err" | grep -v '^    ==' >&2
            fi
            printf ' %20s' "$v"
        done
        echo
    done
    rm -rf "$T"
fi

# ------------------------------------------------------------------ summary
echo
echo "=== fixed-cost summary (ratios from this run's timings) ==="
echo "a lone thread's fixed cost: auto at 1 thread vs mutex at 1 thread (target >= 1):"
for s in $SHAPES; do
    f=$OUT/fixed-$s.csv
    ratio "$s auto@1 / mutex@1" "$(csv_get "$f" mops method=auto threads=1)" \
        "$(csv_get "$f" mops method=mutex threads=1)" ">=" 1
    noisy_note "$(csv_spread "$f" method=auto threads=1)" \
        "$(csv_spread "$f" method=mutex threads=1)" "the mutex's"
done
echo "for reference (no target):"
for s in $SHAPES; do
    f=$OUT/fixed-$s.csv
    ratio "$s stm@1 / mutex@1" "$(csv_get "$f" mops method=stm threads=1)" \
        "$(csv_get "$f" mops method=mutex threads=1)"
    ratio "$s stm@1 / itm@libitm:ml_wt@1" "$(csv_get "$f" mops method=stm threads=1)" \
        "$(csv_get "$f" mops method=itm@libitm:ml_wt threads=1)"
    ratio "$s stm@2 / itm@libitm:ml_wt@2" "$(csv_get "$f" mops method=stm threads=2)" \
        "$(csv_get "$f" mops method=itm@libitm:ml_wt threads=2)"
    ratio "$s auto@2 / mutex@2" "$(csv_get "$f" mops method=auto threads=2)" \
        "$(csv_get "$f" mops method=mutex threads=2)"
done
if [ -f "$INSN" ]; then
    echo "instructions per operation, auto and stm against the mutex (callgrind):"
    for s in $SHAPES; do
        mu=$(csv_get "$INSN" instructions shape="$s" method=mutex)
        for m in auto stm; do
            printf '  %-8s %-6s %8s instructions, mutex %8s\n' "$s" "$m" \
                "$(csv_get "$INSN" instructions shape="$s" method="$m")" "${mu:-n/a}"
        done
    done
fi

plot_csv intset "$OUT"/fixed-empty.csv "$OUT"/fixed-r4.csv "$OUT"/fixed-r2w2.csv \
    --out "$OUT/fixed.png" --scale "median of $RUNS x $SECS s per point"
echo "results: $OUT/fixed-*.csv"
bench_finish
