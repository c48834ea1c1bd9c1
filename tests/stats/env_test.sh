#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# env_test.sh CASE TXKIT ENV_HELPER - TXKIT_STATS and TXKIT_FAULT (issue 11, 9).
#
#   words     TXKIT_STATS: 1/on/yes/true/stderr print the summary; 0/no/false/
#             private/off/empty print nothing; any other word is refused with
#             a message naming TXKIT_STATS and never becomes a file (./on)
#   dump      TXKIT_STATS=PATH (with a '/') writes a dump of mode 0600 that
#             txkit report reads; txkit run --stats=NAME writes ./NAME; a
#             FIFO or a symbolic link at PATH is left alone, with a message
#   garbage   random bytes written over a running program's segment (its
#             header included): the program goes on
#   full      the statistics directory on a full file system: not published,
#             with a message; the program runs (root: a small tmpfs)
#   atexit    the program closes stderr in an atexit handler that runs before
#             txkit's: the summary still comes out (a duplicate of stderr)
#   fault_serial  TXKIT_FAULT=serial=1 finishes: 8 injected serial aborts per
#             transaction at most (it livelocked)
#   fault_backoff TXKIT_FAULT=stm=1: injected aborts are retried at once, not
#             after a conflict backoff (275 tx/s before; 20000 transactions
#             must finish within env_helper's 50 s alarm)
# Exit: 0 pass, 1 fail.
set -uo pipefail
case=$1 bin=$2 helper=$3
fail() { echo "FAIL [$case]: $*" >&2; for f in "$tmp"/*.out "$tmp"/*.err; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/txkit-env-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export TXKIT_STATS_DIR=$tmp/stats
unset TXKIT_STATS TXKIT_FAULT TXKIT_METHOD TXKIT_STM_RETRIES
summary='^txkit [0-9.]* statistics: 1 threads, 10 transactions'

# run NAME [VAR=VALUE...] -- ARGS: the helper in $tmp/cwd, output in $tmp/NAME.{out,err}
run() {
  local name=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  mkdir -p "$tmp/cwd"
  (cd "$tmp/cwd" && env "${envs[@]}" "$helper" "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
}

case $case in
words)
  for v in 1 on yes true stderr ON True; do
    run "w$v" "TXKIT_STATS=$v" -- 10 || fail "TXKIT_STATS=$v: exit $?"
    grep -q "$summary" "$tmp/w$v.err" || fail "TXKIT_STATS=$v: no summary"
    grep -q 'TXKIT_STATS=' "$tmp/w$v.err" && fail "TXKIT_STATS=$v: complaint"
  done
  for v in 0 no false private off ""; do
    run "q$v" "TXKIT_STATS=$v" -- 10 || fail "TXKIT_STATS='$v': exit $?"
    [ -s "$tmp/q$v.err" ] && fail "TXKIT_STATS='$v': said something"
  done
  for v in bogus out.dump "on " statistics; do
    run bad "TXKIT_STATS=$v" -- 10 || fail "TXKIT_STATS='$v': exit $?"
    grep -qF "txkit: TXKIT_STATS=$v: expected 1|on|yes|true|stderr" "$tmp/bad.err" ||
      fail "TXKIT_STATS='$v': no message naming the variable"
    grep -q "$summary" "$tmp/bad.err" && fail "TXKIT_STATS='$v': a summary"
  done
  left=$(ls -A "$tmp/cwd")
  [ -z "$left" ] || fail "files made in the working directory: $left"
  ;;
dump)
  umask 022
  run d1 "TXKIT_STATS=./d1.seg" -- 10 || fail "exit $?"
  [ -f "$tmp/cwd/d1.seg" ] || fail "no dump ./d1.seg"
  [ "$(stat -c %a "$tmp/cwd/d1.seg")" = 600 ] || fail "dump mode $(stat -c %a "$tmp/cwd/d1.seg"), not 600"
  "$bin" report --json "$tmp/cwd/d1.seg" >"$tmp/r.out" 2>"$tmp/r.err" || fail "txkit report"
  grep -q '"transactions":10' "$tmp/r.out" || fail "the dump does not hold 10 transactions"
  mkdir -p "$tmp/sub"
  run d2 "TXKIT_STATS=$tmp/sub/d2" -- 10 || fail "exit $?"
  [ "$(stat -c %a "$tmp/sub/d2")" = 600 ] || fail "absolute path: not a 0600 dump"
  # txkit run --stats=NAME: a file in the working directory, not a word
  (cd "$tmp/cwd" && "$bin" run --no-elide --stats=plain.dump -- "$helper" 10) >"$tmp/d3.out" 2>"$tmp/d3.err" ||
    fail "txkit run --stats=plain.dump"
  [ "$(stat -c %a "$tmp/cwd/plain.dump" 2>/dev/null)" = 600 ] || fail "txkit run --stats=plain.dump: no ./plain.dump"
  # only a regular file is replaced: a FIFO or a symbolic link (as root, a
  # device such as /dev/null) stays what it was, with a message (it was
  # renamed over: a regular file in its place)
  mkfifo "$tmp/cwd/fifo" && ln -s "$tmp/target" "$tmp/cwd/link" || fail "mkfifo/ln"
  run d4 "TXKIT_STATS=./fifo" -- 10 || fail "FIFO: exit $?"
  [ -p "$tmp/cwd/fifo" ] || fail "TXKIT_STATS=./fifo replaced the FIFO"
  grep -q "TXKIT_STATS=./fifo: ./fifo is not a regular file (a FIFO)" "$tmp/d4.err" || fail "FIFO: no message"
  run d5 "TXKIT_STATS=./link" -- 10 || fail "link: exit $?"
  [ -L "$tmp/cwd/link" ] || fail "TXKIT_STATS=./link replaced the symbolic link"
  grep -q "is not a regular file (a symbolic link)" "$tmp/d5.err" || fail "link: no message"
  ;;
full)
  # A statistics directory on a nearly full file system: the segment is not
  # published (a message), the program runs (it died of SIGBUS writing the
  # sparse shared file). Needs a small tmpfs: root, and mount allowed.
  [ "$(id -u)" = 0 ] || { echo "SKIP [full]: not root (needs a small tmpfs)"; exit 77; }
  mkdir -p "$tmp/small"
  mount -t tmpfs -o size=256k,mode=700 tmpfs "$tmp/small" 2>/dev/null ||
    { echo "SKIP [full]: cannot mount a tmpfs here"; exit 77; }
  trap 'umount "$tmp/small" 2>/dev/null; rm -rf "$tmp"' EXIT
  head -c 252k /dev/zero >"$tmp/small/filler" 2>/dev/null
  run f1 "TXKIT_STATS_DIR=$tmp/small" -- 1000
  rc=$?
  [ $rc = 0 ] || fail "exit $rc on a full statistics file system (135: SIGBUS)"
  grep -q "statistics not published.*free, less than" "$tmp/f1.err" || fail "no message about the full file system"
  ;;
garbage)
  # Garbage written into a live segment (anyone who may write the file) does
  # not crash the program: it found its own parts through the file's header
  "$helper" 400000000 >"$tmp/g.out" 2>"$tmp/g.err" &
  pid=$!
  seg=$TXKIT_STATS_DIR/$pid.seg
  for _ in $(seq 200); do [ -f "$seg" ] && break; sleep 0.02; done
  [ -f "$seg" ] || { kill "$pid"; fail "no segment $seg"; }
  head -c 8192 /dev/urandom | dd of="$seg" bs=8192 count=1 conv=notrunc status=none
  wait "$pid" || fail "the program died (status $?) after garbage was written into its segment"
  ;;
atexit)
  run a1 TXKIT_STATS=1 -- 10 --close-stderr-at-exit || fail "exit $?"
  grep -q "$summary" "$tmp/a1.err" || fail "the summary was lost with stderr"
  run a2 TXKIT_STATS=./bad/dir/x -- 10 --close-stderr-at-exit || fail "exit $?"
  grep -q "TXKIT_STATS=./bad/dir/x: cannot create" "$tmp/a2.err" || fail "the dump error was lost with stderr"
  ;;
fault_serial)
  run s1 TXKIT_METHOD=serial TXKIT_FAULT=serial=1 -- 200 || fail "TXKIT_FAULT=serial=1: exit $? (killed by its alarm: livelock)"
  read -r _ tx com ab inj ser _ <"$tmp/s1.out"
  [ "$tx $com $ab $inj $ser" = "200 200 1600 1600 200" ] || fail "serial=1: $(cat "$tmp/s1.out")"
  run s2 TXKIT_METHOD=stm TXKIT_STM_RETRIES=5 TXKIT_FAULT=stm=1,serial=1 -- 200 || fail "stm=1,serial=1: exit $?"
  read -r _ tx com ab inj ser _ <"$tmp/s2.out"
  [ "$tx $com $ab $inj $ser" = "200 200 2600 2600 200" ] || fail "stm=1,serial=1: $(cat "$tmp/s2.out")"
  echo "serial=1: 8 injected serial aborts per transaction, then a commit"
  ;;
fault_backoff)
  run b1 TXKIT_METHOD=stm TXKIT_FAULT=stm=1 -- 20000 || fail "exit $? (killed by its alarm: injected aborts backed off)"
  read -r _ tx com ab inj ser secs <"$tmp/b1.out"
  [ "$tx $com $inj $ser" = "20000 20000 320000 20000" ] || fail "stm=1: $(cat "$tmp/b1.out")"
  echo "stm=1: 20000 transactions (16 injected aborts each) in $secs s"
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "ok [$case]"
