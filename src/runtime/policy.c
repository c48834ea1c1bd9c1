/* SPDX-License-Identifier: MIT */
/* policy.c - which method runs the next attempt, and what a hardware abort
 * changes for the next one (like libitm's retry.cc): the auto method's solo
 * mode, the HTM retry policy, sites that skip hardware. */
#include <time.h>

#include "methods/method.h"
#include "runtime/choose.h"

#define SITE_HTM_SKIP 64   /* transactions of a site that skip hardware in a row, at most */
#define HTM_ZERO_RETRIES 2 /* hardware retries of a status-0 abort (interrupts, faults) */

/* Can this transaction run as software TM (it has barriers)? */
static bool software_possible(const tk_thread *t) { return t->ctl.code & TK_CODE_INSTRUMENTED; }

/* How many transactions skip hardware after a failure, given how many the
 * last skip of the same kind was (0: none since hardware last worked): one,
 * then twice as many each time it recurs, at most SITE_HTM_SKIP. Status-0
 * penalties (per thread) and capacity skips (per site) both grow so. */
static unsigned next_skip(unsigned last) {
    return last == 0 ? 1 : last < SITE_HTM_SKIP ? 2 * last : SITE_HTM_SKIP;
}

/* The site's transaction did not fit in hardware: its next ones skip it
 * (next_skip; tk_policy_hw_commit starts over). A site that overflows now and
 * then (a maze router's larger routes: 1 transaction in 130,
 * tests/apps/labyrinth.c) keeps running in hardware; one that always
 * overflows soon skips 64 at a time. Racy updates by several threads only
 * change a length. */
static void site_skip_htm(txkit_site_t *site) {
    unsigned v = __atomic_load_n(&site->htm_fail, __ATOMIC_RELAXED);
    unsigned len = next_skip(v >> TK_SKIP_LEN_SHIFT);
    __atomic_store_n(&site->htm_fail, (len << TK_SKIP_LEN_SHIFT) | len, __ATOMIC_RELAXED);
}

void tk_policy_hw_commit(txkit_site_t *site) {
    unsigned v = __atomic_load_n(&site->htm_fail, __ATOMIC_RELAXED);
    if (v >> TK_SKIP_LEN_SHIFT)
        __atomic_store_n(&site->htm_fail, v & TK_SKIP_LEFT, __ATOMIC_RELAXED);
}

/* A retry that conflicted: add its time to the transaction's hardware loss;
 * true once that loss reaches TXKIT_HTM_RETRY_US (tk_cfg.htm_retry_us, 50 us).
 * Retrying in hardware after a conflict pays off when attempts are short
 * (yada's 1-2 us transactions commit within 8); a long one that conflicts
 * again and again (a maze router's 30 us routes, each reading the whole grid)
 * loses more per retry than running in software or alone costs: it stops
 * after two. Counted in time, not in attempts, so that both kinds get what
 * suits them. */
