/* SPDX-License-Identifier: MIT */
/* itm_probe.h - which libitm mode runs the gcc transactions, sampled.
 *
 * For the -fgnu-tm files only (intset_itm.c, bank_itm.c). A wrapper does
 *
 *     int probe = itm_probe_pick();
 *     __transaction_atomic {
 *         if (probe) itm_probe_attempt();
 *         ...
 *         if (probe) itm_probe_end();
 *     }
 *     if (probe) itm_probe_commit();
 *
 * so that one transaction in BENCH_ITM_SAMPLE per thread counts its attempts
 * and, after its commit, the mode libitm ran its last attempt in at the end
 * of the body (_ITM_inTransaction(), part of the libitm ABI): serialirr_onwrite
 * for instance starts instrumented and turns irrevocable at the first write.
 * The counters (bench_util.h) let the report show what libitm really ran, e.g.
 * serialirr for itm:default at 1 thread. Outside the sampled transactions the
 * cost is one thread-local increment and a test.
 */
#ifndef TXKIT_BENCH_ITM_PROBE_H
#define TXKIT_BENCH_ITM_PROBE_H

#include "bench_util.h"

/* libitm ABI (libitm.h is not installed): _ITM_howExecuting is 0 outside a
 * transaction, 1 in a retryable one, 2 in an irrevocable one. Pure: it only
 * reads libitm's per-thread state, and is called uninstrumented. */
extern int _ITM_inTransaction(void) __attribute__((transaction_pure));

static __thread unsigned itm_probe_tick;
static __thread int itm_probe_last;

/* Outside the transaction: is this one sampled? */
static inline int itm_probe_pick(void) { return (++itm_probe_tick & (BENCH_ITM_SAMPLE - 1)) == 0; }

/* First thing in the transaction, at every attempt. Pure: the counter is
 * written without instrumentation, so an abort keeps the count. */
__attribute__((transaction_pure)) static inline void itm_probe_attempt(void) {
    atomic_fetch_add_explicit(&bench_itm_attempts, 1, memory_order_relaxed);
}

/* Last thing in the transaction: the mode this attempt runs in now (kept in
 * a thread-local, uninstrumented: the committing attempt writes it last). */
__attribute__((transaction_pure)) static inline void itm_probe_end(void) {
    int how = _ITM_inTransaction();
    itm_probe_last = how >= 0 && how < 3 ? how : 0;
}

/* After the commit. */
static inline void itm_probe_commit(void) {
    atomic_fetch_add_explicit(&bench_itm_commits[itm_probe_last], 1, memory_order_relaxed);
}

#endif /* TXKIT_BENCH_ITM_PROBE_H */
