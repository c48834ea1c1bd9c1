#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cache/bench/apache/run.sh - the Apache experiment of "Transactifying Apache".
#
# A private Apache (cache/bench/apache/txhttpd.sh: worker MPM, one child, THREADS
# worker threads) serves real man pages through man2html; wrk requests them on
# loopback with Zipf popularity (s = 0.1, 1, 2), for each cache variant and
# thread count. Per point: start the server, warm the cache with the same
# request mix, run wrk for --seconds, stop the server. Recorded: throughput,
# mean and p99 latency, errors, hit ratio (X-Cache headers) and the server's
# txkit abort rate (aborts per transaction, `txkit stat --json` deltas over the
# measured interval). Output: CSV, a markdown table, PNGs (bench/plot.py), a summary of
# the targets. See bench/README.md ("The Apache experiment") and --help.
set -u

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SELF_DIR/../../.." && pwd)
. "$REPO/bench/harness/lib.sh" # count_targets (the TARGET lines), as every runner
ALL_SERVERS="nocache socache lock tx tx-stm tx-htm tx-libitm cx lock-preload"

usage() {
    cat <<EOF
usage: cache/bench/apache/run.sh [options]
  --quick            small matrix (make demo): servers nocache,socache,lock,tx,cx;
                     s 0.1,1,2; threads 1,2; 2 s per point, 3 runs;
                     500 pages, 100 cached (the default scale; about 5 minutes)
  --full             the paper-size matrix: every server, s 0.1,1,2,
                     threads 1,2,4,8; 5 s per point (+1 s wrk warm-up), 3 runs;
                     2000 pages, 400 cached (about 45 minutes)
  --servers LIST     comma-separated, from: ${ALL_SERVERS// /,}
  --threads LIST     server worker threads, e.g. 1,2,4,8
  --zipf LIST        Zipf exponents s, e.g. 0.1,1,2
  --seconds S        measured seconds per point (integer >= 1)
  --cache-objects K  mod_cache_tx holds at most K objects (TxCacheMaxObjects;
                     default pages / 5, 0: the module's default), so that the
                     locality s decides the hit ratio, as in the paper
  --warm-requests M  deterministic warm-up: M Zipf draws (fixed seed) fetched
                     before every point, so every server starts from the same
                     cache contents (default: 2 x K, or the number of pages
                     without a capacity; 0: none)
  --warmup S         then S seconds of wrk with the request mix (default 0,
                     1 with --full)
  --pages N          how many distinct man pages the URLs draw from
  --runs R           repeat each point R times (default 3; the median is
                     reported, the figures show min/max bars)
  --conns K          client connections per server worker thread (default 2)
  --tolerance F      "not slower than lock" passes at ratio >= 1 - F (default 0.05)
  --build DIR        txkit build directory (default \$TXKIT_BUILD or REPO/build)
  --out DIR          results directory (default BUILD/bench-results/apache)
  --no-cache-bench   do not run cache/bench/core/run.sh (the in-process benchmark)
  --install-deps     install missing Debian packages (apache2, man2html, wrk,
                     python3-matplotlib, manpages) with apt-get, then go on
  --deps-only        with --install-deps: install and exit
  --self-test        check the Zipf tables and the page list, no server
  -h, --help         this text
Environment: TXHTTPD (launcher, default cache/bench/apache/txhttpd.sh).
Exit status: 0 (missed targets and n/a points are reported, not errors);
1 when no point could be measured; 2 for bad options or missing tools.
EOF
}

die() { echo "run.sh: $*" >&2; exit 2; }

# ---------------------------------------------------------------- options
SCALE=quick
SERVERS="" THREADS="" ZIPF="" SECONDS_PT="" WARMUP="" PAGES="" RUNS=3 CONNS=2 WARMREQ="" OBJECTS=""
TOL=0.05 BUILD=${TXKIT_BUILD:-$REPO/build} OUT="" CACHE_BENCH=1 INSTALL=0
DEPS_ONLY=0 SELFTEST=0
need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || die "option $1 needs a value"; }
while [ $# -gt 0 ]; do
    case $1 in
        --quick) SCALE=quick ;;
        --full) SCALE=full ;;
        --servers) need_arg "$@"; SERVERS=$2; shift ;;
        --threads) need_arg "$@"; THREADS=$2; shift ;;
        --zipf) need_arg "$@"; ZIPF=$2; shift ;;
        --seconds) need_arg "$@"; SECONDS_PT=$2; shift ;;
        --warmup) need_arg "$@"; WARMUP=$2; shift ;;
        --warm-requests) need_arg "$@"; WARMREQ=$2; shift ;;
        --cache-objects) need_arg "$@"; OBJECTS=$2; shift ;;
        --pages) need_arg "$@"; PAGES=$2; shift ;;
        --runs) need_arg "$@"; RUNS=$2; shift ;;
        --conns) need_arg "$@"; CONNS=$2; shift ;;
        --tolerance) need_arg "$@"; TOL=$2; shift ;;
        --build) need_arg "$@"; BUILD=$2; shift ;;
        --out) need_arg "$@"; OUT=$2; shift ;;
        --no-cache-bench) CACHE_BENCH=0 ;;
        --install-deps) INSTALL=1 ;;
        --deps-only) DEPS_ONLY=1 ;;
        --self-test) SELFTEST=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

if [ "$SCALE" = full ]; then
    : "${SERVERS:=${ALL_SERVERS// /,}}" "${THREADS:=1,2,4,8}" "${ZIPF:=0.1,1,2}"
    : "${SECONDS_PT:=5}" "${WARMUP:=1}" "${PAGES:=2000}"
else
    : "${SERVERS:=nocache,socache,lock,tx,cx}" "${THREADS:=1,2}" "${ZIPF:=0.1,1,2}"
    : "${SECONDS_PT:=2}" "${WARMUP:=0}" "${PAGES:=500}"
