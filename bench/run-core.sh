#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run-core.sh BUILD_DIR - the core benchmark (what `make demo` runs).
#
# Runs, at a small scale (about 80-100 s on 2 cores with the defaults):
#   - hash set, 1024 buckets, 65536 keys, 10% updates, threads 1,2,4: the
#     workload of the project's reference figures (uninstrumented 3.6M ops/s
#     at 1 thread; at 2 threads pthread_mutex 0.8M, glibc elision 0.95M,
#     libitm htm 2.0M, on a machine with RTM), with seq, mutex, rwlock, the
#     txkit methods (auto, htm, stm, serial) and gcc transactions on GCC's
#     libitm (itm@libitm:default, itm@libitm:ml_wt, itm@libitm:gl_wt); then
#     mutex again with glibc lock elision requested (GLIBC_TUNABLES), labelled
#     mutex+elision
#   - hash set, 1024 buckets, 4096 keys, 10% updates, threads 1,2
#   - red-black tree, 4096 keys, 10% updates, threads 1,2 (+ itm@libitm:ml_wt)
#   - sorted list, 256 keys, and skip list, 4096 keys, 10% updates, threads
#     1,2: seq, mutex, auto, stm, itm@libitm:ml_wt
#   - bank, 1024 accounts, 1% read-only sums, threads 1,2,4 (+ itm@libitm:ml_wt)
# then prints a summary of the targets as ratios, all from this run:
#   - auto@1 vs seq@1 on the 65536-key hash set:             >= 0.91
#   - auto@1 vs mutex@1 on the 4096-key hash set (a lone thread's fixed
#     cost against a mutex's):                               >= 1
#   - auto with statistics on vs off (TXKIT_STATS=off) at 1 and 2
#     threads, 4096-key hash set (what the statistics cost; medians of
#     alternating one-run processes):                        >= 0.95
#   - auto@2 vs mutex@2, hash set and tree (read-mostly):    >= 2
#   - stm vs itm@libitm:ml_wt at 1 and 2 threads, hash set, tree, list, skip
#     list and bank:                                         >= 2.5
#     (with a note when 2.5x ml_wt is above the uninstrumented code's own
#     figure, seq@1 times the threads: no instrumented TM can reach it there)
#   - auto@2 vs itm@libitm:default@2 (libitm's own choice), no target
# CSV files (and core.png, every workload, drawn by bench/plot.py)
# go to BUILD_DIR/bench-results/ (the abi-* files there are bench/run-abi.sh's,
# which runs the same binaries' gcc transactions on txkit too, and stay).
#
# Environment:
#   TXKIT_BENCH_SECONDS  seconds per measurement (default 0.3)
#   TXKIT_BENCH_RUNS     runs per measurement, median reported (default 3)
#   TXKIT_BENCH_STATS_PAIRS  on/off pairs of the statistics-cost measurement
#                        (default 7, at least TXKIT_BENCH_RUNS)
# Exit status: 0, or 1 if a benchmark failed its correctness check or crashed.
# A missed performance target is reported, not an error.
set -u
. "$(dirname "$0")/harness/lib.sh"
bench_init run-core.sh "${1:-build}"
bench_settings 0.3 3
PAIRS=${TXKIT_BENCH_STATS_PAIRS:-7}
[[ $PAIRS =~ ^[0-9]+$ ]] && [ "$PAIRS" -ge 1 ] ||
    { echo "run-core.sh: TXKIT_BENCH_STATS_PAIRS: '$PAIRS' is not an integer >= 1" >&2; exit 2; }
[ "$PAIRS" -lt "$RUNS" ] && PAIRS=$RUNS
INTSET=$(need_bin txkit-bench-intset) || exit 2
BANK=$(need_bin txkit-bench-bank) || exit 2

OUT=$BUILD/bench-results
mkdir -p "$OUT" || exit 2
for f in "$OUT"/*.csv "$OUT"/*.dat "$OUT"/*.png "$OUT"/*.gp; do
    case ${f##*/} in
        abi-* | abi.*) ;; # bench/run-abi.sh's results
        *) rm -f "$f" ;;
    esac
done

