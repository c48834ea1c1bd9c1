/* SPDX-License-Identifier: MIT */
/* itm.c - the libitm ABI (gcc -fgnu-tm) on txkit's engine: transactions,
 * cancel with closed nesting, modes, ids, user actions, memory, clone tables.
 *
 * gcc compiles each transaction twice where it can: with barriers
 * (instrumented) and without (uninstrumented). _ITM_beginTransaction tells it
 * which to run for the attempt txkit chose: uninstrumented inside a hardware
 * transaction or when serial and irrevocable, instrumented for software TM
 * and for serial-with-undo (needed when the block may be cancelled).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/itm.h"
#include "methods/method.h"
#include "runtime/express.h"


TK_HIDDEN tk_jmpbuf *tk_itm_jb_slot(uint32_t props);
TK_HIDDEN uint32_t tk_itm_begin(uint32_t props);

/* One site per call site of _ITM_beginTransaction, found by its return
 * address (saved in the checkpoint): a lock-free open-addressing table,
 * filled under a lock, symbolized with dladdr when first seen. */
#define ITM_SITES 1024 /* power of two; more call sites share the last one */
static struct {
    uintptr_t rip;
    txkit_site_t *site;
} itm_sites[ITM_SITES];
static txkit_site_t itm_overflow = {"(other gcc transactions)", "?", 0, TK_SITE_FLAG_ITM, 0, 0, 0};
static pthread_mutex_t itm_sites_lock = PTHREAD_MUTEX_INITIALIZER;

static txkit_site_t *new_itm_site(uintptr_t rip) {
    txkit_site_t *s = calloc(1, sizeof *s);
    char *file = malloc(160), *func = malloc(80);
    if (!s || !file || !func) {
        free(s);
        free(file);
        free(func);
        return &itm_overflow;
    }
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (dladdr((void *)rip, &info) && info.dli_fname) {
        snprintf(file, 160, "%s", info.dli_fname);
        if (info.dli_sname)
            snprintf(func, 80, "%s+%#lx", info.dli_sname,
                     (unsigned long)(rip - (uintptr_t)info.dli_saddr));
        else
            snprintf(func, 80, "%#lx", (unsigned long)(rip - (uintptr_t)info.dli_fbase));
    } else {
        snprintf(file, 160, "?");
        snprintf(func, 80, "%#lx", (unsigned long)rip);
    }
    s->file = file;
    s->func = func;
    s->flags = TK_SITE_FLAG_ITM;
    return s;
}

static txkit_site_t *itm_site_for(uintptr_t rip) {
    unsigned h = (unsigned)((rip * 0x9e3779b97f4a7c15ull) >> 54) & (ITM_SITES - 1);
    for (unsigned i = 0; i < ITM_SITES; i++, h = (h + 1) & (ITM_SITES - 1)) {
        uintptr_t r = __atomic_load_n(&itm_sites[h].rip, __ATOMIC_ACQUIRE);
        if (r == rip)
            return __atomic_load_n(&itm_sites[h].site, __ATOMIC_ACQUIRE);
        if (r == 0)
            break;
    }
    tk_mutex_lock(&itm_sites_lock);
    txkit_site_t *site = &itm_overflow;
    h = (unsigned)((rip * 0x9e3779b97f4a7c15ull) >> 54) & (ITM_SITES - 1);
    for (unsigned i = 0; i < ITM_SITES - 1; i++, h = (h + 1) & (ITM_SITES - 1)) {
        if (itm_sites[h].rip == rip) {
            site = itm_sites[h].site;
            break;
        }
        if (itm_sites[h].rip == 0) {
            site = new_itm_site(rip);
            __atomic_store_n(&itm_sites[h].site, site, __ATOMIC_RELEASE);
            __atomic_store_n(&itm_sites[h].rip, rip, __ATOMIC_RELEASE);
            break;
        }
    }
    tk_mutex_unlock(&itm_sites_lock);
    return site;
}

