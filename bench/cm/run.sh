#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/cm/run.sh BUILD_DIR [OUTDIR] - the contention-management benchmarks
# (txkit-bench-cm inversion, hotcounter, pipeline) over a small default
# matrix, well under 90 s: CSV, text and PNG (gnuplot) in OUTDIR (default
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
plot() {
    if ! command -v gnuplot >/dev/null 2>&1; then
        echo "note: gnuplot not installed: no PNG (apt-get install gnuplot-nox); the CSV files are there"
        return 0
    fi
    cd "$out"
    # one data file per series: threads and the values, from the CSV
    for cm in backoff timestamp size prio; do
        awk -F, -v cm=$cm 'NR > 1 && $2 == cm { print $4, $9, $19, $14 }' inversion.csv >inv_$cm.dat
        for s in off on; do
            awk -F, -v cm=$cm -v s=$s 'NR > 1 && $2 == cm && $3 == s { print $4, $14 / 1000, $12, $16 / 1e6 }' \
                hotcounter.csv >hot_${cm}_$s.dat
        done
    done
    awk -F, 'NR > 1 { k = $2; t[k, $3] = $7; r[k, $3] = $8; if (!(k in seen)) { seen[k] = 1; order[n++] = k } }
             END { for (i = 0; i < n; i++) { k = order[i]; print k, t[k, "off"], t[k, "on"], r[k, "off"], r[k, "on"] } }' \
        pipeline.csv >pipe.dat
    gnuplot <<'EOF' || echo "note: gnuplot failed; the CSV files are there"
set terminal pngcairo size 1500,520 noenhanced
set output 'inversion.png'
set multiplot layout 1,2 title 'inversion: threads at nice 0/5/10/15 (txkit-bench-cm inversion, stm)'
set key top left
set xlabel 'threads'
set xtics (2, 4, 8)
set logscale x 2
set xrange [1.7:9.5]
set ylabel 'inversions / cross-priority conflicts (%) [oracle]'
set yrange [0:*]
plot for [cm in 'backoff timestamp size prio'] 'inv_'.cm.'.dat' using 1:3 with linespoints title cm
set ylabel 'throughput (M tx/s)'
plot for [cm in 'backoff timestamp size prio'] 'inv_'.cm.'.dat' using 1:2 with linespoints title cm
unset multiplot

set output 'hotcounter.png'
set key top left font ',8'
set multiplot layout 1,3 title 'hot counter: one word, all threads (txkit-bench-cm hotcounter, stm)'
set ylabel 'p99 latency (us)'
plot for [cm in 'backoff timestamp size prio'] for [s in 'off on'] 'hot_'.cm.'_'.s.'.dat' using 1:2 with linespoints title cm.' sched '.s
set ylabel 'commits min/max over threads'
set yrange [0:1.05]
plot for [cm in 'backoff timestamp size prio'] for [s in 'off on'] 'hot_'.cm.'_'.s.'.dat' using 1:3 with linespoints title cm.' sched '.s
set yrange [0:*]
set logscale y
set ylabel 'max latency (ms, incl. preemption)'
plot for [cm in 'backoff timestamp size prio'] for [s in 'off on'] 'hot_'.cm.'_'.s.'.dat' using 1:4 with linespoints title cm.' sched '.s
unset multiplot
unset logscale
set key top right font ',10'
set yrange [0:*]
set autoscale x

set output 'pipeline.png'
set multiplot layout 1,2 title 'pipeline: 4 x CPUs threads, 8 phases (txkit-bench-cm pipeline, stm)'
unset xlabel
set xtics auto
set style data histograms
set style histogram clustered
set style fill solid 0.6 border -1
set ylabel 'execution time (s, median)'
plot 'pipe.dat' using 2:xtic(1) title 'sched off', '' using 3 title 'sched on'
set ylabel 'restarts (aborted attempts)'
plot 'pipe.dat' using 4:xtic(1) title 'sched off', '' using 5 title 'sched on'
unset multiplot
EOF
    rm -f inv_*.dat hot_*.dat pipe.dat
    cd - >/dev/null
    echo "plots: $out/inversion.png $out/hotcounter.png $out/pipeline.png"
}
plot

echo
echo "=== targets (results in $out) ==="
grep -h '^TARGET' "$out"/inversion.txt "$out"/pipeline.txt "$out"/hotcounter.txt
count_targets "$out"/inversion.txt "$out"/pipeline.txt "$out"/hotcounter.txt
bench_finish
