/* SPDX-License-Identifier: MIT */
/* thread.c - per-thread descriptors: creation, registry, exit. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <txkit/cx.h>
#include <unistd.h>

#include "methods/method.h"
#include "runtime/internal.h"
#include "runtime/solo.h"


static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static tk_thread *reg_head;
static unsigned live_threads;
int tk_reg_alone; /* internal.h; 1 only with live_threads 1 */

/* After live_threads changed, under reg_lock: a second thread ends the
 * first's being alone, and every thread passes a barrier before the caller
 * goes on (tk_epoch_enter says why); a thread left alone is so from now on. */
static void alone_update(void) {
    if (live_threads > 1) {
        if (tk_reg_alone) {
            __atomic_store_n(&tk_reg_alone, 0, __ATOMIC_RELAXED);
            tk_barrier_all();
        }
    } else {
        __atomic_store_n(&tk_reg_alone, live_threads == 1 && tk_barrier_ready(), __ATOMIC_RELAXED);
    }
}

/* The published epochs (tk_thread.epoch points at its thread's), one cache
 * line each, read without a lock: a writer's commit looks at them all
 * (tk_privatization_wait), so they live in blocks that are never freed, and
 * a thread's cell goes back to the pool at its exit. Cells [0, cells_hi) were
 * ever taken; block k holds cells [k * EPOCH_BLOCK, (k + 1) * EPOCH_BLOCK).
 * Taken and given back under reg_lock. */
#define EPOCH_BLOCK 64
struct epoch_cell {
    uint64_t epoch; /* the owner's: snapshot + 1, or 0 */
    uint64_t hsnap; /* the owner's: hw_commits its reads are valid at (tk_epoch_publish_hw) */
    unsigned used;  /* under reg_lock */
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct epoch_cell, hsnap) == sizeof(uint64_t),
               "internal.h: tk_epoch_publish_hw writes epoch[1]");
struct epoch_block {
    struct epoch_cell cell[EPOCH_BLOCK];
    struct epoch_block *next; /* published with release, never unlinked */
};
static struct epoch_block epoch_first;
static unsigned cells_hi; /* atomic: the cells ever taken are below it */

/* A free cell, epoch 0, for a new thread. Under reg_lock; NULL: out of memory. */
static uint64_t *epoch_cell_take(void) {
    struct epoch_block *b = &epoch_first;
    for (unsigned base = 0;; base += EPOCH_BLOCK) {
        for (unsigned i = 0; i < EPOCH_BLOCK; i++) {
            if (!b->cell[i].used) {
                b->cell[i].used = 1;
                if (base + i + 1 > cells_hi)
                    __atomic_store_n(&cells_hi, base + i + 1, __ATOMIC_SEQ_CST);
                return &b->cell[i].epoch;
            }
        }
        if (!b->next) {
            struct epoch_block *n = aligned_alloc(64, sizeof *n);
            if (!n)
                return NULL;
            memset(n, 0, sizeof *n);
            __atomic_store_n(&b->next, n, __ATOMIC_RELEASE);
        }
        b = b->next;
    }
}

/* Under reg_lock (the cell's owner is gone, or leaving). */
static void epoch_cell_give_back(uint64_t *e) {
    struct epoch_cell *c = (struct epoch_cell *)(void *)e;
    __atomic_store_n(&c->epoch, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->hsnap, 0, __ATOMIC_RELAXED);
    c->used = 0;
}
/* A descriptor's alignment and the multiple of its size (two cache lines:
 * the adjacent-line prefetcher fetches pairs; at least _Alignof(tk_thread)). */
#define DESC_ALIGN (2 * TK_CACHELINE)
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;


