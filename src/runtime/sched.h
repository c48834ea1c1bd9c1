/* SPDX-License-Identifier: MIT */
/* sched.h - transaction-aware scheduling (runtime/sched.c) and its part
 * of the thread descriptor, tk_thread.sched. */
#ifndef TK_SCHED_H
#define TK_SCHED_H

#include "runtime/core.h"

/* Written by the owner thread only, in sched.c (its engine calls, thread exit). */
struct tk_sched_thread {
    uint64_t attempt_tsc; /* start of the current attempt (when on): tk_sched_attempt_start */
    uint64_t tx_lost;     /* ticks lost in aborted attempts of this transaction: on abort */
    uint32_t restart_ema; /* restarts per transaction, x256: at commit */
    uint64_t lost_ema;    /* ticks lost per transaction: at commit */
    int queue_held;       /* holds its site's queue: before a retry, released at the end */
};

/* Transaction-aware scheduling (sched.c). */
extern int tk_sched_on TK_HIDDEN;
TK_HIDDEN void tk_sched_attempt_start(tk_thread *t);
/* After an abort: true when it waited (yield / futex) instead of the backoff. */
TK_HIDDEN bool tk_sched_abort(tk_thread *t, int cause);
TK_HIDDEN void tk_sched_commit(tk_thread *t);
TK_HIDDEN void tk_sched_before_retry(tk_thread *t); /* may queue at the site */
TK_HIDDEN void tk_sched_release(tk_thread *t);      /* give the site's queue back */

#endif /* TK_SCHED_H */
