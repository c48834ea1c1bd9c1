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

/* Set once by self.c's constructor, the library's last, read-only after: any
 * thread. Until then both ranges are the whole address space, so that every
 * lock is libtxkit's own to the hooks, which call the real functions: a
 * library initialized before libtxkit may lock a mutex in its constructor
 * (a preloaded jemalloc, whose first malloc libstdc++'s constructor makes,
 * takes its own), and a hook that handled it then would use a library not
 * set up yet: registering the lock's site took the statistics' lock through
 * the hook again and waited for that site forever (preload.early_ctor). */
extern uintptr_t tk_self_lo, tk_self_hi;           /* libtxkit's code */
extern uintptr_t tk_self_data_lo, tk_self_data_hi; /* its .data, .bss (and RELRO) */
/* The code of the shared library whose malloc the process uses, when it is
 * not glibc's (jemalloc, tcmalloc), else empty: its locks are taken inside
 * malloc, where a hook must not allocate (a thread's first descriptor, a new
 * lock's site): that entered the same malloc again from inside it, and a C++
 * program linked with jemalloc crashed in calloc at its second thread's
 * first output (preload.mallocs). A program's own malloc is not excluded. */
extern uintptr_t tk_alloc_lo, tk_alloc_hi;

/* A call from libtxkit's code or from the malloc library's, or a lock in
 * libtxkit's data, or any lock before the library is set up (above) or while
 * its own code runs on this thread (tk_in_self, runtime/internal.h): the
 * hooks leave those to glibc. The caller alone is not enough: with sibling
 * calls the return address is the caller's caller (glibc's prefork handler
 * runner for thread.c's fork_prepare), and eliding there registers the
 * thread, which takes reg_lock, already held by fork_prepare: the first
 * fork() of a thread that had never locked a mutex hung
 * (preload.fork-first). Any thread. */
static inline bool tk_from_self(const void *caller, const void *obj) {
    uintptr_t a = (uintptr_t)caller, d = (uintptr_t)obj;
    return tk_in_self ||
           (a >= __atomic_load_n(&tk_self_lo, __ATOMIC_RELAXED) &&
            a < __atomic_load_n(&tk_self_hi, __ATOMIC_RELAXED)) ||
           (a >= __atomic_load_n(&tk_alloc_lo, __ATOMIC_RELAXED) &&
            a < __atomic_load_n(&tk_alloc_hi, __ATOMIC_RELAXED)) ||
           (d >= __atomic_load_n(&tk_self_data_lo, __ATOMIC_RELAXED) &&
            d < __atomic_load_n(&tk_self_data_hi, __ATOMIC_RELAXED));
}

#endif /* TK_CX_SELF_H */
