#!/bin/sh
# SPDX-License-Identifier: MIT
# malloc_preload.sh PRELOAD PROG LIB... - unmodified programs that run with
# another malloc preloaded too (jemalloc, tcmalloc), before and after
# libtxkit-preload.so in LD_PRELOAD. A replacement malloc locks its own mutex
# at its first allocation, which libstdc++'s constructor makes before
# libtxkit's constructors run: with jemalloc after the preload the process hung
# before main (cx/self.h). PROG is test_preload torture (4 threads, counted
# sections, nested locks), then a few Debian tools. Skips (77) when none of
# the LIBs is installed (scripts/deps.sh test installs them).
set -u
preload=$1 prog=$2
shift 2
out=${TMPDIR:-/tmp}/txkit-mallocs-$$
trap 'rm -f "$out" "$out".*' EXIT
found=0 fail=0
run() { # label env-preload cmd...
    label=$1 pl=$2
    shift 2
    timeout 20 env TXKIT_STATS=1 LD_PRELOAD="$pl" "$@" >"$out" 2>"$out.err"
    rc=$?
    if [ $rc != 0 ]; then
        echo "FAIL: $label: exit status $rc$( [ $rc = 124 ] && echo ' (hung: killed after 20 s)')"
        cat "$out" "$out.err" | sed 's/^/  | /' | head -20
        fail=1
        return 1
    fi
    return 0
}
for lib in "$@"; do
    [ -e "$lib" ] || { echo "skip: $lib not installed"; continue; }
    found=1
    for order in after before; do
        if [ $order = after ]; then pl="$preload $lib"; else pl="$lib $preload"; fi
        run "$(basename "$lib") $order the preload: test_preload torture" "$pl" "$prog" torture || continue
        awk '/^torture:/ { seen = 1; if ($(NF - 2) + 0 != $NF + 0) bad = 1 } END { exit !(seen && !bad) }' \
            FS='[ ,]+' "$out" "$out.err" ||
            { echo "FAIL: $(basename "$lib") $order: torture's count"; sed 's/^/  | /' "$out" | head; fail=1; }
        grep -q 'first locked at .*(test_preload)' "$out.err" ||
            { echo "FAIL: $(basename "$lib") $order: the program's mutexes were not counted"; fail=1; }
        # a threaded Debian tool: sort with two threads over 200000 lines
        seq 200000 | sort -R --random-source=/dev/zero >"$out.in" 2>/dev/null || seq 200000 >"$out.in"
        run "$(basename "$lib") $order: sort --parallel=2" "$pl" sort -n --parallel=2 -S 1M "$out.in" &&
            { seq 200000 | cmp -s - "$out" || { echo "FAIL: $(basename "$lib") $order: sort's output differs"; fail=1; }; }
    done
done
# Linked, not preloaded: a C++ program whose second thread's first output
# makes jemalloc set the thread up, taking its mutex inside malloc (a hook that
# allocated there crashed in calloc: cx/self.h, tk_alloc_lo).
cxx=$(command -v c++ || command -v g++ || true)
for lib in "$@"; do
    [ -e "$lib" ] && [ -n "$cxx" ] || continue
    printf '%s\n' '#include <iostream>' '#include <thread>' \
        'int main() { std::thread t([] { std::cout << "hello from a thread" << std::endl; });' \
        '  t.join(); std::cout << "joined" << std::endl; }' >"$out.cpp"
    "$cxx" -O2 -pthread -o "$out.bin" "$out.cpp" "$lib" ||
        { echo "FAIL: cannot build the C++ program with $lib"; fail=1; continue; }
    run "C++ threads linked with $(basename "$lib")" "$preload" "$out.bin" &&
        { grep -q 'hello from a thread' "$out" && grep -q joined "$out" ||
            { echo "FAIL: C++ with $(basename "$lib"): output"; sed 's/^/  | /' "$out"; fail=1; }; }
done
[ $found = 0 ] && { echo "SKIP: none of $* installed (apt-get install libjemalloc2 libtcmalloc-minimal4)"; exit 77; }
[ $fail = 0 ] && echo "ok: test_preload torture and sort --parallel=2 with each malloc, before and after the preload; C++ threads linked with each"
exit $fail
