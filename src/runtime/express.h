/* SPDX-License-Identifier: MIT */
/* express.h - the express begins: of a lone thread on its parked clock
 * (solo.h), and of a first software attempt.
 *
 * Solo. A lone thread under the auto method keeps the clock parked between
 * its transactions (solo.h), and begins each on it with solo_begin (txn.c),
 * which resets the whole transaction state. When its last transaction of the
 * same kind (TX_ATOMIC; or a gcc block with the same properties, abi/itm.c)
 * committed there with no abort (which unparks), no hooks and no handlers,
 * that state is
 * already as solo_begin would set it: tk_solo_commit says so in
 * tk_thread.express (TK_EXPRESS; xsite, the block, and xtls, the barriers'
 * access bits and depth as the express begin sets them), and the next
 * begin only records what differs per transaction (site, private stack,
 * statistics row). The express commit keeps t->express; every other begin
 * (start_reset), commit (tk_finish_commit), tk_solo_unpark, a fork's child
 * and txkit_set_thread_method clear it.
 *
 * Software. When a thread's last transaction of the same kind committed at
 * its first software attempt with nothing left over (no handlers, no
 * irrevocability, no forced serial run), the per-transaction state that
 * tk_start_transaction resets is already reset, and when the method policy
 * would give the next first attempt to software TM again with nothing else
 * to decide (choose.h: tk_choose_stm_first), the next begin only records what
 * differs per transaction and begins the attempt: tk_finish_commit says so
 * with TK_EXPRESS_SW in t->express, and tk_sw_express_begin clears it (an
 * abort of that transaction then leaves it clear; its commit, through
 * tk_finish_commit as any other, sets it again).
 *
 * Hardware. The same for a first hardware attempt (TK_EXPRESS_HW, with
 * tk_choose_htm_first for the choice): the next begin records what differs
 * and runs XBEGIN. An abort of that attempt comes back with its status, and
 * tk_hw_express_aborted goes on as tk_run_attempts after the same abort. Its
 * commit (txn.c: hw_express_finish) is the short one when nothing arrived
 * that tk_finish_commit would act on; TX_ATOMIC's end goes there right after
 * its test for the solo express commit (inside the transaction, where each
 * cache line read costs: txn.c, end_hw).
 *
 * All inline in TX_ATOMIC's begin and end (txn.c) and in gcc's (abi/itm.c). */
#ifndef TK_EXPRESS_H
#define TK_EXPRESS_H

#include "runtime/choose.h"
#include "runtime/cm.h"
#include "runtime/solo.h"

/* tk_thread.express: the last commit allows the software express begin. */
#define TK_EXPRESS_SW 0x40000000u
/* ... the hardware express begin. */
#define TK_EXPRESS_HW 0x20000000u

/* Begin t's next outermost transaction at t->xsite (the caller found site ==
 * t->xsite: t->express has TK_EXPRESS, site is the last transaction's, so of
 * the caller's front end and registered, and t->cnt is its entry of the row)
 * on its parked clock. Not for sampled transactions (one in TK_SAMPLE_EVERY):
 * solo_begin times those. False, with nothing done, when it does not apply
 * (the caller takes the general path). Owner thread, outside any
 * transaction, after the front end saved the checkpoint (stack_top: its stack
 * pointer). */