static void thread_exit(void *p) {
    tk_thread *t = p;
    tk_hooks_run(TK_HOOK_THREAD_EXIT, t, 0);
    tk_mutex_lock(&reg_lock);
    if (t->prev)
        t->prev->next = t->next;
    else
        reg_head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    __atomic_sub_fetch(&live_threads, 1, __ATOMIC_RELAXED);
    alone_update(); /* it read its last epochs in its exit hooks (reclaim.c) */
    epoch_cell_give_back(t->epoch);
    tk_mutex_unlock(&reg_lock);
    uintptr_t me = (uintptr_t)t;
    __atomic_compare_exchange_n(&tk_g.solo, &me, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    tk_vec_free(&t->ulog);
    tk_vec_free(&t->allocs);
    tk_vec_free(&t->captured);
    tk_vec_free(&t->excs);
    tk_vec_free(&t->frees);
    tk_vec_free(&t->handlers);
    tk_vec_free(&t->arena);
    tk_vec_free(&t->itm.cps); /* empty outside transactions: no checkpoints left */
    free(t);
    tk_cur = NULL;
}

/* fork(): the child has only the forking thread, so every global token must
 * be left as if the others had never run, never held by a thread that does
 * not exist there:
 *  - clock: a software commit writes back, or a serial transaction writes in
 *    place, only while holding it (odd). fork takes it like a serial
 *    transaction (so the child gets the memory whole, and an even clock),
 *    unless the forking thread holds it itself, in a serial attempt;
 *  - irr_owner: an irrevocable software transaction writes nothing shared
 *    before its commit, which needs the clock: in the child it never ran, and
 *    the token is free (fork does not wait for it: the irrevocable thread may
 *    be waiting for I/O that the forking thread provides after the fork);
 *  - serial_holder, serial_pending, sw_active, solo: the forking thread's own
 *    share only;
 *  - the registry (reclamation epochs, solo detection), visible-read slots,
 *    site queues of the scheduler, statistics: the forking thread's only;
 *  - the runtime's own mutexes: taken in prepare after the clock (their
 *    holders never wait for the clock), reset in the child.
 * cx locks and mutexes held by the threads that are gone stay held in the
 * child, as with any lock (the user's problem, POSIX says as much). */
static int fork_took_clock;
static uint64_t fork_clock;
static tk_thread *fork_orphans; /* the parent's other threads, in a child */

/* Does t hold the clock itself (a serial attempt is running)? */
static bool holds_clock(const tk_thread *t) { return t && _txkit_tls.depth && tk_holds_clock(t); }

static void fork_prepare(void) {
    /* No descriptor is made here: that allocates (pthread_getattr_np reads
     * /proc), and a replacement malloc whose prefork handler ran before this
     * one holds its locks until the fork is over: the fork hung (jemalloc,
     * preload.mallocs). A lock that a prefork handler running after this one
     * takes goes to glibc (tk_in_self: the runtime's mutexes are held by
     * then), so nothing registers this thread with reg_lock held. */
    tk_thread *me = tk_cur;
    fork_took_clock = 0;
    if (!holds_clock(me)) {
        for (;;) {
            uint64_t c = tk_wait_clock_even();
            if (__atomic_compare_exchange_n(&tk_g.clock, &c, c + 1, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED)) {
                fork_clock = c + 2; /* as after a commit: snapshots revalidate */
                fork_took_clock = 1;
                break;
            }
        }
    }
    tk_hooks_run(TK_HOOK_FORK, me, TK_FORK_PREPARE);
}

static void fork_parent(void) {
    tk_hooks_run_reverse(TK_HOOK_FORK, tk_cur, TK_FORK_PARENT);
    if (fork_took_clock)
        __atomic_store_n(&tk_g.clock, fork_clock, __ATOMIC_RELEASE);
}

/* The child's statistics segment is new: a transaction or cx section the
 * forking thread is inside of counts into it from now on. */
static void fork_reattach_stats(tk_thread *me) {
    bool tx = _txkit_tls.depth && me->ctl.site && me->ctl.site->id;
    bool section = me->cx.depth && me->cx.lock && me->cx.lock->site;
    if (!tx && !section)
        return;
    tk_seg_thread_attach(me);
    if (!me->row)
        return;
    if (tx)
        me->cnt = me->row + (me->ctl.site->id - 1);
    if (section && me->cx.cnt)
        me->cx.cnt = me->row + (me->cx.lock->site - 1);
}

static void fork_child(void) {
    tk_thread *me = tk_cur;
    if (fork_took_clock) {
        tk_g.clock = fork_clock;
        tk_g.serial_holder = 0;
    }
    if (tk_g.irr_owner != (uintptr_t)me || !me)
        tk_g.irr_owner = 0;
    tk_g.sw_active = me && me->stm.sw_registered ? 1 : 0;
    tk_g.serial_pending = 0;
    if (tk_solo_owner(tk_g.solo) != (uintptr_t)me || !me)
        tk_g.solo = 0; /* fork_prepare took back a clock another thread parked */
    /* Other threads' descriptors stay allocated (their memory is the parent's
     * to free); they leave the registry for fork_orphans, which nothing reads:
     * kept reachable, so that a leak checker (ASan's, TXKIT_SANITIZE) does not
     * report them at every child's exit. */
    if (me) {
        if (me->prev)
            me->prev->next = me->next;
        else
            reg_head = me->next;
        if (me->next)
            me->next->prev = me->prev;
    }
    if (reg_head) {
        tk_thread *tail = reg_head;
        while (tail->next)
            tail = tail->next;
        tail->next = fork_orphans; /* a child's child: earlier orphans too */
        fork_orphans = reg_head;
    }
    reg_head = me;
    if (me) {
        me->next = me->prev = NULL;
        me->ntx = 0;
    }
    live_threads = me ? 1 : 0;
    /* the other threads' cells: nobody to wait for in the child */
    unsigned k = 0;
    for (struct epoch_block *b = &epoch_first; b; b = b->next)
        for (unsigned i = 0; i < EPOCH_BLOCK && k < cells_hi; i++, k++)
            if (b->cell[i].used && (!me || &b->cell[i].epoch != me->epoch))
                epoch_cell_give_back(&b->cell[i].epoch);
    tk_hooks_run_reverse(TK_HOOK_FORK, me,
                         TK_FORK_CHILD); /* the segment last: statistics of its own */
    /* after solo.c's hook registered membarrier(2) again */
    alone_update();
    if (me)
        fork_reattach_stats(me);
}

static void registry_atfork(tk_thread *me, int phase) {
    (void)me;
    tk_atfork_mutex(&reg_lock, phase);
}

static void make_key(void) {
    if (pthread_key_create(&exit_key, thread_exit) != 0)
        TK_FATAL("pthread_key_create failed");
}

TK_CONSTRUCTOR static void thread_init(void) {
    pthread_once(&key_once, make_key);
    tk_hook_add(TK_HOOK_FORK, TK_FORK_ORDER_REGISTRY, registry_atfork);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

tk_thread *tk_thread_get(void) {
    if (tk_cur)
        return tk_cur;
    pthread_once(&key_once, make_key);
    /* The type's alignment (a cache line: its registry links), and lines of
     * its own, with their prefetch pairs: nothing of another thread's beside
     * what its hardware attempts read */
    size_t size = (sizeof(tk_thread) + DESC_ALIGN - 1) / DESC_ALIGN * DESC_ALIGN;
    tk_thread *t = aligned_alloc(DESC_ALIGN, size);
    if (!t)
        TK_FATAL("out of memory creating a thread descriptor");
    memset(t, 0, size);
    _Static_assert(DESC_ALIGN % _Alignof(tk_thread) == 0, "thread.c: a descriptor's alignment");
    _Static_assert(offsetof(tk_thread, next) / TK_CACHELINE !=
                       offsetof(tk_thread, express) / TK_CACHELINE,
                   "internal.h: the registry links away from what hardware attempts read");
    TK_ASSERT(((uintptr_t)t & 15) == 0); /* solo.h: the low bits of tk_g.solo */
    t->thread_method = -1;
    t->cm.prio_set = TX_PRIO_AUTO;
    tk_hooks_run(TK_HOOK_THREAD_INIT, t, 0); /* the methods' state, the priority */
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *lo;
        size_t size;
        if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
            t->stk_lo = (uintptr_t)lo;
            t->stk_hi = (uintptr_t)lo + size;
            _txkit_tls.stk_lo = t->stk_lo; /* the inline store's copy (txkit/tx.h) */
        }
        pthread_attr_destroy(&attr);
    }
    _txkit_tls.clock = &tk_g.clock;
    _txkit_tls.hw = &tk_g.hw_commits; /* stays 0 without hardware sections */
    t->rng = tk_rdtsc() ^ ((uint64_t)(uintptr_t)t << 17) ^ (uint64_t)gettid();
    if (!t->rng)
        t->rng = 0x9e3779b97f4a7c15ull;
    tk_mutex_lock(&reg_lock);
    t->epoch = epoch_cell_take();
    if (!t->epoch) {
        tk_mutex_unlock(&reg_lock);
        TK_FATAL("out of memory creating a thread descriptor");
    }
    t->next = reg_head;
    if (reg_head)
        reg_head->prev = t;
    reg_head = t;
    __atomic_add_fetch(&live_threads, 1, __ATOMIC_RELAXED);
    alone_update(); /* before our first transaction */
    tk_mutex_unlock(&reg_lock);
    pthread_setspecific(exit_key, t);
    tk_seg_thread_attach(t);
    tk_cur = t;
    return t;
}

