/* SPDX-License-Identifier: MIT */
/* elide.c - eliding the pthread mutexes of an unmodified program.
 *
 * The LD_PRELOAD library libtxkit-preload.so (src/preload/preload.c) defines
 * pthread_mutex_lock & co. and calls the _txkit_mutex_* hooks here with the
 * real (glibc) function. A default-type mutex section runs like a cx
 * optimistic section: an RTM transaction that has read the mutex's lock word
 * (glibc's __data.__lock) and found it 0. The fallback is the real
 * pthread_mutex_lock, whose write of the lock word aborts every section
 * speculating on it. Threads that find the mutex held wait outside any
 * transaction, then try again. Recursive, errorcheck, adaptive, robust, PI
 * and PP mutexes go straight to the real functions (exact glibc semantics).
 *
 * glibc 2.36, x86-64: __data.__lock is the int at offset 0, __data.__kind the
 * int at offset 16; type in bits 0-1 (normal 0, recursive 1, errorcheck 2,
 * adaptive 3), robust 16, PI 32, PP 64 (bit 128 is process-shared, 256/512
 * glibc's own elision hints: both fine to elide). Default = kind & 0x7f == 0.
 *
 * Per-mutex state (statistics site, adaptive skip counter, window) lives in
 * a fixed open-addressing table keyed by the mutex address, not in glibc's
 * __data.__elision: that field belongs to glibc when its own elision is on
 * (GLIBC_TUNABLES=glibc.elision.enable=1), and the table needs no knowledge
 * of it. Entries are never removed: a destroyed mutex whose memory is reused
 * for another mutex shares its statistics. When the table (4096 mutexes) or
 * the site table (TKS_MAX_SITES) is full, further mutexes are elided all the
 * same but not counted.
 *
 * Calls made by libtxkit itself (its own internal mutexes, which the preload
 * interposes too) go straight to the real functions: the statistics code
 * takes mutexes, and thread exit must not re-attach a statistics slot.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <time.h>

#include "cx/section.h"
#include "cx/self.h"
#include "preload/elide_abi.h"
#include "runtime/internal.h"


struct tks_counters *tk_seg_row(unsigned slot) TK_HIDDEN; /* stats/segment.c */

/* glibc 2.36 pthread_mutex_t, x86-64 (sysdeps/x86/nptl/bits/struct_mutex.h;
 * __kind: preload/elide_abi.h) */
static inline int mutex_word(const pthread_mutex_t *m) {
    return *(const volatile int *)&m->__data.__lock;
}
static inline bool elidable(const pthread_mutex_t *m) {
    return (tk_mutex_kind(m) & TK_MUTEX_KIND_NONDEFAULT) == 0;
}

/* Policy: cx_policy_default (tries, adaptation window), plus waiting: */
#define EL_WAIT_SPINS 2000u /* spins outside a transaction for a held mutex ... */
#define EL_BUSY_TRIES 16u   /* ... and how often, before sleeping in the real lock */
#define EL_MAX_NESTED 8u
#define EL_MAX_INNER 8u /* distinct inner mutexes a section counts (more: exclusive) */

/* ------------------------------------------------------ per-mutex table */

#define EL_TAB_BITS 12
#define EL_TAB_SIZE (1u << EL_TAB_BITS)
#define EL_PROBES 32u
#define EL_NOSITE UINT32_MAX /* no statistics for this mutex (sites full) */

struct el_ent {
    uintptr_t key;         /* mutex address, 0 = free slot */
    uint32_t site;         /* site index + 1; 0 while being registered; EL_NOSITE */
    uint32_t skip;         /* entries left without trying optimistically */
    uint32_t win_n, win_x; /* adaptation window: entries, exclusive ones */
};
static struct el_ent tab[EL_TAB_SIZE];
/* "symbol+0x1c (object)" of the first acquisition, per statistics site. */
static char site_names[TKS_MAX_SITES][112];


