/* SPDX-License-Identifier: MIT */
/* txkit/stats.h - runtime statistics and machine facts.
 *
 * Every thread counts its own transactions in private counters (no atomics on
 * the hot path); tx_stats_get() adds them up, including threads that exited.
 */
#ifndef TXKIT_STATS_H
#define TXKIT_STATS_H

#include <stdint.h>
#include <stdio.h>
#include <txkit/config.h>
#include <txkit/tx.h>

TXKIT_BEGIN_DECLS

/**
 * enum txkit_cause - why an attempt aborted.
 * @TXKIT_CAUSE_CONFLICT:    another thread wrote what this attempt read or wrote
 *                           (RTM conflict, or a failed software validation).
 * @TXKIT_CAUSE_CAPACITY:    the hardware read or write set overflowed.
 * @TXKIT_CAUSE_EXPLICIT:    tx_restart(), or an _xabort with a code txkit does not own.
 * @TXKIT_CAUSE_NESTED:      hardware nesting too deep.
 * @TXKIT_CAUSE_UNSUPPORTED: RTM status 0 without the retry bit: a system call,
 *                           page fault or instruction that never commits in
 *                           hardware. The attempt goes to software at once.
 * @TXKIT_CAUSE_LOCKED:      a serial or irrevocable transaction was running.
 * @TXKIT_CAUSE_IRREVOCABLE: the attempt asked to become irrevocable and had to
 *                           restart to do so.
 * @TXKIT_CAUSE_INJECTED:    fault injection (TXKIT_FAULT, txkit_set_fault()).
 * @TXKIT_CAUSE_OTHER:       any other hardware status (debug, unknown bits).
 */
typedef enum txkit_cause {
    TXKIT_CAUSE_CONFLICT = 0,
    TXKIT_CAUSE_CAPACITY,
    TXKIT_CAUSE_EXPLICIT,
    TXKIT_CAUSE_NESTED,
    TXKIT_CAUSE_UNSUPPORTED,
    TXKIT_CAUSE_LOCKED,
    TXKIT_CAUSE_IRREVOCABLE,
    TXKIT_CAUSE_INJECTED,
    TXKIT_CAUSE_OTHER,
    TXKIT_NCAUSES
} txkit_cause_t;

/** txkit_cause_name() - "conflict", "capacity", ... or "?". */
TXKIT_API const char *txkit_cause_name(int cause);

/* Buckets of tx_stats.retries_hist: retries before the commit. */
#define TXKIT_RETRY_BUCKETS 8 /* 0, 1, 2, 3-4, 5-8, 9-16, 17-32, >32 */

/**
 * struct tx_stats - totals over all threads of the process, including exited ones.
 * @threads:         threads that ran at least one transaction.
 * @transactions:    outermost transactions begun.
 * @commits:         commits, by the method of the committing attempt.
 * @aborts:          aborted attempts, by the method of the attempt.
 * @aborts_by_cause: aborted attempts, by cause.
 * @htm_to_stm:      transactions that fell back from hardware to software.
 * @to_serial:       transactions that fell back to the serial method.
 * @irrevocable:     transactions that became irrevocable (tx_irrevocable()).
 * @retries_hist:    committed transactions by number of aborted attempts before.
 * @ns_aborted:      wall time spent in attempts that aborted (every retry is
 *                   timed, first attempts one in 256: an unbiased estimate).
 * @explicit_code:   the last foreign _xabort code seen (TXKIT_CAUSE_EXPLICIT).
 * @cm_decided:      conflicts between software transactions decided: by the
 *                   contention manager (timestamp, size, prio), or, under
 *                   backoff, aborts on a failed validation (decided against
 *                   the reader; the other side is the last writer).
 * @cm_inversions:   of those, decided against the thread of higher conflict
 *                   priority (tx_get_priority()); ties are not inversions.
 * @sched_waits:     retries that transaction-aware scheduling deferred
 *                   (yield or sleep instead of an immediate retry).
 * @sched_queued:    transactions that waited for their site's ticket.
 * @cm_undecided:    under timestamp, size or prio: conflict aborts no manager
 *                   decided (a writer that did not see this reader: hardware
 *                   or serial transactions, threads beyond the visible slots,
 *                   cx locks taken exclusively); not in cm_decided.
 */
typedef struct tx_stats {
    uint64_t threads;
    uint64_t transactions;
    uint64_t commits[TXKIT_NMETHODS];
    uint64_t aborts[TXKIT_NMETHODS];
    uint64_t aborts_by_cause[TXKIT_NCAUSES];
    uint64_t htm_to_stm;
    uint64_t to_serial;
    uint64_t irrevocable;
    uint64_t retries_hist[TXKIT_RETRY_BUCKETS];
    uint64_t ns_aborted;
    uint64_t explicit_code;
    uint64_t cm_decided;
    uint64_t cm_inversions;
    uint64_t sched_waits;
    uint64_t sched_queued;
    uint64_t cm_undecided;
} tx_stats_t;

