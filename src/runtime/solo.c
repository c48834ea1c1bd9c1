/* SPDX-License-Identifier: MIT */
/* solo.c - the parked clock of a lone thread (the protocol is in solo.h), and
 * the wait for the clock, which revokes it. */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/solo.h"

/* Pins the named thread's descriptor while a revoker reads its solo_in: the
 * thread gives a parked clock back at exit under it (solo_exit). */
static pthread_mutex_t solo_lock = PTHREAD_MUTEX_INITIALIZER;
/* membarrier(2) for this process: 0 not asked yet, 1 registered, -1 not
 * available (nothing is parked then). Asked at load (solo_hooks) and in a
 * fork's child: the kernel registers a process with one thread at once, one
 * with more only after an RCU grace period (18 ms here), which the first
 * park, holding the clock, used to wait out while every other thread waited
 * for the clock. */
static int mb_state;

static long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

bool tk_barrier_ready(void) {
    int s = __atomic_load_n(&mb_state, __ATOMIC_ACQUIRE);
    if (TXKIT_LIKELY(s))
        return s > 0;
    long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    s = cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0
            ? 1
            : -1;
    __atomic_store_n(&mb_state, s, __ATOMIC_RELEASE);
    return s > 0;
}

/* Every running thread of the process passes a full barrier. Registered
 * before anything was parked or any thread was alone (tk_barrier_ready), so
 * it cannot fail for want of it. */
void tk_barrier_all(void) {
    while (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
        if (errno != EINTR && errno != EAGAIN)
            TK_FATAL("membarrier(PRIVATE_EXPEDITED) failed after registration: errno %d", errno);
}

/* The parked clock is ours to give back (we changed tk_g.solo away from it). */
static void release_clock(void) {
    __atomic_store_n(&tk_g.serial_holder, 0, __ATOMIC_RELAXED);
    uint64_t c = __atomic_load_n(&tk_g.clock, __ATOMIC_RELAXED);
    if (!(c & 1))
        TK_FATAL("a parked clock is even (%llu)", (unsigned long long)c);
    __atomic_store_n(&tk_g.clock, c + 1, __ATOMIC_RELEASE);
}

bool tk_solo_park(tk_thread *t) {
    uintptr_t me = (uintptr_t)t;
    if (__atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED) != me || t->ctl.kind == TK_KIND_CXX ||
        t->ctl.attempts || __atomic_load_n(&mb_state, __ATOMIC_ACQUIRE) <= 0)
        return false;
    return __atomic_compare_exchange_n(&tk_g.solo, &me, me | TK_SOLO_PARKED, false,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

void tk_solo_unpark(tk_thread *t) {
    uintptr_t me = (uintptr_t)t;
    tk_express_set(t, 0);
    /* A parked transaction that goes on elsewhere (a restart, irrevocable in
     * software): its begin was not counted (txn.c: start_count). */
    if (t->solo_in && !tk_cfg.stats_off)
        TK_COUNT(t->cnt->transactions, 1);
    __atomic_store_n(&t->solo_in, 0, __ATOMIC_RELEASE);
    for (;;) {
        uintptr_t s = __atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED);
        if (tk_solo_owner(s) != me || !(s & TK_SOLO_FLAGS))
            return; /* not parked, or a revoker gave it back */
        /* still alone unless someone is revoking */
        uintptr_t to = (s & TK_SOLO_REVOKING) ? TK_SOLO_SHARED : me;
        if (__atomic_compare_exchange_n(&tk_g.solo, &s, to, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            release_clock();
            return;
        }
    }
}

void tk_solo_revoke(tk_thread *self) {
    uintptr_t s = __atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED);
    if (s <= TK_SOLO_SHARED)
        return;
    uintptr_t owner = tk_solo_owner(s);
    if (owner == (uintptr_t)self) {
        if (!_txkit_tls.depth)
            tk_solo_unpark(self);
        return;
    }
    if (!(s & TK_SOLO_FLAGS)) { /* it takes the clock per transaction: just say it is not alone */
        __atomic_compare_exchange_n(&tk_g.solo, &s, TK_SOLO_SHARED, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
        return;
    }
    if (s & TK_SOLO_PARKED) {
        uintptr_t mark = owner | TK_SOLO_REVOKING;
        if (!__atomic_compare_exchange_n(&tk_g.solo, &s, mark, false, __ATOMIC_SEQ_CST,
                                         __ATOMIC_RELAXED))
            return; /* it changed: the caller looks again */
        s = mark;
    }
    if (!(s & TK_SOLO_FENCED)) {
        tk_barrier_all(); /* from here on the owner sees the mark, or we see its solo_in */
        /* Say so: waiters that call again while the owner's transaction runs
         * on need not interrupt it with one barrier each. Only a value with
         * the bit is ever finished below: it certifies a barrier after the
         * mark it carries, even if the word went round to the same value. */
        uintptr_t fenced = s | TK_SOLO_FENCED;
        if (!__atomic_compare_exchange_n(&tk_g.solo, &s, fenced, false, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED))
            return; /* it changed: the caller looks again */
        s = fenced;
    }
    bool ours = false;
    tk_mutex_lock(&solo_lock);
    if (__atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED) == s &&
        !__atomic_load_n(&((tk_thread *)owner)->solo_in, __ATOMIC_ACQUIRE))
        ours = __atomic_compare_exchange_n(&tk_g.solo, &s, TK_SOLO_SHARED, false, __ATOMIC_ACQUIRE,
                                           __ATOMIC_RELAXED);
    tk_mutex_unlock(&solo_lock);
    if (ours)
        release_clock();
}

/* A thread that waits for the clock while another runs solo (auto method,
 * serially, back to back) would wait for ever-shorter gaps, or for ever if
 * that one keeps the clock parked (solo.h): revoke solo mode, now and then
 * again (a revocation finishes when the lone thread is outside a transaction),
 * and at every step once the wait sleeps (the steps then stop counting). */
uint64_t tk_wait_clock_even(void) {
    unsigned spins = 0;
    for (;;) {
        uint64_t c = __atomic_load_n(&tk_g.clock, __ATOMIC_ACQUIRE);
        if (!(c & 1))
            return c;
        if ((spins & 1023) == 0 || tk_wait_sleeping(spins))
            tk_solo_revoke(tk_cur);
        tk_wait_step(&spins, TK_SPINS_BEFORE_YIELD);
    }
}

/* A thread that parked the clock gives it back before its descriptor goes. */
static void solo_exit(tk_thread *t, int arg) {
    (void)arg;
    tk_mutex_lock(&solo_lock);
    tk_solo_unpark(t);
    tk_mutex_unlock(&solo_lock);
}

static void solo_atfork(tk_thread *me, int phase) {
    (void)me;
    tk_atfork_mutex(&solo_lock, phase);
    if (phase == TK_FORK_CHILD && me)
        tk_express_set(me, 0); /* the child attaches its own statistics first */
    /* The child registers again before it parks (registration is per process). */
    if (phase == TK_FORK_CHILD && mb_state > 0) {
        mb_state = 0;
        /* fatal only for the forking thread inside a parked transaction */
        if (!tk_barrier_ready() && tk_solo_parked())
            TK_FATAL("membarrier(2) registration failed in a fork's child");
    }
}

TK_CONSTRUCTOR static void solo_hooks(void) {
    tk_hook_add(TK_HOOK_THREAD_EXIT, TK_EXIT_ORDER_SOLO, solo_exit);
    tk_hook_add(TK_HOOK_FORK, TK_FORK_ORDER_SOLO, solo_atfork);
    (void)tk_barrier_ready(); /* while the process likely has one thread (mb_state) */
}