static uint64_t next_txid_block;

/* gcc's uninstrumented code calls operator delete and free directly, at
 * once: a software reader of another thread may still hold the pointer.
 * While software attempts may run, an attempt that needs no barriers
 * (hardware, or serial and irrevocable) runs the instrumented code instead
 * when there is one (its barriers are plain accesses then), whose deletes
 * and frees wait for those readers (tk_tx_free_with). In hardware the test is
 * exact: sw_active, read inside the attempt, aborts it when a software
 * attempt starts (the sanitizer lane saw a reader use a block a hardware
 * commit freed: abi.hw.free_hw). A lone thread on its parked clock knows
 * too: no reader was running when it parked it (solo_clean) and none can
 * begin before it lets go (abi.solo). So does an attempt that holds the
 * clock (serial) and sees no software attempt running (tk_holds_clock): one
 * that begins now waits for an even clock before its first read (stm_begin;
 * the clock's locked CAS and the epoch's exchange order the two sides), so
 * what the code frees cannot be reached by a reader; bayes at 2 threads ran
 * its long serial tasks instrumented, 1.7x slower. Owner thread, inside the
 * attempt. */
static inline bool uninstrumented_ok(const tk_thread *t, uint32_t props) {
    if (!(props & TK_PR_UNINSTRUMENTED))
        return false;
    if (!(props & TK_PR_INSTRUMENTED))
        return true;                      /* no other code to run */
    if (t->ctl.m->caps & TK_CAP_HARDWARE) /* (hardware runs only in hybrid mode) */
        return __atomic_load_n(&tk_g.sw_active, __ATOMIC_RELAXED) == 0;
    return !__atomic_load_n(&tk_g.stm_started, __ATOMIC_RELAXED) || tk_thread_count() <= 1 ||
           (t->solo_clean && tk_solo_parked_by(t)) ||
           (tk_holds_clock(t) && tk_no_software_readers(t));
}

/* gcc's code of props p, run by a serial attempt, runs without barriers:
 * nothing can be undone, so irrevocable from the start (gcc promises no
 * cancel: pr_hasNoAbort). */
static inline bool serial_without_barriers(uint32_t p) {
    return (p & TK_PR_UNINSTRUMENTED) && (!(p & TK_PR_INSTRUMENTED) || (p & TK_PR_HAS_NO_ABORT));
}

/* Make such an attempt irrevocable (its undo log pulled already) and say
 * which of gcc's code it runs. */
static inline uint32_t serial_irrevocable_action(tk_thread *t, uint32_t p) {
    t->ctl.irrevocable = 1;
    _txkit_tls.access = 0;
    if (p & TK_PR_DOES_GO_IRREVOCABLE) /* asked for, not just our choice */
        TK_COUNT(t->cnt->irrevocable, 1);
    return uninstrumented_ok(t, p) ? TK_A_RUN_UNINSTRUMENTED : TK_A_RUN_INSTRUMENTED;
}

static uint32_t itm_action(tk_thread *t, int restarted) {
    /* The attempt ran in hardware and was cancelled ([[outer]]): it is over,
     * all undone, outside any transaction. Running the code again would run
     * it with no transaction at all (found on RTM after a software abort:
     * apps.vacation.auto). */
    if (t->ctl.cancelled)
        return TK_A_ABORT | TK_A_RESTORE_LIVE;
    uint32_t p = t->ctl.props, a;
    const struct tk_method *m = t->ctl.m;
    if (m->caps & TK_CAP_SOFTWARE) {
        a = TK_A_RUN_INSTRUMENTED;
    } else if (m->caps & TK_CAP_UNINSTRUMENTED) {
        a = uninstrumented_ok(t, p) ? TK_A_RUN_UNINSTRUMENTED : TK_A_RUN_INSTRUMENTED;
    } else if (serial_without_barriers(p)) {
        tk_ulog_pull(t);
        a = serial_irrevocable_action(t, p);
    } else {
        a = TK_A_RUN_INSTRUMENTED; /* serial with an undo log */
    }
    return a | (restarted ? TK_A_RESTORE_LIVE : TK_A_SAVE_LIVE);
}

