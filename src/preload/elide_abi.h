/* SPDX-License-Identifier: MIT */
/* elide_abi.h - the private interface between the preload library
 * (preload/preload.c, the interposers) and libtxkit (cx/elide.c, the
 * decisions). Both sides include this header. Exported by libtxkit under
 * libtxkit.map, not a public API: the two libraries ship together. */
#ifndef TK_ELIDE_ABI_H
#define TK_ELIDE_ABI_H

#include <pthread.h>
#include <time.h>

/* glibc 2.36 pthread_mutex_t, x86-64 (sysdeps/x86/nptl/bits/struct_mutex.h):
 * __data.__kind, the type in bits 0-1 (normal 0, recursive 1, errorcheck 2,
 * adaptive 3), robust 16, PI 32, PP 64. Read by libtxkit's hooks (cx/elide.c:
 * what it elides; cx/lockprof.c: what it may try first). */
#define TK_MUTEX_KIND_NONDEFAULT 0x7f   /* any bit: not a default mutex */
#define TK_MUTEX_KIND_ROBUST_PI_PP 0x70 /* robust, PI or PP */
static inline int tk_mutex_kind(const pthread_mutex_t *m) {
    return __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
}

/* The real glibc functions, found by the preload library (dlsym RTLD_NEXT). */
typedef int (*tk_mutex_fn)(pthread_mutex_t *);
typedef int (*tk_timedlock_fn)(pthread_mutex_t *, const struct timespec *);
typedef int (*tk_condwait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*tk_condtimedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*tk_clocklock_fn)(pthread_mutex_t *, clockid_t, const struct timespec *);
typedef int (*tk_condclockwait_fn)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
                                   const struct timespec *);

/* Each runs the section of mutex m elided or calls real (any thread; caller:
 * the return address of the interposer, to tell libtxkit's own calls apart). */
int _txkit_mutex_lock(pthread_mutex_t *m, tk_mutex_fn real, void *caller);
int _txkit_mutex_trylock(pthread_mutex_t *m, tk_mutex_fn real, void *caller);
/* A timed acquisition (pthread_mutex_timedlock, pthread_mutex_clocklock):
 * _txkit_mutex_timed_enter fills w, the interposer calls the real function,
 * and _txkit_mutex_timed_exit counts what it returned and returns it. Such
 * an acquisition is never elided (it may have to sleep). */
enum { TK_TIMED_SELF, TK_TIMED_PLAIN, TK_TIMED_ELIDABLE };
struct tk_timed {
    int how;   /* TK_TIMED_*: libtxkit's own lock, not elidable, elidable */
    void *ent; /* elide.c's entry of the mutex (TK_TIMED_ELIDABLE), or NULL */
};
void _txkit_mutex_timed_enter(pthread_mutex_t *m, void *caller, struct tk_timed *w);
int _txkit_mutex_timed_exit(pthread_mutex_t *m, void *caller, const struct tk_timed *w, int rc);
int _txkit_mutex_unlock(pthread_mutex_t *m, tk_mutex_fn real, void *caller);
/* A condition wait on m (pthread_cond_wait, _timedwait, _clockwait):
 * lp = _txkit_cond_enter(m), the real call, then
 * _txkit_cond_exit(m, lp, its answer), which returns that answer. */
int _txkit_cond_enter(pthread_mutex_t *m);
int _txkit_cond_exit(pthread_mutex_t *m, int lp, int rc);
/* TXKIT_ELIDE_STATS report at exit (the preload library's destructor). */
void _txkit_elide_report(void);

/* The lock report (cx/lockprof.c, on with TXKIT_LOCK_REPORT): rwlocks and
 * spinlocks go through these when it is on, straight to real otherwise; try_fn
 * is the non-blocking variant of real. write: a write lock. */
typedef int (*tk_rwlock_fn)(pthread_rwlock_t *);
typedef int (*tk_rwlock_timed_fn)(pthread_rwlock_t *, const struct timespec *);
typedef int (*tk_rwlock_clock_fn)(pthread_rwlock_t *, clockid_t, const struct timespec *);
typedef int (*tk_spin_fn)(pthread_spinlock_t *);
int _txkit_rwlock_lock(pthread_rwlock_t *l, int write, tk_rwlock_fn try_fn, tk_rwlock_fn real,
                       void *caller);
/* A try, timed or clocked acquisition made by the interposer: rc is what the
 * real function returned (0: taken); returns rc. */
int _txkit_rwlock_got(pthread_rwlock_t *l, int write, int rc, void *caller);
int _txkit_rwlock_unlock(pthread_rwlock_t *l, tk_rwlock_fn real, void *caller);
int _txkit_spin_lock(pthread_spinlock_t *l, tk_spin_fn try_fn, tk_spin_fn real, void *caller);
int _txkit_spin_trylock(pthread_spinlock_t *l, tk_spin_fn real, void *caller);
int _txkit_spin_unlock(pthread_spinlock_t *l, tk_spin_fn real, void *caller);
/* The real pthread_mutex_trylock, for the report's contention test. */
void _txkit_lp_set_mutex_trylock(tk_mutex_fn f);
/* Write the raw lock report now (the preload library's destructor). */
void _txkit_lock_report(void);

/* libtxkit-internal (cx/lockprof.c for cx/elide.c). */
extern int tk_lp_on __attribute__((visibility("hidden")));
/* inside: also count the hold (when sampled) in the threads inside m's
 * sections (an elidable mutex on RTM). Any thread. */
int tk_lp_mutex_lock(pthread_mutex_t *m, tk_mutex_fn real, void *caller, int inside)
    __attribute__((visibility("hidden")));
void tk_lp_mutex_taken(pthread_mutex_t *m, void *caller, int inside)
    __attribute__((visibility("hidden")));
void tk_lp_release(const void *lock) __attribute__((visibility("hidden")));
/* A lock given up (tk_lp_release) that in fact stayed held: held again, not
 * counted as an acquisition, its hold no longer timed. Any thread. */
void tk_lp_kept(const void *lock) __attribute__((visibility("hidden")));
void tk_lp_elided(pthread_mutex_t *m, void *caller) __attribute__((visibility("hidden")));
/* A thread tries to elide m's section (RTM machines): counted among the
 * threads inside when sampled (returns 1; then tk_lp_section_exit at its
 * end or when it waits for the real lock instead), else 0. Any thread. */
int tk_lp_section_enter(pthread_mutex_t *m) __attribute__((visibility("hidden")));
void tk_lp_section_exit(pthread_mutex_t *m) __attribute__((visibility("hidden")));


#endif /* TK_ELIDE_ABI_H */
