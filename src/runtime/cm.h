/* SPDX-License-Identifier: MIT */
/* cm.h - contention management (runtime/cm.c): the managers, the conflict
 * priority, backoff; and its part of the thread descriptor, tk_thread.cm. */
#ifndef TK_CM_H
#define TK_CM_H

#include "runtime/core.h"

struct _txkit_cm_party;

/* Written by the owner thread only, in cm.c (and txn.c's commit/abort counting). */
struct tk_cm_thread {
    unsigned consecutive_aborts; /* aborts in a row: the backoff's on_abort, reset at commit */
    int prio;                    /* conflict priority of the running transaction: tk_prio_refresh */
    int prio_set;                /* tx_set_priority(), or TX_PRIO_AUTO: thread.c, tx_set_priority */
    uint64_t prio_read_ns; /* when prio was last derived from the scheduler: tk_prio_refresh */
};

/* The interface a contention manager implements (cm.c). With `visible` set,
 * software transactions make their reads and writes visible (vis.c), and
 * wins() decides each conflict between two of them; without, NOrec runs and
 * the manager only hears of aborts. */
struct tk_cm {
    const char *name;
    int visible;
    unsigned backoff_base_ns; /* tk_backoff's first delay bound, doubled per abort in a row */
    void (*on_begin)(tk_thread *t);
    void (*on_abort)(tk_thread *t, int cause); /* may delay the retry */
    void (*on_commit)(tk_thread *t);
    /* 1: self wins (other aborts), 0: self aborts */
    int (*wins)(const struct _txkit_cm_party *self, const struct _txkit_cm_party *other);
};
extern const struct tk_cm *tk_cm TK_HIDDEN;
/* tk_cm->visible, read on the software barriers' slow paths. */
extern int tk_vis_on TK_HIDDEN;
TK_HIDDEN int tk_cm_select(const char *name); /* 0 or -EINVAL */
/* Whether the manager's on_begin does nothing for a first attempt (cm.c:
 * only the visible managers refresh the priority there), so that an express
 * begin (runtime/express.h) may skip it. Any thread. Its twin for on_commit,
 * tk_cm_commit_quiet, is in internal.h, which defines the thread it reads. */
static inline int tk_cm_begin_quiet(void) { return !tk_vis_on; }
/* The thread's conflict priority, refreshed from the scheduler when older
 * than a millisecond (cheap otherwise). */
TK_HIDDEN int tk_prio_refresh(tk_thread *t);
/* Count one decided conflict against loser_prio in favour of winner_prio. */
TK_HIDDEN void tk_cm_count(tk_thread *t, int winner_prio, int loser_prio);
/* Randomized exponential backoff before a retry (every manager uses it). */
TK_HIDDEN void tk_backoff(tk_thread *t, int cause);

#endif /* TK_CM_H */