unsigned tk_thread_count(void) { return __atomic_load_n(&live_threads, __ATOMIC_RELAXED); }


/* Visit, without a lock, every cell ever taken but self's, until fn says
 * stop (then true). Inline, fn with it: a writing commit scans them all. */
static inline __attribute__((always_inline)) bool
cells_visit(const tk_thread *self, bool (*fn)(const struct epoch_cell *, void *), void *arg) {
    const uint64_t *mine = self ? self->epoch : NULL;
    unsigned hi = __atomic_load_n(&cells_hi, __ATOMIC_SEQ_CST), k = 0;
    for (const struct epoch_block *b = &epoch_first; b && k < hi;
         b = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE))
        for (unsigned i = 0; i < EPOCH_BLOCK && k < hi; i++, k++)
            if (&b->cell[i].epoch != mine && fn(&b->cell[i], arg))
                return true;
    return false;
}

static inline __attribute__((always_inline)) bool min_epoch_of(const struct epoch_cell *c,
                                                               void *arg) {
    uint64_t *min = arg, e = __atomic_load_n(&c->epoch, __ATOMIC_RELAXED);
    if (e && e - 1 < *min)
        *min = e - 1; /* e == 1: begun, snapshot not known yet: 0 */
    return false;
}

uint64_t tk_threads_min_epoch(const tk_thread *self) {
    uint64_t min = UINT64_MAX;
    cells_visit(self, min_epoch_of, &min);
    return min;
}

static inline __attribute__((always_inline)) bool hw_behind(const struct epoch_cell *c, void *arg) {
    /* the epoch first: the hsnap read after it is that attempt's or newer */
    return __atomic_load_n(&c->epoch, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&c->hsnap, __ATOMIC_RELAXED) < *(const uint64_t *)arg;
}

bool tk_threads_hw_behind(const tk_thread *self, uint64_t h) {
    return cells_visit(self, hw_behind, &h);
}

uint64_t tk_others_transactions(const tk_thread *self) {
    uint64_t n = 0;
    tk_mutex_lock(&reg_lock);
    for (tk_thread *t = reg_head; t; t = t->next)
        if (t != self)
            n += __atomic_load_n(&t->ntx, __ATOMIC_RELAXED);
    tk_mutex_unlock(&reg_lock);
    return n;
}
