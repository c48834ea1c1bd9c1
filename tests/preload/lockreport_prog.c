/* SPDX-License-Identifier: MIT */
/* lockreport_prog.c - a plain pthread program with known lock traffic, for
 * the lock report (txkit run --report, tests/preload/lockreport.sh), which
 * checks the report against the numbers this program prints:
 *   hot_mutex   THREADS x HOT acquisitions in hot_path(), held ~2 us each
 *               (contended: every thread wants it)
 *   cold_mutex  COLD acquisitions in cold_path() by thread 0 only (never
 *               contended), plus one trylock
 *   table_lock  a rwlock: THREADS x RW read locks in reader(), RW / 10 write
 *               locks in writer() (thread 0)
 *   spin        a spinlock: THREADS x SPIN acquisitions in spinner()
 *   cv_mutex    one condition-variable handshake per thread
 *   wrapped_mutex  taken through a wrapper in a shared library
 *               (lockreport_wrap.c): wrapped_path() waits for it once while
 *               the main thread holds it for 30 ms (with 2 threads or more)
 *   timed_mutex TIMED timedlocks and TIMED clocklocks (and one clocklock
 *               with a bad clock: EINVAL, not an acquisition), main thread
 *   wait_mutex  TIMED condition waits that time out after WAIT_MS, half
 *               pthread_cond_clockwait, half pthread_cond_timedwait, each
 *               under a lock (so 2 x TIMED acquisitions), plus one
 *               clockwait with a bad clock under a lock (EINVAL: the mutex
 *               stays held; one acquisition): no hold is as long as a wait
 *   timed_rw    a rwlock: TIMED each of timedrdlock, timedwrlock,
 *               clockrdlock, clockwrlock
 *   c11_mutex   a C11 mtx_t: TIMED mtx_lock, TIMED mtx_trylock, TIMED
 *               mtx_timedlock, and TIMED cnd_timedwait that time out under
 *               mtx_lock (2 x TIMED more): 5 x TIMED acquisitions
 * Usage: lockreport_prog THREADS; prints "expect NAME ADDRESS COUNT" lines.
 * The functions are not static and not inlined, so the report can name them. */
#define _GNU_SOURCE /* the clock variants */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <threads.h>
#include <unistd.h>
#include <time.h>

#define HOT 4000
#define COLD 500
#define RW 3000
#define SPIN 3000

pthread_mutex_t hot_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t cold_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t cv_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
pthread_spinlock_t spin;
pthread_mutex_t wrapped_mutex = PTHREAD_MUTEX_INITIALIZER;
int wrap_lock(pthread_mutex_t *m);
int wrap_unlock(pthread_mutex_t *m);
static volatile int wrapped_held;
/* More locks held at once than the report times (16), released in the order
 * taken: each hold is still counted once. */
#define DEEP 20
#define DEEP_ROUNDS 10
static pthread_mutex_t deep[DEEP];
static volatile uint64_t shared_counter, table[64];
static int ready;

static void busy_ns(long ns) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

__attribute__((noinline)) void hot_path(void) {
    pthread_mutex_lock(&hot_mutex);
    shared_counter++;
    busy_ns(2000);
    pthread_mutex_unlock(&hot_mutex);
}

__attribute__((noinline)) void cold_path(void) {
    pthread_mutex_lock(&cold_mutex);
    shared_counter++;
    pthread_mutex_unlock(&cold_mutex);
}

__attribute__((noinline)) void reader(int i) {
    pthread_rwlock_rdlock(&table_lock);
    volatile uint64_t x = table[i & 63];
    (void)x;
    pthread_rwlock_unlock(&table_lock);
}

__attribute__((noinline)) void writer(int i) {
    pthread_rwlock_wrlock(&table_lock);
    table[i & 63]++;
    pthread_rwlock_unlock(&table_lock);
}

__attribute__((noinline)) void wrapped_path(void) {
    wrap_lock(&wrapped_mutex);
    shared_counter++;
    wrap_unlock(&wrapped_mutex);
}

