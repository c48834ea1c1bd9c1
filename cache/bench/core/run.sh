#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cache/bench/core/run.sh BUILD_DIR [OUTDIR] - the mod_cache_tx core under Zipf
# request streams, every sync mode, and tx on both libitm-ABI runtimes.
#
# Three runs (four on a CPU with RTM) of txkit-bench-cache (GDSF, 1000 pages, 500 objects cached),
# s = 0.1, 1, 2 and 1, 2, 4 threads, lock measured in each run so that every
# ratio compares measurements taken side by side:
#   auto    lock, tx, cx, rwlock; tx run by txkit (linked first) with
#           TXKIT_METHOD=auto; rwlock: the legacy design with a reader-writer
#           lock (reference lines: rwlock / lock and tx / rwlock)
#   stm     lock, tx; txkit with TXKIT_METHOD=stm
#   nortm   (CPUs with RTM only) lock, tx, cx with TXKIT_RTM=off: what a CPU
#           without RTM gets (software TM, the cx lock as a plain lock)
#   libitm  lock, tx; GCC's libitm.so.1 preloaded, so that its _ITM_* come first
#           in the lookup scope (ITM_DEFAULT_METHOD as in the environment).
#           The binary reports where _ITM_beginTransaction bound; the script
#           checks that it is libitm and says so.
# Output in OUTDIR (default BUILD_DIR/bench-results/cache): cache-<run>.csv,
# cache.csv (all rows), log.txt (the tables), summary.txt (tx/lock and
# cx/lock at 2 and 4 threads for s = 1, 2, each a PASS/MISS target line) and cache.png (Mops/s vs threads, one
# panel per s; bench/plot.py). About 30 s with the defaults.
#
# Environment: TXKIT_BENCH_SECONDS (per measurement, default 0.1),
# TXKIT_BENCH_RUNS (median of, default 3).
# Exit status: 0; 1 if a measurement failed its checks or the libitm run did
# not run on libitm; 2 on a usage error or missing binary.
set -u
. "$(dirname "$0")/../../../bench/harness/lib.sh"
[ -n "${1:-}" ] || { echo "usage: cache/bench/core/run.sh BUILD_DIR [OUTDIR]" >&2; exit 2; }
bench_init cache/bench/core/run.sh "$1"
bench_settings 0.1 3
OUT=${2:-$BUILD/bench-results/cache}
BIN=$(need_bin txkit-bench-cache) || exit 2
mkdir -p "$OUT" || exit 2
rm -f "$OUT"/cache-*.csv "$OUT/cache.csv" "$OUT/cache.png"
LOG=$OUT/log.txt
: >"$LOG"
common=(--zipf 0.1,1,2 --threads 1,2,4 --seconds "$SECS" --runs "$RUNS" --timeout "$TIMEOUT" --quiet)

cache() { # name, then env assignments and binary arguments
    local name=$1
    shift
    echo "== $name: $*" | tee -a "$LOG"
    run "the $name run" env "$@" "${common[@]}" --csv "$OUT/cache-$name.csv" >"$OUT/$name.out" 2>&1
    cat "$OUT/$name.out" | tee -a "$LOG"
    rm -f "$OUT/$name.out"
}

cache auto TXKIT_METHOD=auto "$BIN" --sync lock,tx,cx,rwlock
cache stm TXKIT_METHOD=stm "$BIN" --sync lock,tx
# On a machine with RTM, also what users without it get (TXKIT_RTM=off:
# software TM for tx, the cx lock as a plain lock).
if grep -qw rtm /proc/cpuinfo 2>/dev/null; then
    cache nortm TXKIT_RTM=off TXKIT_METHOD=auto "$BIN" --sync lock,tx,cx
fi

LIBITM=$(${CC:-gcc} -print-file-name=libitm.so.1 2>/dev/null)
if [ -n "$LIBITM" ] && [ -f "$LIBITM" ]; then
    cache libitm LD_PRELOAD="$LIBITM" "$BIN" --sync lock,tx
    if ! grep -q '^tx mode runs on: libitm' "$LOG"; then
        echo "run.sh: the libitm run did not run on GCC's libitm (see $LOG)" | tee -a "$LOG"
        FAILED+=("libitm run not on libitm")
    fi
