#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run-abi.sh BUILD_DIR - the same gcc -fgnu-tm binaries on GCC's libitm
# and on txkit's libitm drop-in (the "same binary" comparison of the libitm ABI).
#
# txkit-bench-intset and txkit-bench-bank are linked against GCC's libitm
# (-litm first). Run as they are, their gcc transactions (the itm rows) are run
# by GCC's libitm; run under `txkit run`, txkit's libitm.so.1 comes first on
# LD_LIBRARY_PATH and the very same calls bind to txkit. The binaries look up
# where _ITM_beginTransaction binds and label the rows itm@libitm:M or
# itm@txkit:M accordingly (a row for the runtime that is not bound is n/a).
#
# Workloads, threads 1 and 2:
#   hash          hash set, 1024 buckets, 65536 keys, 10% updates (--verify)
#   tree          red-black tree, 4096 keys, 10% updates (--verify)
#   bank          1024 accounts, 1% read-only sums of all accounts
#   bank-syscall  the same, each transfer a __transaction_relaxed that calls
#                 getppid() in 1 transfer in 100: libitm then goes serial
#                 irrevocable and stops every other transaction (its serial
#                 lock); txkit makes the transaction irrevocable without
#                 stopping the others
# Methods:
#   GCC libitm, binary as it is:   itm@libitm:default (ITM_DEFAULT_METHOD
#                                  unset), ml_wt, gl_wt, htm (n/a without RTM)
#   txkit, `txkit run --method auto -- BINARY`: itm@txkit:auto, stm, htm
#   txkit's own API (TX_ATOMIC, method auto) and seq at 1 thread, for reference
# Every round runs one process per runtime and workload, alternating which
# runtime goes first, so drifts of the machine hit both alike; the figures are
# medians over TXKIT_BENCH_RUNS rounds. 52 measurements a round: about 70 s
# with the defaults (5 rounds of 0.25 s measurements) on 2 cores.
#
# Summary: txkit auto / libitm default at each thread count (target >= 1.0),
# txkit stm / libitm ml_wt, txkit auto / libitm default on bank-syscall at 2
# threads (where libitm serializes: target >= 1.5).
# Files in BUILD_DIR/bench-results/: abi-<workload>.csv (every run, the
# benchmarks' CSV format), abi-summary.csv (medians), abi-ratios.csv,
# abi-log.txt (the benchmarks' own output) and abi.png (bench/plot.py).
#
# Environment:
#   TXKIT_BENCH_SECONDS  seconds per measurement (default 0.25)
#   TXKIT_BENCH_RUNS     rounds, median reported (default 5)
# Exit status: 0; 1 if a benchmark failed its correctness check, crashed or
# timed out; 2 if the programs are missing. A missed target is reported, not
# an error.
set -u
. "$(dirname "$0")/harness/lib.sh"
bench_init run-abi.sh "${1:-build}"
bench_settings 0.25 5
INTSET=$(need_bin txkit-bench-intset) || exit 2
BANK=$(need_bin txkit-bench-bank) || exit 2

# How the txkit rows are started: `txkit run` (it puts its lib/txkit, with the
# libitm.so.1 drop-in, first on LD_LIBRARY_PATH), or that directory by hand.
if TXKIT=$(find_bin txkit); then
    TXRUN=("$TXKIT" run --method auto --)
    TXHOW="\`$TXKIT run --method auto -- BINARY\`"