__attribute__((noinline)) void spinner(void) {
    pthread_spin_lock(&spin);
    shared_counter++;
    pthread_spin_unlock(&spin);
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    pthread_mutex_lock(&cv_mutex);
    while (!ready)
        pthread_cond_wait(&cv, &cv_mutex);
    pthread_mutex_unlock(&cv_mutex);
    if (id == 1) {
        while (!__atomic_load_n(&wrapped_held, __ATOMIC_ACQUIRE))
            ;
        wrapped_path(); /* waits: main holds it */
    }
    for (int i = 0; i < HOT; i++)
        hot_path();
    for (int i = 0; i < RW; i++) {
        reader(i);
        if (id == 0 && i % 10 == 0)
            writer(i);
    }
    for (int i = 0; i < SPIN; i++)
        spinner();
    if (id == 0) {
        for (int i = 0; i < COLD; i++)
            cold_path();
        if (pthread_mutex_trylock(&cold_mutex) == 0)
            pthread_mutex_unlock(&cold_mutex);
    }
    return NULL;
}

#define TIMED 6
#define WAIT_MS 20
pthread_mutex_t timed_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t wait_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t wait_cv = PTHREAD_COND_INITIALIZER;
pthread_rwlock_t timed_rw = PTHREAD_RWLOCK_INITIALIZER;

static struct timespec after_ms(clockid_t clk, long ms) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    ts.tv_nsec += ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "lockreport_prog: %s\n", what);
        exit(1);
    }
}

/* The timed and clocked variants (main thread, after the workers). */
__attribute__((noinline)) void timed_path(void) {
    for (int i = 0; i < TIMED; i++) {
        struct timespec rt = after_ms(CLOCK_REALTIME, 1000), mono = after_ms(CLOCK_MONOTONIC, 1000);
        check(pthread_mutex_timedlock(&timed_mutex, &rt) == 0, "timedlock");
        pthread_mutex_unlock(&timed_mutex);
        check(pthread_mutex_clocklock(&timed_mutex, CLOCK_MONOTONIC, &mono) == 0, "clocklock");
        pthread_mutex_unlock(&timed_mutex);
        check(pthread_rwlock_timedrdlock(&timed_rw, &rt) == 0, "timedrdlock");
        pthread_rwlock_unlock(&timed_rw);
        check(pthread_rwlock_timedwrlock(&timed_rw, &rt) == 0, "timedwrlock");
        pthread_rwlock_unlock(&timed_rw);
        check(pthread_rwlock_clockrdlock(&timed_rw, CLOCK_MONOTONIC, &mono) == 0, "clockrdlock");
        pthread_rwlock_unlock(&timed_rw);
        check(pthread_rwlock_clockwrlock(&timed_rw, CLOCK_MONOTONIC, &mono) == 0, "clockwrlock");
        pthread_rwlock_unlock(&timed_rw);
        pthread_mutex_lock(&wait_mutex);
        struct timespec w_rt = after_ms(CLOCK_REALTIME, WAIT_MS);
        struct timespec w_mono = after_ms(CLOCK_MONOTONIC, WAIT_MS);
        int rc = i & 1 ? pthread_cond_timedwait(&wait_cv, &wait_mutex, &w_rt)
                       : pthread_cond_clockwait(&wait_cv, &wait_mutex, CLOCK_MONOTONIC, &w_mono);
        check(rc == ETIMEDOUT || rc == 0, "a condition wait failed");
        pthread_mutex_unlock(&wait_mutex);
    }
    struct timespec ts = after_ms(CLOCK_MONOTONIC, 1000);
    check(pthread_mutex_clocklock(&timed_mutex, CLOCK_PROCESS_CPUTIME_ID, &ts) == EINVAL,
          "clocklock with a bad clock did not say EINVAL");
    pthread_mutex_lock(&wait_mutex);
    check(pthread_cond_clockwait(&wait_cv, &wait_mutex, CLOCK_PROCESS_CPUTIME_ID, &ts) == EINVAL,
          "clockwait with a bad clock did not say EINVAL");
    pthread_mutex_unlock(&wait_mutex);
}

