/* SPDX-License-Identifier: MIT */
/* txn.c - the engine: begin, method policy, commit, abort and restart.
 *
 * Life of an outermost transaction:
 *   _txkit_begin (arch checkpoint) -> tk_begin_c_outer (tk_begin_c when nested
 *   or the thread has no descriptor yet) -> an express begin (express.h) or
 *   run_attempts: pick a method and begin an attempt; user code runs;
 *   _txkit_end -> commit.
 * A hardware abort resumes inside the hardware method's begin() and comes back
 * to run_attempts as a cause. A software abort (failed validation, tx_restart)
 * calls tk_abort: roll back, run abort handlers, back off, start the next
 * attempt and jump to the checkpoint (C) or throw to txkit::atomic (C++).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "methods/method.h"
#include "runtime/choose.h"
#include "runtime/express.h"


TK_HIDDEN TK_NORETURN void tk_longjmp(const tk_jmpbuf *jb, int value);
TK_HIDDEN int tk_begin_c(txkit_site_t *site, unsigned flags);
TK_HIDDEN tk_jmpbuf *tk_jb_slot(void);
TK_HIDDEN int tk_begin_c_outer(tk_thread *t, txkit_site_t *site);


/* How many threads are inside this site now (this one included)? Reads the
 * other threads' slots, so only sampled entries do it (transactions: one in
 * TKS_INSIDE_EVERY; cx sections: one in TK_SAMPLE_EVERY);
 * counted in c (the site's entry of this thread's row). Also used by cx locks. */
void tk_sample_inside(tk_thread *t, uint64_t site, struct tks_counters *c) {
    struct tks_thread *th = tk_seg_threads();
    unsigned n = 0, nthreads = TKS_MAX_THREADS;
    for (unsigned i = 1; i < nthreads; i++) {
        if (__atomic_load_n(&th[i].cur_site, __ATOMIC_RELAXED) == site)
            n++;
        else if (th[i].state == TKS_FREE && th[i].tid == 0)
            break; /* never used beyond here */
    }
    static const unsigned lim[TKS_HIST - 1] = {1, 2, 3, 4, 8, 16, 64};
    unsigned b = 0;
    while (b < TKS_HIST - 1 && n > lim[b])
        b++;
    tk_stats_open(t);
    TK_COUNT(c->inside_hist[b], 1);
    if (n > c->inside_max)
        __atomic_store_n(&c->inside_max, n, __ATOMIC_RELAXED);
    tk_stats_close(t);
}


static unsigned retry_bucket(unsigned n) {
    if (TXKIT_LIKELY(n <= 2))
        return n;
    unsigned b = 3;
    for (unsigned lim = 4; n > lim && b < TXKIT_RETRY_BUCKETS - 1; lim <<= 1)
        b++;
    return b;
}

static void count_abort(tk_thread *t, const struct tk_method *m, int cause) {
    struct tks_counters *c = t->cnt;
    t->ctl.attempts++;
    if (TXKIT_UNLIKELY(tk_cfg.stats_off))
        return;
    tk_stats_open(t);
    TK_COUNT(c->aborts[m->stats_id], 1);
    TK_COUNT(c->aborts_by_cause[cause], 1);
    if (t->ctl.attempt_tsc) /* ticks, weighted by the sampling rate; converted when read */
        TK_COUNT(c->ticks_aborted, (tk_rdtsc() - t->ctl.attempt_tsc) * t->ctl.attempt_weight);
    tk_stats_close(t);
}

/* Time lost in aborted attempts needs the start of every attempt that might
 * abort, but a timestamp costs as much as a small transaction (rdtsc is ~35
 * cycles here). So retries, where aborts cluster, are always timed (with
 * statistics off too: the hardware retry policy uses it, policy.c), and first
 * attempts of sampled transactions (one in TK_SAMPLE_EVERY, start_count),
 * weighted by TK_SAMPLE_EVERY: an unbiased estimate. Serial attempts only
 * abort explicitly and are timed like first attempts. */
static inline bool time_attempt(tk_thread *t) {
    if (TXKIT_LIKELY(!t->time_first)) {
        if (TXKIT_LIKELY(t->ctl.attempts == 0))
            return false;
        t->ctl.attempt_weight = 1;
        return true;
    }
    t->time_first = 0; /* set only with statistics on */
    t->ctl.attempt_weight = TK_SAMPLE_EVERY;
    return true;
}

/* An attempt of m: its state before the method's begin, and the barriers'
 * access bits once it runs. Shared by tk_run_attempts and tk_solo_begin
 * (no_faults: it checked that no fault injection is configured). */
static inline void attempt_prepare(tk_thread *t, const struct tk_method *m, bool no_faults) {
    tk_attempt_reset(t);
    t->ctl.m = m;
    t->ctl.sw_express = t->ctl.hw_express = 0;
    t->ctl.inject = !no_faults && tk_cfg.any_fault && tk_fault_hit(t, m->stats_id);
    t->ctl.attempt_tsc = time_attempt(t) ? tk_rdtsc() : 0;
}
static inline void attempt_running(tk_thread *t, const struct tk_method *m) {
    _txkit_tls.access = tk_read_access(m->access | t->ctl.acc_add, t->vis.active);
    _txkit_tls.depth = 1;
    tk_ulog_push(t); /* TXKIT_ACC_UNDO: TX_STORE's records go to the undo log */
}

