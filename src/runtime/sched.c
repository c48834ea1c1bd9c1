/* SPDX-License-Identifier: MIT */
/* sched.c - transaction-aware scheduling (after TxLinux), in user space.
 *
 * A thread keeps a profile: moving averages of its restarts per transaction
 * and of the time its aborted attempts cost. After an abort, when the time
 * it is about to lose again is predicted to exceed a context switch, retrying
 * hot only burns the CPU the conflicting transaction needs (2 cores, often
 * more threads): the thread yields when threads outnumber CPUs, otherwise
 * sleeps on its site's commit counter (futex) until a transaction of that
 * site commits, or a bounded time passes.
 *
 * A site whose transactions keep restarting admits its retrying transactions
 * one at a time: a per-site queue word, taken before the retry and released
 * at commit. Waits for it are bounded (a holder may be blocked on something
 * the waiter holds, such as a cx lock), so it can delay but never deadlock.
 *
 * Off by default (TXKIT_SCHED=on, txkit_set_sched()); bench/cm compares.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/internal.h"

int tk_sched_on;

#define CTX_SWITCH_NS 5000.0     /* a yield or sleep costs about this much */
#define MAX_SLEEP_NS 1000000L    /* one sleep at most 1 ms: a commit wakes it sooner */
#define QUEUE_AFTER 4            /* restarts of a transaction before it queues */
#define QUEUE_SITE_EMA (2 * 256) /* ... at a site averaging 2 restarts per transaction */
#define QUEUE_WAIT_NS 2000000L   /* bounded wait for the site's queue */
#define EMA_SHIFT 3              /* averages move by 1/8 of each new value */

struct site_sched {
    _Alignas(TK_CACHELINE) uint32_t queue; /* 0 free, 1 held */
    uint32_t commits;                      /* futex word: moves when sleepers wait */
    uint32_t sleepers;
    uint32_t restart_ema; /* restarts per transaction, x256 */
};
static struct site_sched sites[TKS_MAX_SITES];

static struct site_sched *site_of(const tk_thread *t) {
    unsigned id = t->ctl.site ? t->ctl.site->id : 0;
    return &sites[id && id <= TKS_MAX_SITES ? id - 1 : 0];
}

