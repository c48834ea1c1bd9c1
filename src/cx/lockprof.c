/* SPDX-License-Identifier: MIT */
/* lockprof.c - the lock report of an unmodified program (`txkit run
 * --report`): which pthread mutex, rwlock or spinlock costs the program the
 * most time, and from which call sites.
 *
 * On when TXKIT_LOCK_REPORT names a file prefix (txkit run sets it); each
 * process writes PREFIX.PID at exit (a server's forked children too), raw,
 * for the CLI to symbolize, sort and print (tools/txkit/lockreport.c). The
 * interposers of the preload library (preload/preload.c) call in here for
 * every lock operation of the program; libtxkit's own locks are not counted.
 *
 * Per lock (an open-addressing table keyed by its address, like elide.c's),
 * and per call site of acquisition (up to LP_SITES per lock, the rest in the
 * last): acquisitions, contended ones (the try failed first: the exact test,
 * a trylock before the blocking call), time waiting and holding (log2
 * histograms), the most threads waiting at once and, on RTM, inside its
 * sections at once (sampled sections only). Nothing here runs inside an
 * elided section's hardware transaction: a shared counter written there
 * would make the sections of two threads conflict. Counters are relaxed
 * atomics on the lock's own entry; times are TSC ticks, converted at exit
 * by the ratio of the clock to the TSC over the process's life (nothing waits
 * to calibrate: short-lived processes such as CGI scripts must not pay), the
 * histograms written in ticks with that ratio. The table (lockfmt.h) is
 * made at the first lock counted and touched only where locks land; it is
 * the live file txkit stat --sites reads when the statistics directory can
 * be used. A process that took no lock writes nothing. Owner: this file;
 * every function is callable from any thread.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "stats/lockfmt.h"
#include "cx/self.h"
#include "preload/elide_abi.h"
#include "runtime/internal.h"

#define LP_PROBES 64u
#define LP_HELD 16 /* locks one thread holds at once that are timed */

/* The table (lockfmt.h): published as DIR/<pid>.locks for txkit stat when
 * the statistics directory can be used, else anonymous; made at the first
 * lock counted (a process, or a fork's child, that never takes a lock makes
 * none: CGI scripts must not pay), afresh in a fork's child. */
static struct lp_file *lp_head;
static struct lp_lock *lp_tab; /* LP_TAB_SIZE entries after lp_head; NULL until made */
static char lp_live[256];      /* its path, "" when not published */
static int lp_making;          /* a thread is making the table */
static int lp_quiet;           /* a fork's child: its parent said why it could not publish */
static uint64_t lp_start_ns;   /* CLOCK_MONOTONIC at the start, with lp_start_tsc */
static uint64_t lp_start_tsc;
static int lp_any; /* a lock was taken (else no file) */
static char lp_prefix[4096];
static unsigned lp_threads; /* threads that took a profiled lock (mirrored in lp_head) */
static unsigned lp_lost;    /* locks the table had no room for (mirrored in lp_head) */
int tk_lp_on;               /* read by elide.c and the hooks below */

struct lp_held {
    uintptr_t key;
    uint64_t tsc;
    struct lp_lock *e; /* NULL: not sampled, nothing to time */
    unsigned w;        /* the weight of its hold time */
    unsigned inside;   /* counted in e->inside while held */
};
static __thread struct lp_held lp_stack[LP_HELD];
static __thread unsigned lp_depth, lp_seen;

/* Sampling (TXKIT_LOCK_SAMPLE=N, default LP_SAMPLE): one uncontended
 * acquisition in N of each thread is counted, with weight N, and its hold
 * timed; the others cost a try and a push on the thread's held stack.
 * Contended acquisitions (the try failed) are always counted and timed. */
#define LP_SAMPLE 8
/* With a kind: count the hold in the lock's threads inside (an elidable
 * mutex on RTM: elided sections and holders are both inside). */