/* Begin attempts until one runs. Returns inside the running attempt. Inline
 * in TX_ATOMIC's begin (tk_begin_c); tk_run_attempts is the others' copy. */
__attribute__((always_inline)) static inline void run_attempts(tk_thread *t) {
    for (;;) {
        if (TXKIT_UNLIKELY(tk_sched_on) && t->ctl.attempts > 0)
            tk_sched_before_retry(t); /* a hot site admits retries one at a time */
        const struct tk_method *m = tk_choose_method(t);
        if (t->ctl.attempts > 0 && !tk_cfg.stats_off) {
            if (tk_method_has(m, TK_CAP_SOFTWARE) && tk_method_has(t->ctl.m, TK_CAP_HARDWARE) &&
                !t->ctl.fell_htm) {
                t->ctl.fell_htm = 1;
                TK_COUNT(t->cnt->htm_to_stm, 1);
            } else if (tk_method_has(m, TK_CAP_EXCLUSIVE) &&
                       !tk_method_has(t->ctl.m, TK_CAP_EXCLUSIVE) && !t->ctl.fell_serial) {
                t->ctl.fell_serial = 1;
                TK_COUNT(t->cnt->to_serial, 1);
            }
        }
        if (TXKIT_UNLIKELY(t->stm.sw_registered) && !tk_method_has(m, TK_CAP_SOFTWARE))
            tk_stm_sw_leave(t); /* a thread of the stm method now runs another */
        attempt_prepare(t, m, false);
        if (TXKIT_UNLIKELY(tk_sched_on))
            tk_sched_attempt_start(t);
        int r = m->begin(t);
        if (r == TK_OK) {
            attempt_running(t, m);
            return;
        }
        /* A hardware attempt aborted: the CPU restored everything but stats. */
        count_abort(t, m, r);
        if (t->ctl.cancelled)
            return; /* __transaction_cancel [[outer]]: nothing left to run */
        tk_htm_policy(t, r);
    }
}
void tk_run_attempts(tk_thread *t) { run_attempts(t); }

void tk_hw_express_aborted(tk_thread *t, int cause) {
    /* run_attempts' own steps after a hardware abort */
    count_abort(t, t->ctl.m, cause);
    if (t->ctl.cancelled)
        return;
    tk_htm_policy(t, cause);
    run_attempts(t);
}

/* The per-transaction state every outermost begin resets; and its statistics.
 * Inline: tk_start_transaction and the solo fast path (tk_solo_begin) share them. */
static inline void start_reset(tk_thread *t, txkit_site_t *site, uintptr_t stack_top) {
    tk_express_set(t, 0); /* the next express begin needs a commit that leaves the state clean */
    tk_stack_enter(t, stack_top);
    t->ctl.site = site;
    t->ctl.m = NULL;
    t->ctl.attempts = 0;
    t->ctl.htm_tries = t->ctl.htm_locked_waits = t->ctl.stm_aborts = 0;
    t->ctl.htm_zero = 0;
    t->ctl.htm_lost = 0;
    t->ctl.reval_aborts = 0;
    t->ctl.irrevocable = t->ctl.force_serial = 0;
    t->retry_pending = t->doomed = 0;
    t->ctl.fell_htm = t->ctl.fell_serial = 0;
    t->ctl.cancelled = 0;
    t->ctl.serial_injected = 0;
    t->ctl.cost_tsc = 0;
}

/* A sampled transaction (start_count; n: t->ntx before it): its first
 * attempt is timed, the clock calibrated for readers, and one in
 * TKS_INSIDE_EVERY counts the threads inside its site. Not every sampled one:
 * the count reads every other thread's slot line, which each owner writes at
 * every begin and commit, so each scan moves those lines between CPUs. At
 * every 64th transaction the statistics cost 5.3% at 2 threads where a line
 * takes 330 ns between the CPUs and 3.3% where it takes 60 (hash set 4096,
 * auto, medians of 80-95 alternating on/off pairs each); at every 1024th,
 * 2.3% and 2.4%. Cold. */
__attribute__((noinline, cold)) static void sample_transaction(tk_thread *t, uint64_t site,
                                                               uint64_t n) {
    _Static_assert(TKS_INSIDE_EVERY % TK_SAMPLE_EVERY == 0, "format.h: a sampled one");
    t->time_first = 1;
    if ((n & (TKS_INSIDE_EVERY - 1)) == 0)
        tk_sample_inside(t, site, t->cnt);
    tk_calibrate_maybe();
}

/* parked: the transaction is counted when it leaves the parked clock, by its
 * commit (solo_commits, which readers fold into transactions) or by
 * tk_solo_unpark (any other way out). */
