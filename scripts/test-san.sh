#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/test-san.sh [BUILD_DIR]  (make test-san) - the sanitizer lane.
#
# Builds txkit with -DTXKIT_SANITIZE=ON (ASan + UBSan, cmake/TxkitSanitize.cmake)
# in BUILD_DIR (default build-san) and runs the test suite there. libtxkit and
# every test program are instrumented; the gcc -fgnu-tm programs (tests/abi,
# tests/apps, ...) are compiled without sanitizers (gcc refuses -fgnu-tm with
# ASan) but linked with them, so they run on the instrumented libtxkit.
#
# Not run in this lane, by label (listed below when the lane starts):
#   valgrind   valgrind and ASan cannot share a process
#   apache     the module is loaded into the system's uninstrumented httpd
#   model      the spin model checker: no txkit code in it
#   timing     tests that measure speed (instrumented code is 2-5x slower)
# Environment: JOBS (default nproc), CTEST_FLAGS (extra ctest arguments),
# CMAKE_FLAGS (extra configure options, at the first configure).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-san}
jobs=${JOBS:-$(nproc)}
exclude='valgrind|apache|model|timing'

if [ ! -f "$build/CMakeCache.txt" ]; then
    # shellcheck disable=SC2086 # CMAKE_FLAGS: extra options (CI: -DTXKIT_WERROR=ON)
    cmake -S . -B "$build" -DTXKIT_SANITIZE=ON -DTXKIT_BUILD_BENCH=OFF ${CMAKE_FLAGS:-} >/dev/null
fi
cmake --build "$build" -j "$jobs"

# verify_asan_link_order=0: LD_PRELOAD (libtxkit-preload.so, `txkit run`,
# GCC's libitm in cache.torture.tx.libitm) puts a library before libasan;
# every program run here is itself linked with -fsanitize, so ASan is loaded
# and initialised first all the same.
export ASAN_OPTIONS="detect_leaks=1:verify_asan_link_order=0:strict_string_checks=1:check_initialization_order=1:detect_invalid_pointer_pairs=0:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}"

cd "$build"
skipped=$(ctest -N -L "$exclude" | sed -n 's/^ *Test *#[0-9]*: //p')
echo "sanitizer lane: not run here (labels $exclude): $(printf '%s\n' "$skipped" | grep -c . || true) tests:"
printf '%s\n' "$skipped" | paste -sd' ' | fold -s -w 100 | sed 's/^/  /'
# shellcheck disable=SC2086
ctest --output-on-failure -j "$jobs" -LE "$exclude" ${CTEST_FLAGS:-}
