/* SPDX-License-Identifier: MIT */
/* preload_test.c - a plain pthread program (it does not link txkit) run under
 * libtxkit-preload.so, which elides its default mutexes.
 *
 *   preload_test condvar | timedlock | fork | unlock-unlocked | kinds |
 *                torture | c11 | stats | bench [N]
 *
 * Every mode but bench first checks that the preload library is in the
 * process and that this binary does not link txkit itself. Exit 0 = pass.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* ------------------------------------------------------------ environment */

extern ElfW(Dyn) _DYNAMIC[];

/* This executable's DT_NEEDED entries must not name txkit. */
static void check_not_linked(void) {
    const char *strtab = NULL;
    for (ElfW(Dyn) *d = _DYNAMIC; d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)d->d_un.d_ptr;
    CHECK(strtab != NULL);
    for (ElfW(Dyn) *d = _DYNAMIC; d->d_tag != DT_NULL; d++) {
        if (d->d_tag != DT_NEEDED)
            continue;
        const char *name = strtab + d->d_un.d_val;
        if (strstr(name, "txkit")) {
            fprintf(stderr, "this test binary links %s itself\n", name);
            exit(1);
        }
    }
}

static void check_preloaded(void) {
    check_not_linked();
    if (!dlsym(RTLD_DEFAULT, "_txkit_mutex_lock")) {
        fprintf(stderr, "libtxkit-preload.so is not loaded (LD_PRELOAD=%s)\n",
                getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "");
        exit(1);
    }
    /* and pthread_mutex_lock is the preload's */
    Dl_info info;
    void *f = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
    CHECK(f && dladdr(f, &info) && info.dli_fname);
    if (!strstr(info.dli_fname, "txkit-preload")) {
        fprintf(stderr, "pthread_mutex_lock comes from %s\n", info.dli_fname);
        exit(1);
    }
}

/* The time ms milliseconds from now on clock clk (a deadline). */
static struct timespec in_ms_on(clockid_t clk, long ms) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

/* ---------------------------------------------- producer/consumer, condvars */

#define QCAP 8
#define ITEMS 20000
#define PRODUCERS 2
#define CONSUMERS 2

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t q_not_full = PTHREAD_COND_INITIALIZER;
static long q_buf[QCAP];
static unsigned q_head, q_len, q_done_producers;
static long consumed_sum, consumed_count;

static void *producer(void *arg) {
    long base = (long)(intptr_t)arg * ITEMS;
    for (long i = 1; i <= ITEMS; i++) {
        pthread_mutex_lock(&q_lock);
        while (q_len == QCAP) {
            if (i & 1) {
                pthread_cond_wait(&q_not_full, &q_lock);
            } else { /* the timed and clocked variants too */
                clockid_t clk = i % 4 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
                struct timespec ts = in_ms_on(clk, 1);
                int rc = clk == CLOCK_REALTIME
                             ? pthread_cond_timedwait(&q_not_full, &q_lock, &ts)
                             : pthread_cond_clockwait(&q_not_full, &q_lock, clk, &ts);
                CHECK(rc == 0 || rc == ETIMEDOUT);
            }
        }
        q_buf[(q_head + q_len) % QCAP] = base + i;
        q_len++;
        pthread_cond_signal(&q_not_empty);
        pthread_mutex_unlock(&q_lock);
    }
    pthread_mutex_lock(&q_lock);
    q_done_producers++;
    pthread_cond_broadcast(&q_not_empty);
    pthread_mutex_unlock(&q_lock);
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    long sum = 0, count = 0;
    for (;;) {
        pthread_mutex_lock(&q_lock);
        while (q_len == 0 && q_done_producers < PRODUCERS)
            pthread_cond_wait(&q_not_empty, &q_lock);
        if (q_len == 0) {
            pthread_mutex_unlock(&q_lock);
            break;
        }
        long v = q_buf[q_head];
        q_head = (q_head + 1) % QCAP;
        q_len--;
        pthread_cond_signal(&q_not_full);
        pthread_mutex_unlock(&q_lock);
        sum += v;
        count++;
    }
    pthread_mutex_lock(&q_lock);
    consumed_sum += sum;
    consumed_count += count;
    pthread_mutex_unlock(&q_lock);
    return NULL;
}