#define LP_INSIDE 0x100u
#define LP_KIND(k) ((k) & ~LP_INSIDE)
static unsigned lp_period = LP_SAMPLE;
static __thread unsigned lp_skip, lp_in_skip; /* acquisitions, elided sections entered */
/* The weight of this event when it is the sampled one of its count, else 0. */
static inline unsigned lp_sample_of(unsigned *skip) {
    if (*skip) {
        --*skip;
        return 0;
    }
    *skip = lp_period - 1;
    return lp_period;
}
static inline unsigned lp_sample(void) { return lp_sample_of(&lp_skip); }
static inline void lp_push_untimed(const void *lock) {
    if (lp_depth < LP_HELD) { /* (the other fields count only with e) */
        lp_stack[lp_depth].key = (uintptr_t)lock;
        lp_stack[lp_depth].e = NULL;
    }
    lp_depth++;
}

#define LP_FILE_BYTES (LP_FILE_HEAD + LP_TAB_SIZE * sizeof(struct lp_lock))

static uint64_t lp_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The header, magic last (tk_seg_publish's fill; also for the anonymous one). */
static void lp_fill(void *map, size_t size) {
    struct lp_file *h = map;
    h->version = LP_VERSION;
    h->header_size = sizeof *h;
    h->lock_size = sizeof(struct lp_lock);
    h->tab_size = LP_TAB_SIZE;
    h->tab_offset = LP_FILE_HEAD;
    h->file_size = size;
    h->pid = (uint64_t)getpid();
    h->start_tsc = lp_start_tsc;
    h->start_ns = lp_start_ns;
    h->threads = lp_threads;
    h->lost = lp_lost;
    h->rtm = tk_g.hybrid ? 1 : 0;
    h->sample = lp_period;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(h->magic, LP_MAGIC, 8);
}

static struct lp_lock *lp_make(void) {
    for (unsigned steps = 0; __atomic_exchange_n(&lp_making, 1, __ATOMIC_ACQUIRE);)
        tk_wait_step(&steps, TK_SPINS_BEFORE_YIELD);
    tk_self_enter(); /* the file (opendir's malloc), stderr: their locks are glibc's */
    struct lp_lock *t = lp_tab;
    if (!t) {
        char why[320] = "";
        const char *mode = getenv("TXKIT_STATS");
        void *m = NULL;
        if (!(mode && (!strcmp(mode, "private") || !strcmp(mode, "off"))))
            m = tk_seg_publish("locks", LP_FILE_BYTES, lp_fill, lp_live, sizeof lp_live, why,
                               sizeof why);
        else
            snprintf(why, sizeof why, "TXKIT_STATS=%s", mode);
        if (!m) {
            lp_live[0] = 0;
            if (!lp_quiet)
                fprintf(stderr, "txkit: lock report not shown live (txkit stat --sites): %s\n",
                        why);
            /* (calloc would not give the entries' 64-byte alignment) */
            m = mmap(NULL, LP_FILE_BYTES, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (m == MAP_FAILED) {
                fprintf(stderr, "txkit: TXKIT_LOCK_REPORT: out of memory; no lock report\n");
                __atomic_store_n(&tk_lp_on, 0, __ATOMIC_RELEASE);
                m = NULL;
            } else
                lp_fill(m, LP_FILE_BYTES);
        }
        if (m) {
            lp_head = m;
            t = (struct lp_lock *)((char *)m + LP_FILE_HEAD);
            __atomic_store_n(&lp_tab, t, __ATOMIC_RELEASE);
        }
    }
    tk_self_exit();
    __atomic_store_n(&lp_making, 0, __ATOMIC_RELEASE);
    return t;
}

/* A count mirrored in the live header. */
static void lp_bump(unsigned *count, uint32_t *mirror) {
    __atomic_store_n(mirror, __atomic_add_fetch(count, 1, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

/* A fork's child starts its own report: no table until it takes a lock (the
 * parent's mapping and file are the parent's), its own clock. */
static void lp_fork_child(void) {
    if (lp_head)
        munmap(lp_head, LP_FILE_BYTES);
    lp_head = NULL;
    lp_tab = NULL;
    lp_live[0] = 0;
    lp_making = 0;
    lp_quiet = 1;
    lp_start_tsc = tk_rdtsc();
    lp_start_ns = lp_now_ns();
    lp_threads = lp_seen ? 1 : 0;
    lp_lost = 0;
    lp_any = 0;
    lp_depth = 0;
}

__attribute__((constructor(102))) static void lp_init(void) {
    const char *p = getenv("TXKIT_LOCK_REPORT");
    if (!p || !*p)
        return;
    if (strlen(p) >= sizeof lp_prefix - 24) {
        fprintf(stderr, "txkit: TXKIT_LOCK_REPORT: path too long; no lock report\n");
        return;
    }
    strcpy(lp_prefix, p);
    const char *sp = getenv("TXKIT_LOCK_SAMPLE");
    if (sp && *sp) {
        char *end;
        unsigned long v = strtoul(sp, &end, 10);
        if (*end || v < 1 || v > 4096)
            fprintf(stderr, "txkit: TXKIT_LOCK_SAMPLE=%s: not a number from 1 to 4096; using %d\n",
                    sp, LP_SAMPLE);
        else
            lp_period = (unsigned)v;
    }
    lp_start_tsc = tk_rdtsc();
    lp_start_ns = lp_now_ns();
    pthread_atfork(NULL, NULL, lp_fork_child);
    __atomic_store_n(&tk_lp_on, 1, __ATOMIC_RELEASE);
}

static struct lp_lock *lp_entry(const void *lock, unsigned kind) {
    struct lp_lock *tab = __atomic_load_n(&lp_tab, __ATOMIC_ACQUIRE);
    if (!tab && !(tab = lp_make()))
        return NULL;
    uintptr_t k = (uintptr_t)lock;
    unsigned h = (unsigned)((k * 0x9e3779b97f4a7c15ull) >> (64 - LP_TAB_BITS));
    for (unsigned i = 0; i < LP_PROBES; i++, h = (h + 1) & (LP_TAB_SIZE - 1)) {
        struct lp_lock *e = &tab[h];
        uintptr_t cur = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (cur == 0 && __atomic_compare_exchange_n(&e->key, &cur, k, false, __ATOMIC_ACQ_REL,
                                                    __ATOMIC_ACQUIRE)) {
            e->kind = LP_KIND(kind);
            return e;
        }
        if (cur == k)
            return e;
    }
    lp_bump(&lp_lost, &lp_head->lost);
    return NULL;
}

static struct lp_site *lp_site_of(struct lp_lock *e, void *caller) {
    uintptr_t c = (uintptr_t)caller;
    for (int i = 0; i < LP_SITES - 1; i++) {
        uintptr_t cur = __atomic_load_n(&e->sites[i].caller, __ATOMIC_ACQUIRE);
        if (cur == c)
            return &e->sites[i];
        if (cur == 0 && __atomic_compare_exchange_n(&e->sites[i].caller, &cur, c, false,
                                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return &e->sites[i];
        if (cur == c)
            return &e->sites[i];
    }
    struct lp_site *rest = &e->sites[LP_SITES - 1]; /* the rest, named by the first of them */
    uintptr_t none = 0;
    __atomic_compare_exchange_n(&rest->caller, &none, c, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    return rest;
}

static unsigned lp_bucket(uint64_t ticks) {
    unsigned b = ticks ? 63u - (unsigned)__builtin_clzll(ticks) : 0;
    return b < LP_HIST ? b : LP_HIST - 1;
}

#define ADD(x, v) __atomic_add_fetch(&(x), (v), __ATOMIC_RELAXED)

/* A lock was taken (the file is worth writing); read-mostly: no shared
 * store per lock operation. */
static inline void lp_mark_any(void) {
    if (!lp_any)
        lp_any = 1;
}

/* w acquisitions of e from caller (w: the sample's weight); its site. */
static struct lp_site *lp_count(struct lp_lock *e, void *caller, unsigned w) {
    lp_mark_any();
    struct lp_site *s = lp_site_of(e, caller);
    ADD(e->acq, w);
    ADD(s->acq, w);
    return s;
}

static void lp_inside_add(struct lp_lock *e, int delta) {
    int now = __atomic_add_fetch(&e->inside, delta, __ATOMIC_RELAXED);
    unsigned mx = __atomic_load_n(&e->max_inside, __ATOMIC_RELAXED);
    while (now > 0 && (unsigned)now > mx &&
           !__atomic_compare_exchange_n(&e->max_inside, &mx, (unsigned)now, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
}

/* The lock was just taken (after wait_ticks waiting, 0 when the try got it). */
static void lp_acquired(struct lp_lock *e, const void *lock, unsigned kind, void *caller,
                        int contended, uint64_t wait_ticks, uint64_t now, unsigned w) {
    if (!lp_seen) {
        lp_seen = 1;
        lp_bump(&lp_threads, &lp_head->threads); /* (e: the table exists) */
    }
    struct lp_site *s = lp_count(e, caller, w);
    if (contended) {
        ADD(e->contended, 1);
        ADD(s->contended, 1);
        ADD(e->wait_ticks, wait_ticks);
        ADD(s->wait_ticks, wait_ticks);
        ADD(e->wait_hist[lp_bucket(wait_ticks)], 1);
    }
    unsigned in = 0;
    if (lp_depth < LP_HELD) {
        if ((in = (kind & LP_INSIDE) != 0))
            lp_inside_add(e, 1);
        lp_stack[lp_depth] = (struct lp_held){(uintptr_t)lock, now, e, w, in};
    }
    lp_depth++;
}

/* The held stack: slots [0, min(lp_depth, LP_HELD)) hold the locks taken
 * (key) or, key 0, stand for one taken when the stack was full (lp_depth
 * beyond LP_HELD counts the others). */
static void lp_released(const void *lock) {
    unsigned d = lp_depth;
    if (d - 1 < LP_HELD && lp_stack[d - 1].key == (uintptr_t)lock && !lp_stack[d - 1].e) {
        lp_depth = d - 1; /* the common case: the last one taken, not sampled */
        return;
    }
    unsigned n = d < LP_HELD ? d : LP_HELD, i = n;
    while (i-- > 0 && lp_stack[i].key != (uintptr_t)lock)
        ;
    if (i == UINT32_MAX) { /* not in a slot: one taken when the stack was full */
        if (d > LP_HELD) {
            lp_depth = d - 1;
            return;
        }
        for (i = n; i-- > 0 && lp_stack[i].key != 0;)
            ;
        if (i == UINT32_MAX)
            return;             /* not taken through the report (before it began) */
    } else if (lp_stack[i].e) { /* sampled: its hold, weighted */
        struct lp_lock *e = lp_stack[i].e;
        unsigned w = lp_stack[i].w;
        uint64_t ticks = tk_rdtsc() - lp_stack[i].tsc;
        ADD(e->hold_ticks, ticks * w);
        ADD(e->timed_holds, w);
        ADD(e->hold_hist[lp_bucket(ticks)], w);
        if (lp_stack[i].inside)
            lp_inside_add(e, -1);
    }
    lp_stack[i] = lp_stack[n - 1];
    if (d > LP_HELD) /* one beyond the stack now has its slot: the last */
        lp_stack[n - 1] = (struct lp_held){0, 0, NULL, 0, 0};
    lp_depth = d - 1;
}

/* The main program's load address as dladdr reports it (dli_fbase): the
 * first object dl_iterate_phdr lists, at its lowest PT_LOAD. */
static int lp_first_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    uintptr_t lo = UINTPTR_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_vaddr < lo)
            lo = info->dlpi_phdr[i].p_vaddr;
    *(uintptr_t *)arg = info->dlpi_addr + (lo == UINTPTR_MAX ? 0 : lo);
    return 1; /* the first one only */
}
static uintptr_t lp_main_base(void) {
    static uintptr_t base;
    if (!base)
        dl_iterate_phdr(lp_first_object, &base);
    return base;
}

/* Attribute a contended wait through a library wrapper to the first frame
 * outside that library (and outside txkit). */
static void lp_deep_count_in(struct lp_lock *e, void *caller, uint64_t wait_ticks);
static void lp_deep_count(struct lp_lock *e, void *caller, uint64_t wait_ticks) {
    tk_self_enter(); /* dladdr, backtrace (its first call loads libgcc_s) */
    lp_deep_count_in(e, caller, wait_ticks);
    tk_self_exit();
}
static void lp_deep_count_in(struct lp_lock *e, void *caller, uint64_t wait_ticks) {
    Dl_info ci;
    if (!dladdr(caller, &ci) || (uintptr_t)ci.dli_fbase == lp_main_base())
        return; /* the program's own call: the site says it all */
    void *frames[16];
    int n = backtrace(frames, 16);
    uintptr_t pc = 0;
    /* the first frame past the wrapper's library (txkit's own frames, the
     * preload library's and libtxkit's, come first: not past it yet) */
    for (int i = 0, past = 0; i < n && !pc; i++) {
        Dl_info fi;
        if (!dladdr(frames[i], &fi) || !fi.dli_fname)
            continue;
        if (fi.dli_fbase == ci.dli_fbase)
            past = 1;
        else if (past && !strstr(fi.dli_fname, "libtxkit"))
            pc = (uintptr_t)frames[i];
    }
    if (!pc)
        return;
    struct lp_deep *d = &e->deep[LP_DEEP - 1];
    for (int i = 0; i < LP_DEEP - 1; i++) {
        uintptr_t cur = __atomic_load_n(&e->deep[i].pc, __ATOMIC_ACQUIRE);
        if (cur == pc ||
            (cur == 0 && __atomic_compare_exchange_n(&e->deep[i].pc, &cur, pc, false,
                                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) ||
            cur == pc) {
            d = &e->deep[i];
            break;
        }
    }
    if (d->pc == 0)
        __atomic_store_n(&d->pc, pc, __ATOMIC_RELEASE);
    ADD(d->contended, 1);
    ADD(d->wait_ticks, wait_ticks);
}

/* Wait for a lock the try did not get, counted as waiting. */
static void lp_wait_enter(struct lp_lock *e) {
    unsigned w = ADD(e->waiting, 1);
    unsigned m = __atomic_load_n(&e->max_waiting, __ATOMIC_RELAXED);
    while (w > m && !__atomic_compare_exchange_n(&e->max_waiting, &m, w, true, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED))
        ;
}

/* A lock taken without waiting (a try that got it, a trylock, a timedlock,
 * after a condition wait): counted and timed when sampled. */
static inline void lp_taken(const void *lock, unsigned kind, void *caller);

typedef int (*lp_lock_fn)(void *);

/* The acquisition whose try failed (rc): wait in the blocking call, timed. */
static __attribute__((noinline)) int lp_take_contended(const void *lock, unsigned kind, int rc,
                                                       lp_lock_fn block_fn, void *caller) {
    if (rc == EOWNERDEAD) { /* a robust mutex's dead owner: the try took it */
        lp_taken(lock, kind, caller);
        return rc;
    }
    if (rc != EBUSY && rc != EAGAIN) /* EDEADLK and the like: the blocking call's answer */
        return block_fn((void *)lock);
    struct lp_lock *e = lp_entry(lock, kind);
    if (!e) {
        rc = block_fn((void *)lock);
        if (rc == 0)
            lp_push_untimed(lock);
        return rc;
    }
    uint64_t t0 = tk_rdtsc();
    lp_wait_enter(e);
    rc = block_fn((void *)lock);
    ADD(e->waiting, (unsigned)-1);
    uint64_t t1 = tk_rdtsc();
    if (rc == 0) {
        lp_acquired(e, lock, kind, caller, 1, t1 - t0, t1, 1);
        lp_deep_count(e, caller, t1 - t0);
    }
    return rc;
}

/* The one profiled acquisition: try, else wait in the blocking call (the
 * common case inline, without the waiting path's frame). */
static inline int lp_take(const void *lock, unsigned kind, lp_lock_fn try_fn, lp_lock_fn block_fn,
                          void *caller) {
    int rc = try_fn((void *)lock);
    if (TXKIT_LIKELY(rc == 0)) {
        lp_taken(lock, kind, caller);
        return 0;
    }
    return lp_take_contended(lock, kind, rc, block_fn, caller);
}

static tk_mutex_fn lp_mutex_try;
TK_EXPORT void _txkit_lp_set_mutex_trylock(tk_mutex_fn f) { lp_mutex_try = f; }

int tk_lp_mutex_lock(pthread_mutex_t *m, tk_mutex_fn real, void *caller, int inside) {
    if (!lp_mutex_try)
        return real(m);
    /* Robust, priority-inheritance and priority-protect mutexes: the
     * blocking call alone, untimed. Their
     * trylock answers apart from their lock (EOWNERDEAD takes the mutex; a
     * priority-protect one's ceiling is checked by the lock only), so a try
     * first changed what pthread_mutex_lock returned: a robust mutex whose
     * owner died deadlocked on itself, a recursive one was taken twice. */
    if (tk_mutex_kind(m) & TK_MUTEX_KIND_ROBUST_PI_PP) {
        int rc = real(m);
        if (rc == 0 || rc == EOWNERDEAD)
            lp_taken(m, LP_MUTEX | (inside ? LP_INSIDE : 0), caller);
        return rc;
    }
    return lp_take(m, LP_MUTEX | (inside ? LP_INSIDE : 0), (lp_lock_fn)lp_mutex_try,
                   (lp_lock_fn)real, caller);
}

/* The sampled acquisition counted and timed; false when the table has no
 * room for the lock (then taken untimed, like the others). */
static __attribute__((noinline)) bool lp_taken_sampled(const void *lock, unsigned kind,
                                                       void *caller, unsigned w) {
    struct lp_lock *e = lp_entry(lock, kind);
    if (e)
        lp_acquired(e, lock, kind, caller, 0, 0, tk_rdtsc(), w);
    return e != NULL;
}
static inline void lp_taken(const void *lock, unsigned kind, void *caller) {
    unsigned w = lp_sample();
    if (TXKIT_UNLIKELY(w) && lp_taken_sampled(lock, kind, caller, w))
        return;
    lp_mark_any();
    lp_push_untimed(lock);
}
void tk_lp_mutex_taken(pthread_mutex_t *m, void *caller, int inside) {
    lp_taken(m, LP_MUTEX | (inside ? LP_INSIDE : 0), caller);
}
void tk_lp_release(const void *lock) { lp_released(lock); }
void tk_lp_kept(const void *lock) {
    lp_mark_any();
    lp_push_untimed(lock);
}

/* A section elided in hardware (elide.c): an acquisition without the lock. */
void tk_lp_elided(pthread_mutex_t *m, void *caller) {
    unsigned w = lp_sample();
    struct lp_lock *e = w ? lp_entry(m, LP_MUTEX) : NULL;
    if (!e) {
        lp_mark_any();
        return;
    }
    lp_count(e, caller, w);
    ADD(e->elided, w);
}

/* Elided sections in the lock's threads inside: sampled like acquisitions
 * (their own count per thread). */
int tk_lp_section_enter(pthread_mutex_t *m) {
    if (!lp_sample_of(&lp_in_skip))
        return 0;
    struct lp_lock *e = lp_entry(m, LP_MUTEX);
    if (e)
        lp_inside_add(e, 1);
    return e != NULL;
}

void tk_lp_section_exit(pthread_mutex_t *m) {
    struct lp_lock *e = lp_entry(m, LP_MUTEX);
    if (e)
        lp_inside_add(e, -1);
}

/* ------------------------------------------------ rwlocks and spinlocks */

/* The report is on and l is the program's (not libtxkit's). */
static inline bool lp_watch(void *caller, const void *l) {
    return __atomic_load_n(&tk_lp_on, __ATOMIC_RELAXED) && !tk_from_self(caller, l);
}

TK_EXPORT int _txkit_rwlock_lock(pthread_rwlock_t *l, int write, tk_rwlock_fn try_fn,
                                 tk_rwlock_fn real, void *caller) {
    if (!lp_watch(caller, l))
        return real(l);
    return lp_take(l, write ? LP_RWLOCK_WR : LP_RWLOCK_RD, (lp_lock_fn)try_fn, (lp_lock_fn)real,
                   caller);
}

TK_EXPORT int _txkit_rwlock_got(pthread_rwlock_t *l, int write, int rc, void *caller) {
    if (rc == 0 && lp_watch(caller, l))
        lp_taken(l, write ? LP_RWLOCK_WR : LP_RWLOCK_RD, caller);
    return rc;
}

TK_EXPORT int _txkit_rwlock_unlock(pthread_rwlock_t *l, tk_rwlock_fn real, void *caller) {
    if (lp_watch(caller, l))
        lp_released(l);
    return real(l);
}

TK_EXPORT int _txkit_spin_lock(pthread_spinlock_t *l, tk_spin_fn try_fn, tk_spin_fn real,
                               void *caller) {
    if (!lp_watch(caller, (const void *)l))
        return real(l);
    return lp_take((const void *)l, LP_SPIN, (lp_lock_fn)try_fn, (lp_lock_fn)real, caller);
}

TK_EXPORT int _txkit_spin_trylock(pthread_spinlock_t *l, tk_spin_fn real, void *caller) {
    int rc = real(l);
    if (rc == 0 && lp_watch(caller, (const void *)l))
        lp_taken((const void *)l, LP_SPIN, caller);
    return rc;
}

TK_EXPORT int _txkit_spin_unlock(pthread_spinlock_t *l, tk_spin_fn real, void *caller) {
    if (lp_watch(caller, (const void *)l))
        lp_released((const void *)l);
    return real(l);
}

/* ------------------------------------------------------------ the file */

/* lockfmt.h's lp_where_fn, in the process itself: dladdr. */
static void lp_where(FILE *f, uintptr_t a, void *arg) {
    (void)arg;
    Dl_info info;
    if (a && dladdr((void *)a, &info) && info.dli_fname) {
        if (info.dli_sname)
            fprintf(f, "%s\t%s+%#lx", info.dli_fname, info.dli_sname,
                    (unsigned long)(a - (uintptr_t)info.dli_saddr));
        else
            fprintf(f, "%s\t%#lx", info.dli_fname, (unsigned long)(a - (uintptr_t)info.dli_fbase));
    } else {
        fprintf(f, "?\t%#lx", (unsigned long)a);
    }
}

static void lock_report(void);
/* Write PREFIX.PID and remove the live table's file (at exit; also callable
 * to flush, e.g. by a test). The locks that writing it takes (stdio's,
 * malloc's) are glibc's, not the report's. */
TK_EXPORT void _txkit_lock_report(void) {
    if (!__atomic_load_n(&tk_lp_on, __ATOMIC_ACQUIRE))
        return;
    tk_self_enter();
    lock_report();
    tk_self_exit();
}
static void lock_report(void) {
    if (lp_live[0]) {
        unlink(lp_live);
        lp_live[0] = 0;
    }
    if (!lp_any)
        return; /* took no lock: nothing to say */
    char path[sizeof lp_prefix + 24];
    snprintf(path, sizeof path, "%s.%ld", lp_prefix, (long)getpid());
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "txkit: TXKIT_LOCK_REPORT: %s: %s\n", path, strerror(errno));
        return;
    }
    uint64_t ticks = tk_rdtsc() - lp_start_tsc, ns = lp_now_ns() - lp_start_ns;
    /* the clock against the TSC over the process's life; too short a life
     * for a good ratio: the runtime's calibration if it has one */
    double npt = ticks && ns >= 1000000 ? (double)ns / (double)ticks : tk_ns_per_tick_known();
    if (npt <= 0)
        npt = ticks ? (double)ns / (double)ticks : 1.0;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    struct lp_file none = {.pid = (uint64_t)getpid(), .threads = lp_threads, .lost = lp_lost};
    struct lp_file *h = lp_tab ? lp_head : &none;
    h->rtm = tk_g.hybrid ? 1 : 0;
    lp_write_text(f, h, lp_tab, lp_tab ? LP_TAB_SIZE : 0, exe, ns, npt, lp_where, NULL);
    if (fclose(f) != 0)
        fprintf(stderr, "txkit: TXKIT_LOCK_REPORT: %s: %s\n", path, strerror(errno));
}
