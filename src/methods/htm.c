/* SPDX-License-Identifier: MIT */
/* htm.c - Intel RTM. Barriers are plain accesses (access bits 0), so inside a
 * hardware transaction TX_LOAD/TX_STORE cost one predictable branch.
 *
 * Coexistence with the other methods: an attempt reads the global clock right
 * after XBEGIN, so a software commit's write-back or a serial transaction (both
 * make the clock odd) aborts it; and at commit, if it wrote, it bumps
 * hw_commits when any software transaction is running, so those revalidate
 * and see its writes, and after it waits for those that read before it
 * (tk_privatization_wait_hw).
 */
#include "arch/x86_64/rtm.h"
#include "methods/method.h"

static int classify(tk_thread *t, unsigned status) {
    if (status & TK_XA_EXPLICIT) {
        switch (TK_XA_CODE(status)) {
        case TK_XCODE_LOCKED:
            return TXKIT_CAUSE_LOCKED;
        case TK_XCODE_IRR_OTHER:
            t->ctl.htm_irr_other = 1; /* written after the abort: it stays */
            return TXKIT_CAUSE_LOCKED;
        case TK_XCODE_RESTART:
            return TXKIT_CAUSE_EXPLICIT;
        case TK_XCODE_IRREVOCABLE:
            return TXKIT_CAUSE_IRREVOCABLE;
        case TK_XCODE_IRR_CX:
            t->ctl.force_serial = 1; /* written after the abort: it stays */
            return TXKIT_CAUSE_IRREVOCABLE;
        case TK_XCODE_INJECT:
            return TXKIT_CAUSE_INJECTED;
        case TK_XCODE_CANCEL_OUTER:
            t->ctl.cancelled = 1; /* written after the abort: it stays */
            return TXKIT_CAUSE_EXPLICIT;
        case TK_XCODE_CANCEL_NESTED:
            t->ctl.htm_tries = ~0u / 2; /* only software can undo part of a transaction */
            return TXKIT_CAUSE_EXPLICIT;
        case TK_XCODE_SERIAL:
            t->ctl.force_serial = 1;
            return TXKIT_CAUSE_EXPLICIT;
        case TK_XCODE_SOFTWARE:
            t->ctl.htm_tries = ~0u / 2; /* the rest of this transaction in software */
            return TXKIT_CAUSE_UNSUPPORTED;
        default:
            __atomic_store_n(&t->cnt->explicit_code, TK_XA_CODE(status), __ATOMIC_RELAXED);
            return TXKIT_CAUSE_EXPLICIT;
        }
    }
    if (status & TK_XA_CAPACITY)
        return TXKIT_CAUSE_CAPACITY;
    if (status & TK_XA_CONFLICT)
        return TXKIT_CAUSE_CONFLICT;
    if (status & TK_XA_NESTED)
        return TXKIT_CAUSE_NESTED;
    if (status & (TK_XA_RETRY | TK_XA_DEBUG))
        return TXKIT_CAUSE_OTHER;   /* interrupts and the like: worth a retry */
    return TXKIT_CAUSE_UNSUPPORTED; /* 0: system call, fault, instruction */
}

TK_RTM_FN static int htm_begin(tk_thread *t) {
    unsigned status = tk_xbegin();
    if (status == TK_XSTARTED) {
        /* Subscribe to both: a serial or committing writer, an irrevocable
         * one. An irrevocable transaction may run long (I/O): we do not wait
         * for it but read on in software, as its readers may. */
        if (__atomic_load_n(&tk_g.clock, __ATOMIC_RELAXED) & 1)
            TK_XABORT(TK_XCODE_LOCKED);
        if (__atomic_load_n(&tk_g.irr_owner, __ATOMIC_RELAXED) != 0)
            TK_XABORT(TK_XCODE_IRR_OTHER);
        _txkit_tls.wrote = 0; /* TX_STORE & co. set it: see htm_commit */
        return TK_OK;
    }
    return classify(t, status);
}