static int t_condvar(void) {
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < PRODUCERS; i++)
        CHECK(pthread_create(&p[i], NULL, producer, (void *)(intptr_t)i) == 0);
    for (long i = 0; i < CONSUMERS; i++)
        CHECK(pthread_create(&c[i], NULL, consumer, NULL) == 0);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    long expect = 0;
    for (long pi = 0; pi < PRODUCERS; pi++)
        for (long i = 1; i <= ITEMS; i++)
            expect += pi * ITEMS + i;
    printf("condvar: consumed %ld items, sum %ld (expected %d, %ld)\n", consumed_count,
           consumed_sum, PRODUCERS * ITEMS, expect);
    CHECK(consumed_count == (long)PRODUCERS * ITEMS);
    CHECK(consumed_sum == expect);
    CHECK(q_len == 0);
    return 0;
}

/* ------------------------------------------------------------- timedlock */

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_state; /* 1: holder has the lock, 2: holder may release */

static void gate_set(int v) {
    pthread_mutex_lock(&gate);
    gate_state = v;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate);
}

static void gate_wait(int v) {
    pthread_mutex_lock(&gate);
    while (gate_state < v)
        pthread_cond_wait(&gate_cv, &gate);
    pthread_mutex_unlock(&gate);
}

static void *holder(void *arg) {
    (void)arg;
    CHECK(pthread_mutex_lock(&held) == 0);
    gate_set(1);
    gate_wait(2);
    CHECK(pthread_mutex_unlock(&held) == 0);
    return NULL;
}

static struct timespec in_ms(long ms) { return in_ms_on(CLOCK_REALTIME, ms); }

static int t_timedlock(void) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    struct timespec ts = in_ms(100);
    CHECK(pthread_mutex_timedlock(&m, &ts) == 0); /* free */
    CHECK(pthread_mutex_unlock(&m) == 0);

    pthread_t th;
    CHECK(pthread_create(&th, NULL, holder, NULL) == 0);
    gate_wait(1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ts = in_ms(150);
    int rc = pthread_mutex_timedlock(&held, &ts);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("timedlock: held mutex -> %s after %.3f s\n",
           rc == ETIMEDOUT ? "ETIMEDOUT" : strerror(rc), waited);
    CHECK(rc == ETIMEDOUT);
    CHECK(waited >= 0.1);
    CHECK(pthread_mutex_trylock(&held) == EBUSY);
    /* the clocked variant: its clock, its timeout, its EINVAL */
    struct timespec mono = in_ms_on(CLOCK_MONOTONIC, 50);
    CHECK(pthread_mutex_clocklock(&held, CLOCK_MONOTONIC, &mono) == ETIMEDOUT);
    CHECK(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &mono) == EINVAL);
    CHECK(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &mono) == 0); /* free (the time is past) */
    CHECK(pthread_mutex_unlock(&m) == 0);
    gate_set(2);
    pthread_join(th, NULL);
    ts = in_ms(1000);
    CHECK(pthread_mutex_timedlock(&held, &ts) == 0); /* free again */
    CHECK(pthread_mutex_unlock(&held) == 0);
    return 0;
}

/* --------------------------------------------------------------- fork-first
 * The process's first act is fork(), before any mutex was locked (so txkit
 * never registered the thread). The runtime's own prefork handlers lock its
 * internal mutexes; the preload must not elide them (the elision path
 * registers the thread, which takes a lock the prefork handler already
 * holds: the fork hung for ever, found by the benchmark harness). */
static int t_fork_first(void) {
    alarm(20);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(42);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
    check_preloaded(); /* after the fork: it must have been the preload's */
    printf("fork-first: the first fork() returned, child exited 42\n");
    return 0;
}

/* ------------------------------------------------------------------- fork */