# The itm@libitm rows must run on GCC's libitm: the binaries check where
# their _ITM_* symbols bind, and txkit's libitm drop-in on LD_LIBRARY_PATH
# would take its place (the rows would then be n/a; bench/run-abi.sh runs them
# both ways). ITM_DEFAULT_METHOD is set per row by the benchmark itself.
unset ITM_DEFAULT_METHOD

METHODS=seq,mutex,rwlock,auto,htm,stm,serial
ITM_HASH=itm@libitm:default,itm@libitm:ml_wt,itm@libitm:gl_wt
COMMON=(--seconds "$SECS" --runs "$RUNS" --timeout "$TIMEOUT" --quiet)

echo "txkit core benchmark: $SECS s x $RUNS runs per measurement (TXKIT_BENCH_SECONDS, TXKIT_BENCH_RUNS)"
echo "each measurement runs in a child process; a crash or a hang (> $TIMEOUT s) fails only its row"

HASH=$OUT/intset-hash-65536.csv
HASH4K=$OUT/intset-hash-4096.csv
TREE=$OUT/intset-tree-4096.csv
LIST=$OUT/intset-list-256.csv
SKIP=$OUT/intset-skip-4096.csv
BANKCSV=$OUT/bank-1024.csv

run "hash 65536" "$INTSET" --struct hash --buckets 1024 --size 65536 --update 10 \
    --threads 1,2,4 --method "$METHODS,$ITM_HASH" "${COMMON[@]}" --verify --csv "$HASH"

# glibc reads its tunables at start-up, so elision is a separate process; the
# mutex rows are labelled mutex+elision (the benchmark says whether glibc
# really elides: only where RTM is usable). Appended to the same CSV.
GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.elision.enable=1 \
    run "hash 65536 elision" "$INTSET" --struct hash --buckets 1024 --size 65536 --update 10 \
    --threads 1,2,4 --method mutex+elision "${COMMON[@]}" --verify --csv "$HASH"

run "hash 4096" "$INTSET" --struct hash --buckets 1024 --size 4096 --update 10 \
    --threads 1,2 --method "$METHODS" "${COMMON[@]}" --verify --csv "$HASH4K"

# What the statistics cost (issue 14: <= 5%): auto with statistics on and
# with TXKIT_STATS=off (labelled auto+nostats), which the runtime reads at
# start-up, so each its own process: PAIRS pairs of one-run processes, on and
# off alternating, so that the machine's drifts hit both alike; the target
# compares the two medians (intset-hash-4096-stats.csv). 7 pairs, not RUNS:
# the target is a 5% difference, and with 3 the median of the 2-thread ratio
# moved from 0.946 to 0.974 between two runs of the same library (Xeon,
# 2026-12-06: 8 alternating pairs gave 0.95-0.97, single pairs 0.94-1.03).
STATS=$OUT/intset-hash-4096-stats.csv
STATS_ARGS=(--struct hash --buckets 1024 --size 4096 --update 10 --threads 1,2 --method auto
    --seconds "$SECS" --runs 1 --timeout "$TIMEOUT" --quiet --verify --csv "$STATS")
for pair in $(seq "$PAIRS"); do
    run "hash 4096 statistics on ($pair of $PAIRS)" "$INTSET" "${STATS_ARGS[@]}"
    TXKIT_STATS=off run "hash 4096 statistics off ($pair of $PAIRS)" "$INTSET" "${STATS_ARGS[@]}"
done

run "tree 4096" "$INTSET" --struct tree --size 4096 --update 10 \
    --threads 1,2 --method "$METHODS,itm@libitm:ml_wt" "${COMMON[@]}" --verify --csv "$TREE"

run "list 256" "$INTSET" --struct list --size 256 --update 10 \
    --threads 1,2 --method seq,mutex,auto,stm,itm@libitm:ml_wt "${COMMON[@]}" --verify --csv "$LIST"

run "skip 4096" "$INTSET" --struct skip --size 4096 --update 10 \
    --threads 1,2 --method seq,mutex,auto,stm,itm@libitm:ml_wt "${COMMON[@]}" --verify --csv "$SKIP"

