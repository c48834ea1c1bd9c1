#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# txhttpd.sh - start and stop a private Apache 2.4 instance for the
# mod_cache_tx tests and the HTTP benchmark. No system service is involved.
#
#   txhttpd.sh start DIR PORT SERVER [THREADS]
#   txhttpd.sh stop DIR
#
# start writes DIR/httpd.conf and starts Apache (worker MPM) on
# 127.0.0.1:PORT with everything under DIR (ServerRoot, PidFile httpd.pid,
# ErrorLog error.log, ScoreBoardFile, DefaultRuntimeDir run/, ScriptSock),
# KeepAlive Off, ExtendedStatus Off, THREADS threads (default 4) per child and
# one child process (the paper measured threads in one process). It waits
# until the port answers; on failure it prints the error log's tail and exits
# non-zero. stop stops the instance (graceful-stop, then the pid file's process
# group by signal), waits for every process to go, and is idempotent.
#
# SERVER:
#   nocache      no cache
#   socache      mod_cache_socache over shmcb (BUFFER filter on the CGI, so
#                its output has a length: socache refuses unknown lengths)
#   lock|tx|cx   mod_cache_tx with TxCacheSync lock|tx|cx
#   tx-stm       tx with TXKIT_METHOD=stm in the server's environment
#   tx-htm       tx with TXKIT_METHOD=htm (RTM; falls back to serial without it)
#   tx-libitm    tx, run by GCC's libitm: LD_PRELOAD=libitm.so.1 puts libitm
#                first in the global symbol scope, so the module's _ITM_*
#                calls bind to it instead of libtxkit. Checked after start: the
#                child has libitm mapped. (The tests also check that no txkit
#                transaction is counted in that mode: TxCommits 0 on
#                /server-status?auto while the cache serves hits.) Its method
#                is ml_wt unless ITM_DEFAULT_METHOD says otherwise: where the
#                CPU has RTM, libitm's default is its HTM method, which loses
#                commit actions, and the cache's references with them.
#   lock-preload lock with LD_PRELOAD=libtxkit-preload.so (mutex elision)
#
# Served: /cgi-bin/man/man2html?SECTION+PAGE (man2html, made cacheable with
# Cache-Control: max-age=3600), /server-status (and ?auto), DIR/htdocs at /,
# and CGI scripts in DIR/cgi at /tcgi/ (for tests; max-age is not added there).
# mod_cache: CacheQuickHandler on, CacheHeader on (X-Cache), CacheDetailHeader on.
#
# Environment:
#   TXKIT_BUILD         build directory holding cache/apache/mod_cache_tx.so and
#                       lib/libtxkit-preload.so (default /work/main/build)
#   TXHTTPD_EXTRA       lines appended to httpd.conf (e.g. "TxCacheMaxObjects 500")
#   TXHTTPD_CHILDREN    child processes (default 1)
#   TXHTTPD_SHMCB_BYTES shmcb size for socache (default 268435456)
#   TXHTTPD_MAX_OBJECT  largest cached body, both caches (default 1048576)
#   TXHTTPD_TIMEOUT     seconds to wait for the port (default 20)
# Runs as root (children as www-data; DIR is made world-readable) or as an
# ordinary user (children as that user).
set -euo pipefail

usage() {
  echo "usage: $0 start DIR PORT SERVER [THREADS] | stop DIR" >&2
  echo "  SERVER: nocache socache lock tx cx tx-stm tx-htm tx-libitm lock-preload" >&2
  exit 2
}

HTTPD=${HTTPD:-$(command -v apache2 || command -v httpd || true)}
MODDIR=${TXHTTPD_MODDIR:-/usr/lib/apache2/modules}

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# Every process whose parent chain leads to $1 (the httpd parent), plus $1.
proc_tree() {
  local root=$1 all p
  all=$root
  for p in $(pgrep -P "$root" 2>/dev/null || true); do
    all="$all $(proc_tree "$p")"
  done
  echo "$all"
}

do_stop() {
  local dir=$1 pid="" i procs
  dir=$(cd "$dir" 2>/dev/null && pwd) || return 0 # no DIR: nothing runs
  [ -f "$dir/httpd.pid" ] && pid=$(cat "$dir/httpd.pid" 2>/dev/null || true)
  if ! pid_alive "$pid"; then
    rm -f "$dir/httpd.pid"
    return 0
  fi
  procs=$(proc_tree "$pid")
  if [ -n "$HTTPD" ] && [ -f "$dir/httpd.conf" ]; then
    "$HTTPD" -f "$dir/httpd.conf" -k graceful-stop >/dev/null 2>&1 || kill -WINCH "$pid" 2>/dev/null || true
  else
    kill -WINCH "$pid" 2>/dev/null || true
  fi
  # GracefulShutdownTimeout bounds the graceful stop; then TERM, then KILL.
  for i in $(seq 1 100); do
    pid_alive "$pid" || break
    sleep 0.1
  done
  if pid_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      pid_alive "$pid" || break
      sleep 0.1
    done
  fi
  # Children (and the cgid daemon) go with the parent; make sure.
  for i in $(seq 1 50); do
    local left=""
    for p in $procs; do pid_alive "$p" && left="$left $p"; done
    [ -z "$left" ] && break
    [ "$i" -eq 30 ] && kill -KILL $left 2>/dev/null || true
    sleep 0.1
  done
  rm -f "$dir/httpd.pid"
}

