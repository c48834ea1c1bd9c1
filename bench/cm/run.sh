#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/cm/run.sh BUILD_DIR [OUTDIR] - the contention-management benchmarks
# (txkit-bench-cm inversion, hotcounter, pipeline) over a small default
# matrix, well under 90 s: CSV, text and PNG (bench/plot.py) in OUTDIR (default
# BUILD_DIR/bench/cm/results), then the targets as PASS/MISS lines.
#
# Transactions run as software TM (TXKIT_METHOD=stm: that is where managers
# decide; on a machine without RTM auto also runs stm once threads contend).
# Set CM_SECONDS to lengthen the timed runs (default 0.5 s inversion,
# 0.25 s hotcounter), CM_RUNS for the repetitions (3, the median is reported).
set -u
. "$(dirname "$0")/../harness/lib.sh"
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 BUILD_DIR [OUTDIR]" >&2; exit 2; }
bench_init cm/run.sh "$1"
bin=$(need_bin txkit-bench-cm) || exit 2
out=${2:-$BUILD/bench/cm/results}
mkdir -p "$out" || exit 2
rm -f "$out"/inversion.csv "$out"/hotcounter.csv "$out"/pipeline.csv
secs=${CM_SECONDS:-0.5}
hsecs=${CM_SECONDS:-0.25}
runs=${CM_RUNS:-3}
bench_pos_int CM_RUNS "$runs"
export TXKIT_METHOD=stm

# Each benchmark under a time limit of its own (a hang in the runtime must
# not hold the whole run), its output kept in OUTDIR/NAME.txt.
cm() {
    local name=$1
    shift
    echo "### txkit-bench-cm $name $*"
    run "$name" timeout 120 "$bin" "$name" "$@" --csv "$out/$name.csv" >"$out/$name.txt" 2>&1
    cat "$out/$name.txt"
}

cm inversion --threads 2,4,8 --seconds "$secs" --runs "$runs"
cm hotcounter --threads 2,4,8 --seconds "$hsecs" --runs "$runs"
cm pipeline --runs "$runs"

# ------------------------------------------------------------------ plots
plot_csv cm "$out" --out "$out" --scale "median of $runs runs, ${secs} s (hotcounter ${hsecs} s)"

echo
echo "=== targets (results in $out) ==="
grep -h '^TARGET' "$out"/inversion.txt "$out"/pipeline.txt "$out"/hotcounter.txt
count_targets "$out"/inversion.txt "$out"/pipeline.txt "$out"/hotcounter.txt
bench_finish
