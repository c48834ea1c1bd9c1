#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run-locks.sh BUILD_DIR [OUTDIR] - TxLinux's lock figures in user space:
# real, unmodified multi-threaded programs from Debian, each run under the
# lock report (`txkit run --report-csv`, issue 16) and once more without it:
#   memcached  -t 2, loaded over loopback by memcaslap (2 threads, 32
#              connections) for LOCKS_SECONDS
#   apache     Apache 2.4, worker MPM, one child, 4 threads (the private
#              instance of cache/bench/apache/txhttpd.sh, no cache), wrk on a
#              static page, then on a CGI script
#   pigz       pigz -p 2 compressing 64 MB
#   xz         xz -T 2 compressing 16 MB
#   sort       sort --parallel=2 on 1.5 M lines
#   build      make -j2 of a small real project (this repository's library
#              sources, 30-odd files), linked by gold with --threads: the
#              compilers are single-threaded processes (nothing to report), the
#              linker's threads share locks
# Figures (bench/plot.py locks): time lost waiting for locks per program
# (TxLinux Figure 4), acquisitions and contended acquisitions of each
# program's top locks (Table 6), the most threads waiting at once per lock
# (the user-space stand-in for Figure 5) and, with RTM, the share of
# sections that ran exclusive rather than elided (Figure 6). The report's
# cost: memcached operations/s and Apache requests/s with and without it,
# median of LOCKS_RUNS runs, a TARGET line each (>= 0.95, i.e. <= 5%), and
# per lock operation (txkit-bench-cx mutex rows: an empty section, the hash
# set at 2 threads) under txkit run with and without the report.
# Output in OUTDIR (default BUILD_DIR/bench-results/locks): NAME.report
# (the text report), NAME.csv (its rows), locks.csv (all of them), cost.csv,
# summary.txt, locks.png, and the figures' data.
# Environment: LOCKS_SECONDS (default 4), LOCKS_RUNS (default 3),
# LOCKS_MEMCACHED (the memcached binary; default Debian's, which is stripped:
# its locks are named by address; a build of the same source with symbols,
# e.g. from `apt-get source memcached`, names them: slabs_lock, lru_locks).
# Exit status: 0; 1 when a program failed; 2 on usage errors or missing tools.
set -u
. "$(dirname "$0")/harness/lib.sh"
[ -n "${1:-}" ] || { echo "usage: bench/run-locks.sh BUILD_DIR [OUTDIR]" >&2; exit 2; }
bench_init run-locks.sh "$1"
REPO=$(cd "$(dirname "$0")/.." && pwd)
TXKIT=$(need_bin txkit) || exit 2
OUT=${2:-$BUILD/bench-results/locks}
SECS=${LOCKS_SECONDS:-4}
RUNS=${LOCKS_RUNS:-3}
bench_pos_int LOCKS_SECONDS "$SECS"
bench_pos_int LOCKS_RUNS "$RUNS"
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/*.csv "$OUT"/*.report "$OUT"/*.png
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"; pkill -TERM -f "^$MEMCACHED -u root -t 2 -p $MCPORT" 2>/dev/null' EXIT
MCPORT=$((20000 + RANDOM % 5000))
HTPORT=$((MCPORT + 1))

missing=()
MEMCACHED=${LOCKS_MEMCACHED:-memcached}
for c in "$MEMCACHED" memcaslap apache2 wrk pigz xz curl make gcc ld.gold; do
    command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] || missing+=("$c")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "$BENCH_NAME: missing: ${missing[*]} (apt-get install memcached libmemcached-tools apache2 wrk pigz xz-utils curl make gcc binutils)" >&2
    exit 2
fi

echo "txkit lock figures: $(plot_about)"
echo "programs  memcached, apache, pigz, xz, sort, build (make -j2); $SECS s of load; cost: median of $RUNS runs"
echo "load      $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cmd,pid,exe,seconds,threads,rtm,rank,lock,kind,acquired,contended,wait_ns,hold_ns,lost_pct,wait_p99_ns,hold_p99_ns,max_waiting,elided,top_site,top_object,lock_name,max_inside,program" >"$OUT/locks.csv"
echo "program,mode,run,rate,unit" >"$OUT/cost.csv"

# report NAME: append NAME.csv to locks.csv with the program's name
collect() {
    [ -f "$OUT/$1.csv" ] || { echo "$BENCH_NAME: $1: no report CSV" >&2; FAILED+=("$1"); return; }
    tail -n +2 "$OUT/$1.csv" | sed "s/\$/,$1/" >>"$OUT/locks.csv"
    echo "  $1: $(($(wc -l <"$OUT/$1.csv") - 1)) locks; top:"
    awk -F, 'NR > 1 && NR <= 4 { printf "    #%s %s %s: %s acquired, %s contended, %.3f ms waiting (%s%% of thread time) at %s (%s)\n", $7, $9, ($21 != "" ? $21 : $8), $10, $11, $12 / 1e6, $14, $19, $20 }' "$OUT/$1.csv"
}

# ---------------------------------------------------------------- memcached
# mc MODE RUN: one memcached run under load; prints operations/s
mc() {
    local mode=$1 run=$2 pid tps
    local pre=()
    [ "$mode" = report ] && pre=("$TXKIT" run --report="$OUT/memcached.report" --report-csv="$OUT/memcached.csv" --)
    [ "$mode" = preload ] && pre=("$TXKIT" run --)
    "${pre[@]}" "$MEMCACHED" -u root -t 2 -p "$MCPORT" -l 127.0.0.1 -U 0 -m 64 >"$WORK/mc.out" 2>&1 &
    pid=$!
    for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$MCPORT") 2>/dev/null && break; sleep 0.1; done
    tps=$(memcaslap -s "127.0.0.1:$MCPORT" -T 2 -c 32 -t "${SECS}s" 2>&1 | sed -n 's/.*TPS: \([0-9]*\).*/\1/p' | tail -n 1)
    pkill -TERM -f "^$MEMCACHED -u root -t 2 -p $MCPORT" 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "memcached,$mode,$run,${tps:-},ops/s" >>"$OUT/cost.csv"
    echo "${tps:-}"
}

