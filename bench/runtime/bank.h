/* SPDX-License-Identifier: MIT */
/* bank.h - the bank's state and its two operations, shared by bank.c and
 * bank_itm.c.
 *
 * The operations are BANK_DEFINE (bench/workloads/bank_ds.h), written once
 * for the benchmarks and tests/abi/abi_bank.c.
 */
#ifndef TXKIT_BENCH_BANK_H
#define TXKIT_BENCH_BANK_H

#include "bank_ds.h" /* bench/workloads: BANK_DEFINE */
#include "bench_util.h"

struct bank {
    long *acc; /* account i is acc[i * stride] */
    long n;
    long stride;
    long initial;
    long expect;     /* n * initial */
    uint64_t sum_bp; /* read-only sums per 10000 operations */
    uint64_t max_amount;
    uint64_t sys_bp; /* --syscall: transfers per 10000 that make a system call */
};

/* bank_itm.c: each operation one __transaction_atomic around the plain
 * instantiation. */
void transfer_itmop(long *from, long *to, long amount);
long total_itmop(const struct bank *bk);
/* --syscall: the transfer as a __transaction_relaxed that, when sys is set,
 * makes a system call (getppid()) after its writes, inside the transaction:
 * not transaction-safe, so gcc has the transaction switch to serial
 * irrevocable mode (_ITM_changeTransactionMode) just before the call. */
void transfer_sys_itmop(long *from, long *to, long amount, int sys);

#endif /* TXKIT_BENCH_BANK_H */
