/* SPDX-License-Identifier: MIT */
/* cx_thread.h - cx lock sections' (cx/cx.c) part of the thread descriptor:
 * tk_thread.cx. Written by its owner thread only, in cx.c (sections, the
 * subscriptions of its transactions, the hooks after commit and abort). */
#ifndef TK_CX_THREAD_H
#define TK_CX_THREAD_H

#include "runtime/core.h"

struct cx_lock;
struct tks_counters;
struct tk_cx {
    int mode;                 /* enum cx_mode (include/txkit/cx.h) */
    unsigned depth;           /* nesting depth of sections */
    unsigned txdepth;         /* sections of a transaction run inside an exclusive one */
    struct cx_lock *lock;     /* the outermost section's lock */
    struct tks_counters *cnt; /* its statistics entry */
    unsigned tries;           /* hardware attempts of the current entry */
    unsigned backoff;         /* its backoff base, ns (section.h) */
    unsigned nheld, held_cap;
    struct cx_lock **held; /* held exclusively by sections outside transactions */
    /* Owned by the running transaction attempt, not by its sections: kept
     * after cx_unlock until the attempt commits or has rolled back. */
    unsigned ntxheld, txheld_cap;
    struct cx_lock **txheld; /* held for real (serial, irrevocable) */
    unsigned nsubs, subs_cap;
    struct cx_lock **subs; /* a software transaction depends on */
    /* t->ntx of the transaction whose hardware attempt entered a cx lock
     * (subscribe; an aborted attempt's store is rolled back with it): read by
     * htm.c through tk_cx_entered_hw */
    uint64_t hw_ntx;
    /* Shared sections (without RTM): this thread's reader record, claimed at
     * its first one and given back at exit. */
    struct cx_reader *rd;
    int shared_outer; /* the outermost section was entered by cx_shared */
    /* the outermost section's entry is counted at its end, with its commit
     * (cx.c: count_end): a section without RTM that holds the lock; every
     * outermost entry sets it */
    int lean;
    /* this thread's id in a lock's owner field (cx.c, at its first section:
     * a lock only it has entered is taken from the start; 0: none yet) */
    uint32_t uid;
    uint32_t reclaim; /* entries that found a lock's owner CX_OWNER_ALL (cx.c) */
};

#endif /* TK_CX_THREAD_H */
