#!/usr/bin/env bash
# txkit info and environment-variable errors.
# usage: test_cli.sh TXKIT_BINARY
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

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

"$bin" nosuchcommand 2>/dev/null && fail "unknown command accepted"
echo "cli ok"