static int t_fork(void) {
    pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
    gate_state = 0;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, holder, NULL) == 0);
    gate_wait(1); /* another thread holds `held` across the fork */
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < 1000; i++) {
            if (pthread_mutex_lock(&other) != 0)
                _exit(3);
            if (pthread_mutex_unlock(&other) != 0)
                _exit(4);
        }
        if (pthread_mutex_trylock(&held) != EBUSY) /* still held in the child's copy */
            _exit(5);
        exit(0); /* cleanly: atexit handlers, destructors */
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    printf("fork: child exited with status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    gate_set(2);
    pthread_join(th, NULL);
    for (int i = 0; i < 1000; i++) { /* the parent carries on */
        CHECK(pthread_mutex_lock(&held) == 0);
        CHECK(pthread_mutex_unlock(&held) == 0);
    }
    return 0;
}

/* -------------------------------------------------------- unlock unlocked */

static int t_unlock_unlocked(void) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    int rc = pthread_mutex_unlock(&m); /* glibc: returns 0 for a default mutex */
    printf("unlock-unlocked: pthread_mutex_unlock -> %d\n", rc);
    CHECK(rc == 0);
    for (int i = 0; i < 100; i++) {
        CHECK(pthread_mutex_lock(&m) == 0);
        CHECK(pthread_mutex_trylock(&m) == EBUSY);
        CHECK(pthread_mutex_unlock(&m) == 0);
    }
    CHECK(pthread_mutex_trylock(&m) == 0);
    CHECK(pthread_mutex_unlock(&m) == 0);
    /* glibc 2.36 itself decremented __nusers below 0 at the stray unlock, so
     * its destroy says EBUSY: what matters is the same answer and no crash. */
    int rc_destroy = pthread_mutex_destroy(&m);
    CHECK(rc_destroy == 0 || rc_destroy == EBUSY);
    return 0;
}

/* ------------------------------------------------ recursive and errorcheck */

static pthread_mutex_t errchk;

static void *unlock_errchk(void *arg) {
    (void)arg;
    return (void *)(intptr_t)pthread_mutex_unlock(&errchk);
}

static int t_kinds(void) {
    pthread_mutexattr_t a;
    pthread_mutex_t rec;
    CHECK(pthread_mutexattr_init(&a) == 0);
    CHECK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE) == 0);
    CHECK(pthread_mutex_init(&rec, &a) == 0);
    CHECK(pthread_mutex_lock(&rec) == 0);
    CHECK(pthread_mutex_lock(&rec) == 0);
    CHECK(pthread_mutex_trylock(&rec) == 0);
    CHECK(pthread_mutex_unlock(&rec) == 0);
    CHECK(pthread_mutex_unlock(&rec) == 0);
    CHECK(pthread_mutex_unlock(&rec) == 0);
    CHECK(pthread_mutex_unlock(&rec) == EPERM); /* not held any more */
    CHECK(pthread_mutex_destroy(&rec) == 0);

    CHECK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK) == 0);
    CHECK(pthread_mutex_init(&errchk, &a) == 0);
    CHECK(pthread_mutex_lock(&errchk) == 0);
    CHECK(pthread_mutex_lock(&errchk) == EDEADLK);
    struct timespec ts = in_ms(50);
    CHECK(pthread_mutex_timedlock(&errchk, &ts) == EDEADLK);
    pthread_t th;
    void *res;
    CHECK(pthread_create(&th, NULL, unlock_errchk, NULL) == 0);
    CHECK(pthread_join(th, &res) == 0);
    printf("kinds: errorcheck unlock by another thread -> %s\n", strerror((int)(intptr_t)res));
    CHECK((int)(intptr_t)res == EPERM);
    CHECK(pthread_mutex_unlock(&errchk) == 0);
    CHECK(pthread_mutex_unlock(&errchk) == EPERM);
    CHECK(pthread_mutex_destroy(&errchk) == 0);
    CHECK(pthread_mutexattr_destroy(&a) == 0);

    /* a default mutex nested inside a recursive one and the other way round */
    pthread_mutex_t d = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_t r2 = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    for (int i = 0; i < 100; i++) {
        CHECK(pthread_mutex_lock(&d) == 0);
        CHECK(pthread_mutex_lock(&r2) == 0);
        CHECK(pthread_mutex_lock(&r2) == 0);
        CHECK(pthread_mutex_unlock(&r2) == 0);
        CHECK(pthread_mutex_unlock(&d) == 0); /* out of order on purpose */
        CHECK(pthread_mutex_unlock(&r2) == 0);
    }
    CHECK(pthread_mutex_trylock(&d) == 0 && pthread_mutex_unlock(&d) == 0);
    CHECK(pthread_mutex_trylock(&r2) == 0 && pthread_mutex_unlock(&r2) == 0);
    return 0;
}

