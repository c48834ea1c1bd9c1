#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# txkit info and environment-variable errors; every command's --help, usage
# errors and exit statuses; -V; info --json; run's options.
# usage: test_cli.sh TXKIT_BINARY
set -uo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

out=$("$bin" info)
echo "$out"
for field in '^txkit [0-9]+\.[0-9]+\.[0-9]+' '^rtm: +(yes|no)' '^  why: +.+' '^  cpuid: +rtm=[01]' \
             '^method: +auto' '^threads: +[1-9]'; do
  grep -Eq "$field" <<<"$out" || fail "txkit info lacks /$field/"
done
# The RTM verdict must agree with /proc/cpuinfo's rtm flag.
if grep -qw rtm /proc/cpuinfo; then cpu=1; else cpu=0; fi
grep -Eq "cpuid: +rtm=$cpu" <<<"$out" || fail "cpuid rtm bit disagrees with /proc/cpuinfo ($cpu)"
[ $cpu = 1 ] || grep -Eq '^rtm: +no' <<<"$out" || fail "RTM reported usable without the CPUID bit"

out=$(TXKIT_METHOD=stm "$bin" info)
grep -Eq '^method: +stm \(from TXKIT_METHOD\)' <<<"$out" || fail "TXKIT_METHOD=stm not reported"

# A bad value names the variable, is ignored, and does not stop the program.
err=$(TXKIT_METHOD=bogus "$bin" info 2>&1 >/dev/null)
grep -q 'TXKIT_METHOD=bogus' <<<"$err" || fail "bad TXKIT_METHOD not reported: '$err'"
TXKIT_METHOD=bogus "$bin" info | grep -Eq '^method: +auto' || fail "bad TXKIT_METHOD changed the method"
err=$(TXKIT_FAULT=2.5 "$bin" info 2>&1 >/dev/null)
grep -q 'TXKIT_FAULT=2.5' <<<"$err" || fail "bad TXKIT_FAULT not reported"
err=$(TXKIT_STM_RETRIES=-1 "$bin" info 2>&1 >/dev/null)
grep -q 'TXKIT_STM_RETRIES=-1' <<<"$err" || fail "bad TXKIT_STM_RETRIES not reported"
if ! grep -qw rtm /proc/cpuinfo; then
  err=$(TXKIT_METHOD=htm "$bin" info 2>&1 >/dev/null)
  grep -q 'TXKIT_METHOD=htm: RTM is not usable' <<<"$err" || fail "htm without RTM not explained: '$err'"
fi
# TXKIT_RTM=off: no hardware transaction on any CPU, and said so; htm refused
out=$(TXKIT_RTM=off TXKIT_METHOD=htm "$bin" info 2>&1)
grep -Eq '^rtm: +no' <<<"$out" || fail "TXKIT_RTM=off: rtm still used"
grep -q 'TXKIT_METHOD=htm: RTM is not usable' <<<"$out" || fail "TXKIT_RTM=off: htm not refused: '$out'"
if grep -qw rtm /proc/cpuinfo; then
  grep -q 'TXKIT_RTM=off' <<<"$out" || fail "TXKIT_RTM=off not named as the reason"
fi
err=$(TXKIT_RTM=maybe "$bin" info 2>&1 >/dev/null)
grep -q 'TXKIT_RTM=maybe' <<<"$err" || fail "bad TXKIT_RTM not reported"

# Every command: --help (stdout, exit 0, its own usage, the exit statuses),
# the same text from 'txkit help CMD'; a usage error is one line naming the
# command, then "try 'txkit CMD --help'", exit 2.
for cmd in info run stat report version help; do
  out=$("$bin" "$cmd" --help) || fail "txkit $cmd --help: exit $?"
  grep -q "^usage: txkit $cmd" <<<"$out" || fail "txkit $cmd --help: not its usage: $(head -1 <<<"$out")"
  grep -qi "exit status" <<<"$out" || fail "txkit $cmd --help does not state its exit status"
  [ "$("$bin" help "$cmd")" = "$out" ] || fail "txkit help $cmd differs from txkit $cmd --help"
  "$bin" "$cmd" -h | cmp -s - <(printf '%s\n' "$out") || fail "txkit $cmd -h differs from --help"
  "$bin" "$cmd" --no-such-option >/dev/null 2>"$tmp" && fail "txkit $cmd --no-such-option accepted"
  [ "$("$bin" "$cmd" --no-such-option 2>&1 >/dev/null | wc -l)" = 2 ] || fail "txkit $cmd: not a 2-line error: $(cat "$tmp")"
  "$bin" "$cmd" --no-such-option >/dev/null 2>"$tmp"
  [ $? = 2 ] || fail "txkit $cmd --no-such-option: exit status not 2"
  head -1 "$tmp" | grep -qx "txkit $cmd: unknown option '--no-such-option'" || fail "txkit $cmd: '$(head -1 "$tmp")'"
  tail -1 "$tmp" | grep -qx "try 'txkit $cmd --help'" || fail "txkit $cmd: no 'try' line: $(cat "$tmp")"