run "bank 1024" "$BANK" --accounts 1024 --sum 1 \
    --threads 1,2,4 --method "$METHODS,itm@libitm:ml_wt" "${COMMON[@]}" --csv "$BANKCSV"

# ------------------------------------------------------------------ summary

# versus LABEL FILE NUM_METHOD NUM_THREADS DEN_METHOD DEN_THREADS [GOAL]: the
# ratio of two rows' medians; with a goal a TARGET line; under it a note when
# either row's runs spread by more than half their median (noisy_note).
versus() {
    local label=$1 f=$2 nm=$3 nt=$4 dm=$5 dt=$6 goal=${7:--} sa sb note=""
    sa=$(csv_get "$f" status method="$nm" threads="$nt")
    sb=$(csv_get "$f" status method="$dm" threads="$dt")
    [ "$sa" = ok ] && [ "$sb" = ok ] || note="not a valid result: $nm is ${sa:-missing}, $dm is ${sb:-missing}"
    ratio "$label $nm@$nt / $dm@$dt" "$(csv_get "$f" mops method="$nm" threads="$nt")" \
        "$(csv_get "$f" mops method="$dm" threads="$dt")" ">=" "$goal" "$note"
    noisy_note "$(csv_spread "$f" method="$nm" threads="$nt")" \
        "$(csv_spread "$f" method="$dm" threads="$dt")" "$dm@$dt's"
}

# stats_cost THREADS: auto with statistics on / off at THREADS, medians of
# the alternating one-run processes (all of them ok), as a TARGET line.
stats_cost() {
    local note=""
    [ -f "$STATS" ] && ! csv_rows "$STATS" status threads="$1" | grep -qv '^ok$' ||
        note="not a valid result: a run failed or is missing"
    ratio "hash 4096 auto@$1 / auto+nostats@$1 (medians of $PAIRS alternating pairs)" \
        "$(csv_median "$STATS" mops method=auto threads="$1")" \
        "$(csv_median "$STATS" mops method=auto+nostats threads="$1")" ">=" 0.95 "$note"
}

# ceiling LABEL FILE THREADS GOAL: under an stm vs ml_wt target, say when the
# target is above what any instrumentation can reach here: GOAL x ml_wt's
# figure more than THREADS x the uninstrumented code's at one thread (seq@1,
# scaled perfectly), and how close stm comes to that bound.
ceiling() {
    local m s q
    m=$(csv_get "$2" mops method=itm@libitm:ml_wt threads="$3")
    s=$(csv_get "$2" mops method=stm threads="$3")
    q=$(csv_get "$2" mops method=seq threads=1)
    [ -n "$m" ] && [ -n "$s" ] && [ -n "$q" ] || return 0
    awk -v l="$1" -v t="$3" -v g="$4" -v m="$m" -v s="$s" -v q="$q" 'BEGIN {
        if (g * m > t * q)
            printf "  (%s: unreachable here: %s x ml_wt@%d = %.2f Mops/s is above %d x seq@1 = %.2f,\n" \
                   "   the uninstrumented code; stm@%d reaches %.2f of that bound)\n",
                   l, g, t, g * m, t, t * q, t, s / (t * q)
    }'
}

# ref LABEL FILE METHOD THREADS QUOTED: this run's figure next to the quoted one.
ref() {
    local v st
    v=$(csv_get "$2" mops method="$3" threads="$4")
    st=$(csv_get "$2" status method="$3" threads="$4")
    [ -n "$v" ] && v=$(printf '%.3f' "$v")
    printf '  %-30s %-22s %8s Mops/s  (quoted %s)%s\n' "$1" "$3@$4" "${v:-no data}" "$5" \
        "$([ -n "$st" ] && [ "$st" != ok ] && echo "  [$st]")"
}

