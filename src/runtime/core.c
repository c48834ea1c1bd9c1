/* SPDX-License-Identifier: MIT */
/* core.c - the floor of the runtime (core.h): state every file shares and
 * the primitives everyone uses. Calls no other file of the library. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/internal.h"

/* ------------------------------------------------------------------ state */

TK_EXPORT __thread struct txkit_tls _txkit_tls;
__thread tk_thread *tk_cur;
struct tk_global tk_g;

/* Retry defaults. Hardware: glibc elision uses 3 tries and ck 5; conflicts on
 * 2 cores usually clear after a short backoff, capacity/unsupported aborts go
 * to software at once (htm_policy), so 8 only bounds real conflict streaks,
 * and 50 us of retries a long transaction's (policy.c: htm_budget_spent).
 * Software: NOrec aborts only on a value change it read, 16 keeps a streak of
 * bad luck in software while bounding the wait before the serial fallback. */
struct tk_config tk_cfg = {
    .method = TXKIT_AUTO,
    .htm_retries = 8,
    .htm_retry_us = 50,
    .stm_retries = 16,
    .ncpus = 1,
};

/* ------------------------------------------------------------ fatal errors */

void tk_fatal(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "txkit: %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* ---------------------------------------------------------------- vectors */

void *tk_vec_push_grow(tk_vec *v, size_t elem_size) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        char *d = realloc(v->data, cap * elem_size);
        if (!d)
            return NULL;
        v->data = d;
        v->cap = cap;
    }
    return v->data + elem_size * v->len++;
}

void tk_vec_free(tk_vec *v) {
    free(v->data);
    memset(v, 0, sizeof *v);
}

/* ----------------------------------------------- clock and irrevocability */

/* Yields before a wait sleeps: with nothing else to run, about 1 ms here.
 * Waits that short are common (writers waiting for older readers, the
 * clock under long write-backs): sleeping after 64 yields (40 us) cost the
 * application corpus's labyrinth 20% and bayes 8% at 2 threads. */
#define WAIT_YIELDS 2048u
/* Its first sleep, doubled at each sleep up to WAIT_SLEEP_MAX_NS: a wait
 * that lasts costs its thread a few percent of a CPU, and ends at most that
 * late. */
#define WAIT_SLEEP_NS 16000u
#define WAIT_SLEEP_MAX_NS 256000u

void tk_wait_give_cpu(unsigned *steps, unsigned pauses) {
    if (*steps - pauses <= WAIT_YIELDS) { /* (pauses <= *steps < TK_WAIT_SLEEPING) */
        if (*steps - pauses == WAIT_YIELDS)
            *steps = TK_WAIT_SLEEPING; /* the next step sleeps */
        sched_yield();
        return;
    }
    /* sleeping: *steps - TK_WAIT_SLEEPING - 1 sleeps so far (tk_wait_step's ++) */
    unsigned k = *steps - TK_WAIT_SLEEPING - 1;
    unsigned ns = k < 5 ? WAIT_SLEEP_NS << k : WAIT_SLEEP_MAX_NS;
    if (k >= 5)
        *steps = TK_WAIT_SLEEPING + 5; /* stays put: no wrap */
    struct timespec d = {0, (long)ns};
    nanosleep(&d, NULL);
}

void tk_wait_no_irrevocable(const tk_thread *t) {
    for (unsigned steps = 0; tk_irr_other(t);)
        tk_wait_step(&steps, TK_SPINS_BEFORE_YIELD);
}