done
"$bin" --help | grep -q '^usage: txkit ' || fail "txkit --help"
"$bin" --help | grep -q '^Exit status: 0 success, 1 error, 2 usage error' || fail "global exit statuses"
for c in info run stat report version help; do
  "$bin" help | grep -q "^  $c " || fail "txkit help does not list $c"
done
"$bin" help nosuchcommand >/dev/null 2>"$tmp"
[ $? = 2 ] && grep -qx "try 'txkit help --help'" "$tmp" || fail "txkit help nosuchcommand: $(cat "$tmp")"
"$bin" nosuchcommand >/dev/null 2>"$tmp"
[ $? = 2 ] || fail "unknown command: exit status not 2"
[ "$(cat "$tmp")" = "txkit: unknown command 'nosuchcommand'
try 'txkit --help'" ] || fail "unknown command: $(cat "$tmp")"
"$bin" >/dev/null 2>&1
[ $? = 2 ] || fail "no command: exit status not 2"

# -V, --version, version: the same line
v=$("$bin" version)
grep -Eqx 'txkit [0-9]+\.[0-9]+\.[0-9]+' <<<"$v" || fail "txkit version: '$v'"
[ "$("$bin" -V)" = "$v" ] && [ "$("$bin" --version)" = "$v" ] || fail "-V/--version differ from version"
"$bin" version extra >/dev/null 2>&1
[ $? = 2 ] || fail "txkit version extra: exit status not 2"

# info --json: one object, with what a script needs
if command -v python3 >/dev/null; then
  "$bin" info --json | python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
assert len(lines) == 1, lines
j = json.loads(lines[0])
v = sys.argv[1].split()[1]
assert j["version"] == v, j
assert isinstance(j["rtm"]["usable"], bool) and j["rtm"]["reason"], j
assert [m["name"] for m in j["methods"]] == ["auto", "htm", "stm", "serial"], j
assert [m["usable"] for m in j["methods"] if m["name"] == "htm"] == [j["rtm"]["usable"]], j
assert j["method"] == "auto" and j["method_from_env"] is False, j
assert j["cpus"] >= 1 and j["cpu"] and j["vendor"], j
' "$v" || fail "txkit info --json"
  TXKIT_METHOD=stm "$bin" info -j | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["method"] == "stm" and j["method_from_env"] is True, j' || fail "info --json with TXKIT_METHOD"
fi
"$bin" info extra >/dev/null 2>&1
[ $? = 2 ] || fail "txkit info extra: exit status not 2"

# run: options by getopt_long (stop at CMD), CMD's exit status, 127/126.
out=$("$bin" run -m stm --no-elide -- sh -c 'echo "$TXKIT_METHOD $TXKIT_STATS"') || fail "txkit run -m stm"
[ "$out" = "stm " ] || fail "run -m stm: '$out'"
out=$("$bin" run --method=serial --stats=out.bin sh -c 'echo "$TXKIT_METHOD $TXKIT_STATS" -x') || fail "txkit run --method="
[ "$out" = "serial ./out.bin -x" ] || fail "run --method= --stats=FILE: '$out'"
out=$("$bin" run --stats sh -c 'echo "$TXKIT_STATS $LD_BIND_NOW"') || fail "txkit run --stats"
[ "$out" = "1 1" ] || fail "run --stats: '$out'"
"$bin" run sh -c 'exit 3'
[ $? = 3 ] || fail "txkit run: not CMD's exit status"
"$bin" run /nonexistent/command 2>/dev/null
[ $? = 127 ] || fail "txkit run of a missing command: not 127"
# a script whose interpreter is missing exists: 126 and "bad interpreter", as
# the shell says (it was "No such file or directory" and 127), with --report too
script=$(mktemp) && printf '#!/nonexistent/interp\necho hi\n' >"$script" && chmod +x "$script"
for how in run "run --report=$script.report"; do
  # shellcheck disable=SC2086
  "$bin" $how "$script" 2>"$tmp"
  rc=$?
  [ $rc = 126 ] && grep -q "bad interpreter" "$tmp" || { rm -f "$script"*; fail "txkit $how of a script with a missing interpreter: status $rc, $(cat "$tmp")"; }
done
rm -f "$script"*
for args in "" "-m" "-m bogus true" "--stats= true" "--bogus true"; do
  # shellcheck disable=SC2086
  "$bin" run $args >/dev/null 2>"$tmp"
  [ $? = 2 ] || fail "txkit run $args: exit status not 2"
  [ "$(wc -l <"$tmp")" = 2 ] && tail -1 "$tmp" | grep -qx "try 'txkit run --help'" || fail "txkit run $args: $(cat "$tmp")"
done
echo "cli ok"
