/* SPDX-License-Identifier: MIT */
/* preload.c - libtxkit-preload.so: elides the pthread mutexes of an
 * unmodified program (LD_PRELOAD=.../libtxkit-preload.so, or `txkit run`).
 *
 * Only the interposers live here: each finds the real glibc function with
 * dlsym(RTLD_NEXT) and hands it to libtxkit's hook (src/cx/elide.c), which
 * decides whether the section runs as a hardware transaction or calls the
 * real function. pthread_cond_wait/timedwait have two versions in glibc; we
 * stand in for the current one (GLIBC_2.3.2) and call exactly that one. The
 * calls that may sleep with a deadline (timedlock, clocklock, the condition
 * waits, the rwlocks' timed and clocked ones) are made here, between
 * libtxkit's hook before and its hook after.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <threads.h>
#include <time.h>

#include "preload/elide_abi.h" /* libtxkit's side of the interposers */

typedef tk_mutex_fn mutex_fn;
typedef tk_timedlock_fn timedlock_fn;
typedef tk_condwait_fn condwait_fn;
typedef tk_condtimedwait_fn condtimedwait_fn;

static mutex_fn real_lock, real_trylock, real_unlock;
static timedlock_fn real_timedlock;
static tk_clocklock_fn real_clocklock;
static condwait_fn real_cond_wait;
static condtimedwait_fn real_cond_timedwait;
static tk_condclockwait_fn real_cond_clockwait;
static tk_rwlock_fn real_rdlock, real_wrlock, real_tryrdlock, real_trywrlock, real_rwunlock;
static tk_rwlock_timed_fn real_timedrdlock, real_timedwrlock;
static tk_rwlock_clock_fn real_clockrdlock, real_clockwrlock;
static tk_spin_fn real_spin_lock, real_spin_trylock, real_spin_unlock;

static void *need(void *p, const char *name) {
    if (!p) {
        fprintf(stderr, "libtxkit-preload: cannot find the real %s\n", name);
        abort();
    }
    return p;
}

/* Resolved before main (and again, idempotently, by a call that comes first,
 * e.g. from another library's constructor). */
__attribute__((constructor(101))) static void resolve(void) {
    real_lock = (mutex_fn)need(dlsym(RTLD_NEXT, "pthread_mutex_lock"), "pthread_mutex_lock");
    real_trylock =
        (mutex_fn)need(dlsym(RTLD_NEXT, "pthread_mutex_trylock"), "pthread_mutex_trylock");
    real_unlock = (mutex_fn)need(dlsym(RTLD_NEXT, "pthread_mutex_unlock"), "pthread_mutex_unlock");
    real_timedlock =
        (timedlock_fn)need(dlsym(RTLD_NEXT, "pthread_mutex_timedlock"), "pthread_mutex_timedlock");
    real_clocklock = (tk_clocklock_fn)need(dlsym(RTLD_NEXT, "pthread_mutex_clocklock"),
                                           "pthread_mutex_clocklock");
    real_cond_wait = (condwait_fn)need(dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.3.2"),
                                       "pthread_cond_wait@GLIBC_2.3.2");
    real_cond_timedwait =
        (condtimedwait_fn)need(dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2"),
                               "pthread_cond_timedwait@GLIBC_2.3.2");
    real_cond_clockwait = (tk_condclockwait_fn)need(dlsym(RTLD_NEXT, "pthread_cond_clockwait"),
                                                    "pthread_cond_clockwait");
    real_rdlock =
        (tk_rwlock_fn)need(dlsym(RTLD_NEXT, "pthread_rwlock_rdlock"), "pthread_rwlock_rdlock");
    real_wrlock =
        (tk_rwlock_fn)need(dlsym(RTLD_NEXT, "pthread_rwlock_wrlock"), "pthread_rwlock_wrlock");
    real_tryrdlock = (tk_rwlock_fn)need(dlsym(RTLD_NEXT, "pthread_rwlock_tryrdlock"),
                                        "pthread_rwlock_tryrdlock");
    real_trywrlock = (tk_rwlock_fn)need(dlsym(RTLD_NEXT, "pthread_rwlock_trywrlock"),
                                        "pthread_rwlock_trywrlock");
    real_rwunlock =
        (tk_rwlock_fn)need(dlsym(RTLD_NEXT, "pthread_rwlock_unlock"), "pthread_rwlock_unlock");
    real_timedrdlock = (tk_rwlock_timed_fn)need(dlsym(RTLD_NEXT, "pthread_rwlock_timedrdlock"),
                                                "pthread_rwlock_timedrdlock");
    real_timedwrlock = (tk_rwlock_timed_fn)need(dlsym(RTLD_NEXT, "pthread_rwlock_timedwrlock"),
                                                "pthread_rwlock_timedwrlock");
    real_clockrdlock = (tk_rwlock_clock_fn)need(dlsym(RTLD_NEXT, "pthread_rwlock_clockrdlock"),
                                                "pthread_rwlock_clockrdlock");
    real_clockwrlock = (tk_rwlock_clock_fn)need(dlsym(RTLD_NEXT, "pthread_rwlock_clockwrlock"),
                                                "pthread_rwlock_clockwrlock");
    real_spin_lock = (tk_spin_fn)need(dlsym(RTLD_NEXT, "pthread_spin_lock"), "pthread_spin_lock");
    real_spin_trylock =
        (tk_spin_fn)need(dlsym(RTLD_NEXT, "pthread_spin_trylock"), "pthread_spin_trylock");
    real_spin_unlock =
        (tk_spin_fn)need(dlsym(RTLD_NEXT, "pthread_spin_unlock"), "pthread_spin_unlock");
    _txkit_lp_set_mutex_trylock(real_trylock);
}

