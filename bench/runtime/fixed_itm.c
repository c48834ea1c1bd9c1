/* SPDX-License-Identifier: MIT */
/* fixed_itm.c - txkit-bench-fixed's operations as gcc transactions.
 *
 * Compiled with -fgnu-tm (as bank_itm.c and intset_itm.c): each operation is
 * one __transaction_atomic around the same plain code as fixed.c's seq and
 * mutex versions. GCC's libitm runs the method named by ITM_DEFAULT_METHOD,
 * set in each measurement's child before its first transaction; under txkit's
 * libitm drop-in, txkit runs them with its current method.
 */
#include "fixed.h"

#ifdef BENCH_NO_ITM
#include <stdlib.h>

long fixed_empty_itmop(struct fixed_cell *c) {
    (void)c;
    abort();
}
long fixed_r4_itmop(struct fixed_cell *c) {
    (void)c;
    abort();
}
long fixed_r2w2_itmop(struct fixed_cell *c) {
    (void)c;
    abort();
}
#else
__attribute__((noinline)) long fixed_empty_itmop(struct fixed_cell *c) {
    (void)c;
    __transaction_atomic {}
    return 0;
}

__attribute__((noinline)) long fixed_r4_itmop(struct fixed_cell *c) {
    long s;
    __transaction_atomic { s = c->w[0] + c->w[1] + c->w[2] + c->w[3]; }
    return s;
}

__attribute__((noinline)) long fixed_r2w2_itmop(struct fixed_cell *c) {
    __transaction_atomic {
        c->w[0]++;
        c->w[1]++;
    }
    return 0;
}
#endif