find_libitm() {
  local f
  f=$(gcc -print-file-name=libitm.so.1 2>/dev/null || true)
  if [ -n "$f" ] && [ -f "$f" ]; then echo "$f"; return; fi
  f=$(ldconfig -p 2>/dev/null | awk '/libitm\.so\.1 .*x86-64/ {print $NF; exit}')
  [ -n "$f" ] && [ -f "$f" ] && echo "$f"
}

do_start() {
  [ $# -ge 3 ] || usage
  local dir=$1 port=$2 server=$3 threads=${4:-4}
  local children=${TXHTTPD_CHILDREN:-1}
  local build=${TXKIT_BUILD:-/work/main/build}
  local maxobj=${TXHTTPD_MAX_OBJECT:-1048576}
  local timeout=${TXHTTPD_TIMEOUT:-20}
  [[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || { echo "txhttpd: bad PORT '$port'" >&2; exit 2; }
  [[ $threads =~ ^[0-9]+$ ]] && [ "$threads" -ge 1 ] || { echo "txhttpd: bad THREADS '$threads'" >&2; exit 2; }
  [[ $children =~ ^[0-9]+$ ]] && [ "$children" -ge 1 ] || { echo "txhttpd: bad TXHTTPD_CHILDREN '$children'" >&2; exit 2; }
  [ -n "$HTTPD" ] || { echo "txhttpd: apache2 not found (apt-get install apache2)" >&2; exit 1; }

  local sync="" envs=() preload="" mods=""
  case "$server" in
    nocache|socache) ;;
    lock|tx|cx) sync=$server ;;
    tx-stm) sync=tx; envs+=(TXKIT_METHOD=stm) ;;
    tx-htm) sync=tx; envs+=(TXKIT_METHOD=htm) ;;
    tx-libitm)
      sync=tx
      preload=$(find_libitm) || true
      [ -n "$preload" ] || { echo "txhttpd: GCC's libitm.so.1 not found" >&2; exit 1; }
      envs+=("ITM_DEFAULT_METHOD=${ITM_DEFAULT_METHOD:-ml_wt}")
      ;;
    lock-preload)
      sync=lock
      preload=$build/lib/libtxkit-preload.so
      [ -f "$preload" ] || { echo "txhttpd: $preload not found (build txkit, or set TXKIT_BUILD)" >&2; exit 1; }
      ;;
    *) echo "txhttpd: unknown SERVER '$server'" >&2; usage ;;
  esac
  [ -n "$preload" ] && envs+=("LD_PRELOAD=$preload")
  local module=$build/cache/apache/mod_cache_tx.so
  if [ -n "$sync" ] && [ ! -f "$module" ]; then
    echo "txhttpd: $module not found (build it, or set TXKIT_BUILD)" >&2
    exit 1
  fi

  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  do_stop "$dir" # a leftover instance on this DIR
  mkdir -p "$dir/run" "$dir/htdocs" "$dir/cgi"
  rm -f "$dir/error.log" "$dir/cgid.sock"

  local user_lines=""
  if [ "$(id -u)" -eq 0 ]; then
    # The children and CGIs run as www-data: they must reach DIR.
    chmod a+rx "$dir" "$dir/htdocs" "$dir/cgi"
    user_lines=$'User www-data\nGroup www-data'
    if command -v setpriv >/dev/null &&
       ! setpriv --reuid=www-data --regid=www-data --clear-groups test -x "$dir/htdocs"; then
      echo "txhttpd: www-data cannot reach $dir: make it and its parents world-searchable" >&2
      exit 1
    fi
  fi

  case "$server" in
    socache) mods+="LoadModule cache_socache_module $MODDIR/mod_cache_socache.so
LoadModule socache_shmcb_module $MODDIR/mod_socache_shmcb.so
LoadModule buffer_module $MODDIR/mod_buffer.so
" ;;
  esac
  [ -n "$sync" ] && mods+="LoadModule cache_tx_module $module
"

  local cache_conf=""
  case "$server" in
    nocache) cache_conf="# no cache" ;;
    socache) cache_conf="CacheEnable socache /
