/* SPDX-License-Identifier: MIT */
/* elide_abi.h - the private interface between the preload library
 * (preload/preload.c, the interposers) and libtxkit (cx/elide.c, the
 * decisions). Both sides include this header. Exported by libtxkit under
 * libtxkit.map, not a public API: the two libraries ship together. */
#ifndef TK_ELIDE_ABI_H
#define TK_ELIDE_ABI_H

#include <pthread.h>
#include <time.h>

/* The real glibc functions, found by the preload library (dlsym RTLD_NEXT). */
typedef int (*tk_mutex_fn)(pthread_mutex_t *);
typedef int (*tk_timedlock_fn)(pthread_mutex_t *, const struct timespec *);
typedef int (*tk_condwait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*tk_condtimedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);

/* Each runs the section of mutex m elided or calls real (any thread; caller:
 * the return address of the interposer, to tell libtxkit's own calls apart). */
int _txkit_mutex_lock(pthread_mutex_t *m, tk_mutex_fn real, void *caller);
int _txkit_mutex_trylock(pthread_mutex_t *m, tk_mutex_fn real, void *caller);
int _txkit_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime, tk_timedlock_fn real,
                           void *caller);
int _txkit_mutex_unlock(pthread_mutex_t *m, tk_mutex_fn real, void *caller);
int _txkit_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m, tk_condwait_fn real);
int _txkit_cond_timedwait(pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *abstime,
                          tk_condtimedwait_fn real);
/* TXKIT_ELIDE_STATS report at exit (the preload library's destructor). */
void _txkit_elide_report(void);

#endif /* TK_ELIDE_ABI_H */
