/* SPDX-License-Identifier: MIT */
/* core.h - the floor of the runtime: what every other file may use, and
 * which uses nothing above it (core.c calls no other file of the library).
 *
 *   - the export macro, assertions and fatal errors;
 *   - growable vectors;
 *   - the thread-local state (_txkit_tls, tk_cur) and the global one (tk_g);
 *   - configuration storage (tk_cfg; parsed by config.c);
 *   - clock waits and the irrevocability token;
 *   - randomness, TSC spins and the TSC calibration.
 */
#ifndef TK_CORE_H
#define TK_CORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <txkit.h>

#include "arch/x86_64/cpu.h"

/* The one export macro of the library's sources: the version script
 * (libtxkit.map) still decides what leaves the library. */
#define TK_EXPORT __attribute__((visibility("default")))
#define TK_HIDDEN __attribute__((visibility("hidden")))
#define TK_NORETURN __attribute__((noreturn))
/* Every module's constructor: a priority, so that the linker runs them all
 * before cx/self.c's, the one constructor of the library without a priority
 * (prioritized ones come first), which lets the preload hooks see the
 * program's locks only once the library is set up (cx/self.h). elide.c's and
 * lockprof.c's keep 101 and 102. */
#define TK_CONSTRUCTOR __attribute__((constructor(200)))
#define TK_CACHELINE 64