fi

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
is_uint "$SECONDS_PT" && [ "$SECONDS_PT" -ge 1 ] || die "--seconds: '$SECONDS_PT' is not an integer >= 1"
is_uint "$WARMUP" || die "--warmup: '$WARMUP' is not an integer >= 0"
: "${OBJECTS:=$((PAGES / 5))}"
is_uint "$OBJECTS" || die "--cache-objects: '$OBJECTS' is not an integer >= 0"
# enough draws to fill the cache (and to settle its contents) at any s
if [ "$OBJECTS" -gt 0 ]; then : "${WARMREQ:=$((2 * OBJECTS))}"; else : "${WARMREQ:=$PAGES}"; fi
is_uint "$WARMREQ" || die "--warm-requests: '$WARMREQ' is not an integer >= 0"
is_uint "$PAGES" && [ "$PAGES" -ge 2 ] || die "--pages: '$PAGES' is not an integer >= 2"
is_uint "$RUNS" && [ "$RUNS" -ge 1 ] || die "--runs: '$RUNS' is not an integer >= 1"
is_uint "$CONNS" && [ "$CONNS" -ge 1 ] || die "--conns: '$CONNS' is not an integer >= 1"
[[ $TOL =~ ^0?\.[0-9]+$|^0$ ]] || die "--tolerance: '$TOL' is not a fraction in [0, 1)"
IFS=, read -r -a SERVER_LIST <<<"$SERVERS"
IFS=, read -r -a THREAD_LIST <<<"$THREADS"
IFS=, read -r -a ZIPF_LIST <<<"$ZIPF"
[ ${#SERVER_LIST[@]} -gt 0 ] || die "--servers: empty list"
for s in "${SERVER_LIST[@]}"; do
    [[ " $ALL_SERVERS " == *" $s "* ]] || die "--servers: unknown server '$s' (known: ${ALL_SERVERS// /,})"
done
for t in "${THREAD_LIST[@]}"; do
    is_uint "$t" && [ "$t" -ge 1 ] && [ "$t" -le 256 ] || die "--threads: '$t' is not an integer in 1..256"
done
for z in "${ZIPF_LIST[@]}"; do
    [[ $z =~ ^[0-9]+(\.[0-9]+)?$|^\.[0-9]+$ ]] || die "--zipf: '$z' is not a non-negative number"
done
[ ${#THREAD_LIST[@]} -gt 0 ] || die "--threads: empty list"
[ ${#ZIPF_LIST[@]} -gt 0 ] || die "--zipf: empty list"

# ---------------------------------------------------------------- tools
MANDIR=/usr/share/man
CGI=/usr/lib/cgi-bin/man/man2html
# package:what-to-check (a command, or a path)
DEPS="apache2:/usr/sbin/apache2 man2html:$CGI wrk:wrk curl:curl manpages:$MANDIR/man7/man.7.gz"
# needed to build the module (mod_cache_tx) or to draw the figures, not to
# run: installed by --install-deps, not checked here
BUILD_DEPS="apache2-dev:/usr/bin/apxs python3-matplotlib:/usr/lib/python3/dist-packages/matplotlib/__init__.py"
missing_pkgs() {
    local d p w
    for d in $DEPS ${1:-}; do
        p=${d%%:*} w=${d#*:}
        if [[ $w == /* ]]; then [ -e "$w" ] || echo "$p"; else command -v "$w" >/dev/null || echo "$p"; fi
    done
}
# Pages installed while a dpkg path-exclude (Docker images) drops
# /usr/share/man are absent: count the real ones.
man_page_count() { find "$MANDIR"/man[1-8] -maxdepth 1 -name '*.gz' 2>/dev/null | head -2000 | wc -l; }
install_deps() {
    local miss
    miss=$(missing_pkgs "$BUILD_DEPS" | tr '\n' ' ')
    if [ -n "${miss// /}" ]; then
        [ "$(id -u)" -eq 0 ] || die "missing packages: $miss(run as root: apt-get install $miss)"
        echo "run.sh: installing $miss" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq --no-install-recommends $miss >/dev/null ||
            die "apt-get install $miss failed"
    fi
    if [ "$(man_page_count)" -lt 500 ] && [ "$(id -u)" -eq 0 ]; then
        # The image excludes man pages from every package (path-exclude in
        # /etc/dpkg/dpkg.cfg.d/): reinstall a few packages with that exclusion
        # lifted for this one dpkg run only (a command-line --path-include is
        # evaluated after the configuration files), the system config untouched.
        echo "run.sh: few man pages under $MANDIR: reinstalling manpages, manpages-dev, coreutils with man pages included" >&2
        apt-get install --reinstall -y -qq --no-install-recommends \
            -o "Dpkg::Options::=--path-include=/usr/share/man/*" manpages manpages-dev coreutils >/dev/null ||
            echo "run.sh: the reinstall failed; going on with $(man_page_count) pages" >&2
    fi
}
if [ $INSTALL -eq 1 ]; then
    install_deps
    [ $DEPS_ONLY -eq 1 ] && exit 0
fi
if [ $SELFTEST -eq 0 ]; then
    miss=$(missing_pkgs | tr '\n' ' ')
    [ -z "${miss// /}" ] || die "missing: $miss(apt-get install $miss, or run with --install-deps)"
fi

TXKIT=""
for c in "$BUILD/tools/txkit/txkit" "$BUILD/tools/txkit"; do
    [ -f "$c" ] && [ -x "$c" ] && { TXKIT=$c; break; }
done
TXHTTPD=${TXHTTPD:-$SELF_DIR/txhttpd.sh}
if [ $SELFTEST -eq 0 ]; then
    [ -d "$BUILD" ] || die "--build: '$BUILD' is not a directory (build first: make build)"
    [ -x "$TXHTTPD" ] || die "launcher $TXHTTPD not found or not executable"
    BUILD=$(cd "$BUILD" && pwd)
fi
: "${OUT:=$BUILD/bench-results/apache}"
mkdir -p "$OUT" || die "--out: cannot create '$OUT'"
OUT=$(cd "$OUT" && pwd)
export TXKIT_BUILD=$BUILD

# ---------------------------------------------------------------- pages
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# A deterministic order of the candidates (a string hash), so that a run
# with the same --pages draws the same pages in the same popularity ranks.
candidates() {
    local sec
    for sec in 1 2 3 4 5 6 7 8; do
        [ -d "$MANDIR/man$sec" ] || continue
        find "$MANDIR/man$sec" -maxdepth 1 -type f -name "*.$sec.gz" -printf "$sec %f\n"
    done | awk '{
        name = $2; sub(/\.[0-9]\.gz$/, "", name)
        # "+" separates the query fields, the rest keeps URLs plain
        if (name !~ /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/) next
        h = 7
        for (i = 1; i <= length(name); i++)
            h = (h * 131 + index("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.-", substr(name, i, 1))) % 1000003
        print h, $1, name }' | sort -n -k1,1 -k3,3 | awk '{
        # at most 3 pages per name stem (before the first "_" or "-"): a
        # family of generated pages (google-cloud-cli ships 16,000 gcloud_*
        # pages) must not crowd out the rest
        stem = $3; sub(/[_-].*/, "", stem)
        if (++per[stem] <= 3) print $2, $3 }'
}
# A page renders when man2html answers without a Status line (404/403) and
# with a real body; ".so" stubs (aliases of another page) are skipped.
renders() {
    local sec=$1 name=$2 out
    [ "$(zcat "$MANDIR/man$sec/$name.$sec.gz" 2>/dev/null | head -c 3)" = ".so" ] && return 1
    out=$(QUERY_STRING="$sec+$name" REQUEST_METHOD=GET timeout 10 "$CGI" 2>/dev/null | head -c 4096)
    [[ $out != Status:* ]] && [[ $out == *"<HTML>"* ]] && [ ${#out} -ge 1024 ]
}
pick_pages() {
    local n=$1 file=$2 key cand got=0 from=1 batch
    key="pages=$n man=$(man_page_count) cgi=$(stat -c %Y "$CGI" 2>/dev/null)"
    if [ -s "$file" ] && [ "$(head -1 "$file")" = "# $key" ]; then
        return 0
    fi
    cand=$file.cand
    candidates | awk '{ print NR, $0 }' >"$cand"
    : >"$file.ok"
    # batches of candidates checked in parallel, kept in candidate order
    export -f renders
    export MANDIR CGI
    while [ $got -lt "$n" ]; do
        batch=$(((n - got) * 5 / 4 + 8))
        awk -v a=$from -v b=$((from + batch - 1)) '$1 >= a && $1 <= b' "$cand" >"$cand.batch"
        [ -s "$cand.batch" ] || break
        xargs -P "$(nproc)" -L 1 bash -c 'renders "$2" "$3" && echo "$1 $2 $3"' _ <"$cand.batch" >>"$file.ok"
        from=$((from + batch))
        got=$(wc -l <"$file.ok")
    done
    { echo "# $key"; sort -n "$file.ok" | head -n "$n" | awk '{ print $2, $3 }'; } >"$file"
    rm -f "$cand" "$cand.batch" "$file.ok"
    [ "$got" -ge "$n" ]
}

# ---------------------------------------------------------------- Zipf
# The wrk script: page i (rank 1 = most popular) with probability
# i^-s / sum_j j^-s, drawn by binary search in the exact cumulative table.
write_lua() {
    local s=$1 pages=$2 lua=$3 seed=$4
    {
        echo "-- generated by cache/bench/apache/run.sh: Zipf s=$s over $(($(wc -l <"$pages") - 1)) man pages"
        echo "local paths = {"
        awk 'NR > 1 { printf "  \"/cgi-bin/man/man2html?%s+%s\",\n", $1, $2 }' "$pages"
        echo "}"
        echo "local cdf = {"
        awk -v s="$s" 'NR > 1 { n++ } END {
            for (i = 1; i <= n; i++) { w[i] = exp(-s * log(i)); tot += w[i] }
            for (i = 1; i <= n; i++) { c += w[i]; printf "  %.17g,\n", (i == n) ? 1 : c / tot } }' "$pages"
        echo "}"
        cat <<EOF
local n = #paths
local threads = {}
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end
function init(args)
  math.randomseed($seed + 7919 * id)
  for _ = 1, 10 do math.random() end
  hits, misses, nohdr, non200 = 0, 0, 0, 0
  r1, r2, drawn = 0, 0, 0
end
local function pick()
  local u = math.random()
  local lo, hi = 1, n
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cdf[mid] < u then lo = mid + 1 else hi = mid end
  end
  return lo
end
-- ZIPF_COUNT (the --self-test) counts the draws of ranks 1 and 2
local count = os.getenv("ZIPF_COUNT") ~= nil
function request()
  local i = pick()
  if count and i <= 2 then
    if i == 1 then r1 = r1 + 1 else r2 = r2 + 1 end
  end
  drawn = drawn + 1
  return wrk.format("GET", paths[i])
end
function response(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
  local x = headers["X-Cache"] or headers["x-cache"]
  if x == nil then nohdr = nohdr + 1
  elseif x:sub(1, 3) == "HIT" then hits = hits + 1
  else misses = misses + 1 end
end
function done(summary, latency, requests)
  local h, m, x, b = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    h = h + t:get("hits"); m = m + t:get("misses")
    x = x + t:get("nohdr"); b = b + t:get("non200")
  end
  if count then
    local c1, c2, d = 0, 0, 0
    for _, t in ipairs(threads) do c1 = c1 + t:get("r1"); c2 = c2 + t:get("r2"); d = d + t:get("drawn") end
    io.write(string.format("ZIPF drawn=%d rank1=%d rank2=%d p1=%.17g p2=%.17g\n", d, c1, c2, cdf[1], cdf[2] - cdf[1]))
  end
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d mean_us=%.1f p99_us=%.1f hits=%d misses=%d nohdr=%d non200=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, summary.duration, latency.mean, latency:percentile(99.0),
    h, m, x, b, e.connect, e.read, e.write, e.status, e.timeout))
end
EOF
    } >"$lua"
}

# Checks the tables (monotone, ending at 1, first probability right) and,
# when a Lua interpreter is at hand, the sampler's frequencies.
self_test() {
    local dir=$OUT/self-test fail=0 s n p1 want
    mkdir -p "$dir"
    local port="" srv_pid=""
    if command -v wrk >/dev/null && command -v python3 >/dev/null; then
        # a free port below the ephemeral range (32768 and up)
        port=$((10000 + ($$ * 7) % 20000))
        while ! port_free "$port"; do port=$((port + 1)); done
        python3 -m http.server --bind 127.0.0.1 --directory "$dir" "$port" >/dev/null 2>&1 &
        srv_pid=$!
        # killed whatever way the test ends (a CTest time-out included)
        SELFTEST_PID=$srv_pid
        trap 'kill "$SELFTEST_PID" 2>/dev/null' EXIT
        trap 'exit 1' INT TERM HUP
        for _ in $(seq 1 100); do port_free "$port" || break; sleep 0.1; done
        if port_free "$port"; then
            echo "FAIL: the throwaway server (python3 -m http.server $port) did not start"
            fail=1
            port=""
        fi
    else
        echo "note: wrk or python3 absent: the sampler is not run"
    fi
    local skip=0
    [ -z "$port" ] && skip=1
    { echo "# self-test"; for i in $(seq 1 50); do echo "1 page$i"; done; } >"$dir/pages.txt"
    for s in 0.1 1 2; do
        write_lua "$s" "$dir/pages.txt" "$dir/z$s.lua" 1
        n=$(awk '/^local cdf/ { on = 1; next } on && /^}/ { on = 0 } on' "$dir/z$s.lua" |
            awk -F, 'BEGIN { bad = 0 } { v = $1 + 0; if (v < prev || v > 1) bad = 1; prev = v; k++ }
                     END { if (bad || prev != 1) print "bad"; else print k }')
        [ "$n" = 50 ] || { echo "FAIL s=$s: cdf has $n entries or is not monotone up to 1"; fail=1; }
        p1=$(awk '/^local cdf/ { getline; sub(/,/, ""); print; exit }' "$dir/z$s.lua")
        want=$(awk -v s="$s" 'BEGIN { for (i = 1; i <= 50; i++) t += exp(-s * log(i)); printf "%.12f", 1 / t }')
        awk -v a="$p1" -v b="$want" 'BEGIN { exit !(a - b < 1e-9 && b - a < 1e-9) }' ||
            { echo "FAIL s=$s: P(rank 1) = $p1, expected $want"; fail=1; }
        # the sampler itself, run by wrk against a throwaway static server:
        # ranks 1 and 2 drawn with their probabilities (within 5 sigma)
        if [ -n "$port" ]; then
            local out
            local raw
            raw=$(ZIPF_COUNT=1 timeout 20 wrk -t2 -c4 -d2s -s "$dir/z$s.lua" "http://127.0.0.1:$port" 2>&1)
            out=$(grep '^ZIPF ' <<<"$raw")
            [ -n "$out" ] || echo "  wrk said: $(tail -n 3 <<<"$raw" | tr '\n' ' ')"
            awk -v line="$out" -v s="$s" 'BEGIN {
                n = split(line, f, " "); for (i = 2; i <= n; i++) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
                d = v["drawn"]; if (d < 500) { print "  too few draws: " d; exit 1 }
                for (r = 1; r <= 2; r++) {
                    p = v["p" r]; q = v["rank" r] / d; tol = 5 * sqrt(p * (1 - p) / d) + 0.002
                    printf "  s=%s rank %d: drawn %.4f of %d, probability %.4f\n", s, r, q, d, p
                    if (q - p > tol || p - q > tol) bad = 1
                }
                exit bad }' || { echo "FAIL s=$s: the sampled frequencies are off"; fail=1; }
        fi
    done
    if [ -x "$CGI" ] && [ -d "$MANDIR/man1" ]; then
        pick_pages 20 "$dir/real-pages.txt" || { echo "FAIL: fewer than 20 man pages render"; fail=1; }
    else
        echo "note: man2html or $MANDIR/man1 absent: page list not checked"
    fi
    [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
    if [ $fail -ne 0 ]; then
        echo "self-test: FAIL"
        return 1
    fi
    if [ $skip -eq 1 ]; then
        echo "self-test: SKIP (tables right; the sampler needs wrk and python3)"
        return 77
    fi
    echo "self-test: PASS"
    return 0
}
if [ $SELFTEST -eq 1 ]; then
    self_test
    exit $?
fi

# ---------------------------------------------------------------- servers
CUR_DIR="" WRK_PID=""
# Apache's stop takes 1-2 s (the MPM waits for its children): after a
# measurement the server is stopped in the background while the next one
# starts in the other of two directories, on another port.
declare -A STOPPING=()
stop_bg() {
    "$TXHTTPD" stop "$CUR_DIR" >/dev/null 2>&1 &
    STOPPING[$CUR_DIR]=$!
    CUR_DIR=""
}
wait_stopped() {
    local d=$1
    if [ -n "${STOPPING[$d]:-}" ]; then
        wait "${STOPPING[$d]}" 2>/dev/null
        unset "STOPPING[$d]"
    fi
}
cleanup() {
    local d
    if [ -n "$WRK_PID" ]; then
        kill "$WRK_PID" 2>/dev/null
        WRK_PID=""
    fi
    if [ -n "$CUR_DIR" ]; then
        "$TXHTTPD" stop "$CUR_DIR" >/dev/null 2>&1
        CUR_DIR=""
    fi
    for d in "${!STOPPING[@]}"; do
        wait_stopped "$d"
    done
}
trap cleanup EXIT
trap 'cleanup; echo "run.sh: interrupted" >&2; exit 130' INT TERM HUP

# below the ephemeral range (32768-60999 by default), where wrk's own client
# sockets could hold the port
PORT_BASE=$((10000 + ($$ % 200) * 100))
NEXT_PORT=$PORT_BASE
next_port() {
    local i
    for i in $(seq 1 200); do
        NEXT_PORT=$((NEXT_PORT + 1))
        [ $NEXT_PORT -ge $((PORT_BASE + 99)) ] && NEXT_PORT=$PORT_BASE
        port_free $NEXT_PORT && { echo $NEXT_PORT; return 0; }
    done
    return 1
}

# The server's processes: the pid file's process (the parent) and its
# children (the worker child runs the cache).
server_pids() {
    local dir=$1 pf ppid
    pf=$(find "$dir" -maxdepth 2 -name '*.pid' 2>/dev/null | head -1)
    [ -n "$pf" ] || return 1
    ppid=$(cat "$pf" 2>/dev/null)
    [ -n "$ppid" ] || return 1
    { echo "$ppid"; pgrep -P "$ppid"; } | paste -sd, -
}
# The CPU time (user + system, in clock ticks) the server's processes (a
# comma-separated list: server_pids) have used so far; empty when one of
# them cannot be read. The CGI programs (man2html, run for misses by
# mod_cgid's daemon) are not in it: the same work for every server.
server_ticks() {
    local p sum=0 st
    for p in ${1//,/ }; do
        # fields after the ")" that ends the command name: utime is the 12th
        st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || return 0
        set -- $st
        [ $# -ge 13 ] || return 0
        sum=$((sum + ${12} + ${13}))
    done
    echo "$sum"
}

# "commits aborts source" of the server's txkit transactions: `txkit stat
# --json` over the server's processes, summed over every uid's statistics
# directory (the children run as the server's User: txkit stat reads only its
# own uid's directory, so as root it runs as that directory's owner); when no
# process has statistics, the module's counters on /server-status?auto
# (TxCacheTxCommits, TxCacheTxAborts); "0 0 none" when neither has any.
tx_snapshot() {
    local pids=$1 url=$2 d uid gid out st
    if [ -n "$TXKIT" ] && [ -n "$pids" ]; then
        out=$(for d in /dev/shm/txkit-*; do
            [ -d "$d" ] || continue
            uid=$(stat -c %u "$d") gid=$(stat -c %g "$d")
            if [ "$uid" = "$(id -u)" ]; then
                TXKIT_STATS_DIR=$d timeout 10 "$TXKIT" stat --json -p "$pids" 2>/dev/null
            elif [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
                TXKIT_STATS_DIR=$d timeout 10 setpriv --reuid="$uid" --regid="$gid" --clear-groups \
                    "$TXKIT" stat --json -p "$pids" 2>/dev/null
            fi
        done | awk '{
            i = index($0, "\"total\":{"); if (!i) next
            t = substr($0, i)
            if (match(t, /"processes":[0-9]+/)) p += substr(t, RSTART + 12, RLENGTH - 12)
            if (match(t, /"commits":[0-9]+/)) c += substr(t, RSTART + 10, RLENGTH - 10)
            if (match(t, /"aborts":[0-9]+/)) a += substr(t, RSTART + 9, RLENGTH - 9)
        } END { if (p > 0) printf "%d %d txkit\n", c, a }')
        [ -n "$out" ] && { echo "$out"; return; }
    fi
    st=$(curl -s --max-time 5 "$url/server-status?auto" 2>/dev/null |
        awk -F': ' '$1 == "TxCacheTxCommits" { c = $2; f = 1 } $1 == "TxCacheTxAborts" { a = $2 }
                    END { if (f && c > 0) printf "%d %d status\n", c, a }')
    [ -n "$st" ] && { echo "$st"; return; }
    echo "0 0 none"
}

TX_EXTRA=""
[ "$OBJECTS" -gt 0 ] && TX_EXTRA=$'\n<IfModule cache_tx_module>\nTxCacheMaxObjects '"$OBJECTS"$'\n</IfModule>'

HAVE_RTM=no
if [ -n "$TXKIT" ]; then
    "$TXKIT" info 2>/dev/null | grep -Eq '^rtm:[[:space:]]+yes' && HAVE_RTM=yes
elif grep -qw rtm /proc/cpuinfo; then
    # no txkit program to ask: the CPU flag (txkit info also probes whether
    # the microcode lets XBEGIN succeed)
    HAVE_RTM=yes
fi

CSV=$OUT/apache.csv
LOG=$OUT/apache-log.txt
: >"$LOG"
echo "server,zipf_s,threads,conns,seconds,run,status,reason,requests,rps,lat_mean_ms,lat_p99_ms,errors,non200,hits,misses,hit_ratio,tx_commits,tx_aborts,abort_rate,tx_source,server_cpu_us_per_req" >"$CSV"
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)

# result fields of the last point
R_STATUS="" R_REASON="" R_LINE=""
measure() {
    local server=$1 s=$2 t=$3 run=$4 lua=$5
    local dir=$OUT/srv$((DONE % 2)) port conns wthreads res pids snap0 snap1 cpu0 cpu1 rest
    R_STATUS=na R_REASON="" R_LINE=""
    if [ "$server" = tx-htm ] && [ "$HAVE_RTM" != yes ]; then
        R_REASON="no RTM on this CPU (txkit info)"
        return
    fi
    wait_stopped "$dir"
    port=$(next_port) || { R_REASON="no free port"; return; }
    rm -rf "$dir"
    mkdir -p "$dir"
    conns=$((t * CONNS))
    wthreads=$((conns < 2 ? conns : 2))
    CUR_DIR=$dir
    local ok=0 attempt
    for attempt in 1 2 3; do
        if TXHTTPD_EXTRA=$'<IfModule mod_cache.c>\nCacheHeader on\n</IfModule>'"$TX_EXTRA" \
            timeout 60 "$TXHTTPD" start "$dir" "$port" "$server" "$t" >"$dir/start.log" 2>&1; then
            ok=1
            break
        fi
        # a port taken between the check and the bind: another port
        grep -qs -e 'could not bind' -e 'Address already in use' "$dir/start.log" "$dir"/*log* || break
        "$TXHTTPD" stop "$dir" >/dev/null 2>&1
        port=$(next_port) || break
    done
    if [ $ok -eq 0 ]; then
        # the first line that names an error, else the launcher's last line
        local why
        why=$(cat "$dir/start.log" "$dir"/*error*log 2>/dev/null | grep -i -m1 -E 'error|could not|cannot|fail|unknown|no such' ||
            tail -n 1 "$dir/start.log")
        R_REASON="server did not start: $(echo "$why" | tr ',' ';' | cut -c1-140)"
        cat "$dir/start.log" >>"$LOG" 2>/dev/null
        cleanup
        return
    fi
    local url="http://127.0.0.1:$port"
    # the same cache contents for every server: the pages of the warm list
    # (nocache has no cache to warm)
    if [ "$server" != nocache ] && [ -s "$OUT/warm-$s.txt" ]; then
        sed "s|^|$url|" "$OUT/warm-$s.txt" |
            timeout 120 xargs -P $((t < 2 ? 2 : t)) -n 20 curl -s --max-time 30 >/dev/null 2>>"$LOG" &
        WRK_PID=$!
        wait $WRK_PID
        WRK_PID=""
    fi
    # wrk in the background and `wait`: a signal's trap then runs at once
    if [ "$WARMUP" -gt 0 ]; then
        timeout $((WARMUP + 30)) wrk -t"$wthreads" -c"$conns" -d"${WARMUP}s" --timeout 10s -s "$lua" "$url" \
            >>"$LOG" 2>&1 &
        WRK_PID=$!
        wait $WRK_PID
        WRK_PID=""
    fi
    pids=$(server_pids "$dir")
    snap0=$(tx_snapshot "$pids" "$url")
    cpu0=$(server_ticks "$pids")
    timeout $((SECONDS_PT + 30)) wrk -t"$wthreads" -c"$conns" -d"${SECONDS_PT}s" --timeout 10s \
        -s "$lua" "$url" >"$dir/wrk.out" 2>&1 &
    WRK_PID=$!
    wait $WRK_PID
    local rc=$?
    WRK_PID=""
    res=$(cat "$dir/wrk.out")
    cpu1=$(server_ticks "$pids")
    snap1=$(tx_snapshot "$pids" "$url")
    echo "== $server s=$s threads=$t run=$run" >>"$LOG"
    echo "$res" >>"$LOG"
    if ! kill -0 "${pids%%,*}" 2>/dev/null; then
        R_REASON="server died during the run"
    fi
    stop_bg
    R_LINE=$(grep '^RESULT ' <<<"$res" | tail -1)
    if [ $rc -ne 0 ] || [ -z "$R_LINE" ]; then
        R_REASON="wrk failed (exit $rc): $(tail -1 <<<"$res" | tr ',' ';' | cut -c1-100)"
        return
    fi
    [ -n "$R_REASON" ] && return
    local requests
    requests=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$R_LINE")
    if [ "${requests:-0}" -eq 0 ]; then
        R_REASON="no request completed"
        return
    fi
    R_STATUS=ok
    R_LINE="$R_LINE snap0=${snap0// /:} snap1=${snap1// /:}"
    # the server's CPU time over the measured seconds, when both reads worked
    [ -n "$cpu0" ] && [ -n "$cpu1" ] && R_LINE="$R_LINE cpu_ticks=$((cpu1 - cpu0))"
}

# One CSV row from R_LINE: key=value fields.
csv_row() {
    local server=$1 s=$2 t=$3 run=$4
    local conns=$((t * CONNS))
    if [ "$R_STATUS" != ok ]; then
        echo "$server,$s,$t,$conns,$SECONDS_PT,$run,na,$R_REASON,,,,,,,,,,,,,,"
        return
    fi
    awk -v server="$server" -v s="$s" -v t="$t" -v conns="$conns" -v secs="$SECONDS_PT" -v run="$run" \
        -v line="$R_LINE" -v hz="$CLK_TCK" 'BEGIN {
        n = split(line, f, " ")
        for (i = 2; i <= n; i++) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
        split(v["snap0"], a, ":"); split(v["snap1"], b, ":")
        rps = v["requests"] / (v["duration_us"] / 1e6)
        errors = v["connect"] + v["read"] + v["write"] + v["timeout"]
        seen = v["hits"] + v["misses"]
        hr = (seen > 0) ? sprintf("%.4f", v["hits"] / seen) : ""
        commits = ""; aborts = ""; ar = ""; src = ""
        # both snapshots from the same source (a first transaction between
        # them can switch "status" to "txkit": then the second alone counts)
        if (b[3] != "none") {
            src = b[3]
            if (a[3] == b[3]) { commits = b[1] - a[1]; aborts = b[2] - a[2] }
            else { commits = b[1]; aborts = b[2] }
            ar = (commits > 0) ? sprintf("%.6f", aborts / commits) : ""
        }
        # CPU time of the server processes per completed request, in microseconds
        cpu = ("cpu_ticks" in v && hz > 0) ? sprintf("%.1f", v["cpu_ticks"] * 1e6 / hz / v["requests"]) : ""
        printf "%s,%s,%s,%s,%s,%s,ok,,%d,%.1f,%.3f,%.3f,%d,%d,%d,%d,%s,%s,%s,%s,%s,%s\n",
            server, s, t, conns, secs, run, v["requests"], rps, v["mean_us"] / 1000, v["p99_us"] / 1000,
            errors, v["non200"], v["hits"], v["misses"], hr, commits, aborts, ar, src, cpu }'
}

fmt_time() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

# ---------------------------------------------------------------- run
echo "Apache experiment: servers ${SERVER_LIST[*]}; Zipf s ${ZIPF_LIST[*]}; threads ${THREAD_LIST[*]}"
echo "  $SECONDS_PT s per point after a warm-up of $WARMREQ Zipf requests$([ "$WARMUP" -gt 0 ] && echo " and $WARMUP s of wrk"), $RUNS run(s), $CONNS client connection(s) per server thread, scale: $SCALE"
echo "  build $BUILD, launcher $TXHTTPD, results in $OUT"
echo "  mod_cache_tx capacity: $([ "$OBJECTS" -gt 0 ] && echo "$OBJECTS objects (TxCacheMaxObjects)" || echo "the module's default")"
[ "$HAVE_RTM" = yes ] || echo "  RTM: $HAVE_RTM (tx-htm points are n/a without it)"

PAGEFILE=$OUT/pages.txt
echo "choosing $PAGES man pages that man2html renders ..."
if ! pick_pages "$PAGES" "$PAGEFILE"; then
    got=$(($(wc -l <"$PAGEFILE") - 1))
    if [ "$got" -lt 2 ]; then
        echo "run.sh: only $got man pages render under $MANDIR (man pages stripped? try --install-deps as root)" >&2
        exit 1
    fi
    echo "  only $got pages render: using $got"
    PAGES=$got
fi
echo "  $PAGES pages (list: $PAGEFILE; most popular: $(sed -n 2,4p "$PAGEFILE" | awk '{ printf "%s(%s) ", $2, $1 }'))"
for s in "${ZIPF_LIST[@]}"; do
    write_lua "$s" "$PAGEFILE" "$OUT/zipf-$s.lua" $((12345 + ${#s}))
    # the warm list: WARMREQ draws, fixed seed (repeats too: they are cheap
    # hits, and they give the replacement policy its reference counts)
    awk -v s="$s" -v m="$WARMREQ" 'NR > 1 { n++; url[n] = "/cgi-bin/man/man2html?" $1 "+" $2 }
        END {
            for (i = 1; i <= n; i++) { tot += exp(-s * log(i)); c[i] = tot }
            srand(4242)
            for (k = 0; k < m; k++) {
                u = rand() * tot; lo = 1; hi = n
                while (lo < hi) { mid = int((lo + hi) / 2); if (c[mid] < u) lo = mid + 1; else hi = mid }
                print url[lo]
            } }' "$PAGEFILE" >"$OUT/warm-$s.txt"
    echo "  s=$s: warm-up $(wc -l <"$OUT/warm-$s.txt") requests, $(sort -u "$OUT/warm-$s.txt" | wc -l) distinct pages"
done

TOTAL=$((${#ZIPF_LIST[@]} * ${#THREAD_LIST[@]} * RUNS * ${#SERVER_LIST[@]}))
DONE=0 MEASURED=0 START=$(date +%s)
for s in "${ZIPF_LIST[@]}"; do
    for t in "${THREAD_LIST[@]}"; do
        for run in $(seq 1 "$RUNS"); do
            # rotate the order of the servers from point to point, so a drift of
            # the machine does not always favour the same one
            nsrv=${#SERVER_LIST[@]}
            for k in $(seq 0 $((nsrv - 1))); do
                server=${SERVER_LIST[$(((k + DONE / nsrv) % nsrv))]}
                measure "$server" "$s" "$t" "$run" "$OUT/zipf-$s.lua"
                row=$(csv_row "$server" "$s" "$t" "$run")
                echo "$row" >>"$CSV"
                DONE=$((DONE + 1))
                now=$(date +%s)
                el=$((now - START))
                eta=$((el * (TOTAL - DONE) / DONE))
                if [ "$R_STATUS" = ok ]; then
                    MEASURED=$((MEASURED + 1))
                    msg=$(awk -F, '{ printf "%8.1f req/s  mean %7.2f ms  p99 %7.2f ms  hit %s  aborts/tx %s  err %d",
                        $10, $11, $12, ($17 == "" ? "-" : sprintf("%3.0f%%", 100 * $17)), ($20 == "" ? "-" : $20), $13 + $14 }' <<<"$row")
                else
                    msg="n/a: $R_REASON"
                fi
                printf '[%3d/%d] s=%-4s threads=%-2s %-12s %s  (%s elapsed, ETA %s)\n' \
                    "$DONE" "$TOTAL" "$s" "$t" "$server" "$msg" "$(fmt_time $el)" "$(fmt_time $eta)"
            done
        done
    done
done

# ---------------------------------------------------------------- report
# Median over runs per (server, s, threads) -> summary CSV with the ratios.
SUMMARY=$OUT/apache-summary.csv
awk -F, 'NR > 1 {
        k = $1 SUBSEP $2 SUBSEP $3
        if ($7 == "ok") {
            c = ++cnt[k]; rps[k, c] = $10; row[k, c] = $0
            if ($22 != "") cpu[k, ++ncpu[k]] = $22 + 0
        } else if (!(k in why)) why[k] = $8
    }
    # the median of the runs server CPU per request (its own median: the
    # runs need not agree with the throughput median run), "" when none
    function cpu_median(k,    i, j, c, tmp, v) {
        c = ncpu[k] + 0
        if (c == 0) return ""
        for (i = 1; i <= c; i++) v[i] = cpu[k, i]
        for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++)
            if (v[j] < v[i]) { tmp = v[i]; v[i] = v[j]; v[j] = tmp }
        return (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
    }
    function median_idx(k,    i, j, c, tmp, best) {
        c = cnt[k]
        for (i = 1; i <= c; i++) idx[i] = i
        for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++)
            if (rps[k, idx[j]] < rps[k, idx[i]]) { tmp = idx[i]; idx[i] = idx[j]; idx[j] = tmp }
        return idx[int((c + 1) / 2)]
    }
    END {
        # rows in the order of the options: s, then threads, then servers
        nz = split(zipf, Z, ","); nt = split(threads, T, ","); ns = split(servers, S, ",")
        for (a = 1; a <= nz; a++) for (b = 1; b <= nt; b++) for (c = 1; c <= ns; c++)
            order[++n] = S[c] SUBSEP Z[a] SUBSEP T[b]
        print "server,zipf_s,threads,status,reason,rps,lat_mean_ms,lat_p99_ms,errors,hit_ratio,abort_rate,vs_lock,vs_nocache,runs,spread,cpu_us_per_req,cpu_vs_lock"
        for (i = 1; i <= n; i++) {
            k = order[i]; split(k, p, SUBSEP)
            if (cnt[k] > 0) { split(row[k, median_idx(k)], f, ","); med[k] = f[10]; line[k] = f[11] "," f[12] "," f[13] + f[14] "," f[17] "," f[20]
                # (max - min) / median over the runs
                lo = hi = rps[k, 1]
                for (j = 2; j <= cnt[k]; j++) { if (rps[k, j] < lo) lo = rps[k, j]; if (rps[k, j] > hi) hi = rps[k, j] }
                spread[k] = (cnt[k] > 1 && med[k] > 0) ? sprintf("%.2f", (hi - lo) / med[k]) : ""
                mcpu[k] = cpu_median(k) }
        }
        for (i = 1; i <= n; i++) {
            k = order[i]; split(k, p, SUBSEP)
            if (cnt[k] == 0 && !(k in why)) continue
            if (cnt[k] == 0) { printf "%s,%s,%s,na,%s,,,,,,,,,0,,,\n", p[1], p[2], p[3], why[k]; continue }
            kl = "lock" SUBSEP p[2] SUBSEP p[3]; kn = "nocache" SUBSEP p[2] SUBSEP p[3]
            vl = (kl in med && med[kl] > 0) ? sprintf("%.3f", med[k] / med[kl]) : ""
            vn = (kn in med && med[kn] > 0) ? sprintf("%.3f", med[k] / med[kn]) : ""
            cl = (mcpu[k] != "" && (kl in mcpu) && mcpu[kl] != "" && mcpu[kl] > 0) ? sprintf("%.3f", mcpu[k] / mcpu[kl]) : ""
            printf "%s,%s,%s,ok,,%s,%s,%s,%s,%d,%s,%s,%s\n", p[1], p[2], p[3], med[k], line[k], vl, vn, cnt[k], spread[k],
                (mcpu[k] == "" ? "" : sprintf("%.1f", mcpu[k])), cl
        }
    }' zipf="$ZIPF" threads="$THREADS" servers="$SERVERS" "$CSV" >"$SUMMARY"

TABLE=$OUT/apache-table.md
{
    echo "### Apache + man2html, Zipf requests over $PAGES man pages ($(hostname), $(nproc) CPUs, $SECONDS_PT s per point, median of $RUNS)"
    echo
    echo "| s | threads | server | req/s | spread | vs lock | vs nocache | CPU us/req | CPU vs lock | mean ms | p99 ms | hit % | aborts/tx | errors | note |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F, 'NR > 1 {
        if ($4 != "ok") { printf "| %s | %s | %s | n/a | | | | | | | | | | | %s |\n", $2, $3, $1, $5; next }
        printf "| %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %.2f | %.2f | %s | %s | %s | |\n", $2, $3, $1, $6, ($15 == "" ? "-" : $15),
            ($12 == "" ? "-" : sprintf("%.2f", $12)), ($13 == "" ? "-" : sprintf("%.1fx", $13)),
            ($16 == "" ? "-" : $16), ($17 == "" ? "-" : sprintf("%.2f", $17)), $7, $8,
            ($10 == "" ? "-" : sprintf("%.1f", 100 * $10)), ($11 == "" ? "-" : sprintf("%.4f", $11)), $9 }' "$SUMMARY"
    echo
    echo "req/s: wrk over loopback, \`Connection: close\` (KeepAlive Off), the median run; spread: (max - min) /"
    echo "median over the runs; vs lock / vs nocache: throughput"
    echo "ratios at the same s and thread count; CPU us/req: the server processes' CPU time (user +"
    echo "system, /proc, not the CGI) per request over the measured seconds, median of the runs; CPU vs"
    echo "lock: its ratio to lock's (below 1: less CPU per request; steadier than req/s when wrk and the"
    echo "server share the CPUs); hit %: X-Cache headers; aborts/tx: txkit aborts per"
    echo "committed transaction in the server during the measured seconds (- : no txkit statistics)."
} >"$TABLE"

# Targets: cache >= 20x nocache at s = 2; tx and cx not slower than lock at s = 1, 2.
TARGETS=$OUT/apache-targets.txt
awk -F, -v tol="$TOL" -v threads="$THREADS" -v servers="$SERVERS" 'NR > 1 && $4 == "ok" { k = $1 SUBSEP ($2 + 0) SUBSEP $3; r[k] = $6; srv[$1] = 1; if ($17 != "") cvl[k] = $17 }
    function pt(server, s, t) { return (server SUBSEP s SUBSEP t) }
    END {
        nt = split(threads, T, ",")
        # 1) every cached server against nocache at s = 2
        ns = split(servers, S, ",")
        for (si = 1; si <= ns; si++) if ((x = S[si]) != "nocache") {
            line = ""; ok = 1; any = 0
            for (ti = 1; ti <= nt; ti++) if ((t = T[ti]) != "" && ((pt(x, 2, t) in r) && (pt("nocache", 2, t) in r))) {
                q = r[pt(x, 2, t)] / r[pt("nocache", 2, t)]; any = 1
                line = line sprintf(" %.1fx@%st", q, t); if (q < 20) ok = 0
            }
            if (any) printf "TARGET %s >= 20x no-cache throughput at s=2 (target >= 20): %s %s\n", x, ok ? "PASS" : "MISS", line
            else printf "n/a  cache >= 20x no-cache throughput at s=2: %s: no s=2 point measured for both %s and nocache\n", x, x
        }
        # 2) tx and cx against lock at s = 1 and 2
        split("tx cx", cand, " ")
        for (si = 1; si <= ns; si++) want[S[si]] = 1
        for (ci = 1; ci <= 2; ci++) { x = cand[ci]; if (!(x in want)) continue
            for (si = 1; si <= 2; si++) { s = si
                line = ""; ok = 1; any = 0
                for (ti = 1; ti <= nt; ti++) if ((t = T[ti]) != "" && ((pt(x, s, t) in r) && (pt("lock", s, t) in r))) {
                    q = r[pt(x, s, t)] / r[pt("lock", s, t)]; any = 1
                    line = line sprintf(" %.2f@%st", q, t); if (q < 1 - tol) ok = 0
                }
                if (any) printf "TARGET %s not slower than lock over HTTP at s=%s (target >= %.2f): %s %s\n", x, s, 1 - tol, ok ? "PASS" : "MISS", line
                else printf "n/a  %s not slower than lock over HTTP at s=%s: no point measured for both %s and lock\n", x, s, x
                # the same comparison by the server CPU time per request (no target)
                line = ""
                for (ti = 1; ti <= nt; ti++) if ((t = T[ti]) != "" && (pt(x, s, t) in cvl))
                    line = line sprintf(" %.2f@%st", cvl[pt(x, s, t)], t)
                if (line != "") printf "  (%s server CPU per request / that of lock at s=%s:%s; below 1: less CPU)\n", x, s, line
            }
        }
    }' "$SUMMARY" >"$TARGETS"

# ---------------------------------------------------------------- plots
# bench/plot.py, from every run in the CSV: apache.png (per s: throughput and
# mean latency vs threads, median and min/max over the runs) and
# apache-aborts.png (aborts per million transactions, with the counts)
plot() {
    plot_csv apache "$CSV" --out "$OUT/apache.png" --cpus "$(nproc)" \
        --scale "$PAGES pages, $OBJECTS cached, $SECONDS_PT s per point, $RUNS runs, $CONNS connections per worker thread" |
        sed 's/^/  /'
}

# ---------------------------------------------------------------- in-process
CACHE_TABLE=""
if [ $CACHE_BENCH -eq 1 ] && [ -x "$REPO/cache/bench/core/run.sh" ]; then
    echo
    echo "in-process cache benchmark: cache/bench/core/run.sh $BUILD $OUT/cache"
    CACHE_TABLE=$OUT/cache-bench.txt
    if [ "$SCALE" = full ]; then lim=1800; else lim=90; fi
    timeout $lim "$REPO/cache/bench/core/run.sh" "$BUILD" "$OUT/cache" >"$CACHE_TABLE" 2>&1
    rc=$?
    [ $rc -eq 0 ] || echo "(cache/bench/core/run.sh exited with status $rc$([ $rc -eq 124 ] && echo ": time limit ${lim} s"))" >>"$CACHE_TABLE"
elif [ $CACHE_BENCH -eq 1 ]; then
    echo "(cache/bench/core/run.sh not present: no in-process benchmark)"
fi

echo
echo "plots:"
plot
echo
cat "$TABLE"
if [ -n "$CACHE_TABLE" ]; then
    echo
    echo "### In-process cache benchmark (cache/bench/core/run.sh)"
    echo
    cat "$CACHE_TABLE"
    { echo; echo "### In-process cache benchmark (cache/bench/core/run.sh)"; echo; echo '```'; cat "$CACHE_TABLE"; echo '```'; } >>"$TABLE"
fi
echo
echo "Targets:"
cat "$TARGETS"
count_targets "$TARGETS"
echo "targets: $BENCH_PASS PASS, $BENCH_MISS MISS"
{ echo; echo "Targets:"; echo; sed 's/^/    /' "$TARGETS"; } >>"$TABLE"
echo
echo "files: $CSV (every run), $SUMMARY (medians, ratios), $TABLE, $LOG; total $(fmt_time $(($(date +%s) - START)))"
[ $MEASURED -gt 0 ] || { echo "run.sh: no point could be measured" >&2; exit 1; }
exit 0