else
    DROPIN=
    for d in "$BUILD/lib/txkit" "$BUILD/lib64/txkit"; do
        [ -e "$d/libitm.so.1" ] && DROPIN=$d && break
    done
    if [ -z "$DROPIN" ]; then
        echo "run-abi.sh: neither the txkit program nor the libitm drop-in (lib/txkit/libitm.so.1) under $BUILD" >&2
        exit 2
    fi
    TXRUN=(env "LD_LIBRARY_PATH=$DROPIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TXKIT_METHOD=auto)
    TXHOW="LD_LIBRARY_PATH=$DROPIN BINARY (no txkit program found)"
fi

OUT=$BUILD/bench-results
mkdir -p "$OUT" || exit 2
rm -f "$OUT"/abi-*.csv "$OUT"/abi.png "$OUT"/abi-log.txt
LOG=$OUT/abi-log.txt
: >"$LOG" || exit 2

# The libitm process must not inherit a libitm method (it sets one per row
# anyway) nor, by accident, the drop-in: its rows would then be n/a, and say so.
unset ITM_DEFAULT_METHOD

LIBITM_METHODS=seq,auto,itm@libitm:default,itm@libitm:ml_wt,itm@libitm:gl_wt,itm@libitm:htm
TXKIT_METHODS=itm@txkit:auto,itm@txkit:stm,itm@txkit:htm
THREADS=1,2
WORKLOADS=(hash tree bank bank-syscall)

# workload_cmd NAME: the program and its options
workload_cmd() {
    case $1 in
        hash) echo "$INTSET --struct hash --buckets 1024 --size 65536 --update 10 --verify" ;;
        tree) echo "$INTSET --struct tree --size 4096 --update 10 --verify" ;;
        bank) echo "$BANK --accounts 1024 --sum 1" ;;
        bank-syscall) echo "$BANK --accounts 1024 --sum 1 --syscall 1" ;;
    esac
}

# measure RUNTIME WORKLOAD ROUND: one process, every method of that runtime,
# one run each (the rounds make the median); same seed for both runtimes.
measure() {
    local rt=$1 w=$2 round=$3 cmd pre=() methods rc
    read -r -a cmd <<<"$(workload_cmd "$w")"
    if [ "$rt" = txkit ]; then
        pre=("${TXRUN[@]}")
        methods=$TXKIT_METHODS
    else
        methods=$LIBITM_METHODS
    fi
    {
        echo
        echo "### round $round, $rt: ${pre[*]} ${cmd[*]}"
    } >>"$LOG"
    "${pre[@]}" "${cmd[@]}" --method "$methods" --threads "$THREADS" --seconds "$SECS" --runs 1 \
        --seed $((7000 + round)) --timeout "$TIMEOUT" --quiet --csv "$OUT/abi-$w.csv" >>"$LOG" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "run-abi.sh: round $round, $w on $rt: exit status $rc (see $LOG)" >&2
        FAILED+=("$w/$rt/round$round (exit $rc)")
    fi
}

echo "txkit libitm-ABI benchmark: the same gcc -fgnu-tm binaries on GCC's libitm and on txkit"
echo "($SECS s per measurement, $RUNS rounds; TXKIT_BENCH_SECONDS, TXKIT_BENCH_RUNS; progress on stderr)"
for round in $(seq 1 "$RUNS"); do
    printf '  round %d/%d:' "$round" "$RUNS" >&2
    for w in "${WORKLOADS[@]}"; do
        printf ' %s' "$w" >&2
        if [ $((round % 2)) -eq 1 ]; then
            measure libitm "$w" "$round"
            measure txkit "$w" "$round"
        else
            measure txkit "$w" "$round"
            measure libitm "$w" "$round"
        fi
    done
    echo >&2
done
ELAPSED=$(($(date +%s) - START))

# ------------------------------------------------------------ what ran

# hdr KEY RUNTIME: a header line of the benchmarks' output (the first one of
# that runtime's processes), without its key.
hdr() {
    awk -v k="$1" -v rt="$2" '
        /^### / { cur = ($4 == rt ":") ? 1 : 0; next }
        cur && index($0, k " ") == 1 { sub("^" k " +", ""); print; exit }' "$LOG"
}