#define READY(p)                                                           \
    do {                                                                   \
        if (__builtin_expect(!__atomic_load_n(&(p), __ATOMIC_RELAXED), 0)) \
            resolve();                                                     \
    } while (0)

__attribute__((destructor)) static void report(void) {
    _txkit_elide_report();
    _txkit_lock_report();
}

int pthread_mutex_lock(pthread_mutex_t *m) {
    READY(real_lock);
    return _txkit_mutex_lock(m, real_lock, __builtin_return_address(0));
}

int pthread_mutex_trylock(pthread_mutex_t *m) {
    READY(real_trylock);
    return _txkit_mutex_trylock(m, real_trylock, __builtin_return_address(0));
}

/* The timed acquisitions: libtxkit before and after the real call. */
int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime) {
    READY(real_timedlock);
    void *caller = __builtin_return_address(0);
    struct tk_timed w;
    _txkit_mutex_timed_enter(m, caller, &w);
    return _txkit_mutex_timed_exit(m, caller, &w, real_timedlock(m, abstime));
}

int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *abstime) {
    READY(real_clocklock);
    void *caller = __builtin_return_address(0);
    struct tk_timed w;
    _txkit_mutex_timed_enter(m, caller, &w);
    return _txkit_mutex_timed_exit(m, caller, &w, real_clocklock(m, clk, abstime));
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
    READY(real_unlock);
    return _txkit_mutex_unlock(m, real_unlock, __builtin_return_address(0));
}

/* The condition waits: libtxkit before and after the real call. */
int pthread_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m) {
    READY(real_cond_wait);
    int lp = _txkit_cond_enter(m);
    return _txkit_cond_exit(m, lp, real_cond_wait(cv, m));
}

int pthread_cond_timedwait(pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *abstime) {
    READY(real_cond_timedwait);
    int lp = _txkit_cond_enter(m);
    return _txkit_cond_exit(m, lp, real_cond_timedwait(cv, m, abstime));
}

int pthread_cond_clockwait(pthread_cond_t *cv, pthread_mutex_t *m, clockid_t clk,
                           const struct timespec *abstime) {
    READY(real_cond_clockwait);
    int lp = _txkit_cond_enter(m);
    return _txkit_cond_exit(m, lp, real_cond_clockwait(cv, m, clk, abstime));
}

/* rwlocks and spinlocks: only the lock report (txkit run --report) looks at
 * them; libtxkit calls real straight away when it is off. */
int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
    READY(real_rdlock);
    return _txkit_rwlock_lock(l, 0, real_tryrdlock, real_rdlock, __builtin_return_address(0));
}

int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
    READY(real_wrlock);
    return _txkit_rwlock_lock(l, 1, real_trywrlock, real_wrlock, __builtin_return_address(0));
}

