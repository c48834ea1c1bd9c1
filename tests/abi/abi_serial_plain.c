/* SPDX-License-Identifier: MIT */
/* abi_serial_plain.c - a big block that auto runs serially, beside a thread
 * whose small blocks run as software TM: the serial runs use gcc's
 * uninstrumented code.
 *
 * The first thread's block writes BIG words (more than TK_BIG_WRITES, 1024):
 * after its first software commit auto runs the site serially
 * (policy.c: tk_policy_big_writes). The second thread meanwhile runs small
 * blocks, on auto without RTM software TM, so that the process has software
 * readers. A serial attempt of the big block first lets the readers that are
 * running finish (new ones wait: serial.c, drain_readers), and then, holding
 * the clock with no software attempt running, runs gcc's code without
 * barriers (itm.c, uninstrumented_ok), as GCC's libitm runs its serial
 * (serialirr) transactions. Check "serial_uninstrumented": of the big blocks
 * after the first few, most call the plain abi_code_mark() (uninstrumented code)
 * rather than its transaction_wrap wrapper (instrumented code). Before, every
 * serial run took the instrumented code while any software attempt had ever
 * run (bayes at 2 threads: its long tasks 1.7x slower, labyrinth's routes
 * 1.5x).
 *
 * Oracle on every runtime: each big block adds 1 to every word of the
 * array, each small one 1 to a counter; both come out exact.
 *
 * usage: abi_serial_plain [big blocks]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_common.h"

#define BIG 2048
#define WARMUP 8 /* big blocks before the site is known big */

static long big[BIG];
static long small_count;
static int stop; /* not transactional: the main thread sets it */

__attribute__((noinline)) static void big_block(void) {
    __transaction_atomic {
        for (int i = 0; i < BIG; i++)
            big[i]++;
        abi_code_mark();
    }
}

__attribute__((noinline)) static void small_block(void) {
    __transaction_atomic { small_count++; }
}

static void *smalls(void *arg) {
    long *n = arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        small_block();
        (*n)++;
    }
    return NULL;
}

/* Where the serial runs must take the uninstrumented code: txkit's auto
 * method without RTM (so that the small blocks run as software TM) and
 * without fault injection. */
static int expect_uninstrumented(void) {
    const char *m = getenv("TXKIT_METHOD");
    const char *f = getenv("TXKIT_FAULT");
    const char *r = getenv("TXKIT_RTM");
    return abi_on_txkit() && (!m || !*m || strcmp(m, "auto") == 0) && (!f || !*f) && r &&
           strcmp(r, "off") == 0;
}

int main(int argc, char **argv) {
    abi_init("abi_serial_plain");
    long n = argc > 1 ? atol(argv[1]) : 400;
    CHECK(n > WARMUP);
    int expect = expect_uninstrumented();
    long nsmall = 0;
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, smalls, &nsmall), 0);
    while (__atomic_load_n(&small_count, __ATOMIC_RELAXED) < 100) /* the readers run */
        ;
    long plain_before = 0;
    for (long i = 0; i < n; i++) {
        if (i == WARMUP)
            plain_before = abi_plain_marks();
        big_block();
    }
    long plain = abi_plain_marks() - plain_before;
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    CHECK_EQ(pthread_join(th, NULL), 0);
    printf("INFO abi_serial_plain: %ld big blocks beside %ld small ones; of the last %ld, %ld "
           "uninstrumented\n",
           n, nsmall, n - WARMUP, plain);

    int exact = 1;
    for (int i = 0; i < BIG; i++)
        exact &= big[i] == n;
    ABI_EXPECT("big_exact", exact, "a big block lost or repeated");
    ABI_EXPECT("small_exact", small_count == nsmall, "a small block lost or repeated");
    ABI_EXPECT("marks", abi_plain_marks() + abi_wrapped_marks() >= n, "a block without its call");
    ABI_EXPECT("serial_uninstrumented", !expect || 2 * plain >= n - WARMUP,
               "the serial runs took the instrumented code");
    abi_summary("big_exact=%d small_exact=%d", exact, small_count == nsmall);
    return abi_finish();
}