/* Per-thread elision state: the flattened optimistic section. */
struct el_tls {
    unsigned depth;                       /* elided mutexes held (0: none) */
    pthread_mutex_t *held[EL_MAX_NESTED]; /* which (in a section) */
    struct el_ent *ent;                   /* the outermost one's entry */
    pthread_mutex_t *outer;               /* ... and the mutex (the lock report) */
    bool lp_in;                           /* ... counted among its threads inside */
    void *lp_caller;                      /* ... and who took it (the lock report) */
    struct tks_counters *cnt;             /* ... and its counters */
    unsigned tries;
    /* Inner mutexes taken inside the section, counted after it commits
     * (their entries are not looked up in hardware: that may register a
     * site). ninner distinct ones, inner_n[i] acquisitions of each. */
    unsigned ninner;
    pthread_mutex_t *inner[EL_MAX_INNER];
    void *inner_caller[EL_MAX_INNER];
    unsigned inner_n[EL_MAX_INNER];
    unsigned backoff; /* the backoff base after conflicts, ns (section.h) */
    /* The mutex this thread entered last, its entry and counters, and the
     * statistics row these are in: most code takes one lock again and again,
     * and the table and the site cost more than glibc's lock itself. */
    pthread_mutex_t *last_m;
    struct el_ent *last_e;
    struct tks_counters *last_c, *last_row;
};
static __thread struct el_tls el;

static void name_site(char *buf, size_t len, void *caller) {
    Dl_info info;
    if (caller && dladdr(caller, &info) && info.dli_fname) {
        const char *obj = strrchr(info.dli_fname, '/');
        obj = obj ? obj + 1 : info.dli_fname;
        if (info.dli_sname)
            snprintf(buf, len, "%s+%#lx (%s)", info.dli_sname,
                     (unsigned long)((uintptr_t)caller - (uintptr_t)info.dli_saddr), obj);
        else
            snprintf(buf, len, "%#lx (%s)",
                     (unsigned long)((uintptr_t)caller - (uintptr_t)info.dli_fbase), obj);
    } else {
        snprintf(buf, len, "?");
    }
}

static void register_site(struct el_ent *e, pthread_mutex_t *m, void *caller) {
    Dl_info info;
    char func[80] = "?";
    const char *file = "?";
    if (caller && dladdr(caller, &info) && info.dli_fname) {
        file = info.dli_fname;
        if (info.dli_sname)
            snprintf(func, sizeof func, "%s+%#lx", info.dli_sname,
                     (unsigned long)((uintptr_t)caller - (uintptr_t)info.dli_saddr));
        else
            snprintf(func, sizeof func, "%#lx",
                     (unsigned long)((uintptr_t)caller - (uintptr_t)info.dli_fbase));
    }
    unsigned idx = tk_seg_site_register(TKS_SITE_LOCK, (uint64_t)(uintptr_t)m, file, func, 0);
    uint32_t s = EL_NOSITE;
    if (idx != TKS_SITE_OTHER && idx != TKS_SITE_OTHER_LOCKS && idx < TKS_MAX_SITES) {
        name_site(site_names[idx], sizeof site_names[idx], caller);
        s = idx + 1;
    }
    __atomic_store_n(&e->site, s, __ATOMIC_RELEASE);
}

/* The mutex's entry, made (and its site registered) at its first lock; NULL
 * when the table is full around its slot. */