static long futex_wait(uint32_t *addr, uint32_t val, long ns) {
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    return syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake_all(uint32_t *addr) {
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static uint64_t ema(uint64_t avg, uint64_t x) {
    return avg - (avg >> EMA_SHIFT) + (x >> EMA_SHIFT);
}

static void count(tk_thread *t, int queued) {
    if (tk_cfg.stats_off || !t->cnt)
        return;
    tk_stats_open(t);
    if (queued)
        TK_COUNT(t->cnt->sched_queued, 1);
    else
        TK_COUNT(t->cnt->sched_waits, 1);
    tk_stats_close(t);
}

int txkit_set_sched(int on) {
    int was = __atomic_exchange_n(&tk_sched_on, on ? 1 : 0, __ATOMIC_RELAXED);
    tk_express_off_set(TK_EXPRESS_OFF_SCHED, on);
    return was;
}

void tk_sched_attempt_start(tk_thread *t) { t->sched.attempt_tsc = tk_rdtsc(); }

bool tk_sched_abort(tk_thread *t, int cause) {
    uint64_t lost = t->sched.attempt_tsc ? tk_rdtsc() - t->sched.attempt_tsc : 0;
    t->sched.tx_lost += lost;
    if (cause == TXKIT_CAUSE_LOCKED || t->ctl.attempts < 2)
        return false;
    /* Predicted loss of the next retry: this transaction's attempts so far,
     * or the thread's usual loss, whichever is larger. */
    uint64_t predicted = t->sched.tx_lost / t->ctl.attempts;
    if (t->sched.lost_ema > predicted)
        predicted = t->sched.lost_ema;
    double npt = tk_ns_per_tick();
    double predicted_ns = (double)predicted * (npt > 0 ? npt : 1.0);
    if (predicted_ns < CTX_SWITCH_NS)
        return false;
    count(t, 0);
    if (tk_thread_count() > tk_cfg.ncpus) {
        sched_yield(); /* someone runnable needs this CPU, likely the winner */
        return true;
    }
    struct site_sched *s = site_of(t);
    uint32_t seen = __atomic_load_n(&s->commits, __ATOMIC_ACQUIRE);
    __atomic_add_fetch(&s->sleepers, 1, __ATOMIC_SEQ_CST);
    long ns = (long)(predicted_ns * 2);
    futex_wait(&s->commits, seen, ns < MAX_SLEEP_NS ? ns : MAX_SLEEP_NS);
    __atomic_sub_fetch(&s->sleepers, 1, __ATOMIC_RELAXED);
    return true;
}

static void queue_release(tk_thread *t, struct site_sched *s) {
    if (!t->sched.queue_held)
        return;
    t->sched.queue_held = 0;
    __atomic_store_n(&s->queue, 0, __ATOMIC_RELEASE);
    futex_wake_all(&s->queue);
}

void tk_sched_before_retry(tk_thread *t) {
    struct site_sched *s = site_of(t);
    if (t->sched.queue_held || t->ctl.attempts < QUEUE_AFTER || t->ctl.irr_token ||
        __atomic_load_n(&s->restart_ema, __ATOMIC_RELAXED) < QUEUE_SITE_EMA)
        return;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int waited = 0;
    for (;;) {
        uint32_t free_ = 0;
        if (__atomic_compare_exchange_n(&s->queue, &free_, 1, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            t->sched.queue_held = 1;
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left =
            QUEUE_WAIT_NS - ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec));
        if (left <= 0)
            break; /* bounded: go on without the queue */
        waited = 1;
        futex_wait(&s->queue, 1, left);
    }
    if (waited)
        count(t, 1);
}

void tk_sched_commit(tk_thread *t) {
    struct site_sched *s = site_of(t);
    t->sched.restart_ema = (uint32_t)ema(t->sched.restart_ema, (uint64_t)t->ctl.attempts << 8);
    t->sched.lost_ema = ema(t->sched.lost_ema, t->sched.tx_lost);
    t->sched.tx_lost = 0;
    /* Racy on purpose: a statistic, last writer wins. */
    uint32_t e = __atomic_load_n(&s->restart_ema, __ATOMIC_RELAXED);
    __atomic_store_n(&s->restart_ema, (uint32_t)ema(e, (uint64_t)t->ctl.attempts << 8),
                     __ATOMIC_RELAXED);
    queue_release(t, s);
    if (__atomic_load_n(&s->sleepers, __ATOMIC_SEQ_CST)) {
        __atomic_add_fetch(&s->commits, 1, __ATOMIC_RELEASE);
        futex_wake_all(&s->commits);
    }
}

/* fork(): queues held and sleepers counted by threads that are gone. */
static void sched_atfork(tk_thread *me, int phase) {
    if (phase != TK_FORK_CHILD)
        return;
    struct site_sched *held = me && me->sched.queue_held ? site_of(me) : NULL;
    for (unsigned i = 0; i < TKS_MAX_SITES; i++) {
        sites[i].queue = &sites[i] == held;
        sites[i].sleepers = 0;
    }
}

void tk_sched_release(tk_thread *t) {
    if (t->sched.queue_held)
        queue_release(t, site_of(t));
}

static void sched_thread_exit(tk_thread *t, int arg) {
    (void)arg;
    tk_sched_release(t);
}

TK_CONSTRUCTOR static void sched_hooks(void) {
    tk_hook_add(TK_HOOK_THREAD_EXIT, TK_EXIT_ORDER_SCHED, sched_thread_exit);
    tk_hook_add(TK_HOOK_FORK, TK_FORK_ORDER_SCHED, sched_atfork);
}
