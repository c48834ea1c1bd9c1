/* SPDX-License-Identifier: MIT */
/* section.h - what cx locks (cx.c) and elided mutexes (elide.c) share: an
 * optimistic section is a hardware transaction that read a lock word and
 * found it free. One set of abort codes, so that a section nested in the
 * other kind is understood by whichever began the transaction. */
#ifndef TK_CX_SECTION_H
#define TK_CX_SECTION_H

#include "arch/x86_64/rtm.h"
#include "runtime/internal.h"

#define TK_XCODE_SECTION_BUSY 0xe1      /* the lock was held for real */
#define TK_XCODE_SECTION_EXCLUSIVE 0xe2 /* the section must run holding the lock */

TK_RTM_FN static inline void tk_section_end(void) { tk_xend(); }

/* Only inside a hardware section; outside one XABORT does nothing, which is
 * a broken invariant, not something to run past. */
__attribute__((noreturn)) TK_RTM_FN static inline void tk_section_abort_exclusive(void) {
    TK_XABORT(TK_XCODE_SECTION_EXCLUSIVE);
    TK_FATAL("a section asked for its lock outside a hardware transaction");
}

__attribute__((noreturn)) TK_RTM_FN static inline void tk_section_abort_busy(void) {
    TK_XABORT(TK_XCODE_SECTION_BUSY);
    TK_FATAL("a section found its lock busy outside a hardware transaction");
}

/* The cause of an aborted section; *hopeless when retrying in hardware cannot
 * help (the section then takes the lock). */
TK_HIDDEN int tk_section_classify(unsigned status, int *hopeless);

/* Count an aborted hardware attempt of a section in c (NULL: not counted).
 * to_exclusive: the section now takes the lock; an abort that needed the lock
 * for I/O (system call, cx_need_exclusive) also counts as irrevocable. */
TK_HIDDEN void tk_section_count_abort(struct tks_counters *c, int cause, int to_exclusive);

/* Backoff after a conflict abort of a section's hardware attempt: a random
 * wait below *base << tries ns. The base follows the thread's recent
 * conflicts: every conflict doubles it (up to TK_SECTION_BACKOFF_MAX), every
 * section that commits in hardware at its first try takes a sixteenth off
 * (down to TK_SECTION_BACKOFF_MIN). A fixed 1600 ns base was too long where
 * conflicts are rare and, measured, also where they are the rule
 * (txkit-bench-cx cx counter, 2 threads, medians of 4 interleaved runs: 18.6 ->
 * 25.6 Mops/s; hash set 19.7 -> 20.9). *base is the thread's own (0 at first). */
#define TK_SECTION_BACKOFF_MIN 100u
#define TK_SECTION_BACKOFF_MAX 1600u
static inline void tk_section_backoff(unsigned *base, unsigned tries, uint64_t rnd) {
    unsigned b = *base ? *base : TK_SECTION_BACKOFF_MAX;
    *base = b < TK_SECTION_BACKOFF_MAX / 2 ? 2 * b : TK_SECTION_BACKOFF_MAX;
    tk_spin_ns(rnd % ((uint64_t)b << tries));
}
static inline void tk_section_backoff_ok(unsigned *base, unsigned tries) {
    if (tries == 0 && *base > TK_SECTION_BACKOFF_MIN) {
        unsigned b = *base - (*base >> 4);
        *base = b > TK_SECTION_BACKOFF_MIN ? b : TK_SECTION_BACKOFF_MIN;
    }
}

/* The adaptive policy of a lock (cx_policy_t), on its racy hint counters. */
struct cx_policy;
/* Should this entry try optimistically? (Uses up one skipped entry if not.) */
static inline bool tk_section_try(uint32_t *skip) {
    if (!tk_g.hybrid)
        return false;
    uint32_t n = __atomic_load_n(skip, __ATOMIC_RELAXED);
    if (n) {
        __atomic_store_n(skip, n - 1, __ATOMIC_RELAXED);
        return false;
    }
    return true;
}
/* A section ended (exclusive or not): after a window of entries mostly
 * exclusive, skip optimistic tries for quiet_entries entries. */
TK_HIDDEN void tk_section_adapt(uint32_t *entries, uint32_t *exclusive, uint32_t *skip,
                                const struct cx_policy *p, int ended_exclusive);

#endif /* TK_CX_SECTION_H */
