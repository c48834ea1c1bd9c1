#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/harness/apps_selftest.sh BUILD_DIR - ctest bench.apps: one tiny run of
# bench/run-apps.sh (0.2 s, 1 run per point): every app passes its oracle on
# both runtimes (exit 0), the CSV has a row per pair, app, thread count and
# runtime with a rate, and the summary prints the targets of the auto pair
# (every app at 1 and 2 threads, and the geometric mean at 2).
# Exit 77 (skip) without the apps (no system libitm at configure time).
set -u
BUILD=$1
REPO=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL [bench.apps]: $*" >&2; exit 1; }
[ -x "$BUILD/tests/apps/app_vacation" ] || { echo "SKIP [bench.apps]: no apps built (system libitm)"; exit 77; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
log=$(TXKIT_BENCH_SECONDS=0.2 TXKIT_BENCH_RUNS=1 "$REPO/bench/run-apps.sh" "$BUILD" "$OUT" 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "run-apps.sh exit $rc:
$log"
pairs=1
grep -qw rtm /proc/cpuinfo && pairs=2
napps=$(sed -n 's/^APPS=(\(.*\))$/\1/p' "$REPO/bench/run-apps.sh" | wc -w)
[ "$napps" -gt 0 ] || fail "no APPS=(...) line in bench/run-apps.sh"
rows=$(tail -n +2 "$OUT/apps.csv" | awk -F, '$6 != ""' | wc -l)
want=$((pairs * napps * 2 * 2))
[ "$rows" -eq $want ] || fail "apps.csv: $rows rows with a rate, expected $want ($napps apps)"
n=$(grep -c '^TARGET' <<<"$log")
[ "$n" -eq $((napps * 2 + 1)) ] || fail "$n TARGET lines, expected $((napps * 2 + 1))"
grep -q '^TARGET geomean auto@2' <<<"$log" || fail "no geomean target"
echo "PASS [bench.apps]: $rows rows, $n targets"