static struct el_ent *lookup(pthread_mutex_t *m, void *caller) {
    uintptr_t k = (uintptr_t)m;
    unsigned h = (unsigned)((k * 0x9e3779b97f4a7c15ull) >> (64 - EL_TAB_BITS));
    for (unsigned i = 0; i < EL_PROBES; i++, h = (h + 1) & (EL_TAB_SIZE - 1)) {
        uintptr_t cur = __atomic_load_n(&tab[h].key, __ATOMIC_ACQUIRE);
        if (TXKIT_LIKELY(cur == k))
            return &tab[h];
        if (cur == 0) {
            if (__atomic_compare_exchange_n(&tab[h].key, &cur, k, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                tk_self_enter(); /* dladdr, the segment: locks they take are glibc's */
                register_site(&tab[h], m, caller);
                tk_self_exit();
                return &tab[h];
            }
            if (cur == k)
                return &tab[h];
        }
    }
    return NULL;
}

/* This thread's counters for the entry, NULL when not counted. */
static struct tks_counters *counters_of(struct el_ent *e) {
    if (!e || TXKIT_UNLIKELY(tk_cfg.stats_off))
        return NULL;
    uint32_t s = __atomic_load_n(&e->site, __ATOMIC_ACQUIRE);
    /* Another thread is registering it (the first registration also makes
     * the segment): wait, so that no entry goes uncounted. */
    for (unsigned steps = 0; TXKIT_UNLIKELY(s == 0);) {
        tk_wait_step(&steps, 0);
        s = __atomic_load_n(&e->site, __ATOMIC_ACQUIRE);
    }
    if (s == EL_NOSITE)
        return NULL;
    tk_thread *t = tk_cur;
    if (TXKIT_UNLIKELY(!t || !t->slot)) { /* a new descriptor, a slot: they allocate */
        tk_self_enter();
        t = tk_self();
        if (!t->slot)
            tk_seg_thread_attach(t);
        tk_self_exit();
    }
    return t->row + (s - 1);
}

/* A section that ran (or runs) holding the mutex for real. At its first try
 * (no hardware attempt aborted: every section without RTM), one add: a serial
 * commit at the first attempt, which readers fold into transactions, serial
 * commits and retries_hist[0] (stats/format.h: solo_commits). */
static inline void count_exclusive(struct tks_counters *c, unsigned tries) {
    if (!c)
        return;
    if (TXKIT_LIKELY(tries == 0)) {
        TK_COUNT(c->solo_commits, 1);
        return;
    }
    tk_thread *t = tk_cur;
    tk_stats_open(t);
    TK_COUNT(c->transactions, 1);
    TK_COUNT(c->commits[TXKIT_SERIAL], 1);
    TK_COUNT(c->retries_hist[tries < 3 ? tries : 3], 1);
    tk_stats_close(t);
}

/* n sections that committed in hardware after tries aborted attempts each. */
static void count_optimistic(struct tks_counters *c, unsigned tries, unsigned n) {
    if (!c)
        return;
    tk_thread *t = tk_cur;
    tk_stats_open(t);
    TK_COUNT(c->transactions, n);
    TK_COUNT(c->commits[TXKIT_HTM], n);
    TK_COUNT(c->retries_hist[tries < 3 ? tries : 3], n);
    tk_stats_close(t);
}


/* ------------------------------------------------------ adaptive policy */

/* Has the process only one thread (glibc's __libc_single_threaded: true
 * until its first pthread_create)? Then nobody contends for a mutex, and the
 * real lock costs less than XBEGIN/XEND: a single-threaded program under
 * `txkit run` on a Xeon, lock + unlock of one mutex, 29 ns elided, 7.5 ns
 * taken. Taking a mutex for real is right at any time (elided sections of
 * other threads read its word, so they abort), so a stale answer costs speed
 * only. Any thread, any time. */
static inline bool lone_process(void) { return __libc_single_threaded != 0; }

static bool try_optimistic(struct el_ent *e) {
    return e && _txkit_tls.depth == 0 && !lone_process() && tk_section_try(&e->skip);
}

/* A mutex follows cx's default adaptive policy. */
static void adapt(struct el_ent *e, int ended_exclusive) {
    if (e)
        tk_section_adapt(&e->win_n, &e->win_x, &e->skip, &cx_policy_default, ended_exclusive);
}

/* ------------------------------------------------------- hardware sections */

__attribute__((noinline)) TK_RTM_FN static unsigned spec_begin(pthread_mutex_t *m) {
    unsigned status = tk_xbegin();
    if (status == TK_XSTARTED) {
        if (mutex_word(m) != 0)
            TK_XABORT(TK_XCODE_SECTION_BUSY);
    }
    return status;
}


/* Wait, outside any transaction, for the mutex to look free; false if it
 * stays held (then sleeping in the real lock is better). */
static bool wait_free(const pthread_mutex_t *m) {
    for (unsigned spins = 0; mutex_word(m) != 0; spins++) {
        if (spins >= EL_WAIT_SPINS)
            return false;
        tk_cpu_relax();
    }
    return true;
}

/* Try to run the section in hardware: true when it runs (el is set up). */
static bool elide(pthread_mutex_t *m, struct el_ent *e, struct tks_counters *c, unsigned *tries) {
    unsigned busy = 0;
    *tries = 0;
    for (;;) {
        if (!wait_free(m))
            return false;
        unsigned status = spec_begin(m);
        if (status == TK_XSTARTED) {
            el.depth = 1;
            el.held[0] = m;
            el.outer = m;
            el.ent = e;
            el.cnt = c;
            el.tries = *tries;
            el.ninner = 0;
            return true; /* the section runs in hardware */
        }
        int hopeless;
        int cause = tk_section_classify(status, &hopeless);
        if (cause == TXKIT_CAUSE_LOCKED) { /* held for real: wait outside, again */
            tk_section_count_abort(c, cause, busy + 1 >= EL_BUSY_TRIES);
            if (++busy >= EL_BUSY_TRIES)
                return false;
            continue;
        }
        ++*tries;
        bool give_up = hopeless || *tries >= cx_policy_default.htm_tries;
        tk_section_count_abort(c, cause, give_up);
        if (give_up)
            return false;
        if (cause == TXKIT_CAUSE_CONFLICT)
            tk_section_backoff(&el.backoff, *tries, tk_rand(tk_self()));
    }
}

/* The runtime's own locking never goes through elision (cx/self.h). */
static inline bool from_self(void *caller, const pthread_mutex_t *m) {
    return tk_from_self(caller, m);
}

/* The lock report on an RTM machine: threads inside an elidable mutex's
 * sections at once (trying to elide, elided, or holding it; not those that
 * wait for the real lock), counted outside any transaction. */
static inline bool lp_inside(void) { return TXKIT_UNLIKELY(tk_lp_on) && tk_g.hybrid; }

/* The real lock, through the lock report when it is on (inside: the hold
 * counts among the threads inside m's sections). */
static inline int lock_real(pthread_mutex_t *m, tk_mutex_fn real, void *caller, bool inside) {
    return TXKIT_UNLIKELY(tk_lp_on) ? tk_lp_mutex_lock(m, real, caller, inside) : real(m);
}

/* The lock report: m was taken for real without the profiled lock path
 * (trylock, timedlock, back from a condition wait; caller NULL: unknown), or
 * is given up (unlock, into a condition wait). */
static inline void lp_taken(pthread_mutex_t *m, void *caller) {
    if (TXKIT_LIKELY(!tk_lp_on))
        return;
    tk_lp_mutex_taken(m, caller, tk_g.hybrid && elidable(m));
}
static inline void lp_given_up(pthread_mutex_t *m) {
    tk_lp_release(m); /* before the real unlock: the hold ends when others may take it */
}

static void fork_child(void) {
    /* The child has a fresh statistics segment: its sites are new too. */
    memset(tab, 0, sizeof tab);
    el.last_m = NULL;
}

static int elide_has_mutex(uint64_t key);

__attribute__((constructor(101))) static void elide_init(void) {
    tk_lock_reported_elsewhere = elide_has_mutex;
    pthread_atfork(NULL, NULL, fork_child);
}

/* ------------------------------------------------------------- the hooks */

/* Is m the last mutex this thread looked up, el.last_e and el.last_c its
 * entry and counters in the thread's current row? */
static inline bool last_mutex_is(const pthread_mutex_t *m) {
    tk_thread *t = tk_cur;
    return TXKIT_LIKELY(el.last_m == m) && t && el.last_row == t->row;
}

/* The entry of pthread_mutex_lock: true when elided; otherwise the caller
 * locks for real and counts it in cnt, with tries hardware attempts. */
static bool enter_elided(pthread_mutex_t *m, void *caller, struct el_ent **ent,
                         struct tks_counters **cnt, unsigned *tries) {
    *tries = 0;
    if (last_mutex_is(m)) {
        *ent = el.last_e;
        *cnt = el.last_c;
    } else {
        *ent = TXKIT_UNLIKELY(tk_cfg.stats_off) && !tk_g.hybrid ? NULL : lookup(m, caller);
        *cnt = counters_of(*ent);
        tk_thread *t = tk_cur;
        if (*ent && t) {
            el.last_m = m;
            el.last_e = *ent;
            el.last_c = *cnt;
            el.last_row = t->row;
        }
    }
    return try_optimistic(*ent) && elide(m, *ent, *cnt, tries);
}

/* Inside an optimistic section: flatten, or abort it. */
static void nested_lock(pthread_mutex_t *m, void *caller) {
    for (unsigned i = 0; i < el.depth; i++)
        if (el.held[i] == m)
            tk_section_abort_exclusive(); /* relock: let the real mutex decide */
    if (el.depth >= EL_MAX_NESTED)
        tk_section_abort_exclusive();
    if (mutex_word(m) != 0)
        tk_section_abort_busy();
    unsigned k = 0;
    while (k < el.ninner && el.inner[k] != m)
        k++;
    if (k == el.ninner) {
        if (k >= EL_MAX_INNER)
            tk_section_abort_exclusive(); /* more than it can count */
        el.ninner++;
        el.inner[k] = m;
        el.inner_caller[k] = caller;
        el.inner_n[k] = 0;
    }
    el.inner_n[k]++;
    el.held[el.depth++] = m;
}

/* After a section committed: count the inner mutexes it took (each one an
 * acquisition, as if taken for real). */
static void count_inner(void) {
    unsigned n = el.ninner;
    el.ninner = 0;
    if (TXKIT_UNLIKELY(tk_cfg.stats_off))
        return;
    for (unsigned k = 0; k < n; k++)
        count_optimistic(counters_of(lookup(el.inner[k], el.inner_caller[k])), 0, el.inner_n[k]);
}

__attribute__((noinline)) static int mutex_lock_general(pthread_mutex_t *m, tk_mutex_fn real,
                                                        void *caller);

TK_EXPORT int _txkit_mutex_lock(pthread_mutex_t *m, tk_mutex_fn real, void *caller) {
    /* Without RTM (or in a process of one thread: lone_process) and without
     * the lock report, a default mutex that is this thread's last one:
     * counted (before it is taken: a default mutex's lock does not fail) and
     * the real lock called, with no frame of its own; the general path for
     * the rest. No from_self here: only the general path
     * makes a mutex the last one, never for one of libtxkit's or the malloc
     * library's, and counting into the thread's row neither allocates nor
     * locks, so it is safe while tk_in_self is set too (that test cost 1.2 ns
     * per lock+unlock, test_preload bench). */
    if (TXKIT_LIKELY((!tk_g.hybrid || lone_process()) && !tk_lp_on) && elidable(m)) {
        if (TXKIT_UNLIKELY(tk_cfg.stats_off))
            return real(m); /* what the general path comes to */
        if (TXKIT_LIKELY(last_mutex_is(m))) {
            count_exclusive(el.last_c, 0);
            return real(m);
        }
    }
    return mutex_lock_general(m, real, caller);
}

static int mutex_lock_general(pthread_mutex_t *m, tk_mutex_fn real, void *caller) {
    if (from_self(caller, m))
        return real(m);
    if (!elidable(m))
        return lock_real(m, real, caller, false);
    if (el.depth) {
        nested_lock(m, caller);
        return 0;
    }
    struct el_ent *e;
    struct tks_counters *c;
    unsigned tries;
    bool in = lp_inside() && tk_lp_section_enter(m);
    if (enter_elided(m, caller, &e, &c, &tries)) {
        /* (in hardware now: the report counts the section when it commits) */
        el.lp_caller = caller;
        el.lp_in = in;
        return 0;
    }
    if (in) /* waiting for the real lock is not being inside */
        tk_lp_section_exit(m);
    int rc = lock_real(m, real, caller, lp_inside());
    if (rc == 0) {
        count_exclusive(c, tries);
        if (tk_g.hybrid && !lone_process()) /* (alone it did not try: nothing to learn) */
            adapt(e, 1);
    }
    return rc;
}

/* The timed acquisitions (pthread_mutex_timedlock, pthread_mutex_clocklock):
 * never elided, since they may have to sleep, and a section cannot. The
 * preload library makes the real call between the two. */
TK_EXPORT void _txkit_mutex_timed_enter(pthread_mutex_t *m, void *caller, struct tk_timed *w) {
    w->ent = NULL;
    if (from_self(caller, m)) {
        w->how = TK_TIMED_SELF;
        return;
    }
    if (!elidable(m)) {
        w->how = TK_TIMED_PLAIN;
        return;
    }
    if (el.depth)
        tk_section_abort_exclusive(); /* may have to sleep: a section cannot */
    w->how = TK_TIMED_ELIDABLE;
    w->ent = TXKIT_UNLIKELY(tk_cfg.stats_off) ? NULL : lookup(m, caller);
}

TK_EXPORT int _txkit_mutex_timed_exit(pthread_mutex_t *m, void *caller, const struct tk_timed *w,
                                      int rc) {
    if (w->how == TK_TIMED_SELF || (rc != 0 && rc != EOWNERDEAD))
        return rc;
    if (w->how == TK_TIMED_ELIDABLE)
        count_exclusive(counters_of(w->ent), 0);
    lp_taken(m, caller);
    return rc;
}

TK_EXPORT int _txkit_mutex_trylock(pthread_mutex_t *m, tk_mutex_fn real, void *caller) {
    if (from_self(caller, m))
        return real(m);
    if (!elidable(m)) {
        int rc = real(m);
        if (rc == 0)
            lp_taken(m, caller);
        return rc;
    }
    if (el.depth)
        tk_section_abort_exclusive(); /* its EBUSY must be the real mutex's answer */
    struct el_ent *e = TXKIT_UNLIKELY(tk_cfg.stats_off) ? NULL : lookup(m, caller);
    int rc = real(m);
    if (rc == 0) {
        count_exclusive(counters_of(e), 0);
        lp_taken(m, caller);
    }
    return rc;
}

__attribute__((noinline)) static int mutex_unlock_general(pthread_mutex_t *m, tk_mutex_fn real,
                                                          void *caller);

TK_EXPORT int _txkit_mutex_unlock(pthread_mutex_t *m, tk_mutex_fn real, void *caller) {
    /* no section elided and no lock report: the real unlock, with no frame */
    if (TXKIT_LIKELY(el.depth == 0) && TXKIT_LIKELY(!tk_lp_on))
        return real(m); /* also an unlocked mutex: glibc's answer */
    return mutex_unlock_general(m, real, caller);
}

static int mutex_unlock_general(pthread_mutex_t *m, tk_mutex_fn real, void *caller) {
    if (TXKIT_LIKELY(el.depth == 0) || from_self(caller, m) || !elidable(m)) {
        if (TXKIT_UNLIKELY(tk_lp_on) && !from_self(caller, m))
            lp_given_up(m);
        return real(m); /* also an unlocked mutex: glibc's answer */
    }
    unsigned i = el.depth;
    while (i-- > 0)
        if (el.held[i] == m)
            break;
    if (i == UINT32_MAX)
        tk_section_abort_exclusive(); /* not elided by us: redo everything for real */
    el.held[i] = el.held[--el.depth];
    if (el.depth == 0) {
        tk_section_end();
        count_optimistic(el.cnt, el.tries, 1);
        tk_section_backoff_ok(&el.backoff, el.tries);
        if (TXKIT_UNLIKELY(el.ninner))
            count_inner();
        adapt(el.ent, 0);
        if (TXKIT_UNLIKELY(tk_lp_on))
            tk_lp_elided(el.outer, el.lp_caller);
        if (TXKIT_UNLIKELY(el.lp_in)) {
            tk_lp_section_exit(el.outer);
            el.lp_in = false;
        }
        el.ent = NULL;
        el.cnt = NULL;
    }
    return 0;
}

/* A condition wait (pthread_cond_wait, _timedwait, _clockwait; the preload
 * library makes the real call between the two): it gives the mutex up and
 * takes it again, which a section cannot (it restarts holding the real
 * mutex), and the lock report counts both. */
TK_EXPORT int _txkit_cond_enter(pthread_mutex_t *m) {
    if (el.depth)
        tk_section_abort_exclusive(); /* restarts holding the real mutex */
    if (TXKIT_LIKELY(!tk_lp_on) || from_self(NULL, m))
        return 0;
    lp_given_up(m);
    return 1;
}

TK_EXPORT int _txkit_cond_exit(pthread_mutex_t *m, int lp, int rc) {
    if (!lp)
        return rc;
    /* glibc gives the mutex up only once the arguments are checked: any other
     * answer (EINVAL, EPERM) left it held all along */
    if (rc == 0 || rc == ETIMEDOUT || rc == EOWNERDEAD)
        lp_taken(m, NULL);
    else
        tk_lp_kept(m);
    return rc;
}

/* ------------------------------------------------------- exit summary */

struct el_line {
    uint32_t site;
    uint64_t key;
    struct tks_counters c;
};

static int by_entries(const void *a, const void *b) {
    const struct el_line *x = a, *y = b;
    return x->c.transactions < y->c.transactions   ? 1
           : x->c.transactions > y->c.transactions ? -1
                                                   : 0;
}

static double pct(uint64_t n, uint64_t d) { return d ? 100.0 * (double)n / (double)d : 0.0; }

/* Whether key is a mutex of this table: its lines in the exit summary are
 * _txkit_elide_report's, not tk_seg_print_locks'. */
static int elide_has_mutex(uint64_t key) {
    if (!key) /* the "(other locks)" site's key, and an empty entry's: not a mutex */
        return 0;
    for (unsigned i = 0; i < EL_TAB_SIZE; i++)
        if (__atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE) == (uintptr_t)key)
            return 1;
    return 0;
}

