/* SPDX-License-Identifier: MIT */
/* bank_ds.h - the bank's two operations, written once for the benchmarks
 * (bench/runtime/bank.c, bank_itm.c) and the ABI test (tests/abi/abi_bank.c).
 *
 * BANK_DEFINE(SUF, LD, ST) writes, for a pair of access macros,
 *   transfer_SUF(from, to, amount)  move amount from *from to *to
 *   total_SUF(acc, n, stride)       the sum of acc[i * stride], i < n
 * as static inline functions: the caller's transaction (or lock) makes them
 * atomic. bank.c instantiates it with plain accesses (seq, mutex, rwlock) and
 * with TX_LOAD / TX_STORE (txkit); bank_itm.c and abi_bank.c with plain
 * accesses inside gcc transactions (-fgnu-tm).
 */
#ifndef TXKIT_WORKLOADS_BANK_DS_H
#define TXKIT_WORKLOADS_BANK_DS_H

#define BANK_DEFINE(SUF, LD, ST)                                           \
    static inline void transfer_##SUF(long *from, long *to, long amount) { \
        long a = LD(from);                                                 \
        long b = LD(to);                                                   \
        ST(from, a - amount);                                              \
        ST(to, b + amount);                                                \
    }                                                                      \
    static inline long total_##SUF(const long *acc, long n, long stride) { \
        long s = 0;                                                        \
        for (long i = 0; i < n; i++)                                       \
            s += LD(&acc[i * stride]);                                     \
        return s;                                                          \
    }

#define PLAIN_LD(p) (*(p))
#define PLAIN_ST(p, v) ((void)(*(p) = (v)))

#endif /* TXKIT_WORKLOADS_BANK_DS_H */
