/* SPDX-License-Identifier: MIT */
/* abi_common.h - what the libitm-ABI test programs share (C and C++, built
 * with -fgnu-tm).
 *
 * Each program is a standalone gcc -fgnu-tm program that runs unchanged on
 * the system libitm and on txkit (drop-in libitm.so.1 or linked directly). It
 * prints one "SUMMARY <prog>: ..." line made only of results that every
 * correct runtime must reproduce exactly (abi_compare.cmake compares them),
 * plus "INFO" lines that may differ (runtime, method, abort counts).
 *
 * Environment read here (set by tests/abi/CMakeLists.txt):
 *   ABI_EXPECT_RUNTIME=libitm|txkit-dropin|txkit-linked
 *                         fail unless the program really runs on that runtime
 *   ABI_EXPECT_INJECTED=1 fail unless txkit counted injected aborts (TXKIT_FAULT)
 *   ABI_XFAIL=a,b         named checks that are known to fail on this runtime:
 *                         each must fail (a pass is reported as XPASS, an error)
 *   ABI_MAYFAIL=a,b       named checks whose outcome is printed but ignored
 *                         (used only when comparing against a known-bad runtime)
 *   TXKIT_METHOD=htm      skip (exit 77) when RTM is not usable here
 */
#ifndef TXKIT_TESTS_ABI_COMMON_H
#define TXKIT_TESTS_ABI_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ABI_SKIP_CODE 77

/* Callable from inside transactions, not instrumented, never undone. */
#define ABI_PURE __attribute__((transaction_pure))

/* ------------------------------------------------ the libitm ABI, by hand
 * No libitm.h is installed with gcc; these are the ABI's prototypes (the same
 * for libitm and txkit). transaction_pure lets transactions call them. */
typedef void (*abi_action_fn)(void *);
void _ITM_addUserCommitAction(abi_action_fn fn, uint64_t resuming_id, void *arg) ABI_PURE;
void _ITM_addUserUndoAction(abi_action_fn fn, void *arg) ABI_PURE;
uint64_t _ITM_getTransactionId(void) ABI_PURE;
int _ITM_inTransaction(void) ABI_PURE; /* enum _ITM_howExecuting */
const char *_ITM_libraryVersion(void) ABI_PURE;

#define ABI_NO_TRANSACTION_ID 1u /* _ITM_noTransactionId */
#define ABI_OUTSIDE 0            /* outsideTransaction */
#define ABI_RETRYABLE 1          /* inRetryableTransaction */
#define ABI_IRREVOCABLE 2        /* inIrrevocableTransaction */

/* ---------------------------------------------------------------- checks */

/* Fatal checks: CHECK, CHECK_EQ, CHECK_MSG of tests/common/check.h (usable
 * inside transactions: every runtime under test is opaque, so a transaction
 * never sees an inconsistent state, not even in an attempt that aborts). */

/* A named check that does not stop the program: its failure is reported
 * with file:line and makes abi_finish() return 1, unless ABI_XFAIL or
 * ABI_MAYFAIL names it. Call it outside transactions. */
void abi_expect_at(const char *file, int line, const char *name, int ok, const char *detail);
/* Whether check name is not counted in this run (ABI_MAYFAIL, or
 * ABI_LIBITM_HTM_MAYFAIL on libitm's HTM method): a SUMMARY leaves out what
 * it measured. */
int abi_may_fail(const char *name);
#define ABI_EXPECT(name, cond, detail) abi_expect_at(__FILE__, __LINE__, name, !!(cond), detail)

/* Runs fn() in a child process (fork) as the named check `name`: it passes
 * when the child exits with 0; a crash, an abort (a failed fatal check) or a
 * hang (30 s) fails it without ending the program. For cases where a
 * runtime is known to crash, so that the rest of the program still runs.
 * Returns whether it passed. Call it outside transactions. */
int abi_run_isolated_at(const char *file, int line, const char *name, void (*fn)(void));
#define ABI_RUN_ISOLATED(name, fn) abi_run_isolated_at(__FILE__, __LINE__, name, fn)

/* ------------------------------------------------------ program life */

/* Prints the INFO line; checks ABI_EXPECT_RUNTIME and the txkit method; exits
 * with 77 when TXKIT_METHOD=htm and RTM is not usable. */
void abi_init(const char *prog);

/* Appends "text" to the SUMMARY line (printf format). */
void abi_summary(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Checks ABI_EXPECT_INJECTED, prints the SUMMARY line, returns the exit code. */
int abi_finish(void);

/* 1 when the runtime is txkit (drop-in or linked), 0 for libitm. */
int abi_on_txkit(void);

/* 1 when called inside a hardware (RTM) transaction: the CPU has RTM and
 * XTEST says so. 0 elsewhere, and on CPUs without RTM. After abi_init. */
ABI_PURE int abi_in_hardware(void);

/* Counts an attempt of a transaction (call it first thing in the body: an
 * attempt that aborts and runs again counts again). */
ABI_PURE void abi_count_attempt(void);
uint64_t abi_attempts(void);

/* Which of gcc's code a block ran: call abi_code_mark() in it. Its
 * uninstrumented code calls the plain function, its instrumented code the
 * wrapper (transaction_wrap), which counts without instrumentation
 * (transaction_pure). The counts since the start (not transactional). */
void abi_code_mark(void);
void abi_code_mark_tm(void) __attribute__((transaction_pure, transaction_wrap(abi_code_mark)));
long abi_plain_marks(void);
long abi_wrapped_marks(void);

/* Bytes the heap has handed out and not taken back (mallinfo2: all arenas,
 * mmapped blocks included). For leak checks around a loop. */
size_t abi_heap_in_use(void);

/* The number of injected aborts txkit counted so far (0 on libitm). */
uint64_t abi_injected_aborts(void);

/* A 64-bit FNV-1a hash of n bytes, folded into h (start with ABI_HASH_INIT). */
#define ABI_HASH_INIT 0xcbf29ce484222325ull
uint64_t abi_hash(uint64_t h, const void *p, size_t n);

/* xorshift64*: a small deterministic generator (state must not be 0). */
static inline uint64_t abi_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

#ifdef __cplusplus
}
#endif

#endif /* TXKIT_TESTS_ABI_COMMON_H */