mtx_t c11_mutex;
cnd_t c11_cv;

/* C11 threads, whose mtx_* glibc runs inside libc (main thread). */
__attribute__((noinline)) void c11_path(void) {
    check(mtx_init(&c11_mutex, mtx_timed) == thrd_success && cnd_init(&c11_cv) == thrd_success,
          "mtx_init");
    for (int i = 0; i < TIMED; i++) {
        struct timespec ts = after_ms(CLOCK_REALTIME, 1000);
        check(mtx_lock(&c11_mutex) == thrd_success, "mtx_lock");
        mtx_unlock(&c11_mutex);
        check(mtx_trylock(&c11_mutex) == thrd_success, "mtx_trylock");
        mtx_unlock(&c11_mutex);
        check(mtx_timedlock(&c11_mutex, &ts) == thrd_success, "mtx_timedlock");
        mtx_unlock(&c11_mutex);
        struct timespec soon = after_ms(CLOCK_REALTIME, 2);
        mtx_lock(&c11_mutex);
        int rc = cnd_timedwait(&c11_cv, &c11_mutex, &soon);
        check(rc == thrd_timedout || rc == thrd_success, "cnd_timedwait");
        mtx_unlock(&c11_mutex);
    }
}

__attribute__((noinline)) static void deep_path(void) {
    for (int r = 0; r < DEEP_ROUNDS; r++) {
        for (int i = 0; i < DEEP; i++)
            pthread_mutex_lock(&deep[i]);
        for (int i = 0; i < DEEP; i++)
            pthread_mutex_unlock(&deep[i]);
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (n < 1 || n > 64) {
        fprintf(stderr, "usage: lockreport_prog THREADS (1-64)\n");
        return 2;
    }
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    for (int i = 0; i < DEEP; i++)
        pthread_mutex_init(&deep[i], NULL);
    deep_path();
    pthread_t th[64];
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    busy_ns(20000000); /* all of them waiting on the condition variable */
    pthread_mutex_lock(&wrapped_mutex);
    __atomic_store_n(&wrapped_held, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&cv_mutex);
    ready = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&cv_mutex);
    if (n >= 2) {
        /* Until thread 1 waits in wrapped_path() (glibc's lock word is 2
         * once a thread sleeps on it; up to 10 s: a loaded machine may not
         * run it for a while), then 30 ms more: its wait is the longest. */
        for (int i = 0;
             i < 10000 && __atomic_load_n(&wrapped_mutex.__data.__lock, __ATOMIC_RELAXED) != 2; i++)
            usleep(1000);
        busy_ns(30000000);
    }
    pthread_mutex_unlock(&wrapped_mutex);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    printf("expect hot_mutex %p %d\n", (void *)&hot_mutex, n * HOT);
    printf("expect cold_mutex %p %d\n", (void *)&cold_mutex, COLD + 1);
    printf("expect table_lock-read %p %d\n", (void *)&table_lock, n * RW);
    printf("expect table_lock-write %p %d\n", (void *)&table_lock, RW / 10);
    printf("expect spin %p %d\n", (void *)&spin, n * SPIN);
    printf("expect deep %p %d\n", (void *)&deep[0], DEEP_ROUNDS);
    timed_path();
    printf("expect timed_mutex %p %d\n", (void *)&timed_mutex, 2 * TIMED);
    printf("expect wait_mutex %p %d\n", (void *)&wait_mutex, 2 * TIMED + 1);
    printf("expect timed_rw %p %d\n", (void *)&timed_rw, 4 * TIMED);
    c11_path();
    printf("expect c11_mutex %p %d\n", (void *)&c11_mutex, 5 * TIMED);
    printf("counter %llu\n", (unsigned long long)shared_counter);
    fflush(stdout);
    /* LINGER=FILE: stay alive (the live table readable) until FILE exists */
    const char *linger = getenv("LINGER");
    for (int i = 0; linger && *linger && access(linger, F_OK) != 0 && i < 3000; i++)
        usleep(10000);
    return 0;
}