static bool htm_budget_spent(tk_thread *t) {
    t->ctl.htm_lost += tk_rdtsc() - t->ctl.attempt_tsc;
    return (double)t->ctl.htm_lost * tk_ns_per_tick_guess() >= 1000.0 * tk_cfg.htm_retry_us;
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
            t->policy.htm_pen_len =
                next_skip(t->policy.htm_pen_site == t->ctl.site ? t->policy.htm_pen_len : 0);
            t->policy.htm_pen_site = t->ctl.site;
            t->policy.htm_pen_left = t->policy.htm_pen_len;
        }
        return;
    case TXKIT_CAUSE_CAPACITY:
    case TXKIT_CAUSE_NESTED:
        /* Retrying in hardware will not help (RTM-FACTS: status 0 means never). */
        t->ctl.htm_tries = tk_cfg.htm_retries;
        if (t->ctl.site)
            site_skip_htm(t->ctl.site);
        return;
    case TXKIT_CAUSE_IRREVOCABLE:
        /* Run again irrevocable from the start: in software holding the
         * token for TX_ATOMIC blocks, else (gcc code, which then runs
         * uninstrumented functions; see tx_irrevocable; or an attempt that
         * entered a cx lock: htm.c, htm_make_irrevocable) serially. */
        if (t->ctl.force_serial)
            return;
        if (t->ctl.kind != TK_KIND_ITM)
            tk_irr_take(t);
        else
            t->ctl.force_serial = 1;
        return;
    case TXKIT_CAUSE_EXPLICIT:
        /* The attempt aborted itself. To leave hardware (a nested cancel,
         * which only software can undo in part; a switch to serial) classify
         * already moved it on: no conflict to wait out, no backoff. A restart
         * (tx_restart) backs off like a conflict: it waits for a change. */
        if (t->ctl.force_serial || t->ctl.htm_tries >= tk_cfg.htm_retries)
            return;
        t->ctl.htm_tries++;
        tk_cm->on_abort(t, cause);
        return;
    case TXKIT_CAUSE_CONFLICT:
        /* The CPU decided that conflict, blind to priorities: with a manager
         * that orders transactions, retry where it decides (software). */
        if (tk_vis_on && software_possible(t)) {
            t->ctl.htm_tries = tk_cfg.htm_retries;
            return;
        }
        t->ctl.htm_tries++;
        if (t->ctl.attempt_tsc && htm_budget_spent(t))
            t->ctl.htm_tries = tk_cfg.htm_retries;
        tk_cm->on_abort(t, cause);
        return;
    default:
        t->ctl.htm_tries++;
        tk_cm->on_abort(t, cause);
        return;
    }
}

/* Set a site's flag once (a load first: the line stays shared once set). */
static void site_mark(txkit_site_t *site, unsigned flag) {
    if (site && !(__atomic_load_n(&site->flags, __ATOMIC_RELAXED) & flag))
        __atomic_fetch_or(&site->flags, flag, __ATOMIC_RELAXED);
}

/* A software attempt of the site committed having written TK_BIG_WRITES
 * words or more (the caller checks): it paid software TM's per-store cost (a logged store, a validation of all it
 * read at commit) that many times: several times the transaction's own work,
 * more than running it alone costs, as a copy of a whole data structure into
 * a private buffer does (a maze router's grid; tests/apps/labyrinth.c ran 10x
 * slower at 2 threads than serially). From then on auto runs the site
 * serially where it would have chosen software TM (hardware first, as
 * before). Set once: sites this big stay big. */
void tk_policy_big_writes(txkit_site_t *site) { site_mark(site, TK_SITE_FLAG_SERIAL); }

/* Long sites (TK_SITE_FLAG_LONG). A software attempt that reads thousands
 * of words pays a logged read for each and walks its log at commit and
 * whenever another commit may have changed what it read; run alone, the same
 * code reads memory directly (gcc's uninstrumented path) but stops every
 * other thread's transactions. Which costs less depends on the program: a
 * structure learner that scores every candidate over every record
 * (tests/apps/bayes.c) ran 3x faster serially than as software TM at 2
 * threads; a long reader beside writers that never touch what it reads keeps
 * all threads going in software. So auto measures: the time from a
 * transaction's first software (or serial) attempt to its commit, averaged per
 * site and method in site->priv (bits 0-31 software, 32-63 serial, in units of
 * 16 ticks), and runs serially where that costs less than software TM divided
 * by the CPUs it idles (running threads, at most the CPUs). One transaction in
 * LONG_EXPLORE runs the method not chosen, so that both averages follow the
 * program. Racy updates by several threads only lose a sample.
 * With RTM, hardware goes first; when it fails a long transaction (a
 * conflict after thousands of reads, an interrupt, its retry budget spent:
 * bayes lost a quarter of its threads' time so), and its transactions take
 * LONG_HW_SKIP_NS or more in software, the site's next ones skip hardware as
 * after a capacity abort: one, then twice as many each time it recurs, at
 * most SITE_HTM_SKIP; a hardware commit starts over. (A short site marked
 * long by a rare long transaction, genome's dedup, kept failing now and then
 * and lost a third of its hardware commits to the skips.) */