static inline void start_count(tk_thread *t, txkit_site_t *site, bool parked) {
    unsigned idx = site->id - 1; /* registered: tk_site_init */
    t->cnt = t->row + idx;
    uint64_t n = t->ntx++;
    if (TXKIT_LIKELY(!tk_cfg.stats_off)) {
        if (!parked)
            TK_COUNT(t->cnt->transactions, 1);
        __atomic_store_n(&t->slot->cur_site, idx + 1, __ATOMIC_RELAXED);
        if (TXKIT_UNLIKELY((n & (TK_SAMPLE_EVERY - 1)) == 0))
            sample_transaction(t, idx + 1, n);
    }
}

__attribute__((always_inline)) static inline void
start_transaction(tk_thread *t, txkit_site_t *site, uintptr_t stack_top) {
    if (TXKIT_UNLIKELY(tk_solo_parked()))
        tk_solo_unpark(t); /* ours (the general path takes the clock per attempt), or not: no-op */
    if (TXKIT_UNLIKELY(t->sched.queue_held)) /* the last one ended without a commit */
        tk_sched_release(t);
    start_reset(t, site, stack_top);
    if (TXKIT_UNLIKELY(!t->slot)) /* a fork's child: a segment of its own */
        tk_seg_thread_attach(t);
    start_count(t, site, false);
    tk_cm->on_begin(t);
}
/* Inline in TX_ATOMIC's begin (tk_begin_c); this copy is the others'. */
void tk_start_transaction(tk_thread *t, txkit_site_t *site, uintptr_t stack_top) {
    start_transaction(t, site, stack_top);
}

/* The solo fast path. A thread that runs transactions alone under the auto
 * method runs them serially (choose.h: tk_auto_solo); when nothing else can
 * apply (tk_solo_fast_ok: no fault injection, no scheduler, ...) this does what
 * tk_start_transaction and tk_run_attempts would for its first attempt, in
 * one step, without their general checks. If the thread kept the clock
 * parked at its last commit (solo.h), the attempt runs on it: no atomic
 * operation at all, and the commit (tk_solo_commit) keeps it parked. False, with
 * nothing done, when it does not apply: the caller takes the general path. */
__attribute__((always_inline)) static inline bool solo_begin(tk_thread *t, txkit_site_t *site,
                                                             uintptr_t stack_top) {
    uintptr_t me = (uintptr_t)t;
    uintptr_t s = __atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED);
    if (s != me && s != (me | TK_SOLO_PARKED))
        return false;
    if (TXKIT_UNLIKELY(!tk_solo_fast_ok(t) || t->ctl.irr_token ||
                       !(t->ctl.code & (TK_CODE_INSTRUMENTED | TK_CODE_GOES_IRREVOCABLE))))
        return false;
    if (s != me) {
        /* Parked: say we are inside before looking again (solo.h). */
        __atomic_store_n(&t->solo_in, 1, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (TXKIT_UNLIKELY(__atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED) != s)) {
            __atomic_store_n(&t->solo_in, 0, __ATOMIC_RELAXED);
            return false; /* being revoked: tk_start_transaction gives it back */
        }
    }
    const struct tk_method *m = M_SERIAL;
    start_reset(t, site, stack_top);
    start_count(t, site, s != me);
    /* On a parked clock no other transaction runs and this one cannot
     * conflict: nothing for the contention manager to hear (solo.h). */
    if (s == me)
        tk_cm->on_begin(t);
    attempt_prepare(t, m, true); /* (no scheduler, no fault injection: tk_solo_fast_ok) */
    if (s == me)
        m->begin(t); /* serial: always TK_OK (it waits for the clock) */
    attempt_running(t, m);
    return true;
}
/* Inline in TX_ATOMIC's begin (tk_begin_c); this copy is the ABI layer's. */
bool tk_solo_begin(tk_thread *t, txkit_site_t *site, uintptr_t stack_top) {
    return solo_begin(t, site, stack_top);
}

