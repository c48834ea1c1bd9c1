/* SPDX-License-Identifier: MIT */
/* early_dep.c - libearly_dep.so: a library whose constructor locks a mutex,
 * as a preloaded malloc (jemalloc) does at its first allocation. Loaded as a
 * dependency of libearly.so, preloaded after libtxkit-preload.so, so the
 * loader initializes it before libtxkit (preload.early_ctor). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

__attribute__((constructor)) static void early_lock(void) {
    int a = pthread_mutex_lock(&m);
    int b = pthread_mutex_trylock(&m); /* held by this thread: EBUSY */
    int c = pthread_mutex_unlock(&m);
    int d = pthread_mutex_trylock(&m);
    int e = pthread_mutex_unlock(&m);
    fprintf(stderr,
            "early_dep: constructor: lock %d, trylock %s, unlock %d, trylock %d, unlock %d\n", a,
            b == EBUSY ? "EBUSY" : "NOT EBUSY", c, d, e);
}

int early_dep_linked(void) { return 1; }
