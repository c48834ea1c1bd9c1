# SPDX-License-Identifier: MIT
# bench/harness/lib.sh - the shell side of the benchmark harness, sourced by
# every runner (bench/run-*.sh, bench/cm/run.sh, cache/bench/*/run.sh):
# finding the programs, running them, reading their CSV files, ratios, and
# the TARGET lines (the form bench_target() in bench_util.c prints), counted
# into one PASS/MISS summary by bench_finish. bash only.
#
#   . "$REPO/bench/harness/lib.sh"
#   bench_init run-core.sh "$BUILD"      # names the runner, starts the clock
#   bench_settings 0.3 3                 # SECS, RUNS (TXKIT_BENCH_*), TIMEOUT
#   BIN=$(need_bin txkit-bench-intset)   # or exit 2 with a message
#   run "hash 65536" "$BIN" --struct hash ... --csv "$CSV"
#   a=$(csv_get "$CSV" mops method=auto threads=2)
#   ratio "hash 65536 auto@2 / mutex@2" "$a" "$b" ">=" 2
#   bench_finish                         # elapsed, PASS/MISS counts, exit status

BENCH_NAME=${BENCH_NAME:-bench}
BENCH_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_PASS=0
BENCH_MISS=0
FAILED=()

# bench_init NAME BUILD: the runner's name for messages, the build directory.
bench_init() {
    BENCH_NAME=$1
    BUILD=$2
    START=$(date +%s)
    FAILED=()
    BENCH_PASS=0
    BENCH_MISS=0
}

bench_die() {
    echo "$BENCH_NAME: $*" >&2
    exit 2
}

# bench_pos_int NAME VALUE: exit 2 unless VALUE is an integer >= 1.
bench_pos_int() {
    case $2 in
        '' | *[!0-9]* | 0) bench_die "$1='$2' is not a positive integer" ;;
    esac
}

# bench_settings DEFAULT_SECONDS DEFAULT_RUNS: SECS and RUNS from
# TXKIT_BENCH_SECONDS and TXKIT_BENCH_RUNS, and TIMEOUT (seconds before one
# measurement is killed: 4 x SECS + 8, at least 10).
bench_settings() {
    SECS=${TXKIT_BENCH_SECONDS:-$1}
    RUNS=${TXKIT_BENCH_RUNS:-$2}
    bench_pos_int TXKIT_BENCH_RUNS "$RUNS"
    TIMEOUT=$(awk -v s="$SECS" 'BEGIN { t = 4 * s + 8; if (t < 10) t = 10; print t }')
}

# find_bin NAME: the path of a program of the build (benchmarks, txkit).
find_bin() {
    local d
    for d in "$BUILD/bench" "$BUILD/bench/cm" "$BUILD/cache/bench/core" "$BUILD/tools" "$BUILD" \
             "$BUILD/bin"; do
        if [ -x "$d/$1" ] && [ -f "$d/$1" ]; then
            echo "$d/$1"
            return 0
        fi
    done
    return 1
}

# need_bin NAME: find_bin, or exit 2 saying how to build it.
need_bin() {
    find_bin "$1" || bench_die "$1 not found under $BUILD (build first: cmake --build $BUILD --target $1)"
}

# run LABEL COMMAND...: a blank line, then the command; a non-zero status (a
# failed check, a crash) is reported and remembered in FAILED.
run() {
    local label=$1 rc
    shift
    echo
    "$@"
    rc=$?
    if [ $rc -ne 0 ]; then
        if [ $rc -gt 128 ]; then
            echo "$BENCH_NAME: $label: killed by signal $((rc - 128))" >&2
        else
            echo "$BENCH_NAME: $label: exit status $rc" >&2
        fi
        FAILED+=("$label (exit $rc)")
    fi
    return 0
}

# csv_rows FILE FIELD [COLUMN=VALUE...]: FIELD of every row whose columns (by
# the header's names) have those values, one per line, in file order.
csv_rows() {
    local file=$1 field=$2
    shift 2
    [ -f "$file" ] || return 0
    awk -F, -v f="$field" -v want="$*" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; nw = split(want, W, " "); next }
        {
            for (k = 1; k <= nw; k++) {
                eq = index(W[k], "="); c = substr(W[k], 1, eq - 1); v = substr(W[k], eq + 1)
                if (!(c in col) || $col[c] != v) next
            }
            print $col[f]
        }' "$file"
}

# csv_get FILE FIELD [COLUMN=VALUE...]: FIELD of the last such row; nothing
# when there is none.
csv_get() { csv_rows "$@" | tail -n 1; }

# csv_median FILE FIELD [COLUMN=VALUE...]: the median of FIELD over every such
# row (rows of alternating processes, each one run; the mean of the middle two
# for an even count); nothing when there is none.
csv_median() {
    csv_rows "$@" | sort -g | awk '{ x[n++] = $1 + 0 }
        END { if (n) printf "%.6f\n", n % 2 ? x[(n - 1) / 2] : (x[n / 2 - 1] + x[n / 2]) / 2 }'
}

# csv_spread FILE [COLUMN=VALUE...]: how far the runs of the last such row
# spread (mops_max - mops_min) as a whole percentage of their median (mops);
# nothing when there is no such row or its median is not positive.
csv_spread() {
    local file=$1
    shift
    awk -v lo="$(csv_get "$file" mops_min "$@")" -v hi="$(csv_get "$file" mops_max "$@")" \
        -v m="$(csv_get "$file" mops "$@")" \
        'BEGIN { if (m > 0 && lo != "" && hi != "") printf "%.0f", 100 * (hi - lo) / m }'
}

