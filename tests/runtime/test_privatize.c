/* SPDX-License-Identifier: MIT */
/* test_privatize.c - privatization safety through the C API (stm):
 *  - wait: a writer's commit does not return while another thread's attempt
 *    that began before it still runs (that attempt read the word the writer
 *    then wrote, and waits inside itself, for 0.3 s, to see the writer's
 *    commit return: it must not; once the attempt ends, the commit returns);
 *  - off (with TXKIT_PRIVATIZATION=off; without it the case says so and
 *    checks nothing): the writer's commit returns at once, while the older
 *    attempt still runs;
 *  - nopriv: the same for a writer whose transaction called
 *    tx_no_privatization(); and a call in the writer thread's previous
 *    transaction does not carry over (that case's writer waits).
 * tests/abi/abi_privatize.c is the program that crashed without the wait.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static long x, y;
static atomic_int phase; /* 0, 1 the reader is in its attempt, 2 the writer's commit returned */

/* arg: WRITER_WAITS, WRITER_NOPRIV (its transaction calls tx_no_privatization)
 * or WRITER_NOPRIV_BEFORE (a transaction before it called it). */
enum { WRITER_WAITS, WRITER_NOPRIV, WRITER_NOPRIV_BEFORE };

static void *writer(void *arg) {
    int how = (int)(intptr_t)arg;
    if (how == WRITER_NOPRIV_BEFORE) {
        TX_ATOMIC {
            tx_no_privatization();
            TX_STORE(&y, TX_LOAD(&y) + 1);
        }
    }
    while (atomic_load(&phase) != 1)
        ;
    TX_ATOMIC {
        if (how == WRITER_NOPRIV)
            tx_no_privatization();
        TX_STORE(&x, TX_LOAD(&x) + 1);
    }
    atomic_store(&phase, 2);
    return NULL;
}

/* One attempt that reads x, lets the writer commit and watches for 0.3 s
 * whether the writer's commit returns meanwhile. Returns whether it did. */
static __attribute__((noinline)) int returned_while_inside(void) {
    volatile int tries = 0, seen = -1;
    TX_ATOMIC {
        (void)TX_LOAD(&x);
        if (++tries == 1) {
            atomic_store(&phase, 1);
            double end = tk_now() + 0.3;
            while (atomic_load(&phase) != 2 && tk_now() < end)
                ;
            seen = atomic_load(&phase) == 2;
        }
    }
    return seen;
}

static int run(int how) {
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    x = 0;
    atomic_store(&phase, 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, writer, (void *)(intptr_t)how) == 0);
    int seen = returned_while_inside();
    CHECK(pthread_join(th, NULL) == 0);
    CHECK_EQ(atomic_load(&phase), 2);
    CHECK_EQ(x, 1);
    return seen;
}

/* Whether TXKIT_PRIVATIZATION=off is set; says so when a case then checks nothing. */
static int privatization_off(int says) {
    const char *v = getenv("TXKIT_PRIVATIZATION");
    int off = v && strcmp(v, "off") == 0;
    if (off && says)
        printf("  (TXKIT_PRIVATIZATION=off: nothing checked)\n");
    return off;
}

static void test_wait(void) {
    if (!privatization_off(1))
        CHECK_EQ(run(WRITER_WAITS), 0);
}

static void test_off(void) {
    if (!privatization_off(0)) {
        printf("  (TXKIT_PRIVATIZATION=off not set: nothing checked)\n");
        return;
    }
    CHECK_EQ(run(WRITER_WAITS), 1);
}

static void test_nopriv(void) {
    if (privatization_off(1))
        return;
    CHECK_EQ(run(WRITER_NOPRIV), 1);
    CHECK_EQ(run(WRITER_NOPRIV_BEFORE), 0);
    TX_ATOMIC { /* outside the writer: nothing to wait for, and the flag ends with it */
        tx_no_privatization();
    }
    tx_no_privatization(); /* outside a transaction: nothing */
    CHECK_EQ(y, 1);
}

int main(int argc, char **argv) {
    static const struct tk_test tests[] = {
        {"wait", test_wait}, {"off", test_off}, {"nopriv", test_nopriv}};
    return tk_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