echo
echo "=== libitm ABI: the same binaries on GCC's libitm and on txkit ==="
echo "host      $(hdr host libitm)"
echo "cpu       $(hdr cpu libitm)"
echo "rtm       $(hdr rtm libitm)"
echo "txkit     $(hdr txkit libitm)"
echo "binaries  $INTSET, $BANK"
echo "libitm    binary as it is: $(hdr itm libitm)"
echo "txkit     $TXHOW: $(hdr itm txkit)"
echo "methods   GCC libitm: itm@libitm:default (ITM_DEFAULT_METHOD unset; libitm's choice: serialirr"
echo "          at 1 thread, then $(hdr rtm libitm | grep -q '^usable' && echo 'htm' || echo 'ml_wt without RTM')), itm@libitm:ml_wt, gl_wt, htm"
echo "          txkit: itm@txkit:auto, stm, htm (the gcc transactions, on txkit's libitm ABI)"
echo "          txkit's own API: auto (TX_ATOMIC, TX_LOAD/TX_STORE); seq (plain code, 1 thread)"
echo "threads   $THREADS (pinned)"
echo "duration  $SECS s per measurement, median of $RUNS rounds (one process per runtime and round,"
echo "          alternating which runtime goes first); $ELAPSED s in all"
echo "workloads hash: 1024 buckets, 65536 keys, 10% updates; tree: red-black, 4096 keys, 10% updates;"
echo "          bank: 1024 accounts, 1% read-only sums; bank-syscall: bank, each transfer a"
echo "          __transaction_relaxed calling getppid() in 1 transfer in 100"
load=$(hdr WARNING libitm)
[ -n "$load" ] && echo "WARNING   $load"

# ------------------------------------------------------------ medians

SUMMARY=$OUT/abi-summary.csv
RATIOS=$OUT/abi-ratios.csv
# every run of every (workload, method, threads) -> median, min, max, status,
# and the runs in round order (each process writes each of its rows once, so
# the r-th row of a (workload, method, threads) is round r; "" when not ok)
awk -F, '
    FNR == 1 { delete col; for (i = 1; i <= NF; i++) col[$i] = i; next }
    {
        k = $col["struct"] SUBSEP $col["method"] SUBSEP $col["threads"]
        if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
        st = $col["status"]
        runs[k] = runs[k] (nr[k]++ ? ";" : "") ((st == "ok" || st == "fail") ? $col["mops"] + 0 : "")
        if (st == "ok" || st == "fail") {
            n[k]++; v[k, n[k]] = $col["mops"] + 0
            ser[k] += $col["pct_serial"]; stm[k] += $col["pct_stm"]
            if (st == "fail") bad[k] = 1
        } else if (!(k in other)) {
            other[k] = st; note[k] = $col["note"]
        }
    }
    END {
        print "workload,method,threads,runs,mops,mops_min,mops_max,pct_stm,pct_serial,status,note,mops_by_round"
        for (j = 1; j <= nk; j++) {
            k = order[j]; split(k, K, SUBSEP)
            m = n[k] + 0
            if (m > 0 && !(k in other)) {
                for (a = 1; a <= m; a++) w[a] = v[k, a]
                for (a = 2; a <= m; a++) {
                    x = w[a]
                    for (b = a - 1; b >= 1 && w[b] > x; b--) w[b + 1] = w[b]
                    w[b + 1] = x
                }
                med = (m % 2) ? w[(m + 1) / 2] : (w[m / 2] + w[m / 2 + 1]) / 2
                printf "%s,%s,%s,%d,%.6f,%.6f,%.6f,%.2f,%.2f,%s,,%s\n", K[1], K[2], K[3], m, med,
                       w[1], w[m], stm[k] / m, ser[k] / m, (k in bad) ? "fail" : "ok", runs[k]
            } else {
                printf "%s,%s,%s,%d,,,,,,%s,%s,%s\n", K[1], K[2], K[3], m, (k in other) ? other[k] : "na",
                       note[k], runs[k]
            }
        }
    }' "$OUT"/abi-hash.csv "$OUT"/abi-tree.csv "$OUT"/abi-bank.csv "$OUT"/abi-bank-syscall.csv \
    >"$SUMMARY" 2>/dev/null

# get WORKLOAD METHOD THREADS FIELD
get() {
    awk -F, -v w="$1" -v m="$2" -v t="$3" -v f="$4" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $1 == w && $2 == m && $3 == t { print $col[f]; exit }' "$SUMMARY"
}

