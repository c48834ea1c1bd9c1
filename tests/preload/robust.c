/* SPDX-License-Identifier: MIT */
/* robust.c - what pthread_mutex_lock returns for the mutexes whose trylock
 * and lock answer apart: robust ones whose owner thread died (EOWNERDEAD,
 * the mutex taken), normal, recursive and errorcheck; and a priority-protect
 * one with the default ceiling. Prints one line per case; robust.sh compares
 * them with the same program's lines without txkit. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t m;
static void *die_holding(void *a) {
    (void)a;
    pthread_mutex_lock(&m);
    return NULL; /* exits holding it */
}

static void robust(int type, const char *name) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&m, &a);
    pthread_t t;
    pthread_create(&t, NULL, die_holding, NULL);
    pthread_join(t, NULL);
    int rc = pthread_mutex_lock(&m);
    int c = rc == EOWNERDEAD ? pthread_mutex_consistent(&m) : -1;
    int u = pthread_mutex_unlock(&m);
    int again = pthread_mutex_trylock(&m); /* taken once only: free now */
    if (again == 0)
        pthread_mutex_unlock(&m);
    printf("robust %s: lock %s, consistent %d, unlock %d, trylock after %d\n", name, strerror(rc),
           c, u, again);
    pthread_mutex_destroy(&m);
}

int main(void) {
    robust(PTHREAD_MUTEX_NORMAL, "normal");
    robust(PTHREAD_MUTEX_RECURSIVE, "recursive");
    robust(PTHREAD_MUTEX_ERRORCHECK, "errorcheck");
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT);
    pthread_mutex_t pp;
    pthread_mutex_init(&pp, &a);
    int rc = pthread_mutex_lock(&pp);
    if (rc == 0)
        pthread_mutex_unlock(&pp);
    printf("priority-protect: lock %s\n", strerror(rc));
    return 0;
}