/**
 * tx_stats_get() - read the process totals (a consistent-enough snapshot: each
 * counter is read atomically, counters of running threads may move meanwhile).
 * Return: 0, or -EINVAL when out is NULL.
 */
TXKIT_API int tx_stats_get(tx_stats_t *out);

/** tx_stats_commits() - sum of out->commits over methods. */
TXKIT_API uint64_t tx_stats_commits(const tx_stats_t *s);

/** tx_stats_aborts() - sum of out->aborts over methods. */
TXKIT_API uint64_t tx_stats_aborts(const tx_stats_t *s);

/**
 * tx_stats_print() - print a human-readable summary of s to f.
 * This is what TXKIT_STATS=1 prints to stderr at exit.
 */
TXKIT_API void tx_stats_print(const tx_stats_t *s, FILE *f);

/**
 * struct txkit_rtm_info - what the machine offers, and why RTM is or is not used.
 * @cpuid_rtm:        CPUID.(EAX=7,ECX=0):EBX bit 11.
 * @cpuid_hle:        CPUID.(EAX=7,ECX=0):EBX bit 4.
 * @rtm_always_abort: CPUID.(EAX=7,ECX=0):EDX bit 11 (microcode disabled TSX).
 * @tsx_force_abort:  CPUID.(EAX=7,ECX=0):EDX bit 13.
 * @probe_commits:    empty transactions that committed out of @probe_tries.
 * @usable:           1 when txkit will use RTM.
 * @reason:           one line that says why (e.g. "CPUID: no RTM").
 */
struct txkit_rtm_info {
    int cpuid_rtm;
    int cpuid_hle;
    int rtm_always_abort;
    int tsx_force_abort;
    int probe_tries;
    int probe_commits;
    int usable;
    char vendor[13];
    char reason[96];
};

/* A function named as its struct is C's idiom; in C++, -Wshadow says the
 * function hides the struct's constructor, which nobody calls. */
#if defined(__cplusplus) && defined(__GNUC__)
#define _TXKIT_SHADOW_OFF \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wshadow\"")
#define _TXKIT_SHADOW_ON _Pragma("GCC diagnostic pop")
#else
#define _TXKIT_SHADOW_OFF
#define _TXKIT_SHADOW_ON
#endif

/** txkit_rtm_info() - fill *out (detection runs once per process). */
_TXKIT_SHADOW_OFF
TXKIT_API void txkit_rtm_info(struct txkit_rtm_info *out);
_TXKIT_SHADOW_ON

/**
 * DOC: application counters
 * A program can publish counters of its own next to txkit's (a cache's hits,
 * its object count, ...). They live in the process's statistics segment, so
 * `txkit stat` shows them live and adds them up across processes (all the
 * children of a forking server, say); `txkit stat --json` names them.
 * Up to TXKIT_MAX_COUNTERS per process; names up to 47 bytes, like
 * "cache.hits". The functions are async-signal-safe, never block, and accept
 * NULL (a counter that could not be created) as a no-op.
 * A child made by fork() starts with its own counters at zero.
 */
#define TXKIT_MAX_COUNTERS 64
typedef struct txkit_counter txkit_counter_t;
/** enum txkit_counter_kind - how `txkit stat` shows a counter. */
enum txkit_counter_kind {
    TXKIT_COUNTER_EVENTS = 0, /* a running total: shown as a rate per interval */
    TXKIT_COUNTER_LEVEL = 1,  /* a level (objects, bytes): shown as is */
};
/**
 * txkit_counter() - the counter called name, created at its first use.
 * Return: the counter (the same one for the same name), or NULL when the name
 * is empty or too long, the table is full, or statistics are off
 * (TXKIT_STATS=off); errno says which (EINVAL, ENOSPC, ENOTSUP).
 */
_TXKIT_SHADOW_OFF
TXKIT_API txkit_counter_t *txkit_counter(const char *name, int kind);
_TXKIT_SHADOW_ON
/** txkit_counter_add() - add delta (may be negative) atomically. */
TXKIT_API void txkit_counter_add(txkit_counter_t *c, int64_t delta);
/** txkit_counter_set() - store value (for levels). */
TXKIT_API void txkit_counter_set(txkit_counter_t *c, int64_t value);
/** txkit_counter_get() - the current value (0 for NULL). */
TXKIT_API int64_t txkit_counter_get(const txkit_counter_t *c);

/** txkit_version() - the library's version string, e.g. "0.1.0". */
TXKIT_API const char *txkit_version(void);

TXKIT_END_DECLS

#endif /* TXKIT_STATS_H */
