#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/results.sh BUILD_DIR [PART...] - regenerate every figure and table of
# docs/results.md (`make results`), into docs/results/:
#   apache  cache/bench/apache/run.sh --full --servers nocache,socache,lock,tx,cx
#           (s = 0.1, 1, 2; threads 1, 2, 4, 8; 5 s per point, 3 runs; about
#           25 minutes): apache.png, apache-aborts.png, apache-table.md
#   locks   bench/run-locks.sh (memcached, Apache, pigz, xz, sort, make -j2 under the
#           lock report; about 3 minutes): locks.png, locks-summary.txt,
#           locks-top.txt (each program's top locks)
#   cm      bench/cm/run.sh (priority inversion, hot counter, pipeline; about
#           1 minute): inversion.png, hotcounter.png, pipeline.png, cm-targets.txt
# Default: all three. Each part's raw results stay in BUILD_DIR/bench-results/.
# Run it on an otherwise idle machine: other load shows up as spread.
# LOCKS_MEMCACHED=path names memcached's locks (a build with symbols; see
# bench/run-locks.sh). Exit: 0, 1 when a part failed, 2 on usage errors.
set -u
[ -n "${1:-}" ] || { echo "usage: scripts/results.sh BUILD_DIR [apache|locks|cm ...]" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd) || exit 2
shift
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(apache locks cm)
DOC=$REPO/docs/results
RES=$BUILD/bench-results
mkdir -p "$DOC" "$RES"
rc=0
for p in "${parts[@]}"; do
    echo "=== results: $p ($(date -u +%H:%M:%S))"
    case $p in
        apache)
            "$REPO/cache/bench/apache/run.sh" --full --servers nocache,socache,lock,tx,cx \
                --build "$BUILD" --out "$RES/apache-full" --no-cache-bench || rc=1
            for f in apache.png apache-aborts.png apache-table.md apache-summary.csv; do
                cp "$RES/apache-full/$f" "$DOC/" 2>/dev/null || { echo "results: no $f" >&2; rc=1; }
            done
            ;;
        locks)
            "$REPO/bench/run-locks.sh" "$BUILD" "$RES/locks" || rc=1
            cp "$RES/locks/locks.png" "$DOC/" 2>/dev/null || { echo "results: no locks.png" >&2; rc=1; }
            cp "$RES/locks/summary.txt" "$DOC/locks-summary.txt" 2>/dev/null
            for n in memcached apache pigz xz sort build; do
                [ -f "$RES/locks/$n.report" ] || continue
                echo "### $n"
                echo
                echo '```'
                # the process that took the most locks (a server's worker child,
                # not its parent): its title and its top 3 locks
                awk '/^txkit lock report:/ { sec++; nl[sec] = 0 }
                     /^ *[0-9]+ / { ranked = $1; nl[sec]++ }
                     /^(txkit|time|rank)/ || /^ *[1-3] / || (/^ +(at|waited|\(and)/ && ranked <= 3) { txt[sec] = txt[sec] $0 "\n" }
                     END { best = 1; for (i = 1; i <= sec; i++) if (nl[i] > nl[best]) best = i; printf "%s", txt[best] }' \
                    "$RES/locks/$n.report"
                echo '```'
                echo
            done >"$DOC/locks-top.txt"
            ;;
        cm)
            "$REPO/bench/cm/run.sh" "$BUILD" "$RES/cm" >"$RES/cm.log" 2>&1 || rc=1
            for f in inversion.png hotcounter.png pipeline.png; do
                cp "$RES/cm/$f" "$DOC/" 2>/dev/null || { echo "results: no $f" >&2; rc=1; }
            done
            grep '^TARGET' "$RES/cm.log" | awk '!seen[$0]++' >"$DOC/cm-targets.txt"
            ;;
        *) echo "results: unknown part '$p' (apache, locks, cm)" >&2; exit 2 ;;
    esac
done
echo "results in $DOC (docs/results.md describes them)"
exit $rc
