/* SPDX-License-Identifier: MIT */
/* txkit/cm.h - contention management and transaction-aware scheduling.
 *
 * A contention manager decides conflicts between software transactions:
 *   backoff    (default) the transaction that finds a conflict aborts itself
 *              and retries after a randomized exponential delay;
 *   timestamp  the older transaction (first attempt started earlier) wins;
 *   size       the larger read + write set wins, then the older ("SizeMatters");
 *   prio       the higher conflict priority wins, then the larger, then the
 *              older (a total order: no deadlock, no livelock).
 * With backoff, software transactions use NOrec (no per-location metadata,
 * cheapest). Any other manager switches them to a TM with visible readers and
 * writers, so that every conflict has a known other party the manager can
 * decide against: the loser aborts itself, or is aborted by the winner.
 *
 * Conflict priority: by default derived from the thread's scheduling policy
 * and nice value (SCHED_FIFO / SCHED_RR: 100 + rt priority; SCHED_OTHER and
 * SCHED_BATCH: 20 - nice, so 1..40; SCHED_IDLE: 0). Higher wins. It is read at
 * transaction start (at most once per millisecond per thread, the cost of
 * asking the kernel, timed by CLOCK_MONOTONIC_COARSE: a nice change shows
 * within a few ms) and never changes during a transaction.
 *
 * Hardware transactions (RTM) cannot be arbitrated by software: the CPU
 * aborts whichever transaction it chooses. See README.md, "Contention
 * management", for what prio guarantees when RTM is in use.
 */
#ifndef TXKIT_CM_H
#define TXKIT_CM_H

#include <limits.h>
#include <stdint.h>
#include <txkit/config.h>

TXKIT_BEGIN_DECLS

/**
 * txkit_set_cm() - choose the contention manager of the process (also the
 * environment variable TXKIT_CM): "backoff", "timestamp", "size" or "prio".
 * Switching while other threads run transactions is safe (NOrec stays
 * underneath): transactions begun before only go undecided.
 * Return: 0, -EINVAL for an unknown name, -EBUSY inside a transaction.
 */
TXKIT_API int txkit_set_cm(const char *name);

/** txkit_get_cm() - the name of the contention manager in use. */
TXKIT_API const char *txkit_get_cm(void);

#define TX_PRIO_AUTO INT_MIN

/**
 * tx_set_priority() - set the calling thread's conflict priority (higher wins
 * under prio), instead of the one derived from its scheduling; TX_PRIO_AUTO
 * goes back to that. Takes effect at the thread's next transaction.
 * Return: 0, or -EINVAL for a priority outside -1000..1000.
 */
TXKIT_API int tx_set_priority(int prio);

/** tx_get_priority() - the calling thread's conflict priority now. */
TXKIT_API int tx_get_priority(void);

/**
 * txkit_set_sched() - transaction-aware scheduling on (1) or off (0) for the
 * process (also TXKIT_SCHED=on|off). When on, a thread whose aborted
 * attempts are predicted to cost more than a context switch yields or
 * sleeps until the conflicting work moves on instead of retrying hot, and a
 * site whose transactions keep failing admits them one at a time (a ticket).
 * Return: the previous setting.
 */
TXKIT_API int txkit_set_sched(int on);

/* For tests: one party of a conflict, as the managers see it. */
struct _txkit_cm_party {
    int prio;       /* conflict priority */
    unsigned size;  /* read + write set, in locations */
    uint64_t start; /* start of the transaction's first attempt (smaller: older) */
    unsigned id;    /* a unique tie-breaker */
};
/**
 * _txkit_cm_decide() - the decision of manager cm ("backoff", ...) on a
 * conflict that self found with other. For tests.
 * Return: 1 if self wins (other must abort), 0 if self must abort, -EINVAL.
 */
TXKIT_API int _txkit_cm_decide(const char *cm, const struct _txkit_cm_party *self,
                               const struct _txkit_cm_party *other);

TXKIT_END_DECLS

#endif /* TXKIT_CM_H */