/* The per-mutex lines of the exit summary (TXKIT_STATS=1, stderr); called by
 * the preload library's destructor. With TXKIT_STATS=FILE the dump already
 * holds these sites (see txkit report). */
TK_EXPORT void _txkit_elide_report(void) {
    if (!tk_cfg.stats_at_exit || tk_cfg.stats_path[0] || tk_cfg.stats_off)
        return;
    unsigned n = 0;
    for (unsigned i = 0; i < EL_TAB_SIZE; i++) {
        uint32_t s = __atomic_load_n(&tab[i].site, __ATOMIC_ACQUIRE);
        n += __atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE) && s && s != EL_NOSITE;
    }
    FILE *f = tk_stats_out(); /* stderr, even if the program closed it */
    if (!f)
        return;
    fprintf(f, "txkit elided mutexes: %u counted%s\n", n,
            tk_g.hybrid ? "" : " (no RTM here: every section ran holding the mutex)");
    if (!n)
        return;
    struct el_line *lines = calloc(n, sizeof *lines);
    if (!lines)
        return;
    unsigned k = 0;
    for (unsigned i = 0; i < EL_TAB_SIZE && k < n; i++) {
        uint32_t s = __atomic_load_n(&tab[i].site, __ATOMIC_ACQUIRE);
        if (!tab[i].key || !s || s == EL_NOSITE)
            continue;
        lines[k].site = s - 1;
        lines[k].key = tab[i].key;
        k++;
    }
    struct tks_thread *th = tk_seg_threads();
    for (unsigned slot = 0; slot < TKS_MAX_THREADS; slot++) {
        if (slot != 0 && __atomic_load_n(&th[slot].state, __ATOMIC_ACQUIRE) != TKS_LIVE)
            continue;
        const struct tks_counters *row = tk_seg_row(slot);
        for (unsigned j = 0; j < k; j++) {
            const uint64_t *src = (const uint64_t *)&row[lines[j].site];
            uint64_t *dst = (uint64_t *)&lines[j].c;
            for (size_t w = 0; w < sizeof(struct tks_counters) / sizeof(uint64_t); w++)
                dst[w] += __atomic_load_n(&src[w], __ATOMIC_RELAXED);
        }
    }
    for (unsigned j = 0; j < k; j++)
        tks_fold(&lines[j].c); /* sums of unfolded rows: fold once */
    qsort(lines, k, sizeof *lines, by_entries);
    for (unsigned j = 0; j < k; j++) {
        const struct tks_counters *c = &lines[j].c;
        uint64_t aborts = 0;
        for (int m = 0; m < TKS_NMETHODS; m++)
            aborts += c->aborts[m];
        fprintf(f, "  mutex %#llx first locked at %s\n", (unsigned long long)lines[j].key,
                site_names[lines[j].site]);
        fprintf(f,
                "    acquisitions %llu, optimistic %.1f%%, exclusive %.1f%% (for I/O %.1f%%), "
                "aborts %llu",
                (unsigned long long)c->transactions, pct(c->commits[TXKIT_HTM], c->transactions),
                pct(c->commits[TXKIT_SERIAL], c->transactions),
                pct(c->irrevocable, c->transactions), (unsigned long long)aborts);
        for (int cause = 0; cause < TXKIT_NCAUSES; cause++)
            if (c->aborts_by_cause[cause])
                fprintf(f, " %s %llu", txkit_cause_name(cause),
                        (unsigned long long)c->aborts_by_cause[cause]);
        fputc('\n', f);
    }
    fflush(f);
    free(lines);
}