/* ------------------------------------------------- torture with an oracle */

#define T_THREADS 4
#define T_ITERS 200000
#define T_SLOTS 4

static pthread_mutex_t t_locks[2] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static volatile long t_counter[2][T_SLOTS];
static long t_nested_ok; /* both locks at once */

static void *torture_thread(void *arg) {
    unsigned seed = (unsigned)(intptr_t)arg * 2654435761u + 1;
    for (int i = 0; i < T_ITERS; i++) {
        seed = seed * 1103515245u + 12345u;
        int which = (seed >> 16) & 1;
        int slot = (seed >> 8) % T_SLOTS;
        pthread_mutex_lock(&t_locks[which]);
        long v = t_counter[which][slot]; /* non-atomic read-modify-write */
        if ((seed >> 20) % 64 == 0)
            sched_yield(); /* a system call inside the section now and then */
        t_counter[which][slot] = v + 1;
        if ((seed >> 12) % 16 == 0) { /* nested: both locks, in a fixed order */
            if (which == 0) {
                pthread_mutex_lock(&t_locks[1]);
                t_counter[1][slot] = t_counter[1][slot] + 1;
                t_nested_ok++;
                pthread_mutex_unlock(&t_locks[1]);
            }
        }
        pthread_mutex_unlock(&t_locks[which]);
    }
    return NULL;
}

static int t_torture(void) {
    pthread_t th[T_THREADS];
    for (long i = 0; i < T_THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, torture_thread, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < T_THREADS; i++)
        pthread_join(th[i], NULL);
    long total = 0;
    for (int w = 0; w < 2; w++)
        for (int s = 0; s < T_SLOTS; s++)
            total += t_counter[w][s];
    long expect = (long)T_THREADS * T_ITERS + t_nested_ok;
    printf("torture: %d threads x %d sections (+%ld nested): counted %ld, expected %ld\n",
           T_THREADS, T_ITERS, t_nested_ok, total, expect);
    CHECK(total == expect);
    return 0;
}

/* -------------------------------------------------------------------- c11
 * C11 threads (mtx_t, cnd_t): glibc's mtx_* call its pthread functions
 * inside libc, so the preload stands in for them. A counter under a plain
 * mtx_t at 2 threads with a cnd_t handshake (the total is exact), and C11's
 * answers: busy, timed out, recursive. */

#define C11_ITERS 20000
static mtx_t c11_m;
static cnd_t c11_cv;
static long c11_counter;
static int c11_turn; /* the handshake: whose turn (0, 1), -1 once one is done */

static int c11_worker(void *arg) {
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < C11_ITERS; i++) {
        CHECK(mtx_lock(&c11_m) == thrd_success);
        c11_counter++;
        if (i % 1000 == 0) { /* a handshake now and then: cnd_wait / cnd_timedwait */
            c11_turn = !id;
            cnd_broadcast(&c11_cv);
            struct timespec ts = in_ms(1000); /* (C11's TIME_UTC is CLOCK_REALTIME) */
            while (c11_turn == !id) {         /* until the other one's next handshake, or its end */
                int rc = i % 2000 ? cnd_timedwait(&c11_cv, &c11_m, &ts) : cnd_wait(&c11_cv, &c11_m);
                CHECK(rc == thrd_success || rc == thrd_timedout);
                if (rc == thrd_timedout)
                    ts = in_ms(1000);
            }
        }
        CHECK(mtx_unlock(&c11_m) == thrd_success);
    }
    mtx_lock(&c11_m);
    c11_turn = -1; /* nobody waits for anybody any more */
    cnd_broadcast(&c11_cv);
    mtx_unlock(&c11_m);
    return 0;
}

