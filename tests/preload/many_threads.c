/* SPDX-License-Identifier: MIT */
/* many_threads.c - more threads than the statistics segment has slots, more
 * mutexes than the elision table holds, more transaction sites than the
 * segment's site table: nothing may stop the program or lose a count.
 *
 *   many_threads NTHREADS ROUNDS [GOFILE]
 *
 * Runs under libtxkit-preload.so (it links txkit for TX_ATOMIC; the preload
 * elides its mutexes). NTHREADS threads, all alive at once, each run ROUNDS
 * rounds of: a transaction at one of MANY_SITES sites, a lock of the shared
 * mutex, a lock of one of MANY_MUTEXES mutexes; then main enters MANY_SITES
 * cx locks (not transactions). Then, with every thread still
 * alive, it checks tx_stats_get() against the work done, prints
 * "ready THREADS TRANSACTIONS LOCKS" and, when GOFILE is given, waits until
 * that file exists (a script reads `txkit stat` meanwhile). Exit 0 = pass.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <txkit.h>
#include <unistd.h>

#include "check.h"

#define MANY_MUTEXES 5000 /* beyond the elision table (4096) and the sites (256) */
#define MANY_SITES 300    /* TX_ATOMIC sites, beyond the segment's 256 */

static long nthreads, rounds;
static pthread_barrier_t start, done, leave;
static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mutexes[MANY_MUTEXES];
static long by_shared, by_mutex[MANY_MUTEXES];
static long tx_sum;

/* MANY_SITES distinct TX_ATOMIC sites: site i adds 1 to tx_sum (a table,
 * one row a line: not reformatted). */
/* clang-format off */
#define S1(i) case i: TX_ATOMIC { TX_STORE(&tx_sum, TX_LOAD(&tx_sum) + 1); } break;
#define S10(i) S1(i##0) S1(i##1) S1(i##2) S1(i##3) S1(i##4) S1(i##5) S1(i##6) S1(i##7) S1(i##8) S1(i##9)
#define S100(i) S10(i##0) S10(i##1) S10(i##2) S10(i##3) S10(i##4) S10(i##5) S10(i##6) S10(i##7) \
    S10(i##8) S10(i##9)
static void at_site(unsigned i) {
    switch (i) {
        S10() S10(1) S10(2) S10(3) S10(4) S10(5) S10(6) S10(7) S10(8) S10(9)
        S100(1) S100(2)
    default:
        CHECK(!"no such site");
    }
}
/* clang-format on */

static void *worker(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    pthread_barrier_wait(&start); /* every thread alive before any counts */
    for (long r = 0; r < rounds; r++) {
        unsigned k = (unsigned)((id * 7919u + (unsigned long)r * 104729u) % MANY_MUTEXES);
        at_site((unsigned)((id + (unsigned long)r) % MANY_SITES));
        pthread_mutex_lock(&shared);
        by_shared++;
        pthread_mutex_unlock(&shared);
        pthread_mutex_lock(&mutexes[k]);
        by_mutex[k]++;
        pthread_mutex_unlock(&mutexes[k]);
    }
    pthread_barrier_wait(&done); /* main checks the totals, all still alive */
    pthread_barrier_wait(&leave);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s NTHREADS ROUNDS [GOFILE]\n", argv[0]);
        return 2;
    }
    nthreads = atol(argv[1]);
    rounds = atol(argv[2]);
    const char *go = argc > 3 ? argv[3] : NULL;
    CHECK(nthreads > 0 && rounds > 0);
    for (int i = 0; i < MANY_MUTEXES; i++)
        pthread_mutex_init(&mutexes[i], NULL);
    /* the shared mutex gets a statistics site before the 256 are taken */
    pthread_mutex_lock(&shared);
    pthread_mutex_unlock(&shared);
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    pthread_barrier_init(&done, NULL, (unsigned)nthreads + 1);
    pthread_barrier_init(&leave, NULL, (unsigned)nthreads + 1);
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    CHECK(t != NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (long i = 0; i < nthreads; i++)
        CHECK(pthread_create(&t[i], &attr, worker, (void *)(uintptr_t)i) == 0);
    pthread_barrier_wait(&done);
    /* cx locks now, with the site table full: their sections are not
     * transactions, in any site */
    static cx_lock_t cx[MANY_SITES];
    for (int i = 0; i < MANY_SITES; i++) {
        CHECK(cx_init(&cx[i], NULL) == 0);
        cx_optimistic(&cx[i]);
        cx_unlock(&cx[i]);
    }

    long want = nthreads * rounds, locks = 0;
    for (int i = 0; i < MANY_MUTEXES; i++)
        locks += by_mutex[i];
    CHECK(tx_sum == want);
    CHECK(by_shared == want);
    CHECK(locks == want);
    tx_stats_t s;
    CHECK(tx_stats_get(&s) == 0);
    if (s.transactions != (uint64_t)want || tx_stats_commits(&s) != (uint64_t)want ||
        s.threads < (uint64_t)nthreads) {
        fprintf(stderr,
                "tx_stats_get: %llu threads, %llu transactions, %llu commits; expected %ld "
                "threads, %ld transactions\n",
                (unsigned long long)s.threads, (unsigned long long)s.transactions,
                (unsigned long long)tx_stats_commits(&s), nthreads, want);
        return 1;
    }
    printf("ready %ld %ld %ld\n", nthreads, want, 2 * want);
    fflush(stdout);
    for (int i = 0; go && i < 6000 && access(go, F_OK) != 0; i++) {
        struct timespec d = {0, 10000000};
        nanosleep(&d, NULL);
    }
    pthread_barrier_wait(&leave);
    for (long i = 0; i < nthreads; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    /* the threads exited: their counts are still there */
    CHECK(tx_stats_get(&s) == 0);
    CHECK(s.transactions == (uint64_t)want && tx_stats_commits(&s) == (uint64_t)want);
    free(t);
    printf("ok\n");
    return 0;
}