# ---------------------------------------------------------------- apache
HT=$WORK/httpd
mkdir -p "$HT"
chmod a+rx "$WORK" # the children run as www-data
TXKIT_BUILD=$BUILD "$REPO/cache/bench/apache/txhttpd.sh" start "$HT" "$HTPORT" nocache 4 >/dev/null 2>&1 &&
    "$REPO/cache/bench/apache/txhttpd.sh" stop "$HT" >/dev/null 2>&1
APACHE_OK=0
if [ -f "$HT/httpd.conf" ]; then
    APACHE_OK=1
    mkdir -p "$HT/htdocs" "$HT/cgi"
    head -c 8192 /dev/urandom | base64 >"$HT/htdocs/page.html"
    printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\nhello\\n"\n' >"$HT/cgi/hello.sh"
    chmod 755 "$HT/cgi/hello.sh"
    chmod -R a+rX "$HT" "$WORK"
else
    echo "$BENCH_NAME: txhttpd.sh could not write an Apache configuration: no apache rows" >&2
fi
# ap MODE RUN: Apache in the foreground under the mode; prints requests/s of the static run
ap() {
    local mode=$1 run=$2 pid rps cgi
    local pre=()
    [ "$mode" = report ] && pre=("$TXKIT" run --report="$OUT/apache.report" --report-csv="$OUT/apache.csv" --)
    [ "$mode" = preload ] && pre=("$TXKIT" run --)
    setsid "${pre[@]}" apache2 -f "$HT/httpd.conf" -DFOREGROUND >"$WORK/ap.out" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$HTPORT/page.html" && break; sleep 0.1; done
    rps=$(wrk -t 2 -c 8 -d "${SECS}s" "http://127.0.0.1:$HTPORT/page.html" 2>&1 | sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p')
    cgi=$(wrk -t 1 -c 4 -d 2s "http://127.0.0.1:$HTPORT/tcgi/hello.sh" 2>&1 | sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p')
    kill -TERM "$(cat "$HT/httpd.pid" 2>/dev/null)" 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "apache,$mode,$run,${rps:-},requests/s" >>"$OUT/cost.csv"
    echo "apache,$mode-cgi,$run,${cgi:-},requests/s" >>"$OUT/cost.csv"
    echo "${rps:-}"
}

# ---------------------------------------------------------------- the rest
head -c $((48 * 1024 * 1024)) /dev/urandom >"$WORK/rand"
{ cat "$WORK/rand"; head -c $((16 * 1024 * 1024)) /dev/zero; } >"$WORK/data64"
head -c $((16 * 1024 * 1024)) "$WORK/data64" >"$WORK/data16"
seq 1500000 | awk '{ print ($1 * 7919) % 1000003, $1 }' >"$WORK/lines"
mkdir -p "$WORK/build"
cat >"$WORK/build/Makefile" <<'MK'
# the library's sources, compiled in parallel, linked by gold's threads
SRC := $(wildcard $(REPO)/src/*/*.c $(REPO)/src/arch/*/*.c $(REPO)/src/arch/*/*.S)
OBJ := $(patsubst $(REPO)/src/%,obj/%.o,$(SRC))
CFLAGS := -O2 -g -fPIC -D_GNU_SOURCE -DTXKIT_BUILDING_LIBRARY -I$(REPO)/include -I$(REPO)/src
libbuilt.so: $(OBJ)
	gcc -shared -fuse-ld=gold -Wl,--threads,--thread-count,2 -o $@ $(OBJ) -lpthread -ldl
obj/%.o: $(REPO)/src/%
	@mkdir -p $(dir $@)
	gcc $(CFLAGS) -c $< -o $@
MK
run_tool() { # NAME COMMAND...: under the report, timed
    local name=$1 t0 t1
    shift
    t0=$(date +%s.%N)
    "$TXKIT" run --report="$OUT/$name.report" --report-csv="$OUT/$name.csv" -- "$@" >/dev/null 2>"$WORK/$name.err" ||
        { echo "$BENCH_NAME: $name failed: $(head -n 3 "$WORK/$name.err")" >&2; FAILED+=("$name"); }
    t1=$(date +%s.%N)
    echo "$name,report,1,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", 1 / (b - a) }'),runs/s" >>"$OUT/cost.csv"
}

# ---------------------------------------------------------------- runs
# the cost: plain (no preload), preload (txkit run, elision), report,
# interleaved run by run
declare -A RATE
for ((r = 1; r <= RUNS; r++)); do
    for mode in plain preload report; do
        RATE[mc,$mode,$r]=$(mc "$mode" "$r")
        [ $APACHE_OK = 1 ] && RATE[ap,$mode,$r]=$(ap "$mode" "$r")
    done
done
run_tool pigz pigz -p 2 -c "$WORK/data64"
run_tool xz xz -T 2 -3 -c "$WORK/data16"
run_tool sort sort --parallel=2 -S 64M "$WORK/lines"
run_tool build make -s -j2 -C "$WORK/build" REPO="$REPO"

echo
echo "=== the lock reports (full text: $OUT/NAME.report) ==="
for n in memcached apache pigz xz sort build; do
    [ -f "$OUT/$n.csv" ] && collect "$n"
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
# The report's cost per lock operation, without a server's noise:
# txkit-bench-cx's mutex rows (an empty section, 1 thread; the hash set, 2
# threads) under txkit run and txkit run --report, interleaved, each the
# median of 3 runs; with RTM also TXKIT_RTM=off (what most users get).
CXB=$(find_bin txkit-bench-cx || true)
PEROP=$WORK/perop.csv
if [ -n "$CXB" ]; then
    envs=("")
    "$TXKIT" info 2>/dev/null | grep -Eq "^rtm:[[:space:]]+yes" && envs+=("TXKIT_RTM=off")
    for e in "${envs[@]}"; do
        for mode in preload report; do
            rep=()
            [ $mode = report ] && rep=(--report="$WORK/cx.report")
            env $e "$TXKIT" run "${rep[@]}" -- "$CXB" -w uncontended,hash -l mutex --io 0 -t 1,2 \
                -s 0.5 -r 3 --csv "$WORK/cx-$mode.csv" >/dev/null 2>&1
            awk -F, -v m="$mode" -v e="${e:-RTM}" 'NR > 1 && (($4 == "uncontended" && $6 == 1) || ($4 == "hash" && $6 == 2)) { print e "," $4 "," $6 "," m "," $9 }' \
                "$WORK/cx-$mode.csv" >>"$PEROP"
            rm -f "$WORK/cx-$mode.csv"
        done
    done
fi
{
    if [ -s "$PEROP" ]; then
        echo
        echo "=== the report's cost per lock + unlock (txkit-bench-cx mutex, ns/op, median of 3) ==="
        awk -F, '{ k = $1 "," $2 "," $3; v[k "," $4] = $5; keys[k] = 1 }
            END { for (k in keys) { split(k, a, ",")
                printf "  %-14s %-12s %d thr  txkit run %7.1f  --report %7.1f  ratio %.2f\n", a[1], a[2], a[3], v[k ",preload"], v[k ",report"], (v[k ",preload"] > 0 ? v[k ",report"] / v[k ",preload"] : 0) } }' "$PEROP" | sort
        awk -F, '{ print "perop," $1 "-" $2 "-" $3 "," $4 ",1," $5 ",ns/op" }' "$PEROP" >>"$OUT/cost.csv"
    fi

    echo
    echo "=== the report's cost (median of $RUNS runs, same run, interleaved) ==="
    for p in memcached apache; do
        [ "$p" = apache ] && [ $APACHE_OK != 1 ] && continue
        k=$([ "$p" = memcached ] && echo mc || echo ap)
        plain=$(for ((r = 1; r <= RUNS; r++)); do echo "${RATE[$k,plain,$r]}"; done | grep . | median)
        pre=$(for ((r = 1; r <= RUNS; r++)); do echo "${RATE[$k,preload,$r]}"; done | grep . | median)
        rep=$(for ((r = 1; r <= RUNS; r++)); do echo "${RATE[$k,report,$r]}"; done | grep . | median)
        printf '  %-10s plain %10s  txkit run %10s  txkit run --report %10s\n' "$p" "${plain:--}" "${pre:--}" "${rep:--}"
        target "$p throughput with the report / without" "$(ratio_of "$rep" "$plain")" ">=" 0.95
        printf '  %-50s %s\n' "$p txkit run (preload) / plain" "$(ratio_of "$pre" "$plain")"
    done
} | tee "$OUT/summary.txt"
count_targets "$OUT/summary.txt"

plot_csv locks "$OUT/locks.csv" --out "$OUT/locks.png" --scale "$SECS s of load per program"
echo "results: $OUT (locks.csv, cost.csv, summary.txt, *.report)"
bench_finish