else
    echo "run.sh: GCC's libitm.so.1 not found: no libitm run" | tee -a "$LOG"
fi

csv_cat "$OUT"/cache-auto.csv "$OUT"/cache-stm.csv "$OUT"/cache-nortm.csv "$OUT"/cache-libitm.csv \
    >"$OUT/cache.csv"

# targets (issue 14): tx and cx against lock measured side by side in the
# same run: >= 1.5x at 2 threads, s = 1 and 2; not below lock at 4 threads
# (oversubscribed). GCC's libitm run: reference lines, no target. A point
# whose runs (or the lock's) spread by more than half their median says so
# under its line: its ratio is the machine's noise as much as the code's.
{
    echo
    echo "=== cache core summary: Mops/s median of $RUNS x $SECS s, ratio to lock in the same run ==="
    # each run's header measured how long a cache line takes between the two
    # CPUs: where that changed during the script, so did the 2-thread rates
    rtts=$(sed -n 's/^cpu-cpu *\([0-9][0-9]*\) ns.*/\1/p' "$LOG" | sort -n | tr '\n' ' ')
    [ -n "$rtts" ] && echo "cross-CPU line round trips at the runs' starts (ns): $rtts"
    for run in auto stm nortm libitm; do
        f=$OUT/cache-$run.csv
        [ -f "$f" ] || continue
        for sync in tx cx; do
            label=$(csv_get "$f" label sync=$sync)
            [ -n "$label" ] || continue
            [ "$run" = nortm ] && label="$label (TXKIT_RTM=off)"
            for t in 2 4; do
                goal=1.5
                [ "$t" = 4 ] && goal=1.0
                for s in 1 2; do
                    st=$(csv_get "$f" status sync=$sync zipf=$s threads=$t)
                    v=$(csv_get "$f" vs_lock sync=$sync zipf=$s threads=$t)
                    note=""
                    [ "$st" = ok ] || note="not a valid result: ${st:-missing}"
                    sp=$(csv_spread "$f" sync=$sync zipf=$s threads=$t)
                    lp=$(csv_spread "$f" sync=lock zipf=$s threads=$t)
                    if [ "$run" = libitm ]; then
                        printf '  %-50s %s%s\n' "$label / lock, s=$s, $t threads" "${v:-no data}" \
                            "${note:+  [$note]}"
                    else
                        target "$label / lock, s=$s, $t threads" "$v" ">=" "$goal" "$note"
                    fi
                    noisy_note "$sp" "$lp" "the lock's"
                done
            done
        done
    done
    # the fairer lock baseline (issue 14 allows it): reference lines, no target
    f=$OUT/cache-auto.csv
    if [ -f "$f" ] && [ -n "$(csv_get "$f" label sync=rwlock)" ]; then
        tx=$(csv_get "$f" label sync=tx)
        for t in 2 4; do
            for s in 1 2; do
                rw=$(csv_get "$f" mops sync=rwlock zipf=$s threads=$t)
                printf '  %-50s %s\n' "rwlock / lock, s=$s, $t threads" \
                    "$(csv_get "$f" vs_lock sync=rwlock zipf=$s threads=$t)"
                printf '  %-50s %s\n' "$tx / rwlock, s=$s, $t threads" \
                    "$(awk -v a="$(csv_get "$f" mops sync=tx zipf=$s threads=$t)" -v b="$rw" \
                        'BEGIN { if (b > 0 && a != "") printf "%.2f", a / b; else print "no data" }')"
            done
        done
    fi
} | tee "$OUT/summary.txt" | tee -a "$LOG"
count_targets "$OUT/summary.txt"

# one panel per s: Mops/s vs threads; lock, cx and the rest from the auto run,
# the tx line of each other run
plot_csv cache auto="$OUT/cache-auto.csv" stm="$OUT/cache-stm.csv" nortm="$OUT/cache-nortm.csv" \
    libitm="$OUT/cache-libitm.csv" --out "$OUT/cache.png" | tee -a "$LOG"
echo "results: $OUT (cache.csv, summary.txt, log.txt)"
bench_finish