static int t_c11(void) {
    CHECK(mtx_init(&c11_m, mtx_plain | mtx_timed) == thrd_success);
    CHECK(cnd_init(&c11_cv) == thrd_success);
    /* the answers, alone */
    CHECK(mtx_lock(&c11_m) == thrd_success);
    CHECK(mtx_trylock(&c11_m) == thrd_busy);
    struct timespec ts = in_ms(20);
    CHECK(mtx_timedlock(&c11_m, &ts) == thrd_timedout);          /* held (by us): waits it out */
    CHECK(cnd_timedwait(&c11_cv, &c11_m, &ts) == thrd_timedout); /* (the time is past) */
    CHECK(mtx_unlock(&c11_m) == thrd_success);
    mtx_t rec;
    CHECK(mtx_init(&rec, mtx_plain | mtx_recursive) == thrd_success);
    CHECK(mtx_lock(&rec) == thrd_success);
    CHECK(mtx_trylock(&rec) == thrd_success);
    CHECK(mtx_unlock(&rec) == thrd_success);
    CHECK(mtx_unlock(&rec) == thrd_success);
    mtx_destroy(&rec);
    /* the counter */
    thrd_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK(thrd_create(&th[i], c11_worker, (void *)(intptr_t)i) == thrd_success);
    for (int i = 0; i < 2; i++)
        CHECK(thrd_join(th[i], NULL) == thrd_success);
    printf("c11: counted %ld, expected %d\n", c11_counter, 2 * C11_ITERS);
    CHECK(c11_counter == 2 * C11_ITERS);
    mtx_destroy(&c11_m);
    cnd_destroy(&c11_cv);
    return 0;
}

/* ------------------------------------------------------------------ stats */

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long stats_value;

__attribute__((noinline)) void stats_lock_many(int n) {
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&stats_lock);
        stats_value++;
        pthread_mutex_unlock(&stats_lock);
    }
}

static int t_stats(void) {
    stats_lock_many(1000);
    printf("stats: mutex %p locked %ld times\n", (void *)&stats_lock, stats_value);
    return 0;
}

/* ------------------------------------------------------------------ bench */

static int t_bench(long n) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    struct timespec t0, t1;
    for (int rep = 0; rep < 3; rep++) {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (long i = 0; i < n; i++) {
            pthread_mutex_lock(&m);
            __asm__ __volatile__("" ::: "memory");
            pthread_mutex_unlock(&m);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
        printf("bench: %.2f ns per lock+unlock (%s)\n", ns / (double)n,
               dlsym(RTLD_DEFAULT, "_txkit_mutex_lock") ? "preloaded" : "plain");
    }
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(
            stderr,
            "usage: %s "
            "condvar|timedlock|fork|fork-first|unlock-unlocked|kinds|torture|c11|stats|bench [N]\n",
            argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "fork-first") == 0) /* before anything else runs */
        return t_fork_first();
    if (strcmp(mode, "bench") == 0)
        return t_bench(argc > 2 ? atol(argv[2]) : 10000000);
    check_preloaded();
    if (strcmp(mode, "condvar") == 0)
        return t_condvar();
    if (strcmp(mode, "timedlock") == 0)
        return t_timedlock();
    if (strcmp(mode, "fork") == 0)
        return t_fork();
    if (strcmp(mode, "unlock-unlocked") == 0)
        return t_unlock_unlocked();
    if (strcmp(mode, "kinds") == 0)
        return t_kinds();
    if (strcmp(mode, "torture") == 0)
        return t_torture();
    if (strcmp(mode, "stats") == 0)
        return t_stats();
    if (strcmp(mode, "c11") == 0)
        return t_c11();
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
