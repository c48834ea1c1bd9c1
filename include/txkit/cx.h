/* SPDX-License-Identifier: MIT */
/* txkit/cx.h - cooperative transactional locks (after TxLinux's cxspinlocks).
 *
 * A cx lock protects data exactly like a mutex, but a critical section entered
 * with cx_optimistic() first runs as a hardware transaction that only reads
 * the lock word: many such sections run at once, and the lock is taken for
 * real (exclusive mode) only when one must: a system call or I/O (the
 * hardware aborts it, or the section calls cx_need_exclusive() first), a
 * section too large for the hardware, repeated conflicts, or no RTM at all.
 * Optimistic and exclusive holders protect the same data correctly together:
 * taking the lock exclusively aborts every optimistic holder.
 *
 *     static cx_lock_t lock = CX_LOCK_INITIALIZER;
 *     cx_optimistic(&lock);
 *     table_update(t, key);
 *     cx_unlock(&lock);
 *
 * Lock states (TxLinux table 2): free; transactional (optimistic holders
 * inside, the lock word untouched); exclusive (one holder, everyone else
 * waits - optimistic threads wait outside any transaction and re-enter).
 * Optimistic entries never write the lock, so they cannot starve an
 * exclusive waiter; exclusive waiters are not queued in order (a FIFO
 * handoff to a preempted thread stalls everyone when threads outnumber CPUs).
 * Nested sections flatten into the outermost one. Inside a TX_ATOMIC block,
 * cx_optimistic() makes the transaction depend on the lock instead (its
 * software or hardware attempt aborts if the lock is taken exclusively).
 * There the lock belongs to the transaction, not to the section: where the
 * transaction takes it for real (serial or irrevocable), it keeps it after
 * cx_unlock() until it commits or has rolled back.
 *
 * Statistics per lock (site kind "lock"): entries, optimistic commits,
 * exclusive sections, aborts by cause, restarts for I/O, most threads inside
 * at once - in `txkit stat --sites`.
 */
#ifndef TXKIT_CX_H
#define TXKIT_CX_H

#include <stdint.h>
#include <txkit/config.h>

TXKIT_BEGIN_DECLS

/**
 * struct cx_policy - when a lock stops trying optimistically, and for how long.
 * @htm_tries:     hardware attempts that end in a conflict before the section
 *                 goes exclusive (an abort that cannot succeed in hardware -
 *                 system call, capacity - goes exclusive at once).
 * @window:        entries per adaptation window.
 * @exclusive_pct: if more than this share of a window's entries ended up
 *                 exclusive, the lock stops trying optimistically ...
 * @quiet_entries: ... for this many entries, then probes again.
 */
typedef struct cx_policy {
    unsigned int htm_tries;
    unsigned int window;
    unsigned int exclusive_pct;
    unsigned int quiet_entries;
} cx_policy_t;

#define CX_POLICY_DEFAULT_INIT \
    { 3, 64, 50, 512 }

/** cx_policy_default - the policy of CX_LOCK_INITIALIZER and cx_init(l, NULL). */
extern TXKIT_API const cx_policy_t cx_policy_default;

/**
 * struct cx_lock - a cooperative transactional lock. Initialize with
 * CX_LOCK_INITIALIZER or cx_init(); the fields are private.
 *
 * The lock word has a cache line of its own: every optimistic holder reads
 * it, so a store to its line (the adaptive counters, updated at each section
 * end) would abort them all. Aligned to 64 bytes (static and automatic
 * locks; give a malloc'ed one aligned_alloc(64, ...)).
 */
typedef struct cx_lock {
    union {
        volatile uint64_t word; /* 0 free, 1 held exclusively */
        char line_[64];
    } state;
    uint32_t flags; /* runtime-private */
    uint32_t site;  /* statistics site index + 1, 0 until first entry */
    uint32_t win_entries, win_exclusive, skip;
    uint32_t owner; /* runtime-private: the one thread that entered it lately, or all */
    cx_policy_t policy;
} __attribute__((aligned(64))) cx_lock_t;
_TXKIT_STATIC_ASSERT(sizeof(cx_lock_t) == 128, "cx_lock_t: the word's line, then the rest");
_TXKIT_STATIC_ASSERT(__builtin_offsetof(cx_lock_t, flags) == 64,
                     "cx_lock_t: nothing else on the lock word's cache line");

