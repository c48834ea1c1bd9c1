/* SPDX-License-Identifier: MIT */
/* cm.c - contention managers, the conflict priority of threads, and the
 * waits every manager shares (the clock, the irrevocability token).
 *
 *   backoff    (default) software TM is NOrec: no owners, so no decisions;
 *              whoever finds the conflict aborts, then waits a random number
 *              of pause iterations below min(2^k * BASE, CAP) after its k-th
 *              abort in a row, so two threads do not collide again in lock
 *              step. With more runnable threads than CPUs, long waits yield.
 *   timestamp  older first attempt wins;   size  larger read+write set wins;
 *   prio       higher conflict priority, then larger, then older.
 * The ordered managers run software TM with visible accesses (vis.c) and
 * decide every conflict there; the loser backs off as above.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "runtime/internal.h"

/* Randomized exponential backoff, in time: the constants tuned as pause
 * counts on AMD (32 .. 16384 pauses of ~25 ns, yield past 2000) were twice
 * as long on Intel cores whose pause takes ~140 cycles. The first bound is
 * the manager's (struct tk_cm): an ordered manager's loser waits for a winner
 * that is still running (800 ns); under backoff the abort follows a commit
 * that is already over, and a quarter of that is enough (AMD EPYC, in-process
 * cache at s = 1, 2 and 4 threads: 10-15% more requests per second; the
 * ordered managers lost fairness with it: hot counter, 4 threads, min/max
 * 0.79 -> 0.20 under size). */
#define BACKOFF_BASE_NS 800u
#define BACKOFF_BASE_NOREC_NS 200u
#define BACKOFF_CAP_NS 400000u
#define BACKOFF_YIELD_NS 50000u


void tk_backoff(tk_thread *t, int cause) {
    if (cause == TXKIT_CAUSE_LOCKED) /* waiting for the clock is the right delay */
        return;
    unsigned k = ++t->cm.consecutive_aborts;
    unsigned limit = k >= 10 ? BACKOFF_CAP_NS : tk_cm->backoff_base_ns << k;
    if (limit > BACKOFF_CAP_NS)
        limit = BACKOFF_CAP_NS;
    unsigned ns = (unsigned)(tk_rand(t) % limit);
    if (ns > BACKOFF_YIELD_NS && tk_thread_count() > tk_cfg.ncpus)
        sched_yield();
    else
        tk_spin_ns(ns);
}

/* ------------------------------------------------------- conflict priority */

/* From the scheduler: real-time policies above every normal one, then 20 -
 * nice (1..40), SCHED_IDLE lowest. getpriority(PRIO_PROCESS, 0) is the
 * calling thread's nice on Linux. */
static int derive_prio(void) {
    int pol = sched_getscheduler(0);
    if (pol == SCHED_FIFO || pol == SCHED_RR) {
        struct sched_param sp;
        return sched_getparam(0, &sp) == 0 ? 100 + sp.sched_priority : 100;
    }
    if (pol == SCHED_IDLE)
        return 0;
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    return errno ? 20 : 20 - nice;
}

#define PRIO_REFRESH_NS 1000000ull

int tk_prio_refresh(tk_thread *t) {
    if (t->cm.prio_set != TX_PRIO_AUTO)
        return t->cm.prio = t->cm.prio_set;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (t->cm.prio_read_ns == 0 || now - t->cm.prio_read_ns >= PRIO_REFRESH_NS) {
        t->cm.prio = derive_prio();
        t->cm.prio_read_ns = now ? now : 1;
    }
    return t->cm.prio;
}

int tx_set_priority(int prio) {
    if (prio != TX_PRIO_AUTO && (prio < -1000 || prio > 1000))
        return -EINVAL;
    tk_thread *t = tk_self();
    t->cm.prio_set = prio;
    t->cm.prio_read_ns = 0;
    if (_txkit_tls.depth == 0) /* never during a transaction */
        tk_prio_refresh(t);
    return 0;
}

int tx_get_priority(void) {
    tk_thread *t = tk_self();
    if (_txkit_tls.depth == 0)
        tk_prio_refresh(t);
    return t->cm.prio;
}

