/* policy.c - which method runs the next attempt, and what a hardware abort
 * changes for the next one (like libitm's retry.cc): the auto method's solo
 * mode, the HTM retry policy, sites that skip hardware. */
#include <time.h>

#include "methods/method.h"

/* The public methods the policy chooses among (methods/table.c). */
#define M_HTM (tk_method_table[TXKIT_HTM])
#define M_STM (tk_method_table[TXKIT_STM])
#define M_SERIAL (tk_method_table[TXKIT_SERIAL])

#define SOLO_CHECK_EVERY 256 /* transactions between looks at the other threads */
#define SOLO_QUIET_NS 5000000 /* others idle this long: run alone (serially) */
#define SITE_HTM_SKIP 64     /* transactions of a site that skip hardware after it proved hopeless */
#define HTM_ZERO_RETRIES 2   /* hardware retries of a status-0 abort (interrupts, faults) */

/* Auto method: is this thread running transactions alone right now? */
static bool auto_solo(tk_thread *t) {
    uintptr_t me = (uintptr_t)t;
    uintptr_t s = __atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED);
    if (s == me)
        return true;
    if (tk_irr_other(t)) /* another thread is irrevocable: readers must not serialize */
        return false;
    if (s == 0)
        return __atomic_compare_exchange_n(&tk_g.solo, &s, me, false, __ATOMIC_RELAXED,
                                           __ATOMIC_RELAXED) ||
               s == me;
    if (s != TK_SOLO_SHARED) {
        /* Someone else ran alone until now: tell it that it no longer does. */
        __atomic_compare_exchange_n(&tk_g.solo, &s, TK_SOLO_SHARED, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
        t->policy.quiet_checks = 0;
        return false;
    }
    /* Shared: look now and then whether the others went quiet - for a while,
     * not just for a few hundred of our transactions (a preempted thread is
     * not a gone one). */
    if (t->policy.solo_countdown--)
        return false;
    t->policy.solo_countdown = SOLO_CHECK_EVERY;
    uint64_t others = tk_others_transactions(t);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (others != t->policy.others_seen) {
        t->policy.others_seen = others;
        t->policy.others_active_ns = now;
        t->policy.quiet_checks = 0;
        return false;
    }
    t->policy.quiet_checks++;
    if (t->policy.quiet_checks >= 2 && now - t->policy.others_active_ns >= SOLO_QUIET_NS) {
        t->policy.quiet_checks = 0;
        return __atomic_compare_exchange_n(&tk_g.solo, &s, me, false, __ATOMIC_RELAXED,
                                           __ATOMIC_RELAXED);
    }
    return false;
}

static bool site_skips_htm(tk_thread *t, txkit_site_t *site) {
    if (TXKIT_UNLIKELY(t->policy.htm_pen_left) && t->policy.htm_pen_site == site) {
        t->policy.htm_pen_left--;
        return true;
    }
    unsigned n = __atomic_load_n(&site->htm_fail, __ATOMIC_RELAXED);
    if (n == 0)
        return false;
    __atomic_store_n(&site->htm_fail, n - 1, __ATOMIC_RELAXED);
    return true;
}


/* Software attempts left before the serial fallback: aborts of any kind, and
 * attempts that ran out of their revalidation budget (every transaction must
 * finish, also one whose reads all stay valid while others keep committing). */
static bool stm_budget_left(const tk_thread *t) {
    return t->ctl.stm_aborts < tk_cfg.stm_retries && t->ctl.reval_aborts < TK_REVAL_ABORTS;
}

const struct tk_method *tk_choose_method(tk_thread *t) {
    if (t->ctl.force_serial)
        return M_SERIAL;
    if (t->ctl.irr_token) /* irrevocable from the start, in software */
        return M_STM;
    int cfg = tk_configured_method(t);
    if (TXKIT_UNLIKELY(t->ctl.code != TK_CODE_INSTRUMENTED)) { /* gcc code */
        unsigned p = t->ctl.code;
        if (p & TK_CODE_GOES_IRREVOCABLE) /* would abort in hardware, upgrade in software */
            return M_SERIAL;
        if (!(p & TK_CODE_INSTRUMENTED)) /* no barriers to run software TM with */
            return tk_g.hybrid && cfg != TXKIT_SERIAL && cfg != TXKIT_STM &&
                           t->ctl.htm_tries < tk_cfg.htm_retries
                       ? M_HTM
                       : M_SERIAL;
    }
    switch (cfg) {
    case TXKIT_SERIAL:
        return M_SERIAL;
    case TXKIT_HTM:
        return tk_g.hybrid && t->ctl.htm_tries < tk_cfg.htm_retries ? M_HTM
                                                                : M_SERIAL;
    case TXKIT_STM:
        return stm_budget_left(t) ? M_STM : M_SERIAL;
    default:
        if (TXKIT_UNLIKELY(cfg >= TXKIT_NMETHODS)) /* one selected by name */
            return tk_method_table[cfg];
        if (t->ctl.attempts == 0 && auto_solo(t))
            return M_SERIAL;
        if (t->ctl.m == M_SERIAL && t->ctl.attempts > 0)
            return M_SERIAL; /* solo attempt restarted: stay serial */
        if (tk_g.hybrid && t->ctl.htm_tries < tk_cfg.htm_retries &&
            !(t->ctl.attempts == 0 && site_skips_htm(t, t->ctl.site)))
            return M_HTM;
        return stm_budget_left(t) ? M_STM : M_SERIAL;
    }
}