CacheSocache shmcb:$dir/run/socache(${TXHTTPD_SHMCB_BYTES:-268435456})
CacheSocacheMaxSize $maxobj
<Location /cgi-bin/man/man2html>
  SetOutputFilter BUFFER
  BufferSize $maxobj
</Location>" ;;
    *) cache_conf="CacheEnable tx /
TxCacheSync $sync
TxCacheMaxObjectSize $maxobj" ;;
  esac

  local maxthreads=$((threads * children))
  cat >"$dir/httpd.conf" <<EOF
# Written by txhttpd.sh: $server, $threads threads x $children child(ren).
ServerRoot "$dir"
ServerName 127.0.0.1
Listen 127.0.0.1:$port
PidFile "$dir/httpd.pid"
ErrorLog "$dir/error.log"
LogLevel warn
ScoreBoardFile "$dir/run/scoreboard"
DefaultRuntimeDir "$dir/run"
Mutex file:$dir/run default
$user_lines

LoadModule mpm_worker_module $MODDIR/mod_mpm_worker.so
LoadModule authz_core_module $MODDIR/mod_authz_core.so
LoadModule mime_module $MODDIR/mod_mime.so
LoadModule alias_module $MODDIR/mod_alias.so
LoadModule cgid_module $MODDIR/mod_cgid.so
LoadModule headers_module $MODDIR/mod_headers.so
LoadModule status_module $MODDIR/mod_status.so
LoadModule cache_module $MODDIR/mod_cache.so
$mods
StartServers $children
ServerLimit $children
ThreadLimit $threads
ThreadsPerChild $threads
MaxRequestWorkers $maxthreads
MinSpareThreads 1
MaxSpareThreads $((maxthreads + threads))
MaxConnectionsPerChild 0
GracefulShutdownTimeout 5
KeepAlive Off
ExtendedStatus Off
Timeout 30
ListenBacklog 1024

TypesConfig /etc/mime.types
ScriptSock "$dir/run/cgid.sock"
DocumentRoot "$dir/htdocs"
<Directory />
  AllowOverride None
  Require all denied
</Directory>
<Directory "$dir/htdocs">
  Require all granted
</Directory>
ScriptAlias /cgi-bin/ /usr/lib/cgi-bin/
ScriptAlias /tcgi/ "$dir/cgi/"
<Directory /usr/lib/cgi-bin>
  Options +ExecCGI
  Require all granted
</Directory>
<Directory "$dir/cgi">
  Options +ExecCGI
  Require all granted
</Directory>
<Location /cgi-bin/man/man2html>
  Header set Cache-Control "max-age=3600"
</Location>
<Location /server-status>
  SetHandler server-status
  Require all granted
</Location>

CacheQuickHandler on
CacheHeader on
CacheDetailHeader on
$cache_conf
CacheDisable /server-status
${TXHTTPD_EXTRA:-}
EOF

  if ! env "${envs[@]}" "$HTTPD" -f "$dir/httpd.conf" -k start >"$dir/start.out" 2>&1; then
    echo "txhttpd: apache2 failed to start ($server on port $port):" >&2
    cat "$dir/start.out" >&2
    [ -f "$dir/error.log" ] && tail -n 20 "$dir/error.log" >&2
    do_stop "$dir"
    exit 1
  fi
  local i ok=0
  for i in $(seq 1 $((timeout * 10))); do
    if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$port/server-status?auto"; then ok=1; break; fi
    if [ $i -gt 10 ] && ! pid_alive "$(cat "$dir/httpd.pid" 2>/dev/null || true)"; then break; fi
    sleep 0.1
  done
  if [ $ok -ne 1 ]; then
    echo "txhttpd: $server on port $port does not answer:" >&2
    cat "$dir/start.out" >&2
    [ -f "$dir/error.log" ] && tail -n 20 "$dir/error.log" >&2
    do_stop "$dir"
    exit 1
  fi
  if [ "$server" = tx-libitm ]; then
    # The children must have GCC's libitm mapped (LD_PRELOAD reached them).
    local parent kids k found=0
    parent=$(cat "$dir/httpd.pid")
    kids=$(pgrep -P "$parent" || true)
    for k in $kids; do grep -q 'libitm\.so' "/proc/$k/maps" 2>/dev/null && found=1; done
    if [ $found -ne 1 ]; then
      echo "txhttpd: tx-libitm: no child has $preload mapped" >&2
      do_stop "$dir"
      exit 1
    fi
  fi
  echo "txhttpd: $server on 127.0.0.1:$port (pid $(cat "$dir/httpd.pid"), $children x $threads threads, $dir)"
}

case "${1:-}" in
  start) shift; do_start "$@" ;;
  stop) [ $# -eq 2 ] || usage; do_stop "$2" ;;
  *) usage ;;
esac