TK_RTM_FN static int htm_commit(tk_thread *t) {
    if (t->ctl.inject)
        TK_XABORT(TK_XCODE_INJECT);
    /* Software transactions revalidate when hw_commits moves; every hardware
     * attempt that bumps it also conflicts with all the others on its line.
     * So only commits that wrote: TX_STORE, tx_memcpy and tx_memset say so;
     * gcc's code under htm runs uninstrumented, so it always counts. */
    uint64_t h = 0;
    if (__atomic_load_n(&tk_g.sw_active, __ATOMIC_RELAXED) &&
        (_txkit_tls.wrote || (t->ctl.code & TK_CODE_UNTRACKED_WRITES)))
        h = ++tk_g.hw_commits; /* transactional: atomic with our writes */
    tk_xend();
    /* Privatization safety: a software attempt that read what we overwrote
     * (an unlink) must not read on from memory our caller frees next. */
    if (h)
        tk_privatization_wait_hw(t, h);
    return TK_OK;
}

static void htm_rollback(tk_thread *t) {
    (void)t;
    TK_FATAL("hardware attempts are rolled back by the CPU");
}

static void htm_load(tk_thread *t, void *dst, const void *addr, size_t size) {
    (void)t;
    __builtin_memcpy(dst, addr, size);
}

static void htm_store(tk_thread *t, void *addr, const void *src, size_t size) {
    (void)t;
    __builtin_memcpy(addr, src, size);
}

/* The next attempt is irrevocable from its start (policy.c), holding the
 * token, unless this one entered a cx lock: irrevocable from its start it
 * would wait for that lock holding the token, while the lock's holder, if it
 * commits a transaction inside its section, waits for the token (a
 * deadlock; found on RTM by cx.needexcl.auto). Such an attempt goes on
 * serially, as a software one whose tx_irrevocable cannot hold its locks
 * does (stm_norec.c, irrevocable_failed): serial takes the locks or starts
 * again, and never waits holding what a holder needs. */
TK_RTM_FN static int htm_make_irrevocable(tk_thread *t) {
    if (tk_cx_entered_hw(t))
        TK_XABORT(TK_XCODE_IRR_CX);
    TK_XABORT(TK_XCODE_IRREVOCABLE);
    return TXKIT_CAUSE_IRREVOCABLE; /* not reached */
}

/* cause: a txkit_cause_t, or minus a TK_XCODE_CANCEL_* code (gcc cancel), of
 * TK_XCODE_SERIAL or of TK_XCODE_SOFTWARE. */
TK_RTM_FN static void htm_explicit_abort(tk_thread *t, int cause) {
    (void)t;
    switch (cause) {
    case TXKIT_CAUSE_INJECTED:
        TK_XABORT(TK_XCODE_INJECT);
        break;
    case -TK_XCODE_CANCEL_OUTER:
        TK_XABORT(TK_XCODE_CANCEL_OUTER);
        break;
    case -TK_XCODE_CANCEL_NESTED:
        TK_XABORT(TK_XCODE_CANCEL_NESTED);
        break;
    case -TK_XCODE_SERIAL:
        TK_XABORT(TK_XCODE_SERIAL);
        break;
    case -TK_XCODE_SOFTWARE:
        TK_XABORT(TK_XCODE_SOFTWARE);
        break;
    default:
        TK_XABORT(TK_XCODE_RESTART);
    }
}

const struct tk_method tk_method_htm = {
    .name = "htm",
    .id = TXKIT_HTM,
    .stats_id = TXKIT_HTM,
    .caps = TK_CAP_HARDWARE | TK_CAP_UNINSTRUMENTED,
    .access = 0,
    .begin = htm_begin,
    .commit = htm_commit,
    .rollback = htm_rollback,
    .load = htm_load,
    .store = htm_store,
    .make_irrevocable = htm_make_irrevocable,
    .explicit_abort = htm_explicit_abort,
};