void tk_irr_take(tk_thread *t) {
    if (t->ctl.irr_token)
        return;
    for (;;) {
        uintptr_t none = 0;
        if (__atomic_compare_exchange_n(&tk_g.irr_owner, &none, (uintptr_t)t, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            break;
        tk_wait_no_irrevocable(t);
    }
    t->ctl.irr_token = 1;
}

void tk_clock_external_write(void) {
    for (unsigned spins = 0;;) {
        uint64_t c = __atomic_load_n(&tk_g.clock, __ATOMIC_ACQUIRE);
        if (!(c & 1)) {
            if (__atomic_compare_exchange_n(&tk_g.clock, &c, c + 2, false, __ATOMIC_SEQ_CST,
                                            __ATOMIC_RELAXED))
                return;
            continue;
        }
        if (__atomic_load_n(&tk_g.serial_holder, __ATOMIC_RELAXED))
            return;
        tk_wait_step(&spins, 1000);
    }
}


/* ----------------------------------------------------------------- aborts */

static tk_abort_fn abort_fn;
int (*tk_hold_subscribed)(tk_thread *t);

void tk_set_abort(tk_abort_fn fn) { abort_fn = fn; }

void tk_abort(tk_thread *t, int cause) {
    abort_fn(t, cause);
    TK_FATAL("the engine's abort returned");
}

void tk_abort_serially(tk_thread *t, const char *what) {
    if (t->ctl.irrevocable)
        TK_FATAL("out of memory growing the %s of an irrevocable transaction", what);
    t->ctl.force_serial = 1;
    tk_abort(t, TXKIT_CAUSE_CAPACITY);
}

/* -------------------------------------------------------- extension hooks */

#define HOOKS_MAX 16 /* callbacks per hook point (TK_HOOK_FORK has 9) */

static struct hook {
    int order;
    tk_hook_fn fn;
} hooks[TK_NHOOKS][HOOKS_MAX];
static unsigned nhooks[TK_NHOOKS];

int (*tk_lock_reported_elsewhere)(uint64_t key);

void tk_hook_add(enum tk_hook_point p, int order, tk_hook_fn fn) {
    TK_ASSERT(p < TK_NHOOKS && nhooks[p] < HOOKS_MAX);
    unsigned i = nhooks[p]++;
    for (; i > 0 && hooks[p][i - 1].order > order; i--)
        hooks[p][i] = hooks[p][i - 1];
    hooks[p][i] = (struct hook){order, fn};
}

void tk_hooks_run(enum tk_hook_point p, tk_thread *t, int arg) {
    for (unsigned i = 0; i < nhooks[p]; i++)
        hooks[p][i].fn(t, arg);
}

void tk_hooks_run_reverse(enum tk_hook_point p, tk_thread *t, int arg) {
    for (unsigned i = nhooks[p]; i-- > 0;)
        hooks[p][i].fn(t, arg);
}

/* ------------------------------------------------------ randomness, time */

uint64_t tk_rand(tk_thread *t) {
    uint64_t x = t->rng; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

double tk_ns_per_tick_guess(void) {
    double npt = tk_ns_per_tick_known();
    return npt > 0 ? npt : 1.0 / 3.0;
}

void tk_spin_ns(uint64_t ns) {
    uint64_t ticks = (uint64_t)((double)ns / tk_ns_per_tick_guess());
    uint64_t start = tk_rdtsc();
    while (tk_rdtsc() - start < ticks)
        tk_cpu_relax();
}

static uint64_t base_tsc, base_ns;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

TK_CONSTRUCTOR static void stats_clock_init(void) {
    base_ns = now_ns();
    base_tsc = tk_rdtsc();
}

/* The shortest span the ratio is measured over: both clocks are read to a
 * few tens of ns, so 1 ms gives it to about 0.01%. */
#define CALIBRATE_MIN_NS 1000000u

/* TSC ticks to ns, measured against CLOCK_MONOTONIC once (since the
 * constructor above) and then fixed, so that converted totals never go
 * backwards between two reads. Asked within CALIBRATE_MIN_NS of loading, it
 * waits out the rest of it (it used to sleep 10 ms whenever asked within
 * 10 ms: test stats_early). */
static double measure_ns_per_tick(void) {
    uint64_t ns = now_ns() - base_ns;
    if (ns < CALIBRATE_MIN_NS) {
        struct timespec d = {0, (long)(CALIBRATE_MIN_NS - ns)};
        nanosleep(&d, NULL);
        ns = now_ns() - base_ns;
    }
    uint64_t ticks = tk_rdtsc() - base_tsc;
    return ticks ? (double)ns / (double)ticks : 1.0;
}

static pthread_once_t calibrate_once = PTHREAD_ONCE_INIT;
static double ns_per_tick;

static int calibrated;

static void calibrate(void) {
    ns_per_tick = measure_ns_per_tick();
    __atomic_store_n(&calibrated, 1, __ATOMIC_RELEASE);
}

double tk_ns_per_tick_known(void) {
    return __atomic_load_n(&calibrated, __ATOMIC_ACQUIRE) ? ns_per_tick : 0.0;
}

double tk_ns_per_tick(void) {
    pthread_once(&calibrate_once, calibrate);
    return ns_per_tick;
}

uint64_t tk_uptime_ns(void) { return now_ns() - base_ns; }