/* Broken invariants abort with file and line; never compiled away. */
#define TK_ASSERT(c)                                                  \
    do {                                                              \
        if (TXKIT_UNLIKELY(!(c)))                                     \
            tk_fatal(__FILE__, __LINE__, "assertion failed: %s", #c); \
    } while (0)

TK_HIDDEN TK_NORETURN void tk_fatal(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define TK_FATAL(...) tk_fatal(__FILE__, __LINE__, __VA_ARGS__)

typedef struct tk_thread tk_thread; /* runtime/internal.h */

/* Success of a method's begin(), commit() and make_irrevocable(), and of the
 * visible-reads commit point. Failures are a txkit_cause_t (>= 0, and
 * TXKIT_CAUSE_CONFLICT is 0: never test results for zero or for sign);
 * TK_OK is neither a cause nor a -errno nor a slot: compare with it. */
#define TK_OK INT_MIN
_Static_assert(TK_OK<-4096 && TXKIT_NCAUSES> 0, "TK_OK is no cause and no -errno");

/* ------------------------------------------------------------------ vectors */

/* A growable array of fixed-size elements. */
typedef struct tk_vec {
    char *data;
    size_t len, cap; /* in elements */
} tk_vec;

TK_HIDDEN void *tk_vec_push_grow(tk_vec *v, size_t elem_size); /* NULL on ENOMEM */
/* A new last element (uninitialized), or NULL on ENOMEM. Inline: the undo
 * log and the write set push on every store. */
static inline void *tk_vec_push(tk_vec *v, size_t elem_size) {
    if (__builtin_expect(v->len < v->cap, 1))
        return v->data + elem_size * v->len++;
    return tk_vec_push_grow(v, elem_size);
}
TK_HIDDEN void tk_vec_free(tk_vec *v);
#define TK_VEC_AT(v, type, i) (((type *)(v)->data)[i])

/* ------------------------------------------------------ thread-local state */

/* The exported TLS barrier state (include/txkit/tx.h). */
extern __thread struct txkit_tls _txkit_tls;
/* The calling thread's descriptor, NULL until it has one (thread.c). */
extern __thread tk_thread *tk_cur TK_HIDDEN;

/* ----------------------------------------------------- global synchronization */

/* tk_g.solo once several threads run transactions (auto method). */
#define TK_SOLO_SHARED ((uintptr_t)1)

/* The state every method agrees on. `clock` is NOrec's sequence lock: even when
 * free, odd while a software commit writes back or a serial/irrevocable
 * transaction runs. Hardware transactions read it at their start, so either
 * event aborts them; they bump `hw_commits` at commit only while software
 * transactions are running and only if they wrote (htm.c: _txkit_tls.wrote;
 * cx optimistic sections always), which is how those notice hardware writes. */
struct tk_global {
    _Alignas(TK_CACHELINE) volatile uint64_t clock;
    /* Same line as the clock, written by the software committer that holds
     * it: who wrote last, so an aborted reader can tell whether backoff
     * decided its conflict against a higher priority (statistics only). */
    int last_writer_prio;
    _Alignas(TK_CACHELINE) volatile uint64_t hw_commits;
    _Alignas(TK_CACHELINE) volatile uint64_t sw_active;
    /* Serial transactions waiting for the clock: while any does, no new
     * software attempt begins (stm_begin) and no newcomer takes the serial
     * fast path; they compete for the clock among themselves (serial.c). */
    _Alignas(TK_CACHELINE) volatile uint32_t serial_pending;
    /* auto method: the thread that runs transactions alone (serially, with no
     * instrumentation cost), 0 for nobody yet, TK_SOLO_SHARED once others
     * came. With TK_SOLO_PARKED or TK_SOLO_REVOKING (solo.h) the named thread
     * keeps the clock between its transactions and correctness depends on
     * it: only solo.c sets or clears those; otherwise only performance. */
    _Alignas(TK_CACHELINE) uintptr_t solo;
    /* The thread whose software transaction is irrevocable, 0 if none. While
     * it is set, no other transaction commits a write (software writers wait
     * before taking the clock, hardware ones abort), so the owner can never be
     * invalidated; readers carry on. That is all irrevocability needs, where a
     * serial transaction would stop everyone. */
    _Alignas(TK_CACHELINE) uintptr_t irr_owner;
    int stm_started;   /* a software attempt ran once: frees must wait (reclaim.c) */
    int serial_holder; /* the odd clock belongs to a serial transaction, not a commit */
    _Alignas(TK_CACHELINE) int hybrid; /* RTM usable: software must watch hw_commits */
};
extern struct tk_global tk_g TK_HIDDEN;

/* Pauses before a runtime wait (for the clock, the irrevocability token)
 * gives the CPU away (tk_wait_step). */
#define TK_SPINS_BEFORE_YIELD 2000u
/* tk_wait_step's state once a wait sleeps (core.c). */
#define TK_WAIT_SLEEPING 0x80000000u
/* What tk_wait_step does once past its pauses (core.c). */
TK_HIDDEN void tk_wait_give_cpu(unsigned *steps, unsigned pauses);
/* One step of a wait for another thread, the only way the runtime waits:
 * *steps starts at 0; the first pauses steps spin (pause), the next ones
 * yield the CPU (about 1 ms of them), and a wait that goes on sleeps, 16 us
 * then longer, up to 256 us a step. Sleeping, a long wait (a serial or
 * irrevocable transaction blocked in a system call) does not burn the
 * waiter's CPU; and a real-time waiter (SCHED_FIFO, SCHED_RR) lets a
 * lower-priority thread that it waits for run on its CPU, which sched_yield
 * never does. Any thread. */
static inline void tk_wait_step(unsigned *steps, unsigned pauses) {
    if (TXKIT_LIKELY(++*steps < pauses))
        tk_cpu_relax();
    else
        tk_wait_give_cpu(steps, pauses);
}
/* Has the wait reached its sleeping steps? (Its count then stays put: a
 * waiter that acts every so many steps must act at each of these.) */
static inline bool tk_wait_sleeping(unsigned steps) { return steps >= TK_WAIT_SLEEPING; }
/* Wait (tk_wait_step) until the clock is even; returns that value. Revokes
 * a parked clock (solo.c). Any thread, outside a transaction of its own. */
TK_HIDDEN uint64_t tk_wait_clock_even(void);
/* Wait until no other thread's transaction is irrevocable. */
TK_HIDDEN void tk_wait_no_irrevocable(const tk_thread *t);
/* Take the irrevocability token (tk_g.irr_owner); tk_irr_release
 * (runtime/internal.h) gives it back. */
TK_HIDDEN void tk_irr_take(tk_thread *t);
/* A write outside transactions that software transactions must notice (an
 * exclusive cx acquisition): move the clock like a commit that wrote. Any thread. */
TK_HIDDEN void tk_clock_external_write(void);
static inline bool tk_irr_other(const tk_thread *t) {
    uintptr_t o = __atomic_load_n(&tk_g.irr_owner, __ATOMIC_ACQUIRE);
    return o && o != (uintptr_t)t;
}

/* ------------------------------------------------------------- configuration */

struct tk_config {
    int method;                   /* txkit_method_t */
    unsigned htm_retries;         /* hardware attempts on conflicts before software */
    unsigned htm_retry_us;        /* and their time, retries timed (policy.c) */
    unsigned stm_retries;         /* software aborts before serial */
    int stm_nolog;                /* TK_NOLOG_*: software reads unlogged (stm_norec.c) */
    int no_privatization;         /* TXKIT_PRIVATIZATION=off: writers do not wait (reclaim.c) */
    double fault[TXKIT_NMETHODS]; /* injection probability per method */
    int any_fault;
    /* TK_EXPRESS_OFF_* bits: a process-wide switch that the solo express
     * begin (express.h) must not pass, in one word it reads: set and cleared
     * by the switch's setter (tk_express_off_set) after its own variable */
    unsigned express_off;
    int stats_at_exit;    /* TXKIT_STATS set */
    int stats_off;        /* TXKIT_STATS=off: no counting at all (to measure its cost) */
    char stats_path[256]; /* "" = stderr */
    unsigned ncpus;
};
extern struct tk_config tk_cfg TK_HIDDEN;
#define TK_EXPRESS_OFF_FAULT 1u  /* tk_cfg.any_fault (config.c) */
#define TK_EXPRESS_OFF_SCHED 2u  /* tk_sched_on (sched.c) */
#define TK_EXPRESS_OFF_METHOD 4u /* tk_cfg.method is not TXKIT_AUTO (config.c) */
/* Turn one TK_EXPRESS_OFF_* bit on or off. Any thread; each bit has one
 * setter variable, written before this call. */
static inline void tk_express_off_set(unsigned bit, bool on) {
    if (on)
        __atomic_fetch_or(&tk_cfg.express_off, bit, __ATOMIC_SEQ_CST);
    else
        __atomic_fetch_and(&tk_cfg.express_off, ~bit, __ATOMIC_SEQ_CST);
}
/* tk_config.stm_nolog (TXKIT_STM_NOLOG): when an attempt reads unlogged */
#define TK_NOLOG_AUTO 0 /* after commits in a row that saw nothing commit meanwhile */
#define TK_NOLOG_ON 1   /* every attempt that may (testing: the abort path at every commit) */
#define TK_NOLOG_OFF 2  /* never: every read logged */

/* -------------------------------------------------------------- aborts */

/* Software abort of t's running attempt and restart: the engine's
 * (runtime/txn.c, which sets it at load time), reached through here so that
 * the methods and extensions below the engine need not name it. Owner thread. */
TK_HIDDEN TK_NORETURN void tk_abort(tk_thread *t, int cause);
/* The attempt cannot record what it must (what: its read log, write set,
 * undo log...: out of memory): abort it and run the transaction again
 * serially, which keeps less; an irrevocable attempt cannot start again and
 * stops the process, naming what. Owner thread, inside the attempt. */
TK_HIDDEN TK_NORETURN void tk_abort_serially(tk_thread *t, const char *what);
typedef void (*tk_abort_fn)(tk_thread *t, int cause); /* must not return */
TK_HIDDEN void tk_set_abort(tk_abort_fn fn);
/* Becoming irrevocable in software: take every cx lock the transaction
 * depends on, or none (then -EBUSY: restart, irrevocable from the start).
 * Set by cx/cx.c at load time. Owner thread. */
extern int (*tk_hold_subscribed)(tk_thread *t) TK_HIDDEN;

/* ------------------------------------------------------ extension hooks */

/* Where the engine (txn.c) and the thread registry (thread.c) call the
 * extensions - cx, visible reads, scheduling, reclamation, statistics, the
 * gcc ABI layer - without naming them: each registers its hooks at load
 * time (a constructor), with an order number. Cold paths only. */
enum tk_hook_point {
    TK_HOOK_ABORTING,    /* a software attempt aborts, before its rollback (arg: cause) */
    TK_HOOK_ABORTED,     /* after its rollback, the thread out of the transaction */
    TK_HOOK_COMMITTED,   /* after a commit, when armed (t->hooks_armed) */
    TK_HOOK_THREAD_INIT, /* a thread's descriptor is new (thread.c, before its first use) */
    TK_HOOK_THREAD_EXIT, /* the thread's descriptor goes away */
    TK_HOOK_FORK,        /* fork (arg: enum tk_fork_phase, t: the forking thread or
                          * NULL): PREPARE in increasing order, PARENT and CHILD in
                          * decreasing order */
    TK_NHOOKS
};
typedef void (*tk_hook_fn)(tk_thread *t, int arg);
/* Add fn at point p; hooks of a point run by increasing order. At load time
 * (constructors), before any transaction, thread exit or fork. */
TK_HIDDEN void tk_hook_add(enum tk_hook_point p, int order, tk_hook_fn fn);
/* Run the hooks of p (any thread; the hooks' own contracts apply). */
TK_HIDDEN void tk_hooks_run(enum tk_hook_point p, tk_thread *t, int arg);
TK_HIDDEN void tk_hooks_run_reverse(enum tk_hook_point p, tk_thread *t, int arg);
#define TK_HOOK_ARMED(p) (1u << (p))

/* Set at load time by an extension that prints its own locks' lines in the
 * exit summary (cx/elide.c: the mutexes the preload elides), so that
 * stats/segment.c leaves them out: 1 for such a lock key. NULL: none. Called
 * from any thread; the predicate must be lock-free. */
extern int (*tk_lock_reported_elsewhere)(uint64_t key) TK_HIDDEN;

/* ------------------------------------------------------------- randomness */

/* Next number of t's generator (owner thread). */
TK_HIDDEN uint64_t tk_rand(tk_thread *t);
/* Spin (pause) for about ns nanoseconds, measured with the TSC: a pause
 * takes 10 cycles on some CPUs and 140 on others (RTM-FACTS). */
TK_HIDDEN void tk_spin_ns(uint64_t ns);

/* TSC ticks to ns, measured once against CLOCK_MONOTONIC (any thread). */
TK_HIDDEN double tk_ns_per_tick(void);
TK_HIDDEN double tk_ns_per_tick_known(void); /* 0 until calibrated; never waits */
/* tk_ns_per_tick_known, or before the calibration (the first 10 ms) a 3 GHz
 * TSC's, a fair guess: for bounds in time on paths that must not wait. */
TK_HIDDEN double tk_ns_per_tick_guess(void);
/* Nanoseconds since the library was loaded (any thread). */
TK_HIDDEN uint64_t tk_uptime_ns(void);

#endif /* TK_CORE_H */