/* try, timed and clocked: the real call, then libtxkit counts what it got */
int pthread_rwlock_tryrdlock(pthread_rwlock_t *l) {
    READY(real_tryrdlock);
    return _txkit_rwlock_got(l, 0, real_tryrdlock(l), __builtin_return_address(0));
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *l) {
    READY(real_trywrlock);
    return _txkit_rwlock_got(l, 1, real_trywrlock(l), __builtin_return_address(0));
}

int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime) {
    READY(real_timedrdlock);
    return _txkit_rwlock_got(l, 0, real_timedrdlock(l, abstime), __builtin_return_address(0));
}

int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime) {
    READY(real_timedwrlock);
    return _txkit_rwlock_got(l, 1, real_timedwrlock(l, abstime), __builtin_return_address(0));
}

int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clk, const struct timespec *abstime) {
    READY(real_clockrdlock);
    return _txkit_rwlock_got(l, 0, real_clockrdlock(l, clk, abstime), __builtin_return_address(0));
}

int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clk, const struct timespec *abstime) {
    READY(real_clockwrlock);
    return _txkit_rwlock_got(l, 1, real_clockwrlock(l, clk, abstime), __builtin_return_address(0));
}

int pthread_rwlock_unlock(pthread_rwlock_t *l) {
    READY(real_rwunlock);
    return _txkit_rwlock_unlock(l, real_rwunlock, __builtin_return_address(0));
}

int pthread_spin_lock(pthread_spinlock_t *l) {
    READY(real_spin_lock);
    return _txkit_spin_lock(l, real_spin_trylock, real_spin_lock, __builtin_return_address(0));
}

int pthread_spin_trylock(pthread_spinlock_t *l) {
    READY(real_spin_trylock);
    return _txkit_spin_trylock(l, real_spin_trylock, __builtin_return_address(0));
}

int pthread_spin_unlock(pthread_spinlock_t *l) {
    READY(real_spin_unlock);
    return _txkit_spin_unlock(l, real_spin_unlock, __builtin_return_address(0));
}

/* C11 threads: glibc's mtx_t and cnd_t are its pthread mutex and condition
 * (mtx_init makes a default mutex, or a recursive one), and its mtx_* and
 * cnd_* call the pthread functions inside libc, where no interposer sees
 * them. So these stand in for them: the same hooks as the pthread calls, and
 * the answer in C11's terms. */
static int thrd_answer(int rc) {
    switch (rc) {
    case 0:
        return thrd_success;
    case EBUSY:
        return thrd_busy;
    case ETIMEDOUT:
        return thrd_timedout;
    case ENOMEM:
        return thrd_nomem;
    default:
        return thrd_error;
    }
}

int mtx_lock(mtx_t *m) {
    READY(real_lock);
    return thrd_answer(
        _txkit_mutex_lock((pthread_mutex_t *)m, real_lock, __builtin_return_address(0)));
}

int mtx_trylock(mtx_t *m) {
    READY(real_trylock);
    return thrd_answer(
        _txkit_mutex_trylock((pthread_mutex_t *)m, real_trylock, __builtin_return_address(0)));
}

int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict abstime) {
    READY(real_timedlock);
    pthread_mutex_t *pm = (pthread_mutex_t *)m;
    void *caller = __builtin_return_address(0);
    struct tk_timed w;
    _txkit_mutex_timed_enter(pm, caller, &w);
    return thrd_answer(_txkit_mutex_timed_exit(pm, caller, &w, real_timedlock(pm, abstime)));
}

int mtx_unlock(mtx_t *m) {
    READY(real_unlock);
    return thrd_answer(
        _txkit_mutex_unlock((pthread_mutex_t *)m, real_unlock, __builtin_return_address(0)));
}

int cnd_wait(cnd_t *cv, mtx_t *m) {
    READY(real_cond_wait);
    pthread_mutex_t *pm = (pthread_mutex_t *)m;
    int lp = _txkit_cond_enter(pm);
    return thrd_answer(_txkit_cond_exit(pm, lp, real_cond_wait((pthread_cond_t *)cv, pm)));
}

int cnd_timedwait(cnd_t *restrict cv, mtx_t *restrict m, const struct timespec *restrict abstime) {
    READY(real_cond_timedwait);
    pthread_mutex_t *pm = (pthread_mutex_t *)m;
    int lp = _txkit_cond_enter(pm);
    return thrd_answer(
        _txkit_cond_exit(pm, lp, real_cond_timedwait((pthread_cond_t *)cv, pm, abstime)));
}
