/* thread.c - per-thread descriptors: creation, registry, exit. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/internal.h"

__thread tk_thread *tk_cur;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static tk_thread *reg_head;
static unsigned live_threads;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

#define WINDEX_INITIAL 256

static void thread_exit(void *p) {
    tk_thread *t = p;
    tk_reclaim_all(t);
    tk_vis_thread_exit(t);
    tk_sched_release(t);
    tk_seg_thread_detach(t);
    pthread_mutex_lock(&reg_lock);
    if (t->prev)
        t->prev->next = t->next;
    else
        reg_head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    __atomic_sub_fetch(&live_threads, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&reg_lock);
    uintptr_t me = (uintptr_t)t;
    __atomic_compare_exchange_n(&tk_g.solo, &me, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    free(t->rlog);
    _txkit_tls.rcur = _txkit_tls.rend = NULL;
    tk_vec_free(&t->wset);
    tk_vec_free(&t->ulog);
    tk_vec_free(&t->allocs);
    tk_vec_free(&t->captured);
    tk_vec_free(&t->excs);
    tk_vec_free(&t->frees);
    tk_vec_free(&t->handlers);
    tk_vec_free(&t->arena);
    free(t->windex);
    free(t);
    tk_cur = NULL;
}

/* fork(): the child must not inherit a clock held by a thread that does not
 * exist there, nor half a write-back. So fork waits for the clock like a
 * serial transaction (unless the forking thread is inside one itself, which
 * then already excludes everyone), and the child keeps only the forking
 * thread, with statistics of its own. */
static int fork_took_clock;
static uint64_t fork_clock;

static void fork_prepare(void) {
    pthread_mutex_lock(&reg_lock);
    fork_took_clock = 0;
    if (_txkit_tls.depth)
        return;
    for (;;) {
        uint64_t c = tk_wait_clock_even();
        if (__atomic_compare_exchange_n(&tk_g.clock, &c, c + 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            fork_clock = c + 2;
            fork_took_clock = 1;
            return;
        }
    }
}

static void fork_parent(void) {
    if (fork_took_clock)
        __atomic_store_n(&tk_g.clock, fork_clock, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&reg_lock);
}

static void fork_child(void) {
    if (fork_took_clock)
        tk_g.clock = fork_clock;
    tk_g.sw_active = 0;
    tk_g.serial_pending = 0;
    tk_g.serial_next = tk_g.serial_turn = 0; /* the queued ones are not in the child */
    tk_g.solo = 0;
    tk_thread *me = tk_cur;
    /* Other threads' descriptors stay allocated (their memory is the parent's
     * to free); they simply leave the registry. */
    reg_head = me;
    if (me) {
        me->next = me->prev = NULL;
        me->ntx = 0;
    }
    live_threads = me ? 1 : 0;
    pthread_mutex_unlock(&reg_lock);
    tk_seg_fork_child(me); /* statistics of its own */
}

static void make_key(void) {
    if (pthread_key_create(&exit_key, thread_exit) != 0)
        TK_FATAL("pthread_key_create failed");
}

__attribute__((constructor)) static void thread_init(void) {
    pthread_once(&key_once, make_key);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

tk_thread *tk_thread_get(void) {
    if (tk_cur)
        return tk_cur;
    pthread_once(&key_once, make_key);
    tk_thread *t = calloc(1, sizeof *t);
    tk_wslot *idx = calloc(WINDEX_INITIAL, sizeof *idx);
    if (!t || !idx)
        TK_FATAL("out of memory creating a thread descriptor");
    t->windex = idx;
    t->windex_mask = WINDEX_INITIAL - 1;
    t->wgen = 1;
    t->thread_method = -1;
    t->prio_set = TX_PRIO_AUTO;
    tk_prio_refresh(t);
    _txkit_tls.clock = &tk_g.clock;
    t->rng = tk_rdtsc() ^ ((uint64_t)(uintptr_t)t << 17) ^ (uint64_t)gettid();
    if (!t->rng)
        t->rng = 0x9e3779b97f4a7c15ull;
    pthread_mutex_lock(&reg_lock);
    t->next = reg_head;
    if (reg_head)
        reg_head->prev = t;
    reg_head = t;
    __atomic_add_fetch(&live_threads, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&reg_lock);
    pthread_setspecific(exit_key, t);
    tk_seg_thread_attach(t);
    tk_cur = t;
    return t;
}

unsigned tk_thread_count(void) { return __atomic_load_n(&live_threads, __ATOMIC_RELAXED); }


uint64_t tk_threads_min_epoch(const tk_thread *self) {
    uint64_t min = UINT64_MAX;
    pthread_mutex_lock(&reg_lock);
    for (tk_thread *t = reg_head; t; t = t->next) {
        uint64_t e = t == self ? 0 : __atomic_load_n(&t->epoch, __ATOMIC_RELAXED);
        if (e && e - 1 < min)
            min = e - 1; /* e == 1: begun, snapshot not known yet: 0 */
    }
    pthread_mutex_unlock(&reg_lock);
    return min;
}

uint64_t tk_others_transactions(const tk_thread *self) {
    uint64_t n = 0;
    pthread_mutex_lock(&reg_lock);
    for (tk_thread *t = reg_head; t; t = t->next)
        if (t != self)
            n += __atomic_load_n(&t->ntx, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&reg_lock);
    return n;
}
