#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/harness/plot_selftest.sh - ctest bench.plot: bench/plot.py draws every
# kind of figure from small CSV files in the benchmarks' formats (with
# oversubscribed points, a failed row, zero aborts), each PNG is a real PNG;
# a missing input is a clear error (exit 2); without matplotlib it says so and
# succeeds; and no runner draws a figure any other way (one place draws them).
# Exit 77 (skip) when no Python 3 with matplotlib is installed.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PLOT=$REPO/bench/plot.py
fail() { echo "FAIL [bench.plot]: $*" >&2; exit 1; }
PY=""
for p in /usr/bin/python3 python3; do
    command -v "$p" >/dev/null 2>&1 && "$p" -c 'import matplotlib' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || { echo "SKIP [bench.plot]: no python3 with matplotlib (apt-get install python3-matplotlib)"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# ------------------------------------------------------------ inputs
H=bench,struct,size,update_pct,method,threads,seconds,runs,mops,mops_min,mops_max,vs_mutex,vs_seq1,commits,aborts_per_commit,pct_htm,pct_stm,pct_serial,status,note,host,timestamp,oversubscribed
{
    echo "$H"
    for m in seq mutex auto stm itm@libitm:ml_wt; do
        for t in 1 2 4; do
            [ $m = seq ] && [ $t -gt 1 ] && continue
            o=$((t > 2))
            echo "intset,hash,4096,20,$m,$t,0.1,3,$((t * 3)).5,$((t * 3)).1,$((t * 3)).9,,,,,,,,ok,,host1,0,$o"
        done
    done
    echo "intset,hash,4096,20,htm,2,0.1,3,,,,,,,,,,,na,no RTM,host1,0,0"
} >"$T/hash.csv"
{
    echo "$H"
    echo "bank,bank,1024,99,mutex,1,0.1,3,20,19,21,,,,,,,,ok,,host1,0,0"
    echo "bank,bank,1024,99,stm,1,0.1,3,0.5,0.4,0.6,,,,,,,,ok,,host1,0,0"
} >"$T/bank.csv"
CH=bench,sync,label,runtime,method,policy,zipf,threads,pages,max_objects,max_bytes,seconds,runs,ops_per_s,hit_ratio,aborts_per_tx,vs_lock,status,host,cpu,rtm,mops,mops_min,mops_max,oversubscribed
for run in auto stm; do
    {
        echo "$CH"
        for z in 0.1 1 2; do
            for t in 1 2 4; do
                o=$((t > 2))
                echo "cache,lock,lock,,,gdsf,$z,$t,1000,500,0,0.1,3,1e6,0.5,,1,ok,host1,cpu,yes,1.0,0.9,1.1,$o"
                echo "cache,tx,tx@txkit:$run,txkit,$run,gdsf,$z,$t,1000,500,0,0.1,3,2e6,0.5,0.01,2,ok,host1,cpu,yes,2.0,1.8,2.2,$o"
            done
        done
    } >"$T/cache-$run.csv"
done
{
    echo "server,zipf_s,threads,conns,seconds,run,status,reason,requests,rps,lat_mean_ms,lat_p99_ms,errors,non200,hits,misses,hit_ratio,tx_commits,tx_aborts,abort_rate,tx_source"
    for s in 0.1 2; do
        for t in 1 2 4; do
            for r in 1 2 3; do
                echo "nocache,$s,$t,2,2,$r,ok,,400,$((200 + r)),10.$r,30,0,0,0,100,0,,,,"
                echo "lock,$s,$t,2,2,$r,ok,,20000,$((10000 + 100 * r)),0.2,1,0,0,99,1,0.99,,,,"
                echo "tx,$s,$t,2,2,$r,ok,,20000,$((10500 + 100 * r)),0.2,1,0,0,99,1,0.99,50000,$((t * r - 1)),0.0001,stat"
            done
        done
    done
    echo "tx-htm,1,1,2,2,1,na,no RTM,,,,,,,,,,,,,"
} >"$T/apache.csv"
{
    echo "workload,method,threads,runs,mops,mops_min,mops_max,pct_stm,pct_serial,status,note,mops_by_round"
    for w in hash tree; do
        for t in 1 2; do
            echo "$w,itm@libitm:default,$t,5,2,1.9,2.1,,,ok,,"
            echo "$w,itm@libitm:ml_wt,$t,5,1,0.9,1.1,,,ok,,"
            echo "$w,itm@txkit:auto,$t,5,4,3.5,4.5,,,ok,,"
            echo "$w,auto,$t,5,5,4.5,5.5,,,ok,,"
        done
    done
} >"$T/abi-summary.csv"
{
    echo "pair,app,threads,runtime,method,rounds_per_s,min,max,runs,host,rtm"
    for a in vacation kmeans; do
        for t in 1 2; do
            echo "auto,$a,$t,txkit,auto,10,9,11,3,host1,yes"
            echo "auto,$a,$t,libitm,default,8,7,9,3,host1,yes"
        done
    done
} >"$T/apps.csv"
{
    echo "bench,host,rtm,workload,lock,threads,io_pct,mops,ns_per_op,vs_mutex_same_process,cx_optimistic_pct,runs,status,mops_min,mops_max,oversubscribed"
    for w in hash counter; do
        for l in mutex cx; do
            for t in 1 2 4; do
                for io in 0 10; do
                    echo "cx,host1,usable,$w,$l,$t,$io,$t.5,100,1,50,3,ok,$t.2,$t.8,$((t > 2))"
                done
            done
        done
    done
} >"$T/cx.csv"
mkdir -p "$T/cm"
{
    echo "bench,cm,sched,threads,prio_source,method,secs,commits,mtx_per_s,vs_backoff,aborts,to_serial,cm_decided,cm_inversions,cm_inv_pct,oracle_aborts,oracle_cross,oracle_inv,oracle_inv_pct,oracle_ties,oracle_unexplained,oracle_covered,top_level_share,sum_ok,oracle_inv_ambiguous"
    for cm in backoff prio; do
        for t in 2 4; do echo "inversion,$cm,off,$t,nice,stm,0.5,1000,1.5,1,10,0,5,1,10,10,5,1,20,0,0,1,0.5,1,0"; done
    done
} >"$T/cm/inversion.csv"
{
    echo "bench,cm,sched,threads,method,secs,commits,mtx_per_s,vs_backoff_off,min_commits,max_commits,min_max_ratio,p50_ns,p99_ns,p999_ns,max_ns,aborts,sched_waits,sched_queued,cm_decided,over32_retries,ok"
    for cm in backoff prio; do
        for s in off on; do
            for t in 2 4; do echo "hotcounter,$cm,$s,$t,stm,0.25,1000,2,1,400,500,0.8,100,2000,5000,3000000,10,0,0,0,0,1"; done
        done
    done
} >"$T/cm/hotcounter.csv"
{
    echo "bench,cm,sched,threads,method,runs,secs,restarts,ms_aborted,sched_waits,sched_queued,to_serial,cm_decided,time_vs_off,restarts_vs_off,ok"
    for cm in backoff prio; do
        for s in off on; do echo "pipeline,$cm,$s,8,stm,3,1.5,1000,10,0,0,0,0,1,1,1"; done
    done
} >"$T/cm/pipeline.csv"

{
    echo "cmd,pid,exe,seconds,threads,rtm,rank,lock,kind,acquired,contended,wait_ns,hold_ns,lost_pct,wait_p99_ns,hold_p99_ns,max_waiting,elided,top_site,top_object,lock_name,max_inside,program"
    for p in memcached sort; do
        echo "$p,10,/usr/bin/$p,4.0,3,1,1,0x1000,mutex,100000,50,3000000,9000000,0.05,1000000,2000,2,90000,f+0x10,$p,big_lock,2,$p"
        echo "$p,10,/usr/bin/$p,4.0,3,1,2,0x2000,rwlock,500,0,0,1000,0.0,0,64,0,0,g+0x20,$p,,1,$p"
    done
} >"$T/locks.csv"

# ------------------------------------------------------------ every kind
draw() {
    local out
    out=$("$PY" "$PLOT" "$@" --about "host1: test CPU, 2 CPUs, RTM no" 2>&1) || fail "plot.py $*: exit $?:
$out"
    echo "$out"
}
draw intset "$T/hash.csv" "$T/bank.csv" --out "$T/core.png" --scale "3 runs"
draw cache auto="$T/cache-auto.csv" stm="$T/cache-stm.csv" nortm="$T/absent.csv" --out "$T/cache.png"
draw apache "$T/apache.csv" --out "$T/apache.png" --cpus 2
draw abi "$T/abi-summary.csv" --out "$T/abi.png"
draw apps "$T/apps.csv" --out "$T/apps.png"
draw cx "$T/cx.csv" --out "$T/cx.png"
draw cm "$T/cm" --out "$T/cm"
draw locks "$T/locks.csv" --out "$T/locks.png"
n=0
for f in core cache apache apache-aborts abi apps cx cm/inversion cm/hotcounter cm/pipeline locks; do
    p=$T/$f.png
    [ -s "$p" ] || fail "$f.png not written"
    [ "$(head -c 8 "$p" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$f.png is not a PNG"
    [ "$(stat -c %s "$p")" -gt 10000 ] || fail "$f.png is suspiciously small ($(stat -c %s "$p") bytes)"
    n=$((n + 1))
done

# ------------------------------------------------------------ errors
out=$("$PY" "$PLOT" intset "$T/nosuch.csv" --out "$T/x.png" 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "a missing CSV: exit $rc, expected 2"
grep -q 'nosuch.csv' <<<"$out" || fail "a missing CSV: the error does not name it: $out"
out=$("$PY" "$PLOT" apache "$T/cm/pipeline.csv" --out "$T/x.png" 2>&1)
[ $? -eq 2 ] || fail "a CSV of another kind: expected exit 2: $out"
# without matplotlib: a note, exit 0 (a fake package that fails to import)
mkdir -p "$T/nompl/matplotlib"
echo 'raise ImportError("test: no matplotlib")' >"$T/nompl/matplotlib/__init__.py"
out=$(PYTHONPATH=$T/nompl "$PY" "$PLOT" intset "$T/hash.csv" --out "$T/y.png" 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "without matplotlib: exit $rc: $out"
grep -q 'matplotlib is not installed' <<<"$out" || fail "without matplotlib: no note: $out"
[ ! -e "$T/y.png" ] || fail "without matplotlib: a PNG appeared"

# ------------------------------------------------------------ one place
others=$(grep -rlE '(^|[^-])gnuplot|set terminal' "$REPO/bench" "$REPO/cache/bench" --include='*.sh' --include='*.py' |
    grep -v plot_selftest.sh)
[ -z "$others" ] || fail "figures drawn outside bench/plot.py: $others"

echo "PASS [bench.plot]: $n figures of 8 kinds, errors and the missing-matplotlib case"
