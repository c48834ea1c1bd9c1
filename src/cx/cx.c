/* SPDX-License-Identifier: MIT */
/* cx.c - cooperative transactional locks (include/txkit/cx.h).
 *
 * The lock word is 0 when free, 1 when held exclusively (test-and-test-and-
 * set, yielding when it stays held). Optimistic entries never write it, so a
 * flood of them cannot delay an exclusive waiter. Not a ticket lock: with
 * more threads than CPUs a FIFO handoff to a preempted waiter stalls every
 * thread queued behind it (measured: 20-50x slower at 4 and 8 threads on 2
 * CPUs). An optimistic section is a hardware transaction that has read the
 * word and found it free: any exclusive acquisition writes that word and
 * aborts it. Optimistic threads that find the lock held wait outside the
 * transaction and try again.
 *
 * Inside a txkit transaction the section subscribes the transaction to the
 * lock: a hardware attempt reads the word; a software one reads it through
 * the read barrier, and an exclusive acquirer of a lock that software
 * transactions subscribed to bumps the global clock, so they revalidate and
 * abort. A serial (or irrevocable) transaction takes the lock for real, and
 * keeps it until the attempt has committed or rolled back (subscribe).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <txkit/cx.h>

#include "cx/section.h"
#include "methods/method.h"
#include "runtime/solo.h"


const cx_policy_t cx_policy_default = CX_POLICY_DEFAULT_INIT;

#define CX_F_SUBSCRIBED 1u /* a software transaction depends on this lock */
#define CX_F_SHARED 2u     /* a shared section held it (without RTM): writers look for readers */
#define CX_F_NOSHARED 4u   /* subscribed, and no shared holder left: none will come again */


#define SPINS_BEFORE_YIELD 1000u
#define CX_BUSY_TRIES 16 /* optimistic tries that found the lock held inside */

enum {
    CX_NONE = CX_MODE_NONE,
    CX_SPEC = CX_MODE_OPTIMISTIC,
    CX_EXCL = CX_MODE_EXCLUSIVE,
    CX_TXSUB = CX_MODE_SUBSCRIBED,
    CX_SHRD = CX_MODE_SHARED,
};

static inline bool is_free(const cx_lock_t *l) { return l->state.word == 0; }

/* One step of waiting for another thread: pause, and after SPINS_BEFORE_YIELD
 * steps give the CPU away (the thread waited for may need it). */
static inline void wait_step(unsigned *spins) { tk_wait_step(spins, SPINS_BEFORE_YIELD); }

/* ------------------------------------------------ shared mode (without RTM)
 *
 * Without hardware sections, cx_shared() holds the lock shared: the thread
 * names the lock in its reader record (a line of its own), then, after a full
 * fence, finds the word free. A writer (every way of taking the word) takes
 * the word first, then waits until no other record names the lock: a Dekker
 * pair, so one of the two sees the other. Readers never write a line another
 * thread writes. Records are never freed (writers walk them), only given back
 * at thread exit and claimed again, like the cache's epoch records. With RTM
 * there are no shared holders at all: cx_shared() is cx_optimistic() there, so
 * hardware sections, which may write, never run beside a plain reader.
 * A lock some software transaction subscribed to (CX_F_SUBSCRIBED) is not
 * held shared any more: such a transaction writes without taking the word. */
struct cx_reader {
    cx_lock_t *reading;     /* held shared, or NULL: owner writes, writers read */
    int in_use;             /* claimed by a live thread (CAS) */
    struct cx_reader *next; /* immutable once pushed */
} __attribute__((aligned(64)));

static struct cx_reader *readers; /* push-only list (atomic head) */

/* t's record (t->cx.rd), claimed at its first shared section; NULL without
 * memory (the section is then exclusive). Owner thread. */
