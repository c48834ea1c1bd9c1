/* SPDX-License-Identifier: MIT */
/* choose.h - the part of the method policy (runtime/policy.c) on the
 * engine's per-attempt path: which method runs the next attempt. Inline in
 * the engine (txn.c), as it was before the policy had a file of its own: a
 * call there costs about 1% of a small software transaction. */
#ifndef TK_CHOOSE_H
#define TK_CHOOSE_H

#include <time.h>

#include "methods/method.h"
#include "runtime/solo.h"

/* The public methods the policy chooses among (methods/table.c). */
#define M_HTM (tk_method_table[TXKIT_HTM])
#define M_STM (tk_method_table[TXKIT_STM])
#define M_SERIAL (tk_method_table[TXKIT_SERIAL])

#define SOLO_CHECK_EVERY 256  /* transactions between looks at the other threads */
#define SOLO_QUIET_NS 5000000 /* others idle this long: run alone (serially) */

static inline uint64_t solo_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The quiet period starts again now (the others count as just seen). */
static inline void solo_quiet_restart(tk_thread *t) {
    t->policy.others_active_ns = solo_now_ns();
    t->policy.quiet_checks = 0;
}

/* Auto method: is this thread running transactions alone right now? A
 * thread that lost it (another thread took the clock back: it waits for it,
 * even if it began its transaction long ago, or sleeps between looks at the
 * clock) waits a whole quiet period again before it may go alone. */
static inline bool tk_auto_solo(tk_thread *t) {
    uintptr_t me = (uintptr_t)t;
    uintptr_t s = __atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED);
    if (s == me)
        return true;
    if (TXKIT_UNLIKELY(t->policy.was_solo) && tk_solo_owner(s) != me) {
        t->policy.was_solo = 0;
        solo_quiet_restart(t);
    }
    if (tk_irr_other(t)) /* another thread is irrevocable: readers must not serialize */
        return false;
    if (s == 0) {
        bool got = __atomic_compare_exchange_n(&tk_g.solo, &s, me, false, __ATOMIC_RELAXED,
                                               __ATOMIC_RELAXED) ||
                   s == me;
        t->policy.was_solo = got;
        return got;
    }
    if (s != TK_SOLO_SHARED) {
        /* Someone else ran alone until now: tell it that it no longer does
         * (and take back the clock it keeps parked, solo.h). */
        tk_solo_revoke(t);
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
    if (others != t->policy.others_seen) {
        t->policy.others_seen = others;
        solo_quiet_restart(t);
        return false;
    }
    t->policy.quiet_checks++;
    if (t->policy.quiet_checks >= 2 &&
        solo_now_ns() - t->policy.others_active_ns >= SOLO_QUIET_NS) {
        t->policy.quiet_checks = 0;
        bool got = __atomic_compare_exchange_n(&tk_g.solo, &s, me, false, __ATOMIC_RELAXED,
                                               __ATOMIC_RELAXED);
        t->policy.was_solo = got;
        return got;
    }
    return false;
}

static inline bool tk_site_skips_htm(tk_thread *t, txkit_site_t *site) {
    if (TXKIT_UNLIKELY(t->policy.htm_pen_left) && t->policy.htm_pen_site == site) {
        t->policy.htm_pen_left--;
        return true;
    }
    unsigned n = __atomic_load_n(&site->htm_fail, __ATOMIC_RELAXED);
    if ((n & TK_SKIP_LEFT) == 0)
        return false;
    __atomic_store_n(&site->htm_fail, n - 1, __ATOMIC_RELAXED);
    return true;
}


/* Software attempts left before the serial fallback: aborts of any kind, and
 * attempts that ran out of their revalidation budget (every transaction must
 * finish, also one whose reads all stay valid while others keep committing). */
static inline bool tk_stm_budget_left(const tk_thread *t) {
    return t->ctl.stm_aborts < tk_cfg.stm_retries && t->ctl.reval_aborts < TK_REVAL_ABORTS;
}

