#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/test-sim.sh [BUILD_DIR]  (make test-sim) - the simulated-RTM lane.
#
# Builds txkit with -DTXKIT_SIM_RTM=ON in BUILD_DIR (default build-sim): the
# RTM instructions go through the simulator of src/arch/x86_64/rtm.h, so that
# every hardware path (the htm method, the hybrid, cx optimistic sections,
# mutex elision) runs on any CPU. Then:
#  1. the control-flow tests (label rtm_sim), which script their own XBEGIN
#     outcomes, simulated transactions that start included;
#  2. the tests of the runtime, cx locks, elision, fork and the stress
#     oracles once per scripted XBEGIN status below, every XBEGIN of the run
#     returning it (each status a way the CPU aborts; the software paths must
#     take over correctly). A simulated XEND or XABORT outside a transaction
#     stops the program (#GP on the CPU).
# Not in step 2: tests that count exact hardware attempts (cxx.htm, which
# expects hardware to start; api.*.htm under a scripted explicit abort, which
# it counts as one of its own tx_restart()s), timing bounds (cx.starvation), the model
# checker, Apache, the cache and the gcc -fgnu-tm suites (their hardware code
# paths are the same entry points, covered by the cx/preload/api runs).
# Environment: JOBS (default nproc), SIM_STATUSES (space-separated), CMAKE_FLAGS
# (extra configure options, at the first configure).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-sim}
jobs=${JOBS:-$(nproc)}
statuses=${SIM_STATUSES:-"conflict zero explicit:0xe1 explicit:0xf1"}
include='^(api|irrevocable|cx|preload|fork|stress|long_reader|restart_stack)\.'
exclude='^(cx\.starvation|cx\.model)$'

if [ ! -f "$build/CMakeCache.txt" ]; then
    # shellcheck disable=SC2086 # CMAKE_FLAGS: extra options (CI: -DTXKIT_WERROR=ON)
    cmake -S . -B "$build" -DTXKIT_SIM_RTM=ON -DTXKIT_BUILD_BENCH=OFF ${CMAKE_FLAGS:-} >/dev/null
fi
cmake --build "$build" -j "$jobs"
cd "$build"
rc=0
echo "simulated-RTM lane: control-flow tests (label rtm_sim)"
ctest --output-on-failure -j "$jobs" -L rtm_sim || rc=1
for s in $statuses; do
    echo "simulated-RTM lane: every XBEGIN returns $s"
    ex=$exclude
    case $s in explicit:*) ex="$exclude|^api\..*\.htm\$" ;; esac
    TXKIT_SIM_RTM=$s ctest --output-on-failure -j "$jobs" -R "$include" -E "$ex" || rc=1
done
exit $rc