/* itm_action(t, 0) for a block that tk_express_begin began on t's parked
 * clock: an attempt of a method without barriers or gcc's uninstrumented code
 * of its own (solo_begin's serial one, kept since), not cancelled (the last
 * transaction committed: express.h), whose undo log is empty (the express
 * begin restarted it: tk_ulog_pull has nothing to pull). Inline and without
 * the cases that cannot arise there; any other method takes itm_action. */
static inline uint32_t itm_action_parked(tk_thread *t) {
    uint32_t p = t->ctl.props;
    if (TXKIT_UNLIKELY(t->ctl.m->caps & (TK_CAP_SOFTWARE | TK_CAP_UNINSTRUMENTED)))
        return itm_action(t, 0);
    if (!serial_without_barriers(p))
        return TK_A_RUN_INSTRUMENTED | TK_A_SAVE_LIVE; /* serial with an undo log */
    return serial_irrevocable_action(t, p) | TK_A_SAVE_LIVE;
}

static void drop_checkpoints(tk_thread *t, size_t keep) {
    while (t->itm.cps.len > keep) {
        tk_itm_cp *cp = &TK_VEC_AT(&t->itm.cps, tk_itm_cp, t->itm.cps.len - 1);
        tk_vec_free(&cp->saved);
        t->itm.cps.len--;
    }
}

static tk_itm_cp *top_checkpoint(tk_thread *t) {
    return t->itm.cps.len ? &TK_VEC_AT(&t->itm.cps, tk_itm_cp, t->itm.cps.len - 1) : NULL;
}

tk_jmpbuf *tk_itm_jb_slot(uint32_t props) {
    tk_thread *t = tk_self();
    if (_txkit_tls.depth == 0)
        return &t->ctl.jb;
    if (props & TK_PR_HAS_NO_ABORT)
        return &t->jb_nested;
    tk_itm_cp *cp = tk_vec_push(&t->itm.cps, sizeof *cp);
    if (!cp)
        TK_FATAL("out of memory for a nested transaction checkpoint");
    memset(cp, 0, sizeof *cp);
    return &cp->jb;
}

/* Nested begin: flat, except that a nested block that may be cancelled
 * records how far each log went, to be able to undo just its part. */
static uint32_t nested_begin(tk_thread *t, uint32_t props, unsigned depth) {
    if (!(props & TK_PR_HAS_NO_ABORT)) {
        tk_itm_cp *cp = top_checkpoint(t);
        cp->depth = depth + 1;
        tk_ulog_pull(t);
        cp->ulog_len = t->ulog.len;
        cp->allocs_len = t->allocs.len;
        cp->captured_len = t->captured.len;
        cp->frees_len = t->frees.len;
        cp->handlers_len = t->handlers.len;
        cp->arena_len = t->arena.len;
        if (t->ctl.m->checkpoint)
            t->ctl.m->checkpoint(t, &cp->saved);
    }
    _txkit_tls.depth = depth + 1;
    uint32_t a;
    if (_txkit_tls.access == 0 && uninstrumented_ok(t, props))
        a = TK_A_RUN_UNINSTRUMENTED; /* hardware or irrevocable: no barriers needed */
    else if (props & TK_PR_INSTRUMENTED)
        a = TK_A_RUN_INSTRUMENTED;
    else {
        tx_irrevocable(); /* only uninstrumented code: stop being undoable */
        a = TK_A_RUN_UNINSTRUMENTED;
    }
    return a | TK_A_SAVE_LIVE;
}

/* gcc code: the next attempt, then back to _ITM_beginTransaction's return
 * with the _ITM_actions for it. */