/* The method of t's next attempt. Owner thread, before each attempt. */
static inline const struct tk_method *tk_choose_method(tk_thread *t) {
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
        return tk_g.hybrid && t->ctl.htm_tries < tk_cfg.htm_retries ? M_HTM : M_SERIAL;
    case TXKIT_STM:
        return tk_stm_budget_left(t) ? M_STM : M_SERIAL;
    default:
        if (TXKIT_UNLIKELY(cfg >= TXKIT_NMETHODS)) /* one selected by name */
            return tk_method_table[cfg];
        if (t->ctl.attempts == 0 && tk_auto_solo(t))
            return M_SERIAL;
        if (t->ctl.m == M_SERIAL && t->ctl.attempts > 0)
            return M_SERIAL; /* solo attempt restarted: stay serial */
        if (tk_g.hybrid && t->ctl.htm_tries < tk_cfg.htm_retries &&
            !(t->ctl.attempts == 0 && tk_site_skips_htm(t, t->ctl.site)) &&
            !tk_stm_long_readers_on())
            return M_HTM;
        unsigned sf = __atomic_load_n(&t->ctl.site->flags, __ATOMIC_RELAXED);
        if (TXKIT_UNLIKELY(sf & (TK_SITE_FLAG_SERIAL | TK_SITE_FLAG_LONG))) {
            if (sf & TK_SITE_FLAG_SERIAL)
                return M_SERIAL; /* too big for software TM (policy.c: tk_policy_big_writes) */
            if (tk_policy_long_serial(t, t->ctl.site))
                return M_SERIAL; /* cheaper alone, all counted (policy.c) */
        }
        return tk_stm_budget_left(t) ? M_STM : M_SERIAL;
    }
}

/* The auto method's own part of a first attempt's choice while other threads
 * run transactions (tk_auto_solo): not yet time to look whether they went
 * quiet, and no other thread irrevocable. The express begins' choices
 * (below) take it, then count down. Owner thread. */
static inline bool tk_auto_shared_on(const tk_thread *t) {
    return __atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED) == TK_SOLO_SHARED &&
           t->policy.solo_countdown != 0 && !tk_irr_other(t);
}

/* Would tk_choose_method give t's first attempt of a transaction at site to
 * software TM, with nothing else to decide? For the software express begin
 * (express.h), which also checked that the front end's code is instrumented
 * and not bound for irrevocability, and whose last commit left force_serial,
 * irr_token and the attempt counts 0. True, having done what the choice
 * does on that way (the auto method's countdown to its next look at the
 * other threads); false with nothing done. Owner thread, before the attempt. */
static inline bool tk_choose_stm_first(tk_thread *t, txkit_site_t *site) {
    int cfg = tk_configured_method(t);
    if (cfg == TXKIT_STM)
        return true;
    if (cfg != TXKIT_AUTO || tk_g.hybrid || !tk_auto_shared_on(t) ||
        (__atomic_load_n(&site->flags, __ATOMIC_RELAXED) &
         (TK_SITE_FLAG_SERIAL | TK_SITE_FLAG_LONG)))
        return false;
    t->policy.solo_countdown--; /* tk_auto_solo: not yet time to look */
    return true;
}

/* Would tk_choose_method give t's first attempt of a transaction at site to
 * hardware, with nothing else to decide? For the hardware express begin
 * (express.h), whose caller checked what tk_choose_stm_first's does (code
 * instrumented, not bound for irrevocability; force_serial, irr_token and the
 * attempt counts 0). True, having done what the choice does on that way (the
 * auto method's countdown to its next look at the other threads, a site's
 * hardware skips); false with nothing done. Owner thread, before the attempt. */
static inline bool tk_choose_htm_first(tk_thread *t, txkit_site_t *site) {
    int cfg = tk_configured_method(t);
    if (!tk_g.hybrid || tk_cfg.htm_retries == 0)
        return false;
    if (cfg == TXKIT_HTM)
        return true;
    if (cfg != TXKIT_AUTO || !tk_auto_shared_on(t) || tk_stm_long_readers_on() ||
        TXKIT_UNLIKELY(t->policy.htm_pen_left && t->policy.htm_pen_site == site) ||
        (__atomic_load_n(&site->htm_fail, __ATOMIC_RELAXED) & TK_SKIP_LEFT))
        return false;
    t->policy.solo_countdown--; /* tk_auto_solo: not yet time to look */
    return true;
}

#endif /* TK_CHOOSE_H */