/* Histogram bucket of a read or write set size (stats/format.h). */
static unsigned set_bucket(size_t n) {
    /* bits: 0 -> 0, 1 -> 1, 2-3 -> 2, 4-7 -> 3, 8-15 -> 4, 16-63 -> 5, 64-255 -> 6, more -> 7 */
    static const unsigned char by_bits[65] = {0, 1, 2, 3, 4, 5, 5, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7,
                                              7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
                                              7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
                                              7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
    return by_bits[n ? 64 - __builtin_clzll((unsigned long long)n) : 0];
}

/* A commit's statistics (stats/format.h). */
__attribute__((always_inline)) static inline void
count_commit(tk_thread *t, const struct tk_method *m, unsigned attempts) {
    struct tks_counters *c = t->cnt;
    if (TXKIT_UNLIKELY(tk_cfg.stats_off))
        return;
    if ((m->stats_id == TKS_M_STM || m->stats_id == TKS_M_HTM) && attempts == 0 &&
        !t->ctl.attempt_tsc) {
        /* one word that readers fold into commits and retries (tks_fold) */
        _Static_assert(TKS_M_STM == TXKIT_STM && TKS_M_HTM == TXKIT_HTM,
                       "stats/format.h: tks_fold's indexes");
        if (m->stats_id == TKS_M_STM)
            TK_COUNT(c->sw_commits, 1);
        else
            TK_COUNT(c->hw_commits, 1);
        __atomic_store_n(&t->slot->cur_site, 0, __ATOMIC_RELAXED);
        return;
    }
    tk_stats_open(t);
    TK_COUNT(c->commits[m->stats_id], 1);
    TK_COUNT(c->retries_hist[retry_bucket(attempts)], 1);
    if (t->ctl.attempt_tsc) {
        /* sampled with the timing, weighted the same way: unbiased estimates */
        unsigned w = t->ctl.attempt_weight;
        TK_COUNT(c->ticks_committed, (tk_rdtsc() - t->ctl.attempt_tsc) * w);
        if (m->caps & TK_CAP_SOFTWARE) {
            TK_COUNT(c->rset_hist[set_bucket((size_t)(_txkit_tls.rcur - t->stm.rlog))], w);
            TK_COUNT(c->wset_hist[set_bucket(t->stm.wset.len)], w);
        }
    }
    tk_stats_close(t);
    __atomic_store_n(&t->slot->cur_site, 0, __ATOMIC_RELAXED);
}

/* Nothing arrived in the running attempt that tk_finish_commit would act on:
 * no handlers, no commit hook, no irrevocability, no scheduler or contention
 * manager to tell. */
static inline bool express_quiet(const tk_thread *t) {
    return !(t->handlers.len | (t->hooks_armed & TK_HOOK_ARMED(TK_HOOK_COMMITTED)) |
             (unsigned)t->ctl.irr_token | (unsigned)t->ctl.force_serial | t->cm.consecutive_aborts |
             (unsigned)t->sched.queue_held) &&
           !tk_sched_on;
}

/* An attempt that tk_sw_express_begin began (software TM, first attempt, not
 * timed, no fault injection, C or gcc front end) that is quiet (above), with
 * few writes. */
static inline bool sw_express_quiet(const tk_thread *t) {
    return t->ctl.sw_express && express_quiet(t) && t->stm.wset.len < TK_BIG_WRITES;
}

/* The end of a quiet express attempt's commit (sw_express_finish,
 * hw_express_finish): a first-attempt commit counted, the attempt over, its
 * frees and allocations applied, and the next begin may be express again. */
__attribute__((always_inline)) static inline void express_finished(tk_thread *t, unsigned next) {
    /* count_commit's case (a first attempt, not timed: the express begins'),
     * its method known here: software for TK_EXPRESS_SW, else hardware */
    if (TXKIT_LIKELY(!tk_cfg.stats_off)) {
        if (next == TK_EXPRESS_SW)
            TK_COUNT(t->cnt->sw_commits, 1);
        else
            TK_COUNT(t->cnt->hw_commits, 1);
        __atomic_store_n(&t->slot->cur_site, 0, __ATOMIC_RELAXED);
    }
    tk_attempt_ended(t);
    if (t->frees.len | t->allocs.len)
        tk_discard_effects(t, 1);
    t->express = next; /* xsite: NULL since the express begin */
}

/* A hardware attempt committed: hardware works at its site again, so the
 * penalties start over (policy.c). */
static inline void hw_committed(tk_thread *t) {
    if (TXKIT_UNLIKELY(t->policy.htm_pen_site == t->ctl.site))
        t->policy.htm_pen_len = 0;
    if (t->ctl.site && TXKIT_UNLIKELY(__atomic_load_n(&t->ctl.site->htm_fail, __ATOMIC_RELAXED) >>
                                      TK_SKIP_LEN_SHIFT))
        tk_policy_hw_commit(t->ctl.site);
}

/* tk_finish_commit for a committed attempt that tk_hw_express_begin began
 * (first attempt, not timed, no fault injection, C or gcc front end) and that
 * is quiet (above): what the rest comes to for it. False, with nothing done,
 * for any other. Inline in TX_ATOMIC's hardware express commit (end_hw) and
 * in tk_finish_commit (gcc's commit). */
__attribute__((always_inline)) static inline bool hw_express_finish(tk_thread *t) {
    if (!t->ctl.hw_express || !express_quiet(t))
        return false;
    t->ctl.hw_express = 0;
    hw_committed(t);
    express_finished(t, TK_EXPRESS_HW);
    return true;
}

/* tk_finish_commit for an attempt that sw_express_quiet finds quiet: what
 * the rest comes to for it, without its questions. False, with nothing done,
 * for any other. Inline in TX_ATOMIC's commit (end_c). */
__attribute__((always_inline)) static inline bool sw_express_finish(tk_thread *t) {
    if (!sw_express_quiet(t))
        return false;
    t->ctl.sw_express = 0;
    express_finished(t, TK_EXPRESS_SW);
    return true;
}

void tk_finish_commit(tk_thread *t) {
    const struct tk_method *m = t->ctl.m;
    if (sw_express_finish(t) || hw_express_finish(t))
        return;
    tk_express_set(t, 0);
    t->ctl.sw_express = t->ctl.hw_express = 0;
    if (m->caps & TK_CAP_HARDWARE)
        hw_committed(t);
    if (m->caps & TK_CAP_SOFTWARE) {
        if (TXKIT_UNLIKELY(t->stm.wset.len >= TK_BIG_WRITES))
            tk_policy_big_writes(t->ctl.site);
        if (TXKIT_UNLIKELY(_txkit_tls.rcur - t->stm.rlog >= TK_LONG_READS))
            tk_policy_long_reads(t->ctl.site);
    }
    if (TXKIT_UNLIKELY(t->ctl.cost_tsc))
        tk_policy_long_commit(t);
    if (TXKIT_UNLIKELY(t->hooks_armed & TK_HOOK_ARMED(TK_HOOK_COMMITTED))) {
        t->hooks_armed &= ~TK_HOOK_ARMED(TK_HOOK_COMMITTED);
        tk_hooks_run(TK_HOOK_COMMITTED, t, 0); /* committed: its writes are all in memory */
    }
    tk_irr_release(t);
    if (TXKIT_UNLIKELY(t->priv_clock)) { /* stm_commit's wait, deferred past the token */
        uint64_t c = t->priv_clock;
        t->priv_clock = 0;
        tk_privatization_wait(t, c);
    }
    count_commit(t, m, t->ctl.attempts);
    tk_attempt_ended(t);
    if (!tk_cm_commit_quiet(t))
        tk_cm->on_commit(t);
    /* At the first attempt of software TM, with no handler to run (which
     * may run transactions of its own), nothing forced: the state is as
     * tk_start_transaction would reset it (express.h). */
    /* The same at the first attempt of hardware (express.h). */
    bool again = (m->id == TXKIT_STM || m->id == TXKIT_HTM) && t->ctl.attempts == 0 &&
                 !t->ctl.force_serial && !t->handlers.len &&
                 (t->ctl.kind == TK_KIND_C || t->ctl.kind == TK_KIND_ITM);
    if (t->frees.len | t->allocs.len | t->handlers.len)
        tk_discard_effects(t, 1);
    if (again)
        tk_express_set(t, m->id == TXKIT_STM ? TK_EXPRESS_SW : TK_EXPRESS_HW);
}

/* A transaction begun and committed on a parked clock: serial, at the first
 * attempt (an abort would have unparked it), counted in one word that readers
 * fold into transactions, commits and retries (stats/format.h: tks_fold);
 * one add, no seqlock round, unless the attempt was timed. */
static inline void count_solo_commit(tk_thread *t) {
    if (TXKIT_UNLIKELY(tk_cfg.stats_off))
        return;
    if (TXKIT_UNLIKELY(t->ctl.attempt_tsc)) {
        TK_COUNT(t->cnt->transactions, 1); /* not counted at its begin */
        count_commit(t, t->ctl.m, 0);
        return;
    }
    _Static_assert(TKS_M_SERIAL == TXKIT_SERIAL, "stats/format.h: tks_fold's index");
    TK_COUNT(t->cnt->solo_commits, 1);
    __atomic_store_n(&t->slot->cur_site, 0, __ATOMIC_RELAXED);
}

/* tk_solo_commit (internal.h): the clock stays parked, no atomic operation. */
void tk_solo_commit(tk_thread *t) {
    count_solo_commit(t);
    if (tk_solo_leave(t) && (t->ctl.kind == TK_KIND_C || t->ctl.kind == TK_KIND_ITM) &&
        !t->handlers.len && !t->ctl.irr_token && t->slot_index != TKS_SHARED_SLOT) {
        /* Still parked and nothing runs but the transaction's own code: the
         * next transaction of the same kind may take the express begin. */
        if (t->frees.len | t->allocs.len)
            tk_discard_effects(t, 1);
        tk_attempt_reset(t);
        t->ctl.attempt_tsc = 0;
        t->express = TK_EXPRESS;
        t->xsite = t->ctl.site; /* C or ITM: a site belongs to one front end */
        t->xtls = tk_read_access(M_SERIAL->access, t->vis.active) | (uint64_t)1 << 32;
        return;
    }
    if (t->frees.len | t->allocs.len | t->handlers.len)
        tk_discard_effects(t, 1);
}

/* Roll back a software attempt and leave the thread outside any transaction. */
void tk_abort_attempt(tk_thread *t, int cause) {
    const struct tk_method *m = t->ctl.m;
    t->ctl.sw_express = t->ctl.hw_express = 0;
    tk_hooks_run(TK_HOOK_ABORTING, t, cause);
    m->rollback(t);
    count_abort(t, m, cause);
    tk_attempt_ended(t);
    tk_hooks_run(TK_HOOK_ABORTED, t, cause);             /* after the rollback: cx locks it held */
    t->hooks_armed &= ~TK_HOOK_ARMED(TK_HOOK_COMMITTED); /* nothing left to release */
    if (t->handlers.len | t->allocs.len | t->frees.len) {
        struct tk_txctl saved = t->ctl;
        tk_discard_effects(t, 0);
        t->ctl = saved;
    }
    if (cause == TXKIT_CAUSE_IRREVOCABLE && !t->ctl.irr_token)
        t->ctl.force_serial = 1;
    if (m->caps & TK_CAP_SOFTWARE) {
        /* Aborts a manager decided do not lead to the serial fallback: its
         * order guarantees the winner's progress, and serial would ignore it. */
        if (!t->vis.decided) {
            t->ctl.stm_aborts++;
            /* NOrec decided by validation, against this reader. Under backoff
             * that is the decision: count it, and whether it went against a
             * higher priority than the last writer's. Under the others it is
             * a conflict the manager did not see: counted apart. */
            if (cause == TXKIT_CAUSE_CONFLICT) {
                if (!tk_vis_on) {
                    tk_prio_refresh(t);
                    tk_cm_count(t, __atomic_load_n(&tk_g.last_writer_prio, __ATOMIC_RELAXED),
                                t->cm.prio);
                } else if (!tk_cfg.stats_off && t->cnt) {
                    tk_stats_open(t);
                    TK_COUNT(t->cnt->cm_undecided, 1);
                    tk_stats_close(t);
                }
            }
        }
        t->vis.decided = 0;
    }
    if (!t->ctl.cancelling)
        tk_cm->on_abort(t, cause);
}

/* tk_abort (core.h): roll back, then resume as the front end says. */
static TK_NORETURN void engine_abort(tk_thread *t, int cause) {
    unsigned depth = _txkit_tls.depth;
    tk_abort_attempt(t, cause);
    t->ctl.resume(t, depth);
}

/* TX_ATOMIC: the next attempt, then back to the checkpoint, "returning" 1. */
static TK_NORETURN void resume_c(tk_thread *t, unsigned depth) {
    (void)depth;
    tk_run_attempts(t);
    tk_longjmp(&t->ctl.jb, 1);
}

/* txkit::atomic: unwind to its retry loop, which begins the next attempt;
 * barriers of destructors on the way see a doomed attempt (loads read
 * memory, stores are dropped). */
static TK_NORETURN void resume_cxx(tk_thread *t, unsigned depth) {
    t->retry_pending = 1;
    t->doomed = 1;
    _txkit_tls.depth = depth;
    _txkit_tls.access = TXKIT_ACC_LOAD | TXKIT_ACC_STORE;
    t->ctl.thrower();
    TK_FATAL("the C++ restart thrower returned");
}

/* ---------------------------------------------------------- entry points */

/* Give the site its index in the statistics segment (id = index + 1). The
 * first thread to get here registers it; racing ones wait for the id. */
static pthread_mutex_t site_lock = PTHREAD_MUTEX_INITIALIZER;

static void txn_atfork(tk_thread *me, int phase) {
    (void)me;
    tk_atfork_mutex(&site_lock, phase);
}

TK_CONSTRUCTOR static void txn_hooks(void) {
    tk_set_abort(engine_abort);
    tk_hook_add(TK_HOOK_FORK, TK_FORK_ORDER_TXN, txn_atfork);
}

void tk_site_init(txkit_site_t *site, const char *file, const char *func, int line) {
    if (__atomic_load_n(&site->id, __ATOMIC_ACQUIRE))
        return;
    tk_mutex_lock(&site_lock);
    if (!site->id) {
        if (file && !site->file) {
            site->file = file;
            site->func = func;
            site->line = line;
        }
        unsigned kind = file ? TKS_SITE_CXX : TKS_SITE_C;
        if (site->flags & TK_SITE_FLAG_ITM)
            kind = TKS_SITE_ITM;
        unsigned idx = tk_seg_site_register(kind, (uint64_t)(uintptr_t)site, site->file, site->func,
                                            site->line);
        __atomic_store_n(&site->id, idx + 1, __ATOMIC_RELEASE);
    }
    tk_mutex_unlock(&site_lock);
}

/* checkpoint.S's inline case reads these two offsets. */
_Static_assert(offsetof(tk_thread, ctl.jb) == 0, "checkpoint.S: the outermost checkpoint");
_Static_assert(offsetof(struct txkit_tls, depth) == 4, "checkpoint.S: _txkit_tls.depth");
_Static_assert(offsetof(struct txkit_tls, access) == 0, "express.h: access and depth in one store");

tk_jmpbuf *tk_jb_slot(void) {
    tk_thread *t = tk_self();
    return _txkit_tls.depth ? &t->jb_nested : &t->ctl.jb;
}

/* TX_ATOMIC's outermost begin but for the express one. Returns 1 (what
 * tk_begin_c_outer returns: its callers' tail calls). */
static __attribute__((noinline)) int begin_c(tk_thread *t, txkit_site_t *site) {
    if (TXKIT_UNLIKELY(!__atomic_load_n(&site->id, __ATOMIC_ACQUIRE)))
        tk_site_init(site, NULL, NULL, 0);
    t->ctl.kind = TK_KIND_C;
    t->ctl.code = TK_CODE_INSTRUMENTED;
    t->ctl.resume = resume_c;
    if (TXKIT_LIKELY(solo_begin(t, site, t->ctl.jb.rsp)))
        return 1;
    start_transaction(t, site, t->ctl.jb.rsp);
    run_attempts(t);
    return 1;
}

/* TX_ATOMIC's outermost begin after a commit that allows the software or
 * the hardware express one: out of line, so that the solo express path keeps
 * no frame. */
static __attribute__((noinline)) int begin_c_next(tk_thread *t, txkit_site_t *site) {
    if (!tk_express_next_begin(t, site, t->ctl.jb.rsp, TK_KIND_C))
        return begin_c(t, site);
    return 1;
}

/* TX_ATOMIC's outermost begin (depth 0), t the caller's descriptor:
 * checkpoint.S's common case jumps here, tk_begin_c calls it. */
int tk_begin_c_outer(tk_thread *t, txkit_site_t *site) {
    if (TXKIT_LIKELY(site == t->xsite) && tk_express_begin_same(t, site, t->ctl.jb.rsp))
        return 1;
    if (TXKIT_LIKELY(t->express)) {
        if (!(t->express & TK_EXPRESS))
            return begin_c_next(t, site);
        if (tk_express_begin(t, site, t->ctl.jb.rsp, TK_KIND_C))
            return 1;
    }
    return begin_c(t, site);
}

int tk_begin_c(txkit_site_t *site, unsigned flags) {
    unsigned depth = _txkit_tls.depth;
    if (depth > 0) {
        _txkit_tls.depth = depth + 1;
        return 1;
    }
    (void)flags;
    return tk_begin_c_outer(tk_cur, site); /* created by tk_jb_slot */
}

void tk_express_commit_rest(tk_thread *t) {
    if (!tk_solo_parked_by(t))
        tk_solo_unpark(t);
    if (t->frees.len | t->allocs.len) {
        tk_discard_effects(t, 1);
        t->captured.len = 0;
    }
}

/* TX_ATOMIC's outermost commit but the express one: out of line, so that
 * the express commit keeps no frame. */
static __attribute__((noinline)) void end_c(tk_thread *t) {
    /* (the software express begin's attempt is of TX_ATOMIC, so not doomed,
     * which only C++ attempts are, and on no parked clock: it refused one) */
    if (!t->ctl.sw_express) {
        if (t->doomed)
            return;
        if (tk_solo_commit_ok(t)) {
            tk_solo_commit(t);
            return;
        }
    }
    int r = t->ctl.m->commit(t);
    if (r != TK_OK)
        tk_abort(t, r);
    if (!sw_express_finish(t))
        tk_finish_commit(t);
}

/* TX_ATOMIC's commit of an attempt that the hardware express begin began,
 * from inside the hardware transaction: to its XEND the short way (each cache
 * line read inside it costs). Not doomed (C only), not on a parked clock
 * (hardware). Out of line, so that the express commit keeps no frame. */
static __attribute__((noinline)) void end_hw(tk_thread *t) {
    t->ctl.m->commit(t); /* hardware: TK_OK or it aborted */
    if (!hw_express_finish(t))
        tk_finish_commit(t);
}

void _txkit_end(struct _txkit_scope *scope) {
    (void)scope;
    unsigned depth = _txkit_tls.depth;
    if (depth != 1) {
        if (depth > 1)
            _txkit_tls.depth = depth - 1;
        return;
    }
    tk_thread *t = tk_cur;
    /* A doomed attempt (C++: unwinding to txkit::atomic) began by the general
     * path, which cleared t->express */
    if (TXKIT_LIKELY(t->express & TK_EXPRESS) && tk_express_commit(t))
        return; /* likely: else gcc lays the lone thread's commit out of the way */
    if (t->ctl.hw_express)
        end_hw(t);
    else
        end_c(t);
}

int _txkit_begin_cxx(txkit_site_t *site, const char *file, int line, void (*thrower)(void)) {
    tk_thread *t = tk_self();
    if (t->retry_pending) {
        t->retry_pending = 0;
        t->doomed = 0;
        _txkit_tls.depth = 0;
        _txkit_tls.access = 0;
        tk_run_attempts(t);
        return 1;
    }
    unsigned depth = _txkit_tls.depth;
    if (depth > 0) {
        _txkit_tls.depth = depth + 1;
        return 2;
    }
    tk_site_init(site, file, "txkit::atomic", line);
    t->ctl.kind = TK_KIND_CXX;
    t->ctl.code = TK_CODE_INSTRUMENTED;
    t->ctl.resume = resume_cxx;
    t->ctl.thrower = thrower;
    /* txkit::atomic calls the lambda from the frame that called us: its
     * frames are below ours (a conservative bound for the private part). */
    tk_start_transaction(t, site, (uintptr_t)__builtin_frame_address(0));
    tk_run_attempts(t);
    return 1;
}

int _txkit_commit_cxx(void) {
    tk_thread *t = tk_cur;
    if (!t || t->doomed)
        return 0; /* rolled back already; retry_pending is set */
    if (_txkit_tls.depth == 0)
        return 1; /* committed before (a commit handler threw) */
    int r = t->ctl.m->commit(t);
    if (r != TK_OK) {
        tk_abort_attempt(t, r);
        t->retry_pending = 1;
        return 0;
    }
    tk_finish_commit(t);
    return 1;
}

void _txkit_leave_nested_cxx(void) {
    tk_thread *t = tk_cur;
    if (t && !t->doomed && _txkit_tls.depth > 1)
        _txkit_tls.depth--;
}

/* --------------------------------------------------------------- barriers */

void _txkit_load_bytes(void *dst, const void *addr, size_t size) {
    tk_thread *t = tk_cur;
    if (TXKIT_UNLIKELY(!t || !_txkit_tls.access || t->doomed)) {
        memcpy(dst, addr, size);
        return;
    }
    t->ctl.m->load(t, dst, addr, size);
}

/* _txkit_store_bytes' cases but the method's store: out of line, so that the
 * dispatch to the method saves no registers. */
static __attribute__((noinline)) void store_undo(tk_thread *t, void *addr, const void *src,
                                                 size_t size) {
    tk_undo_store(t, addr, src, size);
}
static __attribute__((noinline)) void store_outside(tk_thread *t, void *addr, const void *src,
                                                    size_t size) {
    if (!t || !t->doomed)
        memcpy(addr, src, size);
}

void _txkit_store_bytes(void *addr, const void *src, size_t size) {
    tk_thread *t = tk_cur;
    if (TXKIT_UNLIKELY(!t || !_txkit_tls.access || t->doomed))
        store_outside(t, addr, src, size);
    else if (_txkit_tls.access & TK_ACC_UNDO_STORE) /* tk_method_store */
        store_undo(t, addr, src, size);
    else
        t->ctl.m->store(t, addr, src, size);
}

void tk_copy(void *dst, const void *src, size_t n, int src_tx, int dst_tx, int move) {
    unsigned acc = _txkit_tls.access;
    if ((!src_tx || !(acc & TXKIT_ACC_LOAD)) && (!dst_tx || !(acc & TXKIT_ACC_STORE))) {
        if (dst_tx)
            _txkit_tls.wrote = 1; /* as TX_STORE: a hardware attempt wrote */
        if (move)
            memmove(dst, src, n);
        else
            memcpy(dst, src, n);
        return;
    }
    /* In pieces that each touch one word of dst; backward when dst overlaps
     * the end of src, so that every byte is read before it is overwritten. */
    char *d = dst;
    const char *s = src;
    int backward = move && d > s && d < s + n;
    size_t off = backward ? n : 0;
    while (n) {
        size_t k;
        uint64_t tmp;
        if (backward) {
            uintptr_t end = (uintptr_t)(d + off);
            k = (end & 7) ? (end & 7) : 8;
            if (k > n)
                k = n;
            off -= k;
        } else {
            k = tk_piece((uintptr_t)(d + off), n);
        }
        if (src_tx && (acc & TXKIT_ACC_LOAD))
            _txkit_load_bytes(&tmp, s + off, k);
        else
            memcpy(&tmp, s + off, k);
        if (dst_tx && (acc & TXKIT_ACC_STORE))
            _txkit_store_bytes(d + off, &tmp, k);
        else
            memcpy(d + off, &tmp, k);
        if (!backward)
            off += k;
        n -= k;
    }
}

void tx_memcpy(void *dst, const void *src, size_t n) { tk_copy(dst, src, n, 1, 1, 0); }
void tx_memcpy_from(void *dst, const void *src, size_t n) { tk_copy(dst, src, n, 1, 0, 0); }
void tx_memcpy_to(void *dst, const void *src, size_t n) { tk_copy(dst, src, n, 0, 1, 0); }

void tx_memset(void *dst, int c, size_t n) {
    tk_thread *t = tk_cur;
    if (!t || !_txkit_tls.access) {
        memset(dst, c, n);
        _txkit_tls.wrote = 1; /* as TX_STORE: a hardware attempt wrote */
        return;
    }
    uint64_t pattern;
    memset(&pattern, c, sizeof pattern);
    char *d = dst;
    while (n) {
        size_t k = tk_piece((uintptr_t)d, n);
        _txkit_store_bytes(d, &pattern, k);
        d += k;
        n -= k;
    }
}

/* ------------------------------------------------------------ control */

int tx_in_transaction(void) { return (int)_txkit_tls.depth; }

void tx_restart(void) {
    tk_thread *t = tk_cur;
    if (!t || _txkit_tls.depth == 0)
        TK_FATAL("tx_restart() called outside a transaction");
    if (t->doomed)
        t->ctl.thrower();
    if (t->ctl.irrevocable)
        TK_FATAL("tx_restart() called after tx_irrevocable(): the transaction cannot be undone");
    t->ctl.m->explicit_abort(t, TXKIT_CAUSE_EXPLICIT);
    TK_FATAL("explicit abort returned");
}

void tx_irrevocable(void) {
    tk_thread *t = tk_cur;
    if (!t || _txkit_tls.depth == 0 || t->doomed || t->ctl.irrevocable)
        return;
    if (t->ctl.kind == TK_KIND_ITM && (t->ctl.m->caps & TK_CAP_SOFTWARE)) {
        /* gcc goes irrevocable to run code it could not instrument: that code
         * must find our writes in memory, and nobody may see its own writes
         * half done. A software transaction holding the token keeps a write
         * set and lets readers run: not enough. Run serially instead. */
        t->ctl.force_serial = 1;
        tk_abort(t, TXKIT_CAUSE_IRREVOCABLE);
    }
    int r = t->ctl.m->make_irrevocable(t);
    if (r != TK_OK) {
        if (!t->ctl.irr_token)
            t->ctl.force_serial = 1;
        tk_abort(t, r);
    }
    TK_COUNT(t->cnt->irrevocable, 1);
}
