#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/soak.sh SECONDS [ctest arguments...]   (make soak SECONDS=...)
#
# Runs every stress test (CTest label "stress": tests/runtime/test_stress,
# cm, cx torture, cache torture, abi bank, ...) for SECONDS seconds each
# instead of CI's one or two, with a fresh random seed per run. Each test
# prints its seed ("seed N (replay with TXKIT_STRESS_SEED=N)"); to replay a
# failure, run the same test with that variable set:
#   TXKIT_STRESS_SEED=N scripts/soak.sh SECONDS -R '^stress.bank.t4.stm$'
# The build is build-soak (configured with -DTXKIT_SOAK_SECONDS=SECONDS,
# which sets TXKIT_STRESS_SECONDS in the tests' environment and timeouts of
# 2 x SECONDS + 120 s). SOAK_SANITIZE=1 soaks the ASan+UBSan build instead
# (build-soak-san). Extra arguments go to ctest, e.g. -R to pick tests.
# Environment: JOBS (default nproc), SOAK_BUILD (build directory).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
    echo "usage: $0 SECONDS [ctest arguments...]" >&2
    exit 2
fi
secs=$1
shift
jobs=${JOBS:-$(nproc)}
# shellcheck disable=SC2206 # CMAKE_FLAGS: extra configure options, split on blanks
flags=(-DTXKIT_SOAK_SECONDS="$secs" -DTXKIT_BUILD_BENCH=OFF ${CMAKE_FLAGS:-})
build=${SOAK_BUILD:-build-soak}
if [ "${SOAK_SANITIZE:-0}" = 1 ]; then
    build=${SOAK_BUILD:-build-soak-san}
    flags+=(-DTXKIT_SANITIZE=ON)
    export ASAN_OPTIONS="detect_leaks=1:verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
fi
cmake -S . -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j "$jobs"
cd "$build"
n=$(ctest -N -L stress "$@" | sed -n 's/^Total Tests: //p')
echo "soak: $n stress tests x $secs s on $jobs jobs: about $(((n * secs + jobs - 1) / jobs / 60 + 1)) minutes" \
     "(tests that skip, such as htm without RTM, take none)"
ctest --output-on-failure -j "$jobs" -L stress "$@"