# noisy_note SPREAD BASE_SPREAD [BASE_NAME]: under a TARGET or ratio line, one
# line saying that the ratio is the machine's noise as much as the code's when
# either row's runs spread by more than half their median (csv_spread);
# nothing otherwise. BASE_NAME names the denominator's row (default "the
# baseline's").
noisy_note() {
    local sp=$1 bp=$2 name=${3:-"the baseline's"}
    if [ "${sp:-0}" -gt 50 ] || [ "${bp:-0}" -gt 50 ]; then
        echo "    (a noisy point: its runs spread by ${sp:-?}% of their median, $name by ${bp:-?}%)"
    fi
    return 0
}

# csv_cat FILE...: the files' rows under the first one's header.
csv_cat() {
    local f first=1
    for f in "$@"; do
        [ -f "$f" ] || continue
        if [ $first = 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
    done
}

# target LABEL VALUE CMP GOAL [NOTE]: one TARGET line, PASS when VALUE CMP
# GOAL (CMP ">=" or "<="), MISS otherwise or when VALUE is empty or "-"
# (no valid result: NOTE says why). Counted for bench_finish.
target() {
    local label=$1 value=$2 cmp=$3 goal=$4 note=${5:-} verdict
    verdict=$(awk -v v="$value" -v c="$cmp" -v g="$goal" 'BEGIN {
        if (v == "" || v == "-") { print "MISS"; exit }
        ok = (c == "<=") ? (v + 0 <= g + 0) : (v + 0 >= g + 0)
        print ok ? "PASS" : "MISS" }')
    [ -n "$note" ] && verdict=MISS
    printf 'TARGET %-44s (target %s %s): %s  %s%s\n' "$label" "$cmp" "$goal" "$verdict" \
        "${value:-no data}" "${note:+  [$note]}"
    if [ "$verdict" = PASS ]; then
        BENCH_PASS=$((BENCH_PASS + 1))
    else
        BENCH_MISS=$((BENCH_MISS + 1))
    fi
}

# ratio_of A B: A / B with 4 decimals, or nothing when either is missing.
ratio_of() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b + 0 > 0) printf "%.4f", a / b }'
}

# ratio LABEL NUM DEN [CMP GOAL [NOTE]]: NUM / DEN; with a goal a TARGET line,
# without one a reference line.
ratio() {
    local label=$1 a=$2 b=$3 cmp=${4:-} goal=${5:-} note=${6:-} r
    r=$(ratio_of "$a" "$b")
    if [ -n "$goal" ] && [ "$goal" != - ]; then
        target "$label" "$r" "$cmp" "$goal" "$note"
        return
    fi
    if [ -z "$r" ]; then
        printf '  %-50s no data (%s / %s)\n' "$label" "${a:-missing}" "${b:-missing}"
    else
        printf '  %-50s %9.3f / %9.3f = %5.2fx%s\n' "$label" "$a" "$b" "$r" "${note:+  [$note]}"
    fi
}

# count_targets FILE...: count the TARGET lines programs printed into the files.
count_targets() {
    local p m
    p=$(cat "$@" 2>/dev/null | grep '^TARGET' | grep -c ': PASS' || true)
    m=$(cat "$@" 2>/dev/null | grep '^TARGET' | grep -c ': MISS' || true)
    BENCH_PASS=$((BENCH_PASS + p))
    BENCH_MISS=$((BENCH_MISS + m))
}

# plot_about: the machine line of a figure's title: host, CPU model, CPU
# count, RTM usable or not (txkit info when the build has it, else the CPU flag).
plot_about() {
    local cpu rtm=no tx
    cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -n 1)
    if tx=$(find_bin txkit); then
        "$tx" info 2>/dev/null | grep -Eq '^rtm:[[:space:]]+yes' && rtm=yes
    elif grep -qw rtm /proc/cpuinfo 2>/dev/null; then
        rtm=yes
    fi
    echo "$(hostname): ${cpu:-unknown CPU}, $(nproc) CPUs, RTM $rtm"
}

# plot_csv KIND [ARGS...]: draw figures with bench/plot.py, the one place
# every figure of the benchmarks is drawn (see its --help), with the machine
# line of plot_about. Needs a Python 3 with matplotlib (Debian:
# python3-matplotlib); without one it says so: the CSV files are the results.
plot_csv() {
    local py
    for py in /usr/bin/python3 python3; do
        if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import matplotlib' 2>/dev/null; then
            "$py" "$BENCH_LIB_DIR/../plot.py" "$@" --about "$(plot_about)" ||
                echo "$BENCH_NAME: bench/plot.py $1 failed"
            return 0
        fi
    done
    echo "$BENCH_NAME: no PNG: matplotlib is not installed (apt-get install python3-matplotlib);" \
        "the CSV files are the results"
}

# bench_finish: elapsed time, the PASS/MISS count, the failures; exits 1 if
# a program failed (a missed target is reported, not an error), else 0.
bench_finish() {
    echo "elapsed: $(($(date +%s) - START)) s"
    echo "targets: $BENCH_PASS PASS, $BENCH_MISS MISS"
    if [ ${#FAILED[@]} -gt 0 ]; then
        echo "FAILED: ${FAILED[*]}"
        exit 1
    fi
    exit 0
}