echo
echo "Mops/s, median of $RUNS (n/a: see below; [F]: a correctness check failed; [X]: crashed or timed out)"
printf '%-20s' "method"
for w in "${WORKLOADS[@]}"; do printf ' %13s' "$w@1" "$w@2"; done
echo
for m in itm@libitm:default itm@libitm:ml_wt itm@libitm:gl_wt itm@libitm:htm \
         itm@txkit:auto itm@txkit:stm itm@txkit:htm auto seq; do
    label=$m
    [ "$m" = auto ] && label="auto (txkit API)"
    printf '%-20s' "$label"
    for w in "${WORKLOADS[@]}"; do
        for t in 1 2; do
            st=$(get "$w" "$m" "$t" status)
            case $st in
                ok) cell=$(printf '%.3f' "$(get "$w" "$m" "$t" mops)") ;;
                fail) cell="$(printf '%.3f' "$(get "$w" "$m" "$t" mops)")[F]" ;;
                na) cell="n/a" ;;
                crash | timeout) cell="[X] $st" ;;
                *) cell="-" ;;
            esac
            printf ' %13s' "$cell"
        done
    done
    echo
done
# the reasons, once per method
awk -F, 'NR > 1 && $10 != "ok" && $10 != "fail" && $11 != "" && !seen[$2 FS $11]++ {
             printf "  %s: %s\n", $2, $11 }' "$SUMMARY"

# ------------------------------------------------------------ ratios

echo "comparison,workload,threads,numerator,denominator,num_mops,den_mops,ratio,ratio_min,ratio_max,target,verdict" >"$RATIOS"

# abi_ratio WORKLOAD THREADS NUM_METHOD DEN_METHOD GOAL COMPARISON [TAG]
# The ratio is the median over the rounds of NUM / DEN in the same round (the
# two were measured back to back), with its range over the rounds; the medians
# of the table are shown next to it.
abi_ratio() {
    local w=$1 t=$2 nm=$3 dm=$4 goal=$5 what=$6 tag=${7:-} a sa b sb ra rb line
    sa=$(get "$w" "$nm" "$t" status)
    sb=$(get "$w" "$dm" "$t" status)
    a=$(get "$w" "$nm" "$t" mops)
    b=$(get "$w" "$dm" "$t" mops)
    ra=$(get "$w" "$nm" "$t" mops_by_round)
    rb=$(get "$w" "$dm" "$t" mops_by_round)
    line=$(awk -v w="$w" -v t="$t" -v a="$a" -v b="$b" -v sa="$sa" -v sb="$sb" -v g="$goal" \
               -v nm="$nm" -v dm="$dm" -v tag="$tag" -v ra="$ra" -v rb="$rb" 'BEGIN {
        lab = sprintf("%-13s %d thr%s", w, t, tag == "" ? "" : "  " tag)
        nr = split(ra, A, ";"); split(rb, B, ";"); n = 0
        for (i = 1; i <= nr; i++)
            if (A[i] != "" && B[i] != "" && B[i] + 0 > 0) r[++n] = A[i] / B[i]
        if (sa != "ok" && sa != "fail" || sb != "ok" && sb != "fail" || n == 0) {
            printf "%s %s   no ratio: %s is %s, %s is %s|,,,,,%s\n", (g == "-") ? " " : "TARGET", lab, nm,
                   (sa == "" ? "missing" : sa), dm, (sb == "" ? "missing" : sb), (g == "-") ? "none" : "MISS"
            exit
        }
        for (i = 2; i <= n; i++) {
            x = r[i]
            for (j = i - 1; j >= 1 && r[j] > x; j--) r[j + 1] = r[j]
            r[j + 1] = x
        }
        med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
        bad = (sa != "ok" || sb != "ok") ? "  [CHECK FAILED: not a valid result]" : ""
        v = (g == "-") ? "-" : (med >= g + 0 && bad == "") ? "PASS" : "MISS"
        if (g == "-")
            printf "  %s  %8.3f / %8.3f Mops/s  %5.2fx [%5.2f-%5.2f]%s", lab, a, b, med, r[1], r[n], bad
        else
            printf "TARGET %-44s (target >= %s): %s  %.2fx [%.2f-%.2f] (%.3f / %.3f Mops/s)%s",
                   lab (tag == "" ? " " nm " / " dm : ""), g, v, med, r[1], r[n], a, b, bad
        printf "|%.6f,%.6f,%.4f,%.4f,%.4f,%s\n", a, b, med, r[1], r[n], v
    }')
    echo "${line%%|*}"
    local csv=${line#*|}
    local verdict=${csv##*,}
    case $verdict in
        PASS) BENCH_PASS=$((BENCH_PASS + 1)) ;;
        MISS) BENCH_MISS=$((BENCH_MISS + 1)) ;;
    esac
    echo "$what,$w,$t,$nm,$dm,${csv%,*},$goal,$verdict" >>"$RATIOS"
}

