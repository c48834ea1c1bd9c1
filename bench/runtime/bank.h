/* bank.h - the bank's state and its two operations, shared by bank.c and
 * bank_itm.c.
 *
 * BANK_DEFINE(SUF, LD, ST) writes transfer_SUF() and total_SUF() once, for a
 * given pair of access macros: bank.c instantiates it with plain accesses
 * (seq, mutex, rwlock) and with TX_LOAD / TX_STORE (txkit), bank_itm.c with
 * plain accesses again, compiled with -fgnu-tm inside gcc transactions.
 */
#ifndef TXKIT_BENCH_BANK_H
#define TXKIT_BENCH_BANK_H

#include "bench_util.h"

struct bank {
    long *acc;      /* account i is acc[i * stride] */
    long n;
    long stride;
    long initial;
    long expect;    /* n * initial */
    uint64_t sum_bp;    /* read-only sums per 10000 operations */
    uint64_t max_amount;
    uint64_t sys_bp;    /* --syscall: transfers per 10000 that make a system call */
};

#define BANK_DEFINE(SUF, LD, ST)                                                 \
    static inline void transfer_##SUF(long *from, long *to, long amount)          \
    {                                                                            \
        long a = LD(from);                                                       \
        long b = LD(to);                                                         \
        ST(from, a - amount);                                                    \
        ST(to, b + amount);                                                      \
    }                                                                            \
    static inline long total_##SUF(const struct bank *bk)                        \
    {                                                                            \
        long s = 0;                                                              \
        const long *acc = bk->acc;                                               \
        long n = bk->n, stride = bk->stride;                                     \
        for (long i = 0; i < n; i++)                                             \
            s += LD(&acc[i * stride]);                                           \
        return s;                                                                \
    }

#define PLAIN_LD(p) (*(p))
#define PLAIN_ST(p, v) ((void)(*(p) = (v)))

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