static TK_NORETURN void itm_resume(tk_thread *t, unsigned depth) {
    (void)depth;
    tk_run_attempts(t);
    tk_longjmp(&t->ctl.jb, (int)itm_action(t, 1));
}

/* The site of the block whose checkpoint holds rip, neither of the two the
 * thread remembers: remembered as the last, the last one as the one before
 * (out of line: most threads run the same block again, or two in turn, which
 * tk_itm_begin finds without a call). */
static __attribute__((noinline)) txkit_site_t *itm_site_remember(tk_thread *t, uintptr_t rip) {
    txkit_site_t *site = itm_site_for(rip);
    t->itm.prev_rip = t->itm.last_rip;
    t->itm.prev_site = t->itm.last_site;
    t->itm.last_rip = rip;
    t->itm.last_site = site;
    return site;
}

/* tk_itm_begin's general path: out of line, so that the express begins keep
 * no frame. */
static __attribute__((noinline)) uint32_t itm_begin_general(tk_thread *t, txkit_site_t *site,
                                                            uint32_t props) {
    if (TXKIT_UNLIKELY(!__atomic_load_n(&site->id, __ATOMIC_ACQUIRE)))
        tk_site_init(site, NULL, NULL, 0);
    t->ctl.kind = TK_KIND_ITM;
    t->ctl.props = props;
    t->ctl.code = ((props & TK_PR_INSTRUMENTED) ? TK_CODE_INSTRUMENTED : 0) |
                  ((props & TK_PR_DOES_GO_IRREVOCABLE) ? TK_CODE_GOES_IRREVOCABLE : 0) |
                  (serial_without_barriers(props) ? TK_CODE_PLAIN_SERIAL : 0) |
                  TK_CODE_UNTRACKED_WRITES;
    t->ctl.resume = itm_resume;
    t->itm.txid = 0;
    if (!tk_solo_begin(t, site, t->ctl.jb.rsp)) {
        tk_start_transaction(t, site, t->ctl.jb.rsp);
        tk_run_attempts(t);
    }
    return itm_action(t, 0);
}

/* The hardware or the software express begin, as t->express says, else the
 * general path (out of line: the solo express begin keeps no frame). */
static __attribute__((noinline)) uint32_t itm_begin_next(tk_thread *t, txkit_site_t *site,
                                                         uint32_t props) {
    if (t->express & TK_EXPRESS_HW) {
        /* the hardware express begin (the attempt may have aborted and
         * another begun: itm_action says what to run) */
        t->itm.txid = 0;
        if (!tk_hw_express_begin(t, site, t->ctl.jb.rsp, TK_KIND_ITM))
            return itm_begin_general(t, site, props);
        return itm_action(t, 0);
    }
    if (!tk_sw_express_begin(t, site, t->ctl.jb.rsp, TK_KIND_ITM))
        return itm_begin_general(t, site, props);
    t->itm.txid = 0;
    /* itm_action's for a software attempt (not cancelled: the last
     * transaction committed) */
    return TK_A_RUN_INSTRUMENTED | TK_A_SAVE_LIVE;
}