#define CX_LOCK_INITIALIZER \
    { {0}, 0, 0, 0, 0, 0, 0, CX_POLICY_DEFAULT_INIT }

/**
 * cx_init() - initialize a lock.
 * @l:      the lock.
 * @policy: its adaptive policy, or NULL for cx_policy_default.
 * Return: 0, or -EINVAL for a NULL lock or a policy with window 0 or
 * exclusive_pct above 100.
 */
TXKIT_API int cx_init(cx_lock_t *l, const cx_policy_t *policy);

/** cx_destroy() - release a lock's resources (none today). Return: 0, -EBUSY if held. */
TXKIT_API int cx_destroy(cx_lock_t *l);

/**
 * cx_optimistic() - enter a critical section, speculatively where possible.
 * Ends with cx_unlock(). Any thread may call it; sections nest.
 */
TXKIT_API void cx_optimistic(cx_lock_t *l);

/** cx_exclusive() - enter a critical section holding the lock for real. */
TXKIT_API void cx_exclusive(cx_lock_t *l);

/**
 * cx_shared() - enter a critical section that only reads what the lock
 * protects. With RTM it is cx_optimistic(). Without, the lock is held shared:
 * shared sections run side by side, each writing only a line of its own
 * thread, and exclusive ones wait for them (and they for exclusive ones).
 * Inside it, a cx_shared() section of the same lock nests; cx_optimistic(),
 * cx_exclusive() or cx_trylock() of the same lock cannot (the first two end
 * the program with a message, with RTM too; cx_trylock() returns -EBUSY); sections of other
 * locks take them exclusively. A lock that a software transaction has
 * depended on (cx_optimistic() inside TX_ATOMIC) is not held shared any more:
 * its cx_shared() sections are exclusive from then on. Ends with cx_unlock().
 */
TXKIT_API void cx_shared(cx_lock_t *l);

/**
 * cx_trylock() - take the lock exclusively if it is free now (inside a
 * TX_ATOMIC block: make the transaction depend on it, as cx_optimistic).
 * Return: 0 when taken (end with cx_unlock()), -EBUSY otherwise.
 */
TXKIT_API int cx_trylock(cx_lock_t *l);

/** cx_unlock() - end a section begun by cx_optimistic, cx_exclusive, cx_shared or cx_trylock. */
TXKIT_API void cx_unlock(cx_lock_t *l);

/**
 * cx_need_exclusive() - call before I/O inside a section: an optimistic
 * section restarts, from its cx_optimistic(), in exclusive mode; inside a
 * TX_ATOMIC block the transaction becomes irrevocable and takes the lock.
 * Outside a section it does nothing. Inside TX_ATOMIC, enter the lock first
 * and then call this (or tx_irrevocable()): a transaction made irrevocable
 * before it enters a lock waits for that lock holding what a holder's own
 * transactions wait for, and if the holder runs one inside its section the
 * two wait for each other.
 */
TXKIT_API void cx_need_exclusive(void);

/* How a section runs (cx_mode()). */
enum cx_mode {
    CX_MODE_NONE = 0,       /* outside any section */
    CX_MODE_OPTIMISTIC = 1, /* optimistic (hardware) */
    CX_MODE_EXCLUSIVE = 2,  /* holds its lock */
    CX_MODE_SUBSCRIBED = 3, /* subscribed by a transaction */
    CX_MODE_SHARED = 4,     /* holds its lock shared (cx_shared without RTM) */
};

/**
 * cx_mode() - how the calling thread's current section runs.
 * Return: an enum cx_mode: CX_MODE_NONE (0) outside any section,
 * CX_MODE_OPTIMISTIC (1), CX_MODE_EXCLUSIVE (2), CX_MODE_SUBSCRIBED (3) or
 * CX_MODE_SHARED (4).
 */
TXKIT_API int cx_mode(void);

TXKIT_END_DECLS

#endif /* TXKIT_CX_H */