/* Can this transaction run as software TM (it has barriers)? */
static bool software_possible(const tk_thread *t) {
    return t->ctl.code & TK_CODE_INSTRUMENTED;
}

/* After a hardware abort: decide how the next attempt differs. */
void tk_htm_policy(tk_thread *t, int cause) {
    switch (cause) {
    case TXKIT_CAUSE_LOCKED:
        if (t->ctl.htm_irr_other) {
            t->ctl.htm_irr_other = 0;
            /* Another transaction is irrevocable, maybe for long: go on in
             * software, whose readers do not wait for it, where possible. */
            if (software_possible(t)) {
                t->ctl.htm_tries = tk_cfg.htm_retries;
                return;
            }
            tk_wait_no_irrevocable(t);
        }
        /* A serial transaction or a commit ran: wait for it outside, retry. */
        tk_wait_clock_even();
        if (++t->ctl.htm_locked_waits % 8 == 0)
            t->ctl.htm_tries++;
        return;
    case TXKIT_CAUSE_UNSUPPORTED:
        /* Status 0: a system call or an instruction RTM never runs, but also
         * an interrupt, a first-touch page fault, a TLB shootdown. Retry a
         * few times; then this thread (not every one) leaves hardware for
         * this site for a while, longer each time it recurs. */
        if (++t->ctl.htm_zero <= HTM_ZERO_RETRIES) {
            t->ctl.htm_tries++;
            return;
        }
        t->ctl.htm_tries = tk_cfg.htm_retries;
        if (t->ctl.site) {
            t->policy.htm_pen_len = t->policy.htm_pen_site == t->ctl.site && t->policy.htm_pen_len
                                 ? (t->policy.htm_pen_len < SITE_HTM_SKIP ? t->policy.htm_pen_len * 2 : SITE_HTM_SKIP)
                                 : 1;
            t->policy.htm_pen_site = t->ctl.site;
            t->policy.htm_pen_left = t->policy.htm_pen_len;
        }
        return;
    case TXKIT_CAUSE_CAPACITY:
    case TXKIT_CAUSE_NESTED:
        /* Retrying in hardware will not help (RTM-FACTS: status 0 means never). */
        t->ctl.htm_tries = tk_cfg.htm_retries;
        if (t->ctl.site)
            __atomic_store_n(&t->ctl.site->htm_fail, SITE_HTM_SKIP, __ATOMIC_RELAXED);
        return;
    case TXKIT_CAUSE_IRREVOCABLE:
        /* Run again irrevocable from the start: in software holding the
         * token for TX_ATOMIC blocks, else (gcc code, which then runs
         * uninstrumented functions; see tx_irrevocable) serially. */
        if (t->ctl.kind != TK_KIND_ITM)
            tk_irr_take(t);
        else
            t->ctl.force_serial = 1;
        return;
    case TXKIT_CAUSE_CONFLICT:
        /* The CPU decided that conflict, blind to priorities: with a manager
         * that orders transactions, retry where it decides (software). */
        if (tk_vis_on && software_possible(t)) {
            t->ctl.htm_tries = tk_cfg.htm_retries;
            return;
        }
        t->ctl.htm_tries++;
        tk_cm->on_abort(t, cause);
        return;
    default:
        t->ctl.htm_tries++;
        tk_cm->on_abort(t, cause);
        return;
    }
}

/* Serial is the last resort: a transaction gets at most TK_FAULT_SERIAL_MAX
 * injected serial aborts, so that every one finishes, even at serial=1. */
bool tk_fault_hit(tk_thread *t, int method) {
    double p = tk_cfg.fault[method];
    if (p <= 0.0)
        return false;
    if (method == TXKIT_SERIAL && t->ctl.serial_injected >= TK_FAULT_SERIAL_MAX)
        return false;
    if ((double)(tk_rand(t) >> 11) * 0x1.0p-53 >= p)
        return false;
    if (method == TXKIT_SERIAL)
        t->ctl.serial_injected++;
    return true;
}
