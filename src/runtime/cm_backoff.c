/* cm_backoff.c - the default contention manager: randomized exponential backoff.
 *
 * After the k-th consecutive abort a thread waits a random number of pause
 * iterations below min(2^k * BASE, CAP) before retrying, so two threads that
 * conflicted do not collide again in lock step. With more runnable threads than
 * CPUs, long waits yield the CPU instead (the winner may be preempted).
 */
#include <sched.h>

#include "runtime/internal.h"

#define BACKOFF_BASE 32u
#define BACKOFF_CAP (1u << 14)
#define SPINS_BEFORE_YIELD 2000u

uint64_t tk_rand(tk_thread *t) {
    uint64_t x = t->rng; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

void tk_spin_pause(unsigned iterations) {
    for (unsigned i = 0; i < iterations; i++)
        tk_cpu_relax();
}

/* A thread that waits for the clock while another runs solo (auto method,
 * serially, back to back) would wait for ever-shorter gaps: revoke solo mode. */
static void revoke_solo(void) {
    uintptr_t s = __atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED);
    if (s > TK_SOLO_SHARED && s != (uintptr_t)tk_cur)
        __atomic_compare_exchange_n(&tk_g.solo, &s, TK_SOLO_SHARED, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
}

uint64_t tk_wait_clock_even(void) {
    unsigned spins = 0;
    for (;;) {
        uint64_t c = __atomic_load_n(&tk_g.clock, __ATOMIC_ACQUIRE);
        if (!(c & 1))
            return c;
        if (spins == 0)
            revoke_solo();
        if (++spins < SPINS_BEFORE_YIELD)
            tk_cpu_relax();
        else
            sched_yield();
    }
}

void tk_wait_no_irrevocable(const tk_thread *t) {
    for (unsigned spins = 0; tk_irr_other(t);)
        if (++spins < SPINS_BEFORE_YIELD)
            tk_cpu_relax();
        else
            sched_yield();
}

void tk_irr_take(tk_thread *t) {
    if (t->ctl.irr_token)
        return;
    for (;;) {
        uintptr_t none = 0;
        if (__atomic_compare_exchange_n(&tk_g.irr_owner, &none, (uintptr_t)t, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            break;
        tk_wait_no_irrevocable(t);
    }
    t->ctl.irr_token = 1;
}

void tk_irr_release(tk_thread *t) {
    if (!t->ctl.irr_token)
        return;
    __atomic_store_n(&tk_g.irr_owner, 0, __ATOMIC_RELEASE);
    t->ctl.irr_token = 0;
}

static void backoff_begin(tk_thread *t) { (void)t; }

static void backoff_abort(tk_thread *t, int cause) {
    if (cause == TXKIT_CAUSE_LOCKED) /* waiting for the clock is the right delay */
        return;
    unsigned k = ++t->consecutive_aborts;
    unsigned limit = k >= 10 ? BACKOFF_CAP : BACKOFF_BASE << k;
    if (limit > BACKOFF_CAP)
        limit = BACKOFF_CAP;
    unsigned n = (unsigned)(tk_rand(t) % limit);
    if (n > SPINS_BEFORE_YIELD && tk_thread_count() > tk_cfg.ncpus)
        sched_yield();
    else
        tk_spin_pause(n);
}

static void backoff_commit(tk_thread *t) { t->consecutive_aborts = 0; }

static enum tk_cm_decision backoff_resolve(tk_thread *self, tk_thread *other) {
    (void)self;
    (void)other;
    return TK_CM_ABORT_SELF; /* the one that found the conflict backs off */
}

const struct tk_cm tk_cm_backoff = {
    .name = "backoff",
    .on_begin = backoff_begin,
    .on_abort = backoff_abort,
    .on_commit = backoff_commit,
    .resolve = backoff_resolve,
};

const struct tk_cm *tk_cm = &tk_cm_backoff;
