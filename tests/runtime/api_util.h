/* SPDX-License-Identifier: MIT */
/* api_util.h - what the unit tests of the C API share (test_txn.c,
 * test_txn_barriers.c, test_handlers.c, test_config.c, test_stats.c: each
 * tests the API of the src/runtime file it is named after).
 *
 * Single-threaded except where a test says otherwise. CTest runs each
 * program once per method (TXKIT_METHOD=auto|stm|serial|htm) as
 * api.<file>.<method>; the htm run skips with exit code 77 when RTM is not
 * usable.
 *
 *   test_<file> [--no-fork] [SUBSTRING]
 *
 * runs the tests whose name contains SUBSTRING (all by default), each in its
 * own child process unless --no-fork (see tk_run_tests in test_util.h).
 *
 * Variables that a transaction body modifies and that are read after a
 * possible restart are static or volatile: a software abort jumps back to the
 * start of the block (like longjmp), which leaves non-volatile locals of the
 * enclosing function indeterminate.
 */
#ifndef TXKIT_TESTS_API_UTIL_H
#define TXKIT_TESTS_API_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <txkit.h>

#include "test_util.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Bytes of heap in use (all arenas, mmapped chunks included). Used to prove
 * that tx_malloc'ed blocks of aborted attempts and tx_free'd blocks are
 * really released, without wrapping malloc. Under AddressSanitizer
 * (TXKIT_SANITIZE=ON) glibc's counters do not move: ask ASan's allocator. */
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void); /* ASan runtime */
__attribute__((unused)) static size_t heap_in_use(void) {
    return __sanitizer_get_current_allocated_bytes();
}
#else
__attribute__((unused)) static size_t heap_in_use(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
#endif

/* Whether heap_in_use() sees allocations at all (not under valgrind, whose
 * malloc replacement glibc does not count); if not, the heap-size checks are
 * skipped and valgrind's own leak check stands in for them. */
__attribute__((unused)) static int heap_accounting_works(void) {
    static int known = -1;
    if (known < 0) {
        size_t before = heap_in_use();
        void *volatile p = malloc(1 << 20);
        size_t during = heap_in_use();
        free(p);
        known = during >= before + (1 << 20);
        if (!known)
            printf("    heap accounting unavailable here: heap-size checks skipped\n");
    }
    return known;
}

/* HEAP_CHECK(cond, fmt, ...): a CHECK_MSG about heap sizes. */
#define HEAP_CHECK(cond, ...)             \
    do {                                  \
        if (heap_accounting_works())      \
            CHECK_MSG(cond, __VA_ARGS__); \
    } while (0)

/* Blocks larger than glibc's tcache limit, so a free() shows in heap_in_use(). */
#define BLK 8192
/* Allowed drift of heap_in_use() for runtime logs, stdio buffers etc. */
#define HEAP_SLACK (256 * 1024)

/* --------------------------------------------------------- fault injection */

/* Abort-handler runs counted by count_fault_abort. */
__attribute__((unused)) static volatile long g_fault_handler_runs;

__attribute__((unused)) static void count_fault_abort(void *arg) {
    (void)arg;
    CHECK_EQ(tx_in_transaction(), 0);
    g_fault_handler_runs = g_fault_handler_runs + 1;
}

/* txkit_set_fault(m, p) for every method that executes. */
__attribute__((unused)) static void set_all_faults(double p) {
    CHECK_EQ(txkit_set_fault(TXKIT_STM, p), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_SERIAL, p), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_HTM, p), 0);
}

/* ------------------------------------------------------------------ main */

/* The main of every API test program: skips the htm run without RTM, says
 * what runs, decides heap accounting once, runs the cases. */
__attribute__((unused)) static int api_main(const char *prog, const struct tk_test *tests, size_t n,
                                            int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    tk_skip_unless_method_usable(prog);
    printf("txkit %s, method %s, RTM usable: %d\n", txkit_version(),
           txkit_method_name(txkit_get_method()), txkit_htm_usable());
    heap_accounting_works(); /* decided once, before any test */
    return tk_run_tests(tests, n, argc, argv);
}

#endif /* TXKIT_TESTS_API_UTIL_H */
