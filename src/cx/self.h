/* SPDX-License-Identifier: MIT */
/* self.h - where libtxkit itself lives (cx/self.c): its code, whose calls to
 * pthread locks are the runtime's own, and its writable data, where the
 * runtime's own mutexes are. The preload hooks (cx/elide.c) and the lock
 * report (cx/lockprof.c) leave those alone. */
#ifndef TK_CX_SELF_H
#define TK_CX_SELF_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/internal.h"

/* Set once by self.c's constructor, read-only after: any thread. */
extern uintptr_t tk_self_lo, tk_self_hi;           /* libtxkit's code */
extern uintptr_t tk_self_data_lo, tk_self_data_hi; /* its .data, .bss (and RELRO) */

/* A call from libtxkit's code, or a lock in its data. The caller alone is not
 * enough: with sibling calls the return address is the caller's caller
 * (glibc's prefork handler runner for thread.c's fork_prepare), and eliding
 * there registers the thread, which takes reg_lock, already held by
 * fork_prepare: the first fork() of a thread that had never locked a mutex
 * hung (preload.fork-first). Any thread. */
static inline bool tk_from_self(const void *caller, const void *obj) {
    uintptr_t a = (uintptr_t)caller, d = (uintptr_t)obj;
    return (a >= tk_self_lo && a < tk_self_hi) || (d >= tk_self_data_lo && d < tk_self_data_hi);
}

#endif /* TK_CX_SELF_H */