uint32_t tk_itm_begin(uint32_t props) {
    tk_thread *t = tk_cur;
    unsigned depth = _txkit_tls.depth;
    if (depth > 0)
        return nested_begin(t, props, depth);
    /* Most threads run the same transaction again and again, or two in turn
     * (a cache's lookups and its stores): remember the last two. */
    uintptr_t rip = (uintptr_t)t->ctl.jb.rip;
    txkit_site_t *site = TXKIT_LIKELY(t->itm.last_rip == rip) ? t->itm.last_site
                         : t->itm.prev_rip == rip && rip      ? t->itm.prev_site
                                                              : itm_site_remember(t, rip);
    /* A block with the properties of the last one, or with properties that
     * differ only where txkit decides nothing (so the same kind, code and
     * resume as they were left), the same block or not: an express begin
     * (express.h), which records the site. (A cache's read-only lookups and
     * its stores alternate pr_readOnly: they took the general path at every
     * switch.) */
    bool same_props = ((t->ctl.props ^ props) & TK_PR_DECIDES) == 0;
    if (TXKIT_LIKELY(site == t->xsite) && same_props &&
        tk_express_begin_same(t, site, t->ctl.jb.rsp)) {
        t->ctl.props = props;
        t->itm.txid = 0;
        return itm_action_parked(t);
    }
    if (TXKIT_LIKELY(t->express) && same_props) {
        t->ctl.props = props; /* the rest of the state is as the last begin left it */
        if (!(t->express & TK_EXPRESS))
            return itm_begin_next(t, site, props);
        if (tk_express_begin(t, site, t->ctl.jb.rsp, TK_KIND_ITM)) {
            t->itm.txid = 0;
            return itm_action_parked(t);
        }
    }
    return itm_begin_general(t, site, props);
}

/* The outermost commit but the express one: out of line, so that the
 * express commit keeps no frame. */
static __attribute__((noinline)) void commit_outermost(tk_thread *t) {
    if (tk_solo_commit_ok(t)) { /* a lone thread's attempt on its parked clock */
        drop_checkpoints(t, 0);
        tk_solo_commit(t);
        return;
    }
    int r = t->ctl.m->commit(t);
    if (r != TK_OK)
        tk_abort(t, r);
    drop_checkpoints(t, 0);
    tk_finish_commit(t);
}

/* A commit at depth other than 1: a nested block's end, or a misuse. */
static __attribute__((noinline)) void commit_not_outermost(tk_thread *t, unsigned depth) {
    if (depth == 0 || !t)
        TK_FATAL("_ITM_commitTransaction outside a transaction");
    tk_itm_cp *cp = top_checkpoint(t);
    if (cp && cp->depth == depth) {
        tk_vec_free(&cp->saved);
        t->itm.cps.len--;
    }
    _txkit_tls.depth = depth - 1;
}

TK_EXPORT void _ITM_commitTransaction(void) {
    tk_thread *t = tk_cur;
    unsigned depth = _txkit_tls.depth;
    if (TXKIT_UNLIKELY(depth != 1 || !t)) {
        commit_not_outermost(t, depth);
        return;
    }
    if ((t->express & TK_EXPRESS) && t->itm.cps.len == 0 && tk_express_commit(t))
        return;
    commit_outermost(t);
}

/* The unwinder's own deletion of an exception (libgcc_s), weak: present
 * whenever C++ exceptions are. */
extern void _Unwind_DeleteException(void *) __attribute__((weak));

static void delete_in_flight(void *exc) {
    if (_Unwind_DeleteException)
        _Unwind_DeleteException(exc);
}

/* An exception leaves the transaction: it commits with it. If the commit
 * fails, the transaction runs again (and throws again): the exception now in
 * flight is abandoned, so it is deleted with the rollback. */
TK_EXPORT void _ITM_commitTransactionEH(void *exc_ptr) {
    if (exc_ptr && _txkit_tls.depth == 1 && tx_on_abort(delete_in_flight, exc_ptr) != 0)
        TK_FATAL("out of memory registering the exception in flight");
    _ITM_commitTransaction();
}

/* Undo the part of the current attempt done since checkpoint cp. */
static void rollback_to(tk_thread *t, tk_itm_cp *cp) {
    if (t->ctl.m->rollback_to) /* the method's own state (software: the write set) */
        t->ctl.m->rollback_to(t, &cp->saved);
    tk_undo_apply(t, cp->ulog_len, cp->jb.rsp); /* its frames below cp are gone */
    for (size_t i = cp->allocs_len; i < t->allocs.len; i++)
        free(TK_VEC_AT(&t->allocs, void *, i));
    t->allocs.len = cp->allocs_len;
    t->captured.len = cp->captured_len;
    t->frees.len = cp->frees_len;
    /* undo actions registered by the cancelled part, newest first */
    for (size_t i = t->handlers.len; i-- > cp->handlers_len;) {
        tk_handler *h = &TK_VEC_AT(&t->handlers, tk_handler, i);
        if (!h->on_commit)
            h->fn(h->arg);
    }
    t->handlers.len = cp->handlers_len;
    t->arena.len = cp->arena_len;
}

