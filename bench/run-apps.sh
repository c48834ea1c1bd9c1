#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run-apps.sh BUILD_DIR [OUTDIR] - the application corpus (tests/apps:
# vacation, yada, bayes, genome, intruder, kmeans, labyrinth, ssca2; gcc -fgnu-tm programs with
# an oracle each) on txkit's libitm drop-in against GCC's libitm, the same
# binary on both (issue 14, "Applications").
#
# Each app runs rounds of its workload (fresh state, work, oracle) for
# TXKIT_BENCH_SECONDS (default 1) and prints "(N rounds, T s)"; the measure is
# rounds per second, the median of TXKIT_BENCH_RUNS runs (default 3), runs of
# the two runtimes interleaved. Pairs measured, at 1 and 2 threads:
#   auto     txkit (TXKIT_METHOD=auto) vs GCC's libitm default (its own choice)
#   nortm    on a CPU with RTM only: txkit with TXKIT_RTM=off vs libitm
#            with what it chooses on a CPU without RTM (serialirr for one
#            thread, ml_wt for more): what users without RTM get from each
# The time ratio is txkit's time per round / libitm's (< 1: txkit faster).
# Targets (auto pair): every app <= 1.0 at 1 and 2 threads; the geometric
# mean at 2 threads <= 0.8. The nortm pair prints the same lines as
# reference. Output in OUTDIR (default BUILD_DIR/bench-results/apps):
# apps.csv, summary.txt, apps.png (time ratios, bench/plot.py).
# Exit status: 0; 1 if an app failed its oracle or crashed; 2 on a usage
# error or missing binaries.
set -u
. "$(dirname "$0")/harness/lib.sh"
[ -n "${1:-}" ] || { echo "usage: bench/run-apps.sh BUILD_DIR [OUTDIR]" >&2; exit 2; }
bench_init bench/run-apps.sh "$1"
bench_settings 1 3
OUT=${2:-$BUILD/bench-results/apps}
APPDIR=$BUILD/tests/apps
DROPIN=$BUILD/lib/txkit
APPS=(vacation yada bayes genome intruder kmeans labyrinth ssca2)
THREADS=(1 2)
for a in "${APPS[@]}"; do
    [ -x "$APPDIR/app_$a" ] || bench_die "$APPDIR/app_$a not found (a build with tests and a system libitm: cmake --build $BUILD)"
done
[ -f "$DROPIN/libitm.so.1" ] || bench_die "txkit's libitm drop-in not found in $DROPIN"
mkdir -p "$OUT" || exit 2
CSV=$OUT/apps.csv
rm -f "$CSV" "$OUT/apps.png"

rtm=no
grep -qw rtm /proc/cpuinfo 2>/dev/null && rtm=yes
PAIRS=(auto)
[ $rtm = yes ] && PAIRS+=(nortm)
echo "=== bench/run-apps.sh: the application corpus, txkit vs GCC's libitm ==="
echo "host      $(hostname), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
echo "rtm       $rtm (CPU flag); txkit: $("$BUILD/tools/txkit" info 2>/dev/null | sed -n 's/^rtm: *//p')"
echo "apps      ${APPS[*]} (default sizes)"
echo "threads   ${THREADS[*]}"
echo "pairs     ${PAIRS[*]} (auto: txkit auto vs libitm default; nortm: TXKIT_RTM=off vs libitm serialirr@1, ml_wt@2)"
echo "duration  $SECS s of rounds per run, $RUNS runs interleaved, median rounds/s"
echo "load      $(cut -d' ' -f1-3 /proc/loadavg)"

# one run: prints rounds/s, or nothing (and records the failure)
one() { # label, env assignments..., then the command
    local label=$1 out rounds secs
    shift
    out=$(env -u TXKIT_METHOD -u ITM_DEFAULT_METHOD -u TXKIT_FAULT -u APPS_MIX \
        TXKIT_STRESS_SECONDS="$SECS" "$@" 2>&1)
    local rc=$?
    if [ $rc -ne 0 ] || ! grep -q '^PASS' <<<"$out"; then
        echo "$BENCH_NAME: $label: exit $rc: $(grep -m1 -E 'FAIL|rror' <<<"$out")" >&2
        FAILED+=("$label")
        return
    fi
    rounds=$(sed -n 's/.*(\([0-9]*\) rounds, \([0-9.]*\) s)$/\1/p' <<<"$out" | tail -n 1)
    secs=$(sed -n 's/.*(\([0-9]*\) rounds, \([0-9.]*\) s)$/\2/p' <<<"$out" | tail -n 1)
    awk -v r="$rounds" -v s="$secs" 'BEGIN { if (s > 0) printf "%.3f", r / s }'
}

