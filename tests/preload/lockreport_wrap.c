/* SPDX-License-Identifier: MIT */
/* lockreport_wrap.c - a lock wrapper in a shared library, as APR's
 * apr_thread_mutex_lock is: the lock report must name the program's code
 * that waited through it, not only the wrapper (lockreport_prog.c). */
#include <pthread.h>

static volatile unsigned long wrap_calls; /* no tail call: the wrapper's frame stays */

__attribute__((noinline)) int wrap_lock(pthread_mutex_t *m) {
    int rc = pthread_mutex_lock(m);
    wrap_calls++;
    return rc;
}

__attribute__((noinline)) int wrap_unlock(pthread_mutex_t *m) {
    int rc = pthread_mutex_unlock(m);
    wrap_calls++;
    return rc;
}