echo
echo "=== summary, all from this run ==="
echo "(medians of the table, then the ratio: the median over the $RUNS rounds of the two measured back to"
echo " back in the same round, and [its range over the rounds])"
echo "txkit auto vs GCC libitm's default, the same binary (itm@txkit:auto / itm@libitm:default; target >= 1.0):"
for w in "${WORKLOADS[@]}"; do
    for t in 1 2; do abi_ratio "$w" "$t" itm@txkit:auto itm@libitm:default 1.0 auto_vs_default; done
done
echo "txkit stm vs GCC libitm ml_wt, the same binary (itm@txkit:stm / itm@libitm:ml_wt; no target):"
for w in "${WORKLOADS[@]}"; do
    for t in 1 2; do abi_ratio "$w" "$t" itm@txkit:stm itm@libitm:ml_wt - stm_vs_ml_wt; done
done
echo "a system call in 1 transaction in 100 (bank-syscall), where libitm serializes (target >= 1.5 at 2 threads):"
abi_ratio bank-syscall 2 itm@txkit:auto itm@libitm:default 1.5 syscall_auto_vs_default "txkit auto / libitm default"
abi_ratio bank-syscall 2 itm@txkit:stm itm@libitm:ml_wt - syscall_stm_vs_ml_wt "txkit stm  / libitm ml_wt  "
for m in itm@libitm:default itm@libitm:ml_wt; do
    s=$(get bank-syscall "$m" 2 pct_serial)
    s0=$(get bank "$m" 2 pct_serial)
    [ -n "$s" ] && printf '  libitm %-8s 2 thr: %s%% of sampled commits ran serial irrevocable (bank without the call: %s%%)\n' \
        "${m#itm@libitm:}" "$s" "${s0:-?}"
done
echo "  (at 1 thread libitm's default runs everything serialirr, so the call costs it nothing extra;"
echo "   the 1-thread ratio is in the first block)"
echo "for reference (no target):"
echo " txkit auto vs GCC libitm ml_wt (itm@txkit:auto / itm@libitm:ml_wt):"
for w in "${WORKLOADS[@]}"; do
    abi_ratio "$w" 2 itm@txkit:auto itm@libitm:ml_wt - auto_vs_ml_wt
done
echo " the gcc transactions on txkit vs txkit's own API (itm@txkit:auto / auto):"
for w in "${WORKLOADS[@]}"; do
    for t in 1 2; do abi_ratio "$w" "$t" itm@txkit:auto auto - dropin_vs_api; done
done
echo " against the plain code (itm@txkit:auto / seq, 1 thread):"
for w in "${WORKLOADS[@]}"; do abi_ratio "$w" 1 itm@txkit:auto seq - dropin_vs_seq; done

# ------------------------------------------------------------ plot

[ -s "$SUMMARY" ] && plot_csv abi "$SUMMARY" --out "$OUT/abi.png" --scale "median of $RUNS x $SECS s"

echo "results: $OUT/abi-*.csv (every run: abi-<workload>.csv; medians: abi-summary.csv; ratios: abi-ratios.csv)"
echo "log: $LOG (the benchmarks' own tables)"
bench_finish