# median, min, max of the numbers on stdin
stats3() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%s %s %s", v[int((NR + 1) / 2)], v[1], v[NR] }'; }

echo "pair,app,threads,runtime,method,rounds_per_s,min,max,runs,host,rtm" >"$CSV"
printf '\n%-6s %-9s %3s  %12s %12s  %s\n' pair app thr "txkit r/s" "libitm r/s" "time txkit/libitm"
for pair in "${PAIRS[@]}"; do
    if [ "$pair" = auto ]; then
        tk_env=(TXKIT_METHOD=auto) li_env=() tk_m=auto li_m=default
    else
        tk_env=(TXKIT_RTM=off TXKIT_METHOD=auto) tk_m="auto+TXKIT_RTM=off"
    fi
    for a in "${APPS[@]}"; do
        for t in "${THREADS[@]}"; do
            if [ "$pair" = nortm ]; then
                # libitm's default without RTM: serialirr for a lone thread, then ml_wt
                li_m=ml_wt
                [ "$t" = 1 ] && li_m=serialirr
                li_env=(ITM_DEFAULT_METHOD=$li_m)
            fi
            tk=() li=()
            for ((r = 0; r < RUNS; r++)); do
                v=$(one "$a t$t txkit $tk_m" LD_LIBRARY_PATH="$DROPIN" "${tk_env[@]}" "$APPDIR/app_$a" "$t")
                [ -n "$v" ] && tk+=("$v")
                v=$(one "$a t$t libitm $li_m" "${li_env[@]}" "$APPDIR/app_$a" "$t")
                [ -n "$v" ] && li+=("$v")
            done
            read -r tkm tkmin tkmax <<<"$(printf '%s\n' "${tk[@]}" | stats3)"
            read -r lim limin limax <<<"$(printf '%s\n' "${li[@]}" | stats3)"
            echo "$pair,$a,$t,txkit,$tk_m,${tkm:-},${tkmin:-},${tkmax:-},${#tk[@]},$(hostname),$rtm" >>"$CSV"
            echo "$pair,$a,$t,libitm,$li_m,${lim:-},${limin:-},${limax:-},${#li[@]},$(hostname),$rtm" >>"$CSV"
            printf '%-6s %-9s %3s  %12s %12s  %s\n' "$pair" "$a" "$t" "${tkm:-n/a}" "${lim:-n/a}" \
                "$(ratio_of "${lim:-}" "${tkm:-}")"
        done
    done
done

# time ratio per app and thread count: libitm r/s / txkit r/s
tratio() { ratio_of "$(csv_get "$CSV" rounds_per_s pair="$1" app="$2" threads="$3" runtime=libitm)" \
    "$(csv_get "$CSV" rounds_per_s pair="$1" app="$2" threads="$3" runtime=txkit)"; }
{
    echo
    echo "=== apps summary: time per round, txkit / GCC's libitm, same run (median of $RUNS x $SECS s) ==="
    for pair in "${PAIRS[@]}"; do
        for t in "${THREADS[@]}"; do
            prod=1 n=0
            for a in "${APPS[@]}"; do
                r=$(tratio "$pair" "$a" "$t")
                label="$a $pair@$t txkit / libitm time"
                if [ "$pair" = auto ]; then
                    target "$label" "$r" "<=" 1.0
                else
                    printf '  %-50s %s\n' "$label" "${r:-no data}"
                fi
                [ -n "$r" ] && { prod=$(awk -v p="$prod" -v r="$r" 'BEGIN { print p * r }'); n=$((n + 1)); }
            done
            g=$(awk -v p="$prod" -v n="$n" 'BEGIN { if (n) printf "%.4f", exp(log(p) / n) }')
            label="geomean $pair@$t txkit / libitm time ($n apps)"
            if [ "$pair" = auto ] && [ "$t" = 2 ]; then
                target "$label" "$g" "<=" 0.8
            else
                printf '  %-50s %s\n' "$label" "${g:-no data}"
            fi
        done
    done
} | tee "$OUT/summary.txt"
count_targets "$OUT/summary.txt"

plot_csv apps "$CSV" --out "$OUT/apps.png" --scale "median of $RUNS x $SECS s, runs interleaved"
echo "results: $OUT (apps.csv, summary.txt)"
bench_finish
