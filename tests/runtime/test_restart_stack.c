/* SPDX-License-Identifier: MIT */
/* test_restart_stack.c - a restart drops stack frames: the stack they used
 * must be usable again by any code.
 *
 * tx_restart() deep inside a transaction jumps back to the checkpoint
 * (tk_longjmp), dropping the frames in between. Under AddressSanitizer
 * (TXKIT_SANITIZE) those frames' redzones stay poisoned in the shadow memory
 * unless the jump tells ASan (__asan_handle_no_return): code that later puts
 * an ordinary buffer there and hands it to libc (memset, snprintf: checked by
 * ASan's interceptors even from uninstrumented code, such as gcc -fgnu-tm
 * programs) is then reported as overflowing a stack buffer. Without ASan the
 * test checks the same restarts for their results.
 */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

#define ROUNDS 200
#define DEPTH 6

static long shared_counter;
static int attempts;

/* A frame with an addressable array: ASan puts redzones around it. */
__attribute__((noinline)) static long deep(int level, int restart) {
    volatile char pad[96];
    memset((char *)pad, level, sizeof pad);
    if (level == 0) {
        if (restart)
            tx_restart();
        return pad[3];
    }
    return deep(level - 1, restart) + pad[level];
}

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

/* Called through a pointer: gcc cannot inline it as stores of its own. */
static void *(*volatile fill)(void *, int, size_t) = memset;

/* Not instrumented: its buffer covers the stack the dropped frames used, and
 * only ASan's memset/snprintf interceptors look at it. */
__attribute__((noinline, no_sanitize_address)) static size_t reuse_stack(int v) {
    char buf[8192];
#if defined(__SANITIZE_ADDRESS__)
    void *bad = __asan_region_is_poisoned(buf, sizeof buf);
    if (bad) {
        fprintf(stderr,
                "restart_stack: %zu bytes into a free stack buffer are still poisoned "
                "after a restart\n",
                (size_t)((char *)bad - buf));
        abort();
    }
#endif
    fill(buf, v, sizeof buf);
    int n = snprintf(buf, sizeof buf, "round %d", v);
    return (size_t)n + (unsigned char)buf[sizeof buf - 1];
}

/* One transaction that restarts once from DEPTH + 1 frames down. */
__attribute__((noinline)) static void one_round(void) {
    attempts = 0;
    TX_ATOMIC {
        attempts++;
        long v = deep(DEPTH, attempts == 1);
        TX_STORE(&shared_counter, TX_LOAD(&shared_counter) + v);
    }
}

int main(void) {
    long expect = 0;
    for (int r = 0; r < ROUNDS; r++) {
        one_round();
        CHECK_EQ(attempts, 2);
        expect += 6 + 5 + 4 + 3 + 2 + 1; /* pad[level] for levels 6..1; 0 at level 0 */
        CHECK(reuse_stack(r & 0x7f) > 0);
    }
    CHECK_EQ(shared_counter, expect);
    printf("restart_stack: %d restarts from %d frames deep, stack reused after each\n", ROUNDS,
           DEPTH + 1);
    return 0;
}