__attribute__((always_inline)) static inline bool
tk_express_begin_same(tk_thread *t, txkit_site_t *site, uintptr_t stack_top) {
    uint64_t n = t->ntx;
    /* Of tk_solo_fast_ok, only the process-wide switches may have changed
     * since the commit that set TK_EXPRESS checked it all (fault injection,
     * the scheduler, the process's method: txkit_set_method; a thread that
     * chose auto for itself under another process method takes the general
     * path), and they are in one word (tk_cfg.express_off): the thread's own
     * method changes clear t->express (txkit_set_thread_method), it holds no
     * scheduler queue between transactions, and its statistics slot goes
     * only at its exit or in a fork's child (which clears t->express). */
    if (__atomic_load_n(&tk_cfg.express_off, __ATOMIC_RELAXED) ||
        TXKIT_UNLIKELY((n & (TK_SAMPLE_EVERY - 1)) == 0 && !tk_cfg.stats_off))
        return false;
    __atomic_store_n(&t->solo_in, 1, __ATOMIC_RELAXED); /* solo.h: before looking */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (TXKIT_UNLIKELY(!tk_solo_parked_by(t))) {
        __atomic_store_n(&t->solo_in, 0, __ATOMIC_RELAXED);
        return false; /* being revoked: the general path gives it back */
    }
    tk_stack_enter(t, stack_top);
    t->ntx = n + 1;
    /* statistics off: unread */
    __atomic_store_n(&t->slot->cur_site, __atomic_load_n(&site->id, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
    /* access and depth (txn.c asserts they are the first two words) */
    __builtin_memcpy(&_txkit_tls, &t->xtls, sizeof t->xtls);
    /* TXKIT_ACC_UNDO (serial's access): TX_STORE's records start the log again
     * (the last commit emptied it); rend is as the last attempt's
     * tk_ulog_push left it: only the runtime's appends grow the log, and they
     * push, and no other method's attempt ran since (it clears t->express). */
    _txkit_tls.rcur = (struct _txkit_rentry *)(void *)t->ulog.data;
    return true;
}

/* tk_express_begin_same at any registered site of this kind: another site
 * than the last transaction's is checked first and recorded after. Its rules
 * otherwise. */
__attribute__((always_inline)) static inline bool tk_express_begin(tk_thread *t, txkit_site_t *site,
                                                                   uintptr_t stack_top, int kind) {
    if (!(t->express & TK_EXPRESS))
        return false;
    /* The site of the last transaction again (the common case): it is
     * registered, of this kind (a site belongs to one front end: TX_ATOMIC's
     * static, or gcc's table in abi/itm.c), and t->cnt is its entry of the
     * row (every outermost begin sets both; only a fork's child changes the
     * row, and it clears t->express). Another site: check and record it. */
    bool same = site == t->ctl.site;
    unsigned id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
    if (!same && (!id || t->ctl.kind != kind))
        return false;
    if (!tk_express_begin_same(t, site, stack_top))
        return false;
    if (!same) {
        t->ctl.site = site;
        t->cnt = t->row + (id - 1);
        t->xsite = site;
    }
    return true;
}

/* The rest of tk_express_commit, after tk_solo_left: when the clock was
 * revoked meanwhile (give it back: tk_solo_unpark; only t parks it, so it
 * still is not parked for t) or the transaction allocated or freed (apply
 * that: no handlers, so it runs no code of the user's). txn.c. */
TK_HIDDEN void tk_express_commit_rest(tk_thread *t);

/* Commit a transaction that tk_express_begin began (t->express has
 * TK_EXPRESS: so t->solo_in is 1, as tk_solo_commit_ok asks; whatever clears
 * solo_in inside a transaction, tk_solo_unpark, clears t->express too), when
 * it ran only its own code and tx_malloc / tx_free (no handlers, no hooks to
 * run): counted in one word of the thread's own row (stats/format.h:
 * solo_commits; tk_solo_commit sets TK_EXPRESS only for a thread with a row
 * of its own), the clock stays parked, t->express stays. False, with nothing
 * done, otherwise (the caller commits as usual). Owner thread, outermost
 * commit. */
static inline bool tk_express_commit(tk_thread *t) {
    if ((t->hooks_armed & TK_HOOK_ARMED(TK_HOOK_COMMITTED)) | t->handlers.len)
        return false;
    if (TXKIT_LIKELY(!tk_cfg.stats_off))
        TK_COUNT_OWN(t->cnt->solo_commits, 1);
    __atomic_store_n(&t->slot->cur_site, 0, __ATOMIC_RELAXED);
    t->ulog.len = 0;
    if (TXKIT_UNLIKELY(!tk_solo_left(t) || (t->frees.len | t->allocs.len)))
        tk_express_commit_rest(t); /* out of line: the common case keeps no frame */
    return true;
}

/* What a first-attempt express begin (software or hardware, as m says) does
 * once it applies: the parts of tk_start_transaction (start_reset,
 * start_count not parked) and of attempt_prepare (no fault injection, not
 * timed: not sampled, first attempt) that differ per transaction; the rest is
 * as the last commit left it (TK_EXPRESS_SW, TK_EXPRESS_HW). id: the site's;
 * n: t->ntx before; hw: whether m is hardware (a constant at each caller).
 * Owner thread, before the method's begin. */
__attribute__((always_inline)) static inline void
tk_express_start(tk_thread *t, txkit_site_t *site, uintptr_t stack_top, unsigned id, uint64_t n,
                 const struct tk_method *m, bool hw) {
    t->express = 0;            /* xsite: NULL with TK_EXPRESS_SW and TK_EXPRESS_HW */
    if (site != t->ctl.site) { /* else t->cnt is its entry already */
        t->ctl.site = site;
        t->cnt = t->row + (id - 1);
    }
    tk_stack_enter(t, stack_top);
    t->ntx = n + 1;
    if (TXKIT_LIKELY(!tk_cfg.stats_off)) {
        TK_COUNT(t->cnt->transactions, 1);
        __atomic_store_n(&t->slot->cur_site, id, __ATOMIC_RELAXED);
    }
    tk_attempt_reset(t);
    t->ctl.m = m;
    t->ctl.inject = 0;
    t->ctl.attempt_tsc = 0;
    t->ctl.sw_express = !hw;
    t->ctl.hw_express = hw;
}

/* Must an express begin (software or hardware) leave t's next first attempt,
 * of this kind, at the site with this id (n: t->ntx) to the general path?
 * Only the method policy may decide it: so no fault injection, scheduler,
 * visible readers (the contention manager's begin has nothing to do:
 * tk_cm_begin_quiet), parked clock, or front-end code that software TM cannot
 * run (the gcc block's properties: choose.h); a registered site of the same
 * kind; and not a sampled transaction (solo_begin's rule). Owner thread,
 * outside any transaction. */
__attribute__((always_inline)) static inline bool
tk_express_first_refused(const tk_thread *t, unsigned id, uint64_t n, int kind) {
    return !id || t->ctl.kind != kind || tk_cfg.any_fault || tk_sched_on || !tk_cm_begin_quiet() ||
           t->sched.queue_held || !t->slot || tk_solo_parked() ||
           (t->ctl.code & (TK_CODE_INSTRUMENTED | TK_CODE_GOES_IRREVOCABLE)) !=
               TK_CODE_INSTRUMENTED ||
           TXKIT_UNLIKELY((n & (TK_SAMPLE_EVERY - 1)) == 0 && !tk_cfg.stats_off);
}

/* Begin t's next outermost transaction, of this kind, at site, as a first
 * software attempt, when t->express has TK_EXPRESS_SW: what
 * tk_start_transaction and tk_run_attempts would do, less what the last
 * commit left as they would set it. Not for sampled transactions (solo_begin's
 * rule). False, with nothing done, when it does not apply (the caller takes the
 * general path). Owner thread, outside any transaction, after the front end
 * saved the checkpoint (stack_top: its stack pointer). */
__attribute__((always_inline)) static inline bool
tk_sw_express_begin(tk_thread *t, txkit_site_t *site, uintptr_t stack_top, int kind) {
    unsigned id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
    uint64_t n = t->ntx;
    if (!(t->express & TK_EXPRESS_SW) || tk_express_first_refused(t, id, n, kind) ||
        !tk_choose_stm_first(t, site))
        return false;
    const struct tk_method *m = M_STM;
    tk_express_start(t, site, stack_top, id, n, m, false);
    int r = m->begin(t); /* software: always TK_OK */
    TK_ASSERT(r == TK_OK);
    _txkit_tls.access = tk_read_access(m->access | t->ctl.acc_add, t->vis.active);
    _txkit_tls.depth = 1;
    return true;
}

/* A first hardware attempt that tk_hw_express_begin began aborted with
 * cause: count it, let the policy react, and begin attempts until one runs,
 * as tk_run_attempts after a hardware abort. txn.c. */
TK_HIDDEN void tk_hw_express_aborted(tk_thread *t, int cause);

/* Begin t's next outermost transaction, of this kind, at site, as a first
 * hardware attempt, when t->express has TK_EXPRESS_HW (its last transaction
 * committed at its first hardware attempt with nothing left over, so the
 * state tk_start_transaction resets is reset): what tk_start_transaction and
 * tk_run_attempts would do, less what that commit left as they would set it.
 * The rules of tk_sw_express_begin, with tk_choose_htm_first for the choice.
 * Should the attempt abort, the general path takes over from its abort
 * (tk_hw_express_aborted), and the transaction runs as it would have after
 * the same abort. False, with nothing done, when it does not apply. Owner
 * thread, outside any transaction, after the front end saved the checkpoint
 * (stack_top: its stack pointer). */
__attribute__((always_inline)) static inline bool
tk_hw_express_begin(tk_thread *t, txkit_site_t *site, uintptr_t stack_top, int kind) {
    unsigned id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
    uint64_t n = t->ntx;
    if (!(t->express & TK_EXPRESS_HW) || tk_express_first_refused(t, id, n, kind) ||
        t->stm.sw_registered || !tk_choose_htm_first(t, site))
        return false;
    const struct tk_method *m = M_HTM;
    tk_express_start(t, site, stack_top, id, n, m, true);
    /* attempt_running's access bits, known before XBEGIN (hardware adds none
     * at its begin: acc_add stays 0), so that the attempt only stores them */
    unsigned acc = tk_read_access(m->access, t->vis.active);
    int r = m->begin(t);
    if (TXKIT_UNLIKELY(r != TK_OK)) {
        /* the CPU rolled the attempt back (hw_express with it): stats and
         * state written before XBEGIN stay */
        t->ctl.hw_express = 0;
        tk_hw_express_aborted(t, r);
        return true;
    }
    /* attempt_running */
    _txkit_tls.access = acc;
    _txkit_tls.depth = 1;
    if (TXKIT_UNLIKELY(acc & TXKIT_ACC_UNDO))
        tk_ulog_push(t);
    return true;
}

/* The express begin that t's last commit allows, when t->express has no
 * TK_EXPRESS: software or hardware. */
__attribute__((always_inline)) static inline bool
tk_express_next_begin(tk_thread *t, txkit_site_t *site, uintptr_t stack_top, int kind) {
    return t->express & TK_EXPRESS_HW ? tk_hw_express_begin(t, site, stack_top, kind)
                                      : tk_sw_express_begin(t, site, stack_top, kind);
}

#endif /* TK_EXPRESS_H */