static struct cx_reader *reader_get(tk_thread *t) {
    struct cx_reader *r = t->cx.rd;
    if (TXKIT_LIKELY(r != NULL))
        return r;
    for (r = __atomic_load_n(&readers, __ATOMIC_ACQUIRE); r; r = r->next) {
        int zero = 0;
        if (!__atomic_load_n(&r->in_use, __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&r->in_use, &zero, 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            break;
    }
    if (!r) {
        if (posix_memalign((void **)&r, 64, sizeof *r) != 0)
            return NULL;
        memset(r, 0, sizeof *r);
        r->in_use = 1;
        r->next = __atomic_load_n(&readers, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&readers, &r->next, r, true, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED))
            ;
    }
    t->cx.rd = r;
    return r;
}

/* Whether a record names l, the calling thread's own aside with not_mine
 * (the walk, out of line). */
static __attribute__((noinline)) bool readers_named(const cx_lock_t *l, bool not_mine) {
    const struct cx_reader *self = not_mine && tk_cur ? tk_cur->cx.rd : NULL;
    for (struct cx_reader *r = __atomic_load_n(&readers, __ATOMIC_ACQUIRE); r; r = r->next)
        if (r != self && __atomic_load_n(&r->reading, __ATOMIC_SEQ_CST) == l)
            return true;
    return false;
}

/* Whether a record names l (with not_mine: another thread's): never for a
 * lock that was not held shared (CX_F_SHARED), whose records are not looked
 * at. Any thread. */
static inline bool readers_in(const cx_lock_t *l, bool not_mine) {
    return TXKIT_UNLIKELY(__atomic_load_n(&l->flags, __ATOMIC_SEQ_CST) & CX_F_SHARED) &&
           readers_named(l, not_mine);
}

/* A writer that has taken l's word (or a first subscriber): wait for the
 * other threads' shared holders to leave (none come in meanwhile; the
 * caller's own record does not count: an exclusive section of another lock
 * inside its shared one, or its transaction inside it). */
static inline void readers_drain(const cx_lock_t *l) {
    for (unsigned spins = 0; readers_in(l, true);)
        wait_step(&spins);
}

/* --------------------------------------------------------------- statistics */

static pthread_mutex_t site_lock = PTHREAD_MUTEX_INITIALIZER;

static void cx_atfork(tk_thread *me, int phase) {
    tk_atfork_mutex(&site_lock, phase);
    if (phase != TK_FORK_CHILD)
        return;
    /* the other threads are gone: so are their shared sections and records */
    const struct cx_reader *mine = me ? me->cx.rd : NULL;
    for (struct cx_reader *r = __atomic_load_n(&readers, __ATOMIC_ACQUIRE); r; r = r->next)
        if (r != mine) {
            r->reading = NULL;
            r->in_use = 0;
        }
}

/* The lock's statistics entry: registered at its first entry, named by the
 * caller of that entry. */
static __attribute__((noinline)) struct tks_counters *
lock_counters_first(tk_thread *t, cx_lock_t *l, void *caller) {
    uint32_t s = __atomic_load_n(&l->site, __ATOMIC_ACQUIRE);
    if (!s) {
        tk_mutex_lock(&site_lock);
        if (!(s = l->site)) {
            Dl_info info;
            char func[80] = "?";
            const char *file = "?";
            if (dladdr(caller, &info) && info.dli_fname) {
                file = info.dli_fname;
                if (info.dli_sname)
                    snprintf(func, sizeof func, "%s+%#lx", info.dli_sname,
                             (unsigned long)((uintptr_t)caller - (uintptr_t)info.dli_saddr));
                else
                    snprintf(func, sizeof func, "%#lx",
                             (unsigned long)((uintptr_t)caller - (uintptr_t)info.dli_fbase));
            }
            s = tk_seg_site_register(TKS_SITE_LOCK, (uint64_t)(uintptr_t)l, file, func, 0) + 1;
            __atomic_store_n(&l->site, s, __ATOMIC_RELEASE);
        }
        tk_mutex_unlock(&site_lock);
    }
    if (!t->slot)
        tk_seg_thread_attach(t);
    return t->row + (s - 1);
}

/* The lock's statistics entry, the first entries of a lock or a thread out
 * of line. */
static inline struct tks_counters *lock_counters(tk_thread *t, cx_lock_t *l, void *caller) {
    uint32_t s = __atomic_load_n(&l->site, __ATOMIC_ACQUIRE);
    if (TXKIT_UNLIKELY(!s || !t->slot))
        return lock_counters_first(t, l, caller);
    return t->row + (s - 1);
}

static void count_entry(struct tks_counters *c) {
    if (TXKIT_UNLIKELY(tk_cfg.stats_off))
        return;
    TK_COUNT(c->transactions, 1);
}

static void count_end(tk_thread *t, struct tks_counters *c, int method) {
    if (TXKIT_UNLIKELY(tk_cfg.stats_off))
        return;
    if (t->cx.lean) {
        /* its entry was not counted (enter): a serial commit at the first
         * attempt, which readers fold into transactions, serial commits and
         * retries_hist[0] (tks_fold) */
        TK_COUNT(c->solo_commits, 1);
        return;
    }
    if (TXKIT_LIKELY(t->cx.tries == 0) && method != TXKIT_SERIAL) {
        /* at the first try, one add that readers fold into commits and
         * retries_hist[0] (stats/format.h: tks_fold; count_entry counted the
         * section in transactions) */
        if (method == TXKIT_STM)
            TK_COUNT(c->sw_commits, 1);
        else
            TK_COUNT(c->hw_commits, 1);
        return;
    }
    tk_stats_open(t);
    TK_COUNT(c->commits[method], 1);
    TK_COUNT(c->retries_hist[t->cx.tries < 3 ? t->cx.tries : 3], 1);
    tk_stats_close(t);
}

void tk_section_count_abort(struct tks_counters *c, int cause, int to_exclusive) {
    if (!c || TXKIT_UNLIKELY(tk_cfg.stats_off))
        return;
    tk_thread *t = tk_cur;
    tk_stats_open(t);
    TK_COUNT(c->aborts[TXKIT_HTM], 1);
    TK_COUNT(c->aborts_by_cause[cause], 1);
    if (to_exclusive)
        TK_COUNT(c->to_serial, 1);
    if (cause == TXKIT_CAUSE_UNSUPPORTED || cause == TXKIT_CAUSE_IRREVOCABLE)
        TK_COUNT(c->irrevocable, 1); /* needed the lock for I/O */
    tk_stats_close(t);
}

/* ------------------------------------------------------ exclusive mode */

static void wait_free(const cx_lock_t *l) {
    for (unsigned spins = 0; !is_free(l);)
        wait_step(&spins);
}

static inline bool take(cx_lock_t *l) {
    uint64_t free = 0;
    return __atomic_compare_exchange_n(&l->state.word, &free, 1, false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_RELAXED);
}

/* After taking the lock: software transactions that read the word notice
 * only when the clock moves (the locked CAS orders this load after it). */
static void taken(cx_lock_t *l) {
    if (__atomic_load_n(&l->flags, __ATOMIC_RELAXED) & CX_F_SUBSCRIBED)
        tk_clock_external_write();
}

static void excl_acquire(cx_lock_t *l) {
    for (unsigned spins = 0; !(is_free(l) && take(l));)
        wait_step(&spins);
    readers_drain(l);
    taken(l);
}

static void excl_release(cx_lock_t *l) { __atomic_store_n(&l->state.word, 0, __ATOMIC_RELEASE); }

static int excl_try(cx_lock_t *l) {
    if (!is_free(l) || !take(l))
        return -EBUSY;
    if (readers_in(l, true)) {
        excl_release(l);
        return -EBUSY;
    }
    taken(l);
    return 0;
}

/* Whether the lock list v (held, txheld, subs) has l. Owner thread only. */
static bool list_has(struct cx_lock *const *v, unsigned n, const cx_lock_t *l) {
    for (unsigned i = 0; i < n; i++)
        if (v[i] == l)
            return true;
    return false;
}

/* End one of this thread's exclusive sections of l, releasing l with the
 * last of them (sections of a lock the thread holds re-enter it); 1 if the
 * thread held l. */
static int pop_held(tk_thread *t, cx_lock_t *l) {
    for (unsigned i = t->cx.nheld; i-- > 0;) {
        if (t->cx.held[i] == l) {
            t->cx.held[i] = t->cx.held[--t->cx.nheld];
            if (!list_has(t->cx.held, t->cx.nheld, l))
                excl_release(l);
            return 1;
        }
    }
    return 0;
}


/* list_push's growth: out of line, so that an append is a store. */
static __attribute__((noinline)) void list_grow(struct cx_lock ***v, unsigned *cap) {
    unsigned ncap = *cap ? 2 * *cap : 8;
    struct cx_lock **nv = realloc(*v, ncap * sizeof *nv);
    if (!nv)
        TK_FATAL("out of memory recording the cx locks of a transaction");
    *v = nv;
    *cap = ncap;
}

static inline void list_push(struct cx_lock ***v, unsigned *n, unsigned *cap, cx_lock_t *l) {
    if (TXKIT_UNLIKELY(*n == *cap))
        list_grow(v, cap);
    (*v)[(*n)++] = l;
}

/* No limit on the locks a thread holds at once (nested exclusive sections). */
static inline void push_held(tk_thread *t, cx_lock_t *l) {
    list_push(&t->cx.held, &t->cx.nheld, &t->cx.held_cap, l);
}

static void push_txheld(tk_thread *t, cx_lock_t *l) {
    list_push(&t->cx.txheld, &t->cx.ntxheld, &t->cx.txheld_cap, l);
    t->hooks_armed |= TK_HOOK_ARMED(TK_HOOK_COMMITTED); /* release at commit */
}

/* Release every lock the attempt holds, newest first, and its subscriptions. */
static void release_txheld(tk_thread *t) {
    while (t->cx.ntxheld)
        excl_release(t->cx.txheld[--t->cx.ntxheld]);
    t->cx.nsubs = 0;
}

/* ------------------------------------------------------ adaptive policy */

/* Racy counters: hints only, on a line every thread of the lock shares, so
 * each store costs a cache-line transfer. Without hardware sections there
 * is nothing to adapt. With them, optimistic endings are sampled: one in
 * CX_ADAPT_SAMPLE per thread counts for CX_ADAPT_SAMPLE entries; exclusive
 * endings, which took the lock's line anyway, all count. */
#define CX_ADAPT_SAMPLE 16u
static __thread unsigned adapt_sample;

void tk_section_adapt(uint32_t *entries, uint32_t *exclusive, uint32_t *skip, const cx_policy_t *p,
                      int ended_exclusive) {
    if (!tk_g.hybrid)
        return;
    uint32_t weight = 1;
    if (!ended_exclusive) {
        if (++adapt_sample % CX_ADAPT_SAMPLE)
            return;
        weight = CX_ADAPT_SAMPLE;
    }
    uint32_t n = __atomic_load_n(entries, __ATOMIC_RELAXED) + weight;
    uint32_t x = __atomic_load_n(exclusive, __ATOMIC_RELAXED) + (ended_exclusive != 0);
    if (n >= p->window) {
        if (x * 100 > n * p->exclusive_pct)
            __atomic_store_n(skip, p->quiet_entries, __ATOMIC_RELAXED);
        n = x = 0;
    }
    __atomic_store_n(entries, n, __ATOMIC_RELAXED);
    __atomic_store_n(exclusive, x, __ATOMIC_RELAXED);
}

static void adapt(cx_lock_t *l, int ended_exclusive) {
    tk_section_adapt(&l->win_entries, &l->win_exclusive, &l->skip, &l->policy, ended_exclusive);
}

/* --------------------------------------------------- optimistic (hardware) */

/* Start a hardware transaction that depends on l: TK_XSTARTED when running, else the
 * abort status (execution comes back here when the CPU aborts it). */
__attribute__((noinline)) TK_RTM_FN static unsigned spec_begin(cx_lock_t *l) {
    unsigned status = tk_xbegin();
    if (status == TK_XSTARTED) {
        /* Software transactions subscribe to the lock too: like an htm
         * attempt, the section must not start during a software write-back
         * or a serial transaction (odd clock), nor commit writes under an
         * irrevocable one; it publishes its commit in cx_unlock. */
        if (!is_free(l) || (__atomic_load_n(&tk_g.clock, __ATOMIC_RELAXED) & 1) ||
            __atomic_load_n(&tk_g.irr_owner, __ATOMIC_RELAXED))
            TK_XABORT(TK_XCODE_SECTION_BUSY);
    }
    return status;
}


int tk_section_classify(unsigned status, int *hopeless) {
    *hopeless = 0;
    if (status & TK_XA_EXPLICIT) {
        unsigned code = TK_XA_CODE(status);
        if (code == TK_XCODE_SECTION_BUSY)
            return TXKIT_CAUSE_LOCKED;
        *hopeless = 1;
        return code == TK_XCODE_SECTION_EXCLUSIVE ? TXKIT_CAUSE_IRREVOCABLE : TXKIT_CAUSE_EXPLICIT;
    }
    if (status & TK_XA_CAPACITY) {
        *hopeless = 1;
        return TXKIT_CAUSE_CAPACITY;
    }
    if (status & TK_XA_CONFLICT)
        return TXKIT_CAUSE_CONFLICT;
    if (status & TK_XA_NESTED) {
        *hopeless = 1;
        return TXKIT_CAUSE_NESTED;
    }
    if (status & (TK_XA_RETRY | TK_XA_DEBUG))
        return TXKIT_CAUSE_OTHER;
    *hopeless = 1; /* system call, fault: the section needs the lock */
    return TXKIT_CAUSE_UNSUPPORTED;
}

/* -------------------------------------------------------------- the API */

int cx_init(cx_lock_t *l, const cx_policy_t *policy) {
    if (!l)
        return -EINVAL;
    const cx_policy_t *p = policy ? policy : &cx_policy_default;
    if (p->window == 0 || p->exclusive_pct > 100)
        return -EINVAL;
    memset(l, 0, sizeof *l);
    l->policy = *p;
    return 0;
}

int cx_destroy(cx_lock_t *l) {
    if (!l)
        return -EINVAL;
    return is_free(l) && !readers_in(l, false) ? 0 : -EBUSY;
}

/* Inside a txkit transaction: make the transaction depend on the lock.
 *
 * The dependency belongs to the attempt, not to the section: a lock taken
 * for real stays held after cx_unlock() until the attempt has committed
 * (its writes are all in memory) or has rolled back (serial undo applied),
 * and a software subscription stays on the list that becoming irrevocable
 * turns into held locks. Otherwise another thread could enter the lock and
 * see, or be overwritten by, writes the attempt later undoes or writes back.
 *
 * A transaction never waits for a lock it can still give up: it restarts
 * (and waits, outside, in its backoff). Waiting inside could deadlock with a
 * serial transaction that holds the global clock. Only an irrevocable one
 * waits: its lock holders never need the clock (tk_clock_external_write).
 *
 * Owner thread, inside a transaction. trying (cx_trylock): -EBUSY instead
 * of restarting or waiting when the lock is held by another thread. */
static int subscribe(tk_thread *t, cx_lock_t *l, int trying) {
    const struct tk_method *m = t->ctl.m;
    if (list_has(t->cx.held, t->cx.nheld, l))
        return 0; /* an exclusive section around the transaction holds it */
    if ((m->caps & TK_CAP_HARDWARE) || t->doomed) {
        t->cx.hw_ntx = t->ntx; /* tk_cx_entered_hw: how tx_irrevocable leaves hardware */
        if (!is_free(l)) {
            if (trying)
                return -EBUSY;
            tx_restart(); /* a hardware abort; retried after backoff */
        }
        return 0;
    }
    if (list_has(t->cx.txheld, t->cx.ntxheld, l))
        return 0; /* this attempt holds it already (an earlier or outer section) */
    if (t->ctl.irrevocable) {
        if (trying) {
            if (excl_try(l) != 0)
                return -EBUSY;
        } else {
            excl_acquire(l);
        }
        push_txheld(t, l);
        return 0;
    }
    if (m->caps & TK_CAP_SOFTWARE) {
        uint32_t f = __atomic_load_n(&l->flags, __ATOMIC_SEQ_CST);
        if (!(f & CX_F_SUBSCRIBED))
            f = __atomic_fetch_or(&l->flags, CX_F_SUBSCRIBED, __ATOMIC_SEQ_CST) | CX_F_SUBSCRIBED;
        if (TXKIT_UNLIKELY((f & (CX_F_SHARED | CX_F_NOSHARED)) == CX_F_SHARED)) {
            /* the first subscriptions: shared holders that entered before
             * the flag leave first (later ones see it and go exclusive).
             * Not waited for in here (a holder's own transaction may be
             * waiting at its commit for this attempt to end: privatization
             * safety): the attempt restarts and waits in its backoff. */
            if (readers_in(l, true)) {
                if (trying)
                    return -EBUSY;
                tx_restart();
            }
            __atomic_fetch_or(&l->flags, CX_F_NOSHARED, __ATOMIC_SEQ_CST);
        }
        if (TX_LOAD(&l->state.word) != 0) {
            if (trying)
                return -EBUSY;
            tx_restart();
        }
        if (!list_has(t->cx.subs, t->cx.nsubs, l))
            list_push(&t->cx.subs, &t->cx.nsubs, &t->cx.subs_cap, l);
        t->hooks_armed |= TK_HOOK_ARMED(TK_HOOK_COMMITTED); /* forget at commit */
        return 0;
    }
    /* serial with an undo log: take the lock for real, or restart */
    if (excl_try(l) != 0) {
        if (trying)
            return -EBUSY;
        tx_restart();
    }
    push_txheld(t, l);
    return 0;
}

/* tk_hold_subscribed (core.h). */
static int cx_hold_subscribed(tk_thread *t) {
    unsigned got = 0;
    for (; got < t->cx.nsubs; got++)
        if (excl_try(t->cx.subs[got]) != 0)
            break;
    if (got < t->cx.nsubs) {
        while (got)
            excl_release(t->cx.subs[--got]);
        return -EBUSY;
    }
    for (unsigned i = 0; i < t->cx.nsubs; i++) {
        push_txheld(t, t->cx.subs[i]);
        if (t->ctl.m->refresh_read)
            t->ctl.m->refresh_read(t, (const void *)&t->cx.subs[i]->state.word);
    }
    t->cx.nsubs = 0;
    return 0;
}

/* How a section asks to run (enter). */
enum { WANT_OPTIMISTIC, WANT_EXCLUSIVE, WANT_SHARED };

/* Hold l shared (no RTM; outermost section, outside transactions): false
 * when it cannot be (no record, or a software transaction subscribed to l),
 * and the section goes exclusive. */
static bool shared_begin(tk_thread *t, cx_lock_t *l) {
    struct cx_reader *r = reader_get(t);
    if (!r)
        return false;
    if (TXKIT_UNLIKELY(!(__atomic_load_n(&l->flags, __ATOMIC_RELAXED) & CX_F_SHARED)))
        __atomic_fetch_or(&l->flags, CX_F_SHARED, __ATOMIC_SEQ_CST);
    for (;;) {
        (void)__atomic_exchange_n(&r->reading, l, __ATOMIC_SEQ_CST); /* xchg: a full fence */
        bool subscribed = __atomic_load_n(&l->flags, __ATOMIC_SEQ_CST) & CX_F_SUBSCRIBED;
        if (TXKIT_LIKELY(!subscribed && __atomic_load_n(&l->state.word, __ATOMIC_SEQ_CST) == 0))
            return true;
        __atomic_store_n(&r->reading, NULL, __ATOMIC_RELEASE);
        if (subscribed)
            return false;
        wait_free(l); /* a writer: it goes first */
    }
}

static inline void shared_end(tk_thread *t) {
    __atomic_store_n(&t->cx.rd->reading, NULL, __ATOMIC_RELEASE);
}

/* cx_lock_t.owner: 0 until a thread enters the lock, then that thread's
 * uid, and CX_OWNER_ALL once another one has; a thread that finds it
 * CX_OWNER_ALL at every CX_RECLAIM_EVERY-th of its entries claims it again
 * (the others' next entry gives it back to all), so that a lock that one
 * thread filled and another alone uses goes to the latter. */
#define CX_OWNER_ALL UINT32_MAX
#define CX_RECLAIM_EVERY 1024u
static uint32_t uid_next;

/* Has no other thread than c's entered l lately (true: c's thread owns l,
 * or claims it now)? Only a heuristic: the answer is about the past, and a
 * thread that enters while c's holds the lock finds it held and waits, as
 * for any exclusive section. Owner thread, outermost entry. */
static inline bool sole_user(cx_lock_t *l, struct tk_cx *c) {
    if (TXKIT_UNLIKELY(!c->uid)) {
        uint32_t u;
        do /* never 0 (none) or CX_OWNER_ALL, even after 2^32 threads */
            u = __atomic_add_fetch(&uid_next, 1, __ATOMIC_RELAXED);
        while (u == 0 || u == CX_OWNER_ALL);
        c->uid = u;
    }
    uint32_t o = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);
    if (TXKIT_LIKELY(o == c->uid))
        return true;
    if (o == CX_OWNER_ALL) {
        if (TXKIT_LIKELY(++c->reclaim % CX_RECLAIM_EVERY))
            return false;
        /* this entry tries hardware as before; the next ones know */
        __atomic_compare_exchange_n(&l->owner, &o, c->uid, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
        return false;
    }
    if (o == 0 && __atomic_compare_exchange_n(&l->owner, &o, c->uid, false, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED))
        return true;
    __atomic_store_n(&l->owner, CX_OWNER_ALL, __ATOMIC_RELAXED);
    return false;
}

static void enter(cx_lock_t *l, int want, void *caller) {
    tk_thread *t = tk_self();
    struct tk_cx *c = &t->cx;
    int want_exclusive = want == WANT_EXCLUSIVE;
    if ((c->mode == CX_EXCL || c->mode == CX_SHRD) && _txkit_tls.depth > 0) {
        /* A transaction inside an exclusive section: its sections are its
         * own (released with the attempt), the outer section's stay. */
        c->txdepth++;
        subscribe(t, l, 0);
        return;
    }
    if (c->depth > 0) { /* nested: flatten into the outermost section */
        if (TXKIT_UNLIKELY(c->shared_outer && l == c->lock && want != WANT_SHARED))
            /* whatever the hardware: with RTM the shared section may be a
             * hardware one and could nest it, without RTM it cannot */
            TK_FATAL("cx_%s(%p) inside a cx_shared section of the same lock: a shared "
                     "section cannot become exclusive",
                     want_exclusive ? "exclusive" : "optimistic", (void *)l);
        c->depth++;
        if (c->mode == CX_SPEC) {
            if (want_exclusive)
                tk_section_abort_exclusive();
            if (!is_free(l))
                tk_section_abort_busy();
        } else if (c->mode == CX_TXSUB) {
            subscribe(t, l, 0);
        } else if (c->mode == CX_SHRD && l == c->lock) {
            /* a shared section of it: counted by the depth alone */
        } else if (list_has(c->held, c->nheld, l)) {
            push_held(t, l); /* held by this thread already: a re-entry */
        } else {
            excl_acquire(l);
            push_held(t, l);
        }
        return;
    }
    if (_txkit_tls.depth > 0) {
        c->depth = 1;
        c->mode = CX_TXSUB;
        c->shared_outer = 0;
        c->lean = 0;
        subscribe(t, l, 0);
        return;
    }
    c->shared_outer = want == WANT_SHARED;
    struct tks_counters *cnt = lock_counters(t, l, caller);
    /* Without RTM a section that is not shared holds the lock from its first
     * try: counted once, at its end, in one add (section_ended). With RTM so
     * does any section of the one thread that has entered the lock lately
     * (sole_user): nobody contends, and the lock's two atomic operations cost less than
     * XBEGIN and XEND (cache, 1 thread, 99.9% hits: 0.70x the legacy lock in
     * hardware). */
    bool alone = tk_g.hybrid && sole_user(l, c);
    c->lean = (!tk_g.hybrid && want != WANT_SHARED) || alone;
    if (!c->lean)
        count_entry(cnt);
    c->tries = 0;
    if (!tk_cfg.stats_off) {
        /* Set outside any transaction, so that sampling threads can read it
         * without aborting our optimistic section. */
        uint64_t site = __atomic_load_n(&l->site, __ATOMIC_RELAXED);
        __atomic_store_n(&t->slot->cur_site, site, __ATOMIC_RELAXED);
        if (++t->inside_sample_ctr >= TK_SAMPLE_EVERY) {
            t->inside_sample_ctr = 0;
            tk_sample_inside(t, site, cnt);
        }
    }
    if (want == WANT_SHARED && !tk_g.hybrid && shared_begin(t, l)) {
        c->depth = 1;
        c->mode = CX_SHRD;
        c->lock = l;
        c->cnt = cnt;
        return; /* held shared */
    }
    if (!want_exclusive && !alone && tk_section_try(&l->skip)) {
        unsigned busy = 0;
        for (;;) {
            wait_free(l); /* outside any transaction */
            unsigned status = spec_begin(l);
            if (status == TK_XSTARTED) {
                c->depth = 1;
                c->mode = CX_SPEC;
                c->lock = l;
                c->cnt = cnt;
                return; /* the section runs in hardware */
            }
            int hopeless;
            int cause = tk_section_classify(status, &hopeless);
            c->tries += cause != TXKIT_CAUSE_LOCKED;
            if (cause == TXKIT_CAUSE_LOCKED && tk_solo_parked())
                tk_solo_revoke(t); /* the odd clock is a lone thread's parked one (solo.h) */
            /* Found held inside, again and again (exclusive holders keep
             * coming): bounded like any other retry, then take it. */
            bool give_up = hopeless || c->tries >= l->policy.htm_tries ||
                           (cause == TXKIT_CAUSE_LOCKED && ++busy >= CX_BUSY_TRIES);
            tk_section_count_abort(cnt, cause, give_up);
            if (give_up)
                break;
            if (cause == TXKIT_CAUSE_CONFLICT)
                tk_section_backoff(&c->backoff, c->tries, tk_rand(t));
        }
    }
    /* the bookkeeping before the lock, so that the section it serializes
     * is only the caller's (cache of 1000 pages, 99.9% hits, 2 threads,
     * without RTM: 1.18x with the list's append inline and first) */
    push_held(t, l);
    c->depth = 1;
    c->mode = CX_EXCL;
    c->lock = l;
    c->cnt = cnt;
    excl_acquire(l);
}

TK_EXPORT void cx_optimistic(cx_lock_t *l) {
    enter(l, WANT_OPTIMISTIC, __builtin_return_address(0));
}

TK_EXPORT void cx_exclusive(cx_lock_t *l) { enter(l, WANT_EXCLUSIVE, __builtin_return_address(0)); }

TK_EXPORT void cx_shared(cx_lock_t *l) { enter(l, WANT_SHARED, __builtin_return_address(0)); }

TK_EXPORT int cx_trylock(cx_lock_t *l) {
    tk_thread *t = tk_self();
    struct tk_cx *c = &t->cx;
    if (c->mode == CX_SPEC) /* a speculative section cannot hold a lock for real */
        tk_section_abort_exclusive();
    if (c->mode == CX_TXSUB ||
        (_txkit_tls.depth > 0 && (c->depth == 0 || c->mode == CX_EXCL || c->mode == CX_SHRD))) {
        /* inside a transaction: the attempt owns the lock (subscribe) */
        if (subscribe(t, l, 1) != 0)
            return -EBUSY;
        if (c->mode == CX_EXCL || c->mode == CX_SHRD)
            c->txdepth++;
        else if (c->depth++ == 0) {
            c->mode = CX_TXSUB;
            c->shared_outer = 0;
            c->lean = 0;
        }
        return 0;
    }
    if (c->mode == CX_SHRD && l == c->lock)
        return -EBUSY; /* held shared by this very section: it cannot become exclusive */
    if (excl_try(l) != 0)
        return -EBUSY;
    if (c->depth++ == 0) {
        c->mode = CX_EXCL;
        c->shared_outer = 0;
        c->lean = 0;
        c->lock = l;
        c->cnt = lock_counters(t, l, __builtin_return_address(0));
        c->tries = 0;
        count_entry(c->cnt);
    }
    push_held(t, l);
    return 0;
}

/* The outermost section ended, in hardware (TXKIT_HTM), holding its lock
 * shared (TXKIT_STM) or exclusively (TXKIT_SERIAL), released by now: its
 * statistics and the lock's policy. */
static void section_ended(tk_thread *t, struct tk_cx *c, int method) {
    __atomic_store_n(&t->slot->cur_site, 0, __ATOMIC_RELAXED);
    count_end(t, c->cnt, method);
    if (!c->lean) /* (a sole user's held its lock by choice: no sign against hardware) */
        adapt(c->lock, method == TXKIT_SERIAL);
}

TK_EXPORT void cx_unlock(cx_lock_t *l) {
    tk_thread *t = tk_cur;
    struct tk_cx *c = t ? &t->cx : NULL;
    if (TXKIT_LIKELY(c && c->mode == CX_EXCL && c->depth == 1 && !c->txdepth && !t->doomed &&
                     c->nheld && c->held[c->nheld - 1] == l)) {
        /* The outermost exclusive section of the last lock taken: what the
         * general path below does for it, with fewer tests before the release
         * (cache of 1000 pages, 99.9% hits, 2 threads, without RTM:
         * 1.10-1.14x against the general path alone). */
        excl_release(l);
        c->nheld--;
        c->depth = 0;
        section_ended(t, c, TXKIT_SERIAL);
        c->mode = CX_NONE;
        c->lock = NULL;
        return;
    }
    if (TXKIT_LIKELY(c && c->mode == CX_SHRD && c->depth == 1 && !c->txdepth && !t->doomed &&
                     c->lock == l)) {
        /* the outermost shared section */
        shared_end(t);
        c->depth = 0;
        section_ended(t, c, TXKIT_STM);
        c->mode = CX_NONE;
        c->lock = NULL;
        return;
    }
    if (t && t->doomed && (!c || c->depth == 0 || c->mode == CX_EXCL || c->mode == CX_SHRD))
        return; /* C++ unwinding out of an aborted transaction: already reset */
    if (c && c->txdepth && _txkit_tls.depth > 0) {
        c->txdepth--; /* the attempt keeps its locks until it ends (subscribe) */
        return;
    }
    if (!c || c->depth == 0)
        TK_FATAL("cx_unlock(%p) without a matching cx_optimistic/cx_exclusive", (void *)l);
    unsigned depth = --c->depth;
    switch (c->mode) {
    case CX_SPEC:
        if (depth == 0) {
            /* Software transactions running now revalidate (stm_norec.c):
             * they may have read what the section wrote. */
            uint64_t h = 0;
            if (__atomic_load_n(&tk_g.sw_active, __ATOMIC_RELAXED))
                h = ++tk_g.hw_commits; /* transactional: atomic with the section */
            tk_section_end();
            if (h) /* privatization safety, as after a hardware transaction (htm.c) */
                tk_privatization_wait_hw(t, h);
            section_ended(t, c, TXKIT_HTM);
            tk_section_backoff_ok(&c->backoff, c->tries);
        }
        break;
    case CX_EXCL:
        if (!pop_held(t, l))
            TK_FATAL("cx_unlock(%p): this thread does not hold that lock", (void *)l);
        if (depth == 0)
            section_ended(t, c, TXKIT_SERIAL);
        break;
    case CX_SHRD:
        /* inside the outermost (shared) section, each section of another
         * lock has its entry in the held list; the rest of the depth are
         * shared sections of the outermost one's lock */
        if (l != c->lock) {
            if (!pop_held(t, l))
                TK_FATAL("cx_unlock(%p): this thread does not hold that lock", (void *)l);
        } else if (depth > c->nheld) {
            /* a shared section of the same lock inside */
        } else if (depth > 0) {
            TK_FATAL("cx_unlock(%p): a shared section's lock unlocked before the %u "
                     "sections inside it",
                     (void *)l, depth);
        } else {
            shared_end(t);
            section_ended(t, c, TXKIT_STM);
        }
        break;
    default: /* CX_TXSUB: the attempt keeps its locks until it ends (subscribe) */
        break;
    }
    if (depth == 0) {
        c->mode = CX_NONE;
        c->lock = NULL;
    }
}

TK_EXPORT void cx_need_exclusive(void) {
    tk_thread *t = tk_cur;
    if (!t || t->cx.depth == 0)
        return;
    if (t->cx.txdepth && _txkit_tls.depth > 0)
        tx_irrevocable();
    else if (t->cx.mode == CX_SPEC)
        tk_section_abort_exclusive(); /* comes back in enter(), which goes exclusive */
    else if (t->cx.mode == CX_TXSUB)
        tx_irrevocable();
}

TK_EXPORT int cx_mode(void) {
    tk_thread *t = tk_cur;
    if (t && t->cx.txdepth && _txkit_tls.depth > 0)
        return CX_TXSUB;
    return t ? t->cx.mode : CX_NONE;
}

/* TK_HOOK_ABORTED: the aborted attempt has rolled back: release the cx
 * locks it held, forget its subscriptions and the sections it had entered. */
static void cx_after_abort(tk_thread *t, int cause) {
    (void)cause;
    if (TXKIT_LIKELY(t->cx.mode == CX_NONE && !tk_cx_owned(t)))
        return;
    release_txheld(t);
    t->cx.txdepth = 0;
    if (t->cx.mode != CX_TXSUB)
        return; /* sections outside the transaction are still entered */
    t->cx.depth = 0;
    t->cx.mode = CX_NONE;
}

/* TK_HOOK_COMMITTED (armed): the attempt committed, its writes are all in
 * memory: release the cx locks it held, forget its subscriptions. */
static void cx_after_commit(tk_thread *t, int arg) {
    (void)arg;
    if (tk_cx_owned(t))
        release_txheld(t);
}

static void cx_thread_exit(tk_thread *t, int arg) {
    (void)arg;
    if (t->cx.rd) { /* given back for another thread to claim */
        shared_end(t);
        __atomic_store_n(&t->cx.rd->in_use, 0, __ATOMIC_RELEASE);
        t->cx.rd = NULL;
    }
    free(t->cx.txheld);
    free(t->cx.subs);
    free(t->cx.held);
    t->cx.txheld = t->cx.subs = t->cx.held = NULL;
    t->cx.ntxheld = t->cx.nsubs = t->cx.txheld_cap = t->cx.subs_cap = 0;
    t->cx.nheld = t->cx.held_cap = 0;
}

TK_CONSTRUCTOR static void cx_hooks(void) {
    tk_hold_subscribed = cx_hold_subscribed;
    tk_hook_add(TK_HOOK_ABORTED, 10, cx_after_abort);
    tk_hook_add(TK_HOOK_COMMITTED, 10, cx_after_commit);
    tk_hook_add(TK_HOOK_THREAD_EXIT, TK_EXIT_ORDER_CX, cx_thread_exit);
    tk_hook_add(TK_HOOK_FORK, TK_FORK_ORDER_CX, cx_atfork);
}