#define LONG_EXPLORE 64
#define LONG_HW_SKIP_NS 20000.0 /* software's average above which failed hardware is skipped */
#define COST_UNIT_SHIFT 4

void tk_policy_long_reads(txkit_site_t *site) { site_mark(site, TK_SITE_FLAG_LONG); }

_Static_assert(sizeof(void *) == sizeof(uint64_t), "site->priv holds both averages");
static uint64_t cost_load(txkit_site_t *site) {
    return (uintptr_t)__atomic_load_n(&site->priv, __ATOMIC_RELAXED);
}
static void cost_store(txkit_site_t *site, uint64_t w) {
    __atomic_store_n(&site->priv, (void *)(uintptr_t)w, __ATOMIC_RELAXED);
}

bool tk_policy_long_serial(tk_thread *t, txkit_site_t *site) {
    if (t->ctl.cost_tsc) /* chosen at this transaction's first such attempt */
        return t->ctl.cost_serial;
    uint64_t w = cost_load(site);
    uint64_t sw = (uint32_t)w, ser = w >> 32;
    /* Hardware failed this one (t->ctl.m: the last attempt's method), and
     * the site's transactions are long (software's average): its next ones
     * skip hardware, as after a capacity abort (once per failure). */
    if (t->ctl.attempts > 0 && tk_method_has(t->ctl.m, TK_CAP_HARDWARE) &&
        (double)(sw << COST_UNIT_SHIFT) * tk_ns_per_tick_guess() >= LONG_HW_SKIP_NS &&
        !(__atomic_load_n(&site->htm_fail, __ATOMIC_RELAXED) & TK_SKIP_LEFT))
        site_skip_htm(site);
    bool serial;
    if (sw == 0)
        serial = false; /* software's cost first, */
    else if (ser == 0)
        serial = true; /* then serial's */
    else {
        unsigned cpus = tk_thread_count();
        if (cpus > tk_cfg.ncpus)
            cpus = tk_cfg.ncpus;
        if (cpus == 0)
            cpus = 1;
        serial = ser * cpus < sw;
        if (++t->policy.long_n % LONG_EXPLORE == 0)
            serial = !serial;
    }
    t->ctl.cost_serial = serial;
    t->ctl.cost_tsc = tk_rdtsc();
    return serial;
}

void tk_policy_long_commit(tk_thread *t) {
    uint64_t units = (tk_rdtsc() - t->ctl.cost_tsc) >> COST_UNIT_SHIFT;
    t->ctl.cost_tsc = 0;
    txkit_site_t *site = t->ctl.site; /* the one tk_policy_long_serial timed */
    if (units == 0)
        units = 1; /* 0 means no sample yet */
    if (units > UINT32_MAX)
        units = UINT32_MAX;
    uint64_t w = cost_load(site);
    unsigned shift = t->ctl.cost_serial ? 32 : 0;
    uint64_t old = (w >> shift) & UINT32_MAX;
    if (old && units > 2 * old)
        units = 2 * old; /* one preempted run moves the average by a quarter at most */
    uint64_t avg = old ? old - old / 4 + units / 4 : units; /* weight 1/4 for the newest; >= 1 */
    w = (w & ~((uint64_t)UINT32_MAX << shift)) | (avg << shift);
    cost_store(site, w);
}

bool tk_policy_serial_drain(tk_thread *t) {
    return (t->ctl.code & TK_CODE_PLAIN_SERIAL) && t->ctl.site &&
           (__atomic_load_n(&t->ctl.site->flags, __ATOMIC_RELAXED) &
            (TK_SITE_FLAG_SERIAL | TK_SITE_FLAG_LONG)) &&
           __atomic_load_n(&tk_g.stm_started, __ATOMIC_RELAXED) && tk_thread_count() > 1;
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