void tk_cm_count(tk_thread *t, int winner_prio, int loser_prio) {
    if (tk_cfg.stats_off || !t->cnt)
        return;
    tk_stats_open(t);
    TK_COUNT(t->cnt->cm_decided, 1);
    if (loser_prio > winner_prio)
        TK_COUNT(t->cnt->cm_inversions, 1);
    tk_stats_close(t);
}

/* ---------------------------------------------------------------- managers */

static void cm_begin(tk_thread *t) {
    if (tk_vis_on && t->ctl.attempts == 0)
        tk_prio_refresh(t); /* fixed for the whole transaction */
}

static void cm_abort(tk_thread *t, int cause) {
    if (cause == TXKIT_CAUSE_INJECTED)
        return; /* no conflict to wait out: retry at once */
    if (tk_sched_on && tk_sched_abort(t, cause))
        return;
    tk_backoff(t, cause);
}

static void cm_commit(tk_thread *t) {
    t->cm.consecutive_aborts = 0;
    if (tk_sched_on || t->sched.queue_held)
        tk_sched_commit(t);
}

/* Total orders: a tie on every key is broken by id, so two distinct parties
 * never both win or both lose. */
static int older(const struct _txkit_cm_party *a, const struct _txkit_cm_party *b) {
    if (a->start != b->start)
        return a->start < b->start;
    return a->id < b->id;
}
static int wins_backoff(const struct _txkit_cm_party *self, const struct _txkit_cm_party *other) {
    (void)self, (void)other;
    return 0; /* the one that found the conflict backs off */
}
static int wins_timestamp(const struct _txkit_cm_party *self, const struct _txkit_cm_party *other) {
    return older(self, other);
}
static int wins_size(const struct _txkit_cm_party *self, const struct _txkit_cm_party *other) {
    if (self->size != other->size)
        return self->size > other->size;
    return older(self, other);
}
static int wins_prio(const struct _txkit_cm_party *self, const struct _txkit_cm_party *other) {
    if (self->prio != other->prio)
        return self->prio > other->prio;
    return wins_size(self, other);
}

#define CM(n, vis, base, w)                                                       \
    {                                                                             \
        .name = n, .visible = vis, .backoff_base_ns = base, .on_begin = cm_begin, \
        .on_abort = cm_abort, .on_commit = cm_commit, .wins = w                   \
    }
static const struct tk_cm managers[] = {
    CM("backoff", 0, BACKOFF_BASE_NOREC_NS, wins_backoff),
    CM("timestamp", 1, BACKOFF_BASE_NS, wins_timestamp),
    CM("size", 1, BACKOFF_BASE_NS, wins_size),
    CM("prio", 1, BACKOFF_BASE_NS, wins_prio),
};

const struct tk_cm *tk_cm = &managers[0];
int tk_vis_on;

static const struct tk_cm *cm_by_name(const char *name) {
    for (size_t i = 0; name && i < sizeof managers / sizeof managers[0]; i++)
        if (strcmp(managers[i].name, name) == 0)
            return &managers[i];
    return NULL;
}

int tk_cm_select(const char *name) {
    const struct tk_cm *m = cm_by_name(name);
    if (!m)
        return -EINVAL;
    tk_cm = m;
    __atomic_store_n(&tk_vis_on, m->visible, __ATOMIC_RELEASE);
    tk_seg_set_cm(m->name);
    return 0;
}

int txkit_set_cm(const char *name) {
    const struct tk_cm *m = cm_by_name(name);
    if (!m)
        return -EINVAL;
    if (m == tk_cm)
        return 0;
    /* NOrec stays underneath either way, so switching under running
     * transactions is safe: those begun before only go undecided. */
    if (_txkit_tls.depth)
        return -EBUSY;
    return tk_cm_select(name);
}

const char *txkit_get_cm(void) { return tk_cm->name; }

int _txkit_cm_decide(const char *cm, const struct _txkit_cm_party *self,
                     const struct _txkit_cm_party *other) {
    const struct tk_cm *m = cm_by_name(cm);
    if (!m || !self || !other)
        return -EINVAL;
    return m->wins(self, other);
}

static void cm_thread_init(tk_thread *t, int arg) {
    (void)arg;
    tk_prio_refresh(t);
}

TK_CONSTRUCTOR static void cm_hooks(void) {
    tk_hook_add(TK_HOOK_THREAD_INIT, 20, cm_thread_init);
    tk_seg_set_cm(tk_cm->name); /* the name a new statistics segment shows */
}