TK_EXPORT void __attribute__((noreturn)) _ITM_abortTransaction(uint32_t reason) {
    tk_thread *t = tk_cur;
    unsigned depth = _txkit_tls.depth;
    if (!t || depth == 0)
        TK_FATAL("_ITM_abortTransaction outside a transaction");
    if (!(reason & TK_USER_ABORT))
        TK_FATAL("_ITM_abortTransaction: unsupported reason %#x", reason);
    if (t->ctl.irrevocable)
        TK_FATAL("__transaction_cancel in an irrevocable transaction");
    tk_itm_cp *cp = top_checkpoint(t);
    int outer = (reason & TK_OUTER_ABORT) || depth == 1 || !cp || cp->depth != depth;
    if (t->ctl.m->caps & TK_CAP_HARDWARE)
        t->ctl.m->explicit_abort(t, outer ? -TK_XCODE_CANCEL_OUTER : -TK_XCODE_CANCEL_NESTED);
    if (outer) {
        t->ctl.cancelling = 1; /* not a conflict: no backoff */
        tk_abort_attempt(t, TXKIT_CAUSE_EXPLICIT);
        t->ctl.cancelling = 0;
        tk_irr_release(t);
        drop_checkpoints(t, 0);
        tk_longjmp(&t->ctl.jb, TK_A_ABORT | TK_A_RESTORE_LIVE);
    }
    rollback_to(t, cp);
    tk_jmpbuf jb = cp->jb;
    _txkit_tls.depth = cp->depth - 1;
    drop_checkpoints(t, t->itm.cps.len - 1);
    tk_longjmp(&jb, TK_A_ABORT | TK_A_RESTORE_LIVE);
}

TK_EXPORT void _ITM_changeTransactionMode(uint32_t mode) {
    (void)mode; /* modeSerialIrrevocable is the only mode */
    tx_irrevocable();
}

TK_EXPORT uint32_t _ITM_inTransaction(void) {
    if (_txkit_tls.depth == 0)
        return TK_OUTSIDE;
    tk_thread *t = tk_cur;
    return t && t->ctl.irrevocable ? TK_IRREVOCABLE : TK_RETRYABLE;
}

TK_EXPORT uint64_t _ITM_getTransactionId(void) {
    if (_txkit_tls.depth == 0)
        return 1; /* _ITM_noTransactionId */
    tk_thread *t = tk_cur;
    if (!t->itm.txid) {
        /* Ids are handed to threads in blocks, so taking one is thread-local. */
        if (t->itm.txid_next == t->itm.txid_end) {
            t->itm.txid_next = __atomic_fetch_add(&next_txid_block, 1024, __ATOMIC_RELAXED) + 2;
            t->itm.txid_end = t->itm.txid_next + 1024;
        }
        t->itm.txid = t->itm.txid_next++;
    }
    return t->itm.txid;
}

TK_EXPORT void _ITM_addUserCommitAction(void (*fn)(void *), uint64_t resuming_id, void *arg) {
    (void)resuming_id; /* only the current transaction can be resumed here */
    if (tx_on_commit(fn, arg) != 0)
        TK_FATAL("out of memory registering a commit action");
}

TK_EXPORT void _ITM_addUserUndoAction(void (*fn)(void *), void *arg) {
    /* A hardware attempt forgets its registrations when it aborts, and then
     * a __transaction_cancel would run none of its undo actions: such a
     * transaction continues in software (libitm never runs a transaction
     * that may cancel in hardware). */
    tk_thread *t = tk_cur;
    if (t && _txkit_tls.depth && (t->ctl.m->caps & TK_CAP_HARDWARE))
        t->ctl.m->explicit_abort(t, -TK_XCODE_SOFTWARE);
    if (tx_on_abort(fn, arg) != 0)
        TK_FATAL("out of memory registering an undo action");
}

