/* SPDX-License-Identifier: MIT */
/* bank_itm.c - the bank's operations as gcc transactions (libitm).
 *
 * Compiled with -fgnu-tm (only this file and intset_itm.c): the plain
 * instantiation of BANK_DEFINE, the same code as seq / mutex / rwlock, with
 * each operation one __transaction_atomic (--syscall: each transfer one
 * __transaction_relaxed). GCC's libitm runs the method named by
 * ITM_DEFAULT_METHOD, set by the runner in each measurement's child process
 * before its first transaction (bench_itm_prepare() in bench_util.c); under
 * txkit's libitm drop-in, txkit runs them with its current method.
 */
#include "bank.h"

#ifdef BENCH_NO_ITM
#include <stdlib.h>

/* Built without gcc's -fgnu-tm / libitm: the itm rows are n/a (see
 * bench_select_method()), so these are never called. */
void transfer_itmop(long *from, long *to, long amount) {
    (void)from;
    (void)to;
    (void)amount;
    abort();
}

long total_itmop(const struct bank *bk) {
    (void)bk;
    abort();
}

void transfer_sys_itmop(long *from, long *to, long amount, int sys) {
    (void)from;
    (void)to;
    (void)amount;
    (void)sys;
    abort();
}
#else
#include <unistd.h>

#include "itm_probe.h"

BANK_DEFINE(plain, PLAIN_LD, PLAIN_ST)

__attribute__((noinline)) void transfer_itmop(long *from, long *to, long amount) {
    int probe = itm_probe_pick();
    __transaction_atomic {
        if (probe)
            itm_probe_attempt();
        transfer_plain(from, to, amount);
        if (probe)
            itm_probe_end();
    }
    if (probe)
        itm_probe_commit();
}

__attribute__((noinline)) long total_itmop(const struct bank *bk) {
    long s;
    int probe = itm_probe_pick();
    __transaction_atomic {
        if (probe)
            itm_probe_attempt();
        s = total_plain(bk->acc, bk->n, bk->stride);
        if (probe)
            itm_probe_end();
    }
    if (probe)
        itm_probe_commit();
    return s;
}

/* The system call is the one thing here a runtime cannot undo: libitm runs
 * the rest of such a transaction serial and irrevocable, with every other
 * transaction stopped (its serial lock, taken for writing); the 99 transfers
 * in 100 without it run as usual. */
__attribute__((noinline)) void transfer_sys_itmop(long *from, long *to, long amount, int sys) {
    int probe = itm_probe_pick();
    __transaction_relaxed {
        if (probe)
            itm_probe_attempt();
        transfer_plain(from, to, amount);
        if (sys)
            (void)getppid();
        if (probe)
            itm_probe_end();
    }
    if (probe)
        itm_probe_commit();
}
#endif /* BENCH_NO_ITM */
