#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run-core.sh BUILD_DIR - the core benchmark (what `make demo` runs).
#
# Runs, at a small scale (about 65-80 s on 2 cores with the defaults):
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
#   - bank, 1024 accounts, 1% read-only sums, threads 1,2,4 (+ itm@libitm:ml_wt)
# then prints a summary of the targets as ratios, all from this run:
#   - auto@1 vs seq@1 on the 65536-key hash set:             >= 0.91
#   - auto@2 vs mutex@2, hash set and tree (read-mostly):    >= 2
#   - stm vs itm@libitm:ml_wt at 1 and 2 threads, hash set and tree: >= 2.5
#   - auto@2 vs itm@libitm:default@2 (libitm's own choice), no target
# CSV files (and a PNG plot of the 65536-key hash set if gnuplot is installed)
# go to BUILD_DIR/bench-results/ (the abi-* files there are bench/run-abi.sh's,
# which runs the same binaries' gcc transactions on txkit too, and stay).
#
# Environment:
#   TXKIT_BENCH_SECONDS  seconds per measurement (default 0.3)
#   TXKIT_BENCH_RUNS     runs per measurement, median reported (default 3)
# Exit status: 0, or 1 if a benchmark failed its correctness check or crashed.
# A missed performance target is reported, not an error.
set -u
. "$(dirname "$0")/harness/lib.sh"
bench_init run-core.sh "${1:-build}"
bench_settings 0.3 3
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

run "tree 4096" "$INTSET" --struct tree --size 4096 --update 10 \
    --threads 1,2 --method "$METHODS,itm@libitm:ml_wt" "${COMMON[@]}" --verify --csv "$TREE"

run "bank 1024" "$BANK" --accounts 1024 --sum 1 \
    --threads 1,2,4 --method "$METHODS,itm@libitm:ml_wt" "${COMMON[@]}" --csv "$BANKCSV"

# ------------------------------------------------------------------ summary

# versus LABEL FILE NUM_METHOD NUM_THREADS DEN_METHOD DEN_THREADS [GOAL]: the
# ratio of two rows' medians; with a goal a TARGET line.
versus() {
    local label=$1 f=$2 nm=$3 nt=$4 dm=$5 dt=$6 goal=${7:--} sa sb note=""
    sa=$(csv_get "$f" status method="$nm" threads="$nt")
    sb=$(csv_get "$f" status method="$dm" threads="$dt")
    [ "$sa" = ok ] && [ "$sb" = ok ] || note="not a valid result: $nm is ${sa:-missing}, $dm is ${sb:-missing}"
    ratio "$label $nm@$nt / $dm@$dt" "$(csv_get "$f" mops method="$nm" threads="$nt")" \
        "$(csv_get "$f" mops method="$dm" threads="$dt")" ">=" "$goal" "$note"
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
echo "auto at 2 threads vs mutex at 2 threads, read-mostly (10% updates) (target >= 2x):"
versus "hash 65536" "$HASH" auto 2 mutex 2 2
versus "tree 4096" "$TREE" auto 2 mutex 2 2
echo "stm vs GCC libitm ml_wt at the same thread count (target >= 2.5x):"
versus "hash 65536" "$HASH" stm 1 itm@libitm:ml_wt 1 2.5
versus "hash 65536" "$HASH" stm 2 itm@libitm:ml_wt 2 2.5
versus "tree 4096" "$TREE" stm 1 itm@libitm:ml_wt 1 2.5
versus "tree 4096" "$TREE" stm 2 itm@libitm:ml_wt 2 2.5
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
versus "bank 1024" "$BANKCSV" stm 2 itm@libitm:ml_wt 2 -
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

if command -v gnuplot >/dev/null 2>&1 && [ -f "$HASH" ]; then
    plots=()
    for m in seq mutex mutex+elision rwlock auto htm stm serial itm@libitm:default itm@libitm:ml_wt itm@libitm:gl_wt; do
        f="$OUT/hash-65536-$(echo "$m" | tr ':+' '__').dat"
        awk -F, -v m="$m" '
            NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
            $col["method"] == m && $col["status"] == "ok" { print $col["threads"], $col["mops"] }' \
            "$HASH" | sort -n >"$f"
        if [ -s "$f" ]; then
            # one colour and point per method; dashed: the baselines from
            # outside txkit's locks (libitm, glibc elision)
            case $m in
                seq) style="lc rgb '#000000' pt 7" ;;
                mutex) style="lc rgb '#d62728' pt 5" ;;
                mutex+elision) style="lc rgb '#ff7f0e' pt 4 dt 3" ;;
                rwlock) style="lc rgb '#8c564b' pt 9" ;;
                auto) style="lc rgb '#1f77b4' pt 7 lw 3" ;;
                htm) style="lc rgb '#17becf' pt 11" ;;
                stm) style="lc rgb '#2ca02c' pt 13" ;;
                serial) style="lc rgb '#7f7f7f' pt 15" ;;
                itm@libitm:default) style="lc rgb '#9467bd' pt 6 dt 2" ;;
                itm@libitm:ml_wt) style="lc rgb '#e377c2' pt 8 dt 2" ;;
                *) style="lc rgb '#bcbd22' pt 12 dt 2" ;;
            esac
            case $m in auto) ;; *) style="$style lw 2" ;; esac
            plots+=("'$f' using 1:2 with linespoints $style title '$m'")
        else
            rm -f "$f"
        fi
    done
    if [ ${#plots[@]} -gt 0 ]; then
        term=$(png_term 960,600)
        {
            echo "set terminal $term noenhanced"
            echo "set output '$OUT/hash-65536.png'"
            echo "set title 'txkit: hash set, 1024 buckets, 65536 keys, 10% updates ($(hostname)); itm = GCC libitm'"
            echo "set xlabel 'threads'"
            echo "set ylabel 'Mops/s (median)'"
            echo "set xtics 1"
            echo "set xrange [0.5:*]"
            echo "set yrange [0:*]"
            echo "set key outside right"
            echo "set grid"
            printf 'plot '
            sep=""
            for p in "${plots[@]}"; do
                printf '%s%s' "$sep" "$p"
                sep=", "
            done
            echo
        } >"$OUT/hash-65536.gp"
        if gnuplot "$OUT/hash-65536.gp" 2>"$OUT/gnuplot.log"; then
            echo "plot: $OUT/hash-65536.png"
            rm -f "$OUT/gnuplot.log"
        else
            echo "plot: gnuplot failed (see $OUT/gnuplot.log)"
        fi
    fi
else
    echo "plot: skipped (gnuplot not installed)"
fi

echo "results: $OUT/*.csv"
bench_finish
