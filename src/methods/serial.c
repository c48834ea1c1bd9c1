/* SPDX-License-Identifier: MIT */
/* serial.c - one transaction at a time: it holds the global clock (odd) for its
 * whole run, so software transactions wait at their next access and hardware
 * ones abort. Stores keep an undo log until the transaction becomes
 * irrevocable, so tx_restart() and injected aborts still work. */
#include <sched.h>
#include <string.h>

#include "methods/method.h"
#include "runtime/solo.h"

static bool try_take_clock(tk_thread *t) {
    uint64_t c = __atomic_load_n(&tk_g.clock, __ATOMIC_RELAXED);
    if ((c & 1) || !__atomic_compare_exchange_n(&tk_g.clock, &c, c + 1, false, __ATOMIC_SEQ_CST,
                                                __ATOMIC_RELAXED))
        return false;
    /* An irrevocable transaction's reads must stay valid: give the clock back
     * (the locked CAS above orders this load after it; see stm_norec.c). */
    if (TXKIT_UNLIKELY(tk_irr_other(t))) {
        __atomic_store_n(&tk_g.clock, c + 2, __ATOMIC_RELEASE);
        tk_wait_no_irrevocable(t);
        return false;
    }
    t->serial_clock = c + 1;
    __atomic_store_n(&tk_g.serial_holder, 1, __ATOMIC_RELAXED);
    return true;
}

#define DRAIN_NS 20000 /* how long a serial attempt waits for the readers to finish, at most */

/* Announced (no new software attempt begins), let those running finish, for
 * DRAIN_NS at most: they may wait for something this thread holds. */
static void drain_readers(tk_thread *t) {
    uint64_t end = tk_rdtsc() + (uint64_t)(DRAIN_NS / tk_ns_per_tick_guess());
    while (!tk_no_software_readers(t) && tk_rdtsc() < end)
        tk_cpu_relax();
}

/* Uncontended: one atomic. Contended: announce ourselves, so that no new
 * software attempt begins (stm_begin) and no newcomer takes the fast path,
 * then compete with the other announced ones for the clock. Not in ticket
 * order: a FIFO handoff to a waiter that is not running stalls everyone
 * behind it when threads outnumber CPUs (4 serial threads on 2 CPUs under
 * load: 10x slower), and an announced waiter already stops the newcomers.
 * An attempt that would run gcc's code without barriers announces itself
 * and drains the readers first (policy.c: tk_policy_serial_drain). */
static int serial_begin(tk_thread *t) {
    t->ctl.irrevocable = 0;
    /* if we held it: serial excludes everyone anyway, and a serial one
     * queued before us may wait for it */
    tk_irr_release(t);
    bool drain = tk_policy_serial_drain(t);
    if (!drain && __atomic_load_n(&tk_g.serial_pending, __ATOMIC_RELAXED) == 0 && try_take_clock(t))
        return TK_OK;
    __atomic_add_fetch(&tk_g.serial_pending, 1, __ATOMIC_SEQ_CST);
    if (drain)
        drain_readers(t);
    while (!try_take_clock(t))
        tk_wait_clock_even();
    __atomic_sub_fetch(&tk_g.serial_pending, 1, __ATOMIC_RELAXED);
    return TK_OK;
}

static void release(tk_thread *t) {
    if (t->solo_in) { /* the attempt ran on a parked clock (solo.h): unpark gives it back */
        tk_solo_unpark(t);
        return;
    }
    __atomic_store_n(&tk_g.serial_holder, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tk_g.clock, t->serial_clock + 1, __ATOMIC_RELEASE);
}

static int serial_commit(tk_thread *t) {
    if (t->ctl.inject && !t->ctl.irrevocable)
        return TXKIT_CAUSE_INJECTED;
    if (!tk_solo_fast_ok(t) || !tk_solo_park(t)) { /* a lone thread keeps it for its next ones */
        bool parked = t->solo_in;
        release(t);
        if (!parked) /* privatization safety (the clock moved on to serial_clock + 1) */
            tk_privatization_wait(t, t->serial_clock + 1);
        return TK_OK;
    }
    /* Parked: this thread has held the clock since its attempt began, so no
     * software attempt of another thread can get past its begin until the
     * clock is given back (stm_begin waits for an even clock before its first
     * shared read); one that began earlier shows in its published epoch. */
    t->solo_clean =
        !__atomic_load_n(&tk_g.stm_started, __ATOMIC_RELAXED) || tk_no_software_readers(t);
    return TK_OK;
}

static void serial_rollback(tk_thread *t) {
    tk_undo_apply(t, 0, tk_stack_private_top(t));
    release(t);
}

static void serial_load(tk_thread *t, void *dst, const void *addr, size_t size) {
    (void)t;
    memcpy(dst, addr, size);
}

static int serial_make_irrevocable(tk_thread *t) {
    t->ctl.irrevocable = 1;
    /* Nothing written yet (typically: I/O first, then the update)? Then hand
     * the clock back and go on as an irrevocable software transaction under
     * the token, so that other threads' readers are not stopped meanwhile.
     * Only a try: waiting for the token while holding the clock could deadlock
     * with the token's owner, which needs the clock to commit. */
    uintptr_t none = 0;
    tk_ulog_pull(t); /* what TX_STORE logged inline counts too */
    if (t->ulog.len == 0 && tk_configured_method(t) != TXKIT_SERIAL &&
        t->ctl.kind != TK_KIND_ITM && /* gcc: see tx_irrevocable */
        __atomic_compare_exchange_n(&tk_g.irr_owner, &none, (uintptr_t)t, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED)) {
        t->ctl.irr_token = 1;
        tk_stm_adopt_irrevocable(t, t->serial_clock + 1);
        release(t);
        return TK_OK;
    }
    _txkit_tls.access = 0; /* no more undo logging */
    return TK_OK;
}

/* The barriers run tk_undo_store inline (TK_ACC_UNDO_STORE); this is for the
 * other callers of the method's store. */
static void serial_store(tk_thread *t, void *addr, const void *src, size_t size) {
    if (!t->ctl.irrevocable)
        tk_undo_store(t, addr, src, size);
    else
        memcpy(addr, src, size);
}

static void serial_explicit_abort(tk_thread *t, int cause) { tk_abort(t, cause); }

const struct tk_method tk_method_serial = {
    .name = "serial",
    .id = TXKIT_SERIAL,
    .stats_id = TXKIT_SERIAL,
    .caps = TK_CAP_EXCLUSIVE | TK_CAP_UNDO_LOG | TK_CAP_CLOSED_NESTING,
    .access = TXKIT_ACC_STORE | TXKIT_ACC_UNDO | TK_ACC_UNDO_STORE,
    .begin = serial_begin,
    .commit = serial_commit,
    .rollback = serial_rollback,
    .load = serial_load,
    .store = serial_store,
    .make_irrevocable = serial_make_irrevocable,
    .explicit_abort = serial_explicit_abort,
};
