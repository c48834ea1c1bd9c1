/* SPDX-License-Identifier: MIT */
/* itm_thread.h - the gcc ABI layer's (abi/itm.c) part of the thread
 * descriptor: tk_thread.itm. Written by its owner thread only, in itm.c. */
#ifndef TK_ITM_THREAD_H
#define TK_ITM_THREAD_H

#include "runtime/core.h"

struct tk_itm_thread {
    tk_vec cps;    /* tk_itm_cp: nested transactions that may cancel (nested
                                * begin pushes, their commit or cancel pops) */
    uint64_t txid; /* _ITM_getTransactionId of the current one: set on first ask */
    uint64_t txid_next,
        txid_end;            /* this thread's block of transaction ids: refilled when used up */
    uintptr_t last_rip;      /* the last gcc transaction's call site ...: each outermost begin */
    txkit_site_t *last_site; /* ... and its site */
    uintptr_t prev_rip;      /* the call site before it, another one ... */
    txkit_site_t *prev_site; /* ... and its site (two blocks that alternate: a lookup, a store) */
};

#endif /* TK_ITM_THREAD_H */