/* Remove [lo, hi) from the undo log: entries inside it go, entries that
 * straddle it keep the bytes outside it (one may split in two, inserted in
 * place so that the newest-first order of rollback stays). */
static void undo_forget(tk_thread *t, uintptr_t lo, uintptr_t hi) {
    tk_ulog_pull(t);
    for (size_t i = 0; i < t->ulog.len; i++) {
        tk_uentry *u = &TK_VEC_AT(&t->ulog, tk_uentry, i);
        uintptr_t a = (uintptr_t)u->addr, e = a + u->size;
        if (e <= lo || a >= hi)
            continue;
        if (a < lo && e > hi) { /* keep [a, lo) here and [hi, e) right after it */
            if (!tk_vec_push(&t->ulog, sizeof *u))
                TK_FATAL("out of memory growing the undo log");
            u = &TK_VEC_AT(&t->ulog, tk_uentry, i);
            memmove(u + 2, u + 1, (t->ulog.len - i - 2) * sizeof *u);
            u[1].addr = (void *)hi;
            u[1].size = (uint32_t)(e - hi);
            u[1].old = u->old >> (8 * (hi - a));
            u->size = (uint32_t)(lo - a);
            for (size_t k = 0; k < t->itm.cps.len; k++) { /* their marks moved by one */
                tk_itm_cp *cp = &TK_VEC_AT(&t->itm.cps, tk_itm_cp, k);
                if (cp->ulog_len > i)
                    cp->ulog_len++;
            }
            i++;
        } else if (a < lo) {
            u->size = (uint32_t)(lo - a);
        } else if (e > hi) {
            u->old >>= 8 * (hi - a);
            u->addr = (void *)hi;
            u->size = (uint32_t)(e - hi);
        } else {
            u->size = 0; /* all dropped: puts nothing back */
        }
    }
    tk_ulog_push(t);
}

/* The transaction forgets what it knows of [ptr, ptr+len): what it wrote
 * there stays even if it is cancelled or rolled back (GCC's dropref tests).
 * Only a serial attempt writes in place with an undo log, so any other
 * attempt restarts serially; an irrevocable one undoes nothing anyway. */
TK_EXPORT void _ITM_dropReferences(void *ptr, size_t len) {
    tk_thread *t = tk_cur;
    if (!t || _txkit_tls.depth == 0 || len == 0 || t->ctl.irrevocable || t->doomed)
        return;
    if (!(t->ctl.m->caps & TK_CAP_UNDO_LOG)) {
        t->ctl.force_serial = 1;
        if (t->ctl.m->caps & TK_CAP_HARDWARE)
            t->ctl.m->explicit_abort(t, -TK_XCODE_SERIAL);
        tk_abort(t, TXKIT_CAUSE_EXPLICIT);
    }
    uintptr_t lo = (uintptr_t)ptr;
    undo_forget(t, lo, len > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + len);
}

TK_EXPORT void *_ITM_malloc(size_t size) { return tx_malloc(size); }

TK_EXPORT void *_ITM_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = tx_malloc(n * size);
    if (p)
        memset(p, 0, n * size); /* fresh memory is private: no barrier needed */
    return p;
}

TK_EXPORT void _ITM_free(void *ptr) { tx_free(ptr); }

TK_EXPORT const char *_ITM_libraryVersion(void) {
    return "txkit " TXKIT_VERSION_STRING " (libitm ABI 0.90)";
}

TK_EXPORT int _ITM_versionCompatible(int version) { return version == 90; }