echo
echo "=== core benchmark summary (all ratios from this run) ==="
echo "auto at 1 thread vs seq, 65536-key hash set (target: within 1.1x, i.e. ratio >= 0.91):"
versus "hash 65536" "$HASH" auto 1 seq 1 0.91
echo "auto at 1 thread vs mutex at 1 thread, 4096-key hash set (a lone thread's fixed cost, target >= 1):"
versus "hash 4096" "$HASH4K" auto 1 mutex 1 1
echo "statistics on vs off, auto at 1 and 2 threads, 4096-key hash set (target: cost <= 5%, i.e. ratio >= 0.95):"
stats_cost 1
stats_cost 2
echo "auto at 2 threads vs mutex at 2 threads, read-mostly (10% updates) (target >= 2x):"
versus "hash 65536" "$HASH" auto 2 mutex 2 2
versus "tree 4096" "$TREE" auto 2 mutex 2 2
echo "stm vs GCC libitm ml_wt at the same thread count (target >= 2.5x):"
versus "hash 65536" "$HASH" stm 1 itm@libitm:ml_wt 1 2.5
ceiling "hash 65536" "$HASH" 1 2.5
versus "hash 65536" "$HASH" stm 2 itm@libitm:ml_wt 2 2.5
ceiling "hash 65536" "$HASH" 2 2.5
versus "tree 4096" "$TREE" stm 1 itm@libitm:ml_wt 1 2.5
ceiling "tree 4096" "$TREE" 1 2.5
versus "tree 4096" "$TREE" stm 2 itm@libitm:ml_wt 2 2.5
ceiling "tree 4096" "$TREE" 2 2.5
versus "list 256" "$LIST" stm 1 itm@libitm:ml_wt 1 2.5
ceiling "list 256" "$LIST" 1 2.5
versus "list 256" "$LIST" stm 2 itm@libitm:ml_wt 2 2.5
ceiling "list 256" "$LIST" 2 2.5
versus "skip 4096" "$SKIP" stm 1 itm@libitm:ml_wt 1 2.5
ceiling "skip 4096" "$SKIP" 1 2.5
versus "skip 4096" "$SKIP" stm 2 itm@libitm:ml_wt 2 2.5
ceiling "skip 4096" "$SKIP" 2 2.5
versus "bank 1024" "$BANKCSV" stm 1 itm@libitm:ml_wt 1 2.5
ceiling "bank 1024" "$BANKCSV" 1 2.5
versus "bank 1024" "$BANKCSV" stm 2 itm@libitm:ml_wt 2 2.5
ceiling "bank 1024" "$BANKCSV" 2 2.5
echo "auto vs GCC libitm's default choice (ml_wt without RTM, serialirr at 1 thread), no target:"
versus "hash 65536" "$HASH" auto 2 itm@libitm:default 2 -
versus "hash 65536" "$HASH" auto 1 itm@libitm:default 1 -
echo "for reference (no target):"
versus "hash 65536" "$HASH" mutex+elision 2 mutex 2 -
versus "hash 65536" "$HASH" itm@libitm:gl_wt 2 itm@libitm:ml_wt 2 -
versus "hash 65536" "$HASH" stm 2 mutex 2 -
versus "hash 4096" "$HASH4K" auto 1 seq 1 -
versus "hash 4096" "$HASH4K" auto 2 mutex 2 -
versus "tree 4096" "$TREE" auto 1 seq 1 -
versus "bank 1024" "$BANKCSV" auto 1 seq 1 -
versus "bank 1024" "$BANKCSV" auto 2 mutex 2 -
echo "this machine next to the reference figures (hash 65536; quoted from a machine with RTM):"
ref "uninstrumented, 1 thread" "$HASH" seq 1 3.6
ref "pthread_mutex, 2 threads" "$HASH" mutex 2 0.8
ref "glibc elision, 2 threads" "$HASH" mutex+elision 2 0.95
ref "libitm (htm there), 2 threads" "$HASH" itm@libitm:default 2 2.0
if [ -f "$HASH" ] && grep -q "elision inactive" "$HASH"; then
    echo "  (glibc elision has no effect here: no usable RTM, so mutex+elision is a plain mutex;"
    echo "   libitm's default is ml_wt here, not htm)"
fi

# ------------------------------------------------------------------- plot
# one panel per workload: Mops/s vs threads, every method, min/max bars
plot_csv intset "$HASH" "$HASH4K" "$TREE" "$LIST" "$SKIP" "$BANKCSV" --out "$OUT/core.png" \
    --scale "median of $RUNS x $SECS s per point"

echo "results: $OUT/*.csv"
bench_finish
