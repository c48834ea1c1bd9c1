/* SPDX-License-Identifier: MIT */
/* glock.c - the smallest method: one global lock around each attempt, the
 * clock made odd as a serial transaction does, so that every other method
 * keeps out meanwhile; writes in place with an undo log for tx_restart().
 * It shows what a method is (this file and a row in methods/table.c) and is
 * selected by name only (TXKIT_METHOD=glock), by its test. */
#include <string.h>

#include "methods/method.h"

static int glock_begin(tk_thread *t) {
    t->ctl.irrevocable = 0;
    for (;;) {
        uint64_t c = tk_wait_clock_even();
        if (tk_irr_other(t)) { /* its reads must stay valid: wait for it */
            tk_wait_no_irrevocable(t);
            continue;
        }
        if (!__atomic_compare_exchange_n(&tk_g.clock, &c, c + 1, false, __ATOMIC_SEQ_CST,
                                         __ATOMIC_RELAXED))
            continue;
        if (TXKIT_UNLIKELY(tk_irr_other(t))) { /* took the token meanwhile */
            __atomic_store_n(&tk_g.clock, c + 2, __ATOMIC_RELEASE);
            continue;
        }
        t->serial_clock = c + 1;
        __atomic_store_n(&tk_g.serial_holder, 1, __ATOMIC_RELAXED);
        return TK_OK;
    }
}

static void glock_release(tk_thread *t) {
    __atomic_store_n(&tk_g.serial_holder, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tk_g.clock, t->serial_clock + 1, __ATOMIC_RELEASE);
}

static int glock_commit(tk_thread *t) {
    if (t->ctl.inject && !t->ctl.irrevocable)
        return TXKIT_CAUSE_INJECTED;
    glock_release(t);
    return TK_OK;
}

static void glock_rollback(tk_thread *t) {
    tk_undo_apply(t, 0, tk_stack_private_top(t));
    glock_release(t);
}

static void glock_load(tk_thread *t, void *dst, const void *addr, size_t size) {
    (void)t;
    memcpy(dst, addr, size);
}

static void glock_store(tk_thread *t, void *addr, const void *src, size_t size) {
    if (!t->ctl.irrevocable)
        tk_undo_log(t, addr, size);
    memcpy(addr, src, size);
}

static int glock_make_irrevocable(tk_thread *t) {
    t->ctl.irrevocable = 1; /* it excludes everyone already: stop the undo log */
    _txkit_tls.access = 0;
    return TK_OK;
}

static void glock_explicit_abort(tk_thread *t, int cause) { tk_abort(t, cause); }

const struct tk_method tk_method_glock = {
    .name = "glock",
    .id = TXKIT_NMETHODS,
    .stats_id = TXKIT_SERIAL,
    .caps = TK_CAP_EXCLUSIVE | TK_CAP_UNDO_LOG | TK_CAP_CLOSED_NESTING,
    .access = TXKIT_ACC_STORE,
    .begin = glock_begin,
    .commit = glock_commit,
    .rollback = glock_rollback,
    .load = glock_load,
    .store = glock_store,
    .make_irrevocable = glock_make_irrevocable,
    .explicit_abort = glock_explicit_abort,
};