TK_EXPORT void __attribute__((noreturn)) _ITM_error(const void *loc, int code) {
    struct src_location {
        uint32_t reserved_1, flags, reserved_2, reserved_3;
        const char *psource;
    };
    const struct src_location *l = loc;
    TK_FATAL("_ITM_error %d at %s", code, l && l->psource ? l->psource : "unknown location");
}

/* ------------------------------------------------------------ clone tables */

/* Each -fgnu-tm object file's .tm_clone_table holds (function, clone) pairs;
 * crtbegin registers them at load. Kept sorted per table for lookup. */
struct clone_entry {
    void *orig, *clone;
};
struct clone_table {
    void *orig_table; /* the address crtbegin registered, for deregistration */
    struct clone_entry *entries;
    size_t n;
    struct clone_table *next;
};
static struct clone_table *clone_tables;
static pthread_rwlock_t clone_lock = PTHREAD_RWLOCK_INITIALIZER;

static int cmp_entry(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const struct clone_entry *)a)->orig;
    uintptr_t y = (uintptr_t)((const struct clone_entry *)b)->orig;
    return x < y ? -1 : x > y;
}

TK_EXPORT void _ITM_registerTMCloneTable(void *table, size_t n) {
    struct clone_table *ct = malloc(sizeof *ct);
    struct clone_entry *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!ct || !copy)
        TK_FATAL("out of memory registering a TM clone table");
    if (n)
        memcpy(copy, table, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, cmp_entry);
    ct->orig_table = table;
    ct->entries = copy;
    ct->n = n;
    pthread_rwlock_wrlock(&clone_lock);
    ct->next = clone_tables;
    clone_tables = ct;
    pthread_rwlock_unlock(&clone_lock);
}

TK_EXPORT void _ITM_deregisterTMCloneTable(void *table) {
    pthread_rwlock_wrlock(&clone_lock);
    for (struct clone_table **pp = &clone_tables; *pp; pp = &(*pp)->next) {
        if ((*pp)->orig_table == table) {
            struct clone_table *ct = *pp;
            *pp = ct->next;
            free(ct->entries);
            free(ct);
            break;
        }
    }
    pthread_rwlock_unlock(&clone_lock);
}

static void itm_atfork(tk_thread *me, int phase) {
    (void)me;
    if (phase == TK_FORK_PREPARE) {
        tk_mutex_lock(&itm_sites_lock);
        pthread_rwlock_rdlock(&clone_lock); /* no table half-registered */
    } else if (phase == TK_FORK_PARENT) {
        pthread_rwlock_unlock(&clone_lock);
        tk_mutex_unlock(&itm_sites_lock);
    } else { /* the only thread left: fresh locks */
        pthread_rwlock_init(&clone_lock, NULL);
        tk_mutex_child(&itm_sites_lock);
    }
}

static void *find_clone(void *fn) {
    void *clone = NULL;
    struct clone_entry key = {fn, NULL};
    pthread_rwlock_rdlock(&clone_lock);
    for (struct clone_table *ct = clone_tables; ct && !clone; ct = ct->next) {
        struct clone_entry *e = bsearch(&key, ct->entries, ct->n, sizeof key, cmp_entry);
        if (e)
            clone = e->clone;
    }
    pthread_rwlock_unlock(&clone_lock);
    return clone;
}

TK_EXPORT void *_ITM_getTMCloneSafe(void *fn) {
    void *clone = find_clone(fn);
    if (!clone)
        TK_FATAL("no transactional clone for the function at %p (declare it transaction_safe "
                 "or transaction_callable)",
                 fn);
    return clone;
}

TK_EXPORT void *_ITM_getTMCloneOrIrrevocable(void *fn) {
    void *clone = find_clone(fn);
    if (clone)
        return clone;
    tx_irrevocable(); /* an unknown function: run it for real */
    return fn;
}

TK_CONSTRUCTOR static void itm_hooks(void) {
    tk_hook_add(TK_HOOK_FORK, TK_FORK_ORDER_ITM, itm_atfork);
}
