/* SPDX-License-Identifier: MIT */
/* test_util.h - what the tests linked with txkit share: the checks
 * (tests/common/check.h), the CTest skip protocol, attempt counting, a small
 * PRNG and the fork-per-case runner. Usable from C and C++.
 */
#ifndef TXKIT_TEST_UTIL_H
#define TXKIT_TEST_UTIL_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <txkit.h>

#include "check.h"      /* CHECK, CHECK_EQ, CHECK_MSG (tests/common) */
#include "stress_env.h" /* TXKIT_STRESS_SECONDS, TXKIT_STRESS_SEED */

/* Exit code that CTest maps to "skipped" (SKIP_RETURN_CODE in CMakeLists). */
#define TK_SKIP_CODE 77

/* ----------------------------------------------------------- the method */

/* The method TXKIT_METHOD asks for (auto when unset). A value the runtime
 * cannot parse is a broken test set-up: fail rather than test something else. */
__attribute__((unused)) static txkit_method_t tk_env_method(void) {
    const char *s = getenv("TXKIT_METHOD");
    txkit_method_t m = TXKIT_AUTO;
    if (s && *s && txkit_method_parse(s, &m) != 0) {
        fprintf(stderr, "TXKIT_METHOD=%s is not a method name\n", s);
        exit(2);
    }
    return m;
}

/* CTest runs every method-dependent test once with TXKIT_METHOD=htm; on a
 * machine without usable RTM that run must be reported as skipped. */
__attribute__((unused)) static void tk_skip_unless_method_usable(const char *prog) {
    if (tk_env_method() == TXKIT_HTM && !txkit_htm_usable()) {
        struct txkit_rtm_info info;
        memset(&info, 0, sizeof info);
        txkit_rtm_info(&info);
        printf("SKIPPED %s: TXKIT_METHOD=htm but RTM is not usable on this machine "
               "(vendor '%s': %s)\n",
               prog, info.vendor, info.reason);
        fflush(stdout);
        exit(TK_SKIP_CODE);
    }
}

/* Whether the calling thread's next transaction may run in hardware. Hardware
 * attempts undo plain writes too and do not run abort handlers, so some exact
 * counts only hold when this is 0. */
/* A -DTXKIT_SIM_RTM=ON build: XBEGIN follows a script (TXKIT_SIM_RTM) and
 * hardware attempts may never start. */
__attribute__((unused)) static int tk_rtm_simulated(void) {
    struct txkit_rtm_info info;
    txkit_rtm_info(&info);
    return strcmp(info.vendor, "simulated") == 0;
}

__attribute__((unused)) static int tk_hw_possible(void) {
    txkit_method_t m = txkit_get_method();
    return txkit_htm_usable() && (m == TXKIT_AUTO || m == TXKIT_HTM);
}

/* ------------------------------------------------------------ statistics */

__attribute__((unused)) static tx_stats_t tk_stats(void) {
    tx_stats_t s;
    memset(&s, 0xff, sizeof s);
    if (tx_stats_get(&s) != 0)
        tk_fail(__FILE__, __LINE__, __func__, "tx_stats_get(&s) == 0");
    return s;
}

__attribute__((unused)) static uint64_t tk_explicit_aborts(void) {
    return tk_stats().aborts_by_cause[TXKIT_CAUSE_EXPLICIT];
}

/* --------------------------------------------------------- attempt counting
 *
 * Which attempt of a transaction is running? Declare a struct tk_attempts
 * before the block, tk_attempts_init() it, and call tk_attempt_no() first
 * thing in the block. Two independent witnesses:
 *  - an abort handler registered by every attempt (software aborts run it);
 *  - the process count of explicit aborts (tx_restart), which also covers
 *    hardware attempts whose abort handlers never run.
 * The larger one is the number of earlier attempts this transaction aborted.
 */
struct tk_attempts {
    volatile int handler_runs;
    uint64_t explicit_base;
};

__attribute__((unused)) static void tk_attempt_abort_handler(void *arg) {
    struct tk_attempts *a = (struct tk_attempts *)arg;
    if (tx_in_transaction() != 0)
        tk_fail(__FILE__, __LINE__, __func__, "abort handler runs outside transactions");
    a->handler_runs = a->handler_runs + 1;
}

__attribute__((unused)) static void tk_attempts_init(struct tk_attempts *a) {
    a->handler_runs = 0;
    a->explicit_base = tk_explicit_aborts();
}

__attribute__((unused)) static int tk_attempt_no(struct tk_attempts *a) {
    if (tx_on_abort(tk_attempt_abort_handler, a) != 0)
        tk_fail(__FILE__, __LINE__, __func__, "tx_on_abort() == 0");
    int h = a->handler_runs;
    int s = (int)(tk_explicit_aborts() - a->explicit_base);
    return h > s ? h : s;
}

/* ------------------------------------------------------------- utilities */

/* Inside a transaction: *slotp points to a new block (tx_malloc) holding v;
 * the block it pointed to, if any, is tx_free'd (freed at the commit). */
__attribute__((unused)) static void tk_swap_block(long *volatile *slotp, long v) {
    long *p = (long *)tx_malloc(sizeof *p);
    CHECK(p != NULL);
    *p = v; /* private until published */
    long *old = (long *)TX_LOAD((uintptr_t *)slotp);
    TX_STORE((uintptr_t *)slotp, (uintptr_t)p);
    if (old)
        tx_free(old);
}

/* 10000 transactions of the express tests: each adds 1 to *total; every 7th
 * (i = 0, 7, ...) also swaps *slotp's block for one holding i (tk_swap_block),
 * every 1000th (i = 999, 1999, ...) registers on_commit(arg). */
__attribute__((unused)) static void tk_express_mix(long *total, long *volatile *slotp,
                                                   void (*on_commit)(void *), void *arg) {
    for (int i = 0; i < 10000; i++)
        TX_ATOMIC {
            TX_STORE(total, TX_LOAD(total) + 1);
            if (i % 7 == 0)
                tk_swap_block(slotp, i);
            if (i % 1000 == 999)
                CHECK(tx_on_commit(on_commit, arg) == 0);
        }
}

/* A process-wide switch thrown by another thread (created and joined here),
 * for tests of what the caller's next transaction sees. */
struct tk_switch_arg {
    int fault; /* 0: txkit_set_method(m); 1: txkit_set_fault(m, prob) */
    txkit_method_t m;
    double prob;
};
static void *tk_switch_thread(void *arg) {
    const struct tk_switch_arg *a = (const struct tk_switch_arg *)arg;
    if (a->fault)
        CHECK(txkit_set_fault(a->m, a->prob) == 0);
    else
        CHECK(txkit_set_method(a->m) == 0);
    return NULL;
}
__attribute__((unused)) static void tk_switch_elsewhere(struct tk_switch_arg a) {
    pthread_t th;
    CHECK(pthread_create(&th, NULL, tk_switch_thread, &a) == 0);
    CHECK(pthread_join(th, NULL) == 0);
}
/* txkit_set_method(m) by another thread. */
__attribute__((unused)) static void tk_set_method_elsewhere(txkit_method_t m) {
    struct tk_switch_arg a = {0, m, 0};
    tk_switch_elsewhere(a);
}
/* txkit_set_fault(m, prob) by another thread. */
__attribute__((unused)) static void tk_set_fault_elsewhere(txkit_method_t m, double prob) {
    struct tk_switch_arg a = {1, m, prob};
    tk_switch_elsewhere(a);
}

__attribute__((unused)) static double tk_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64*: fast and good enough to pick keys and operations. */
__attribute__((unused)) static uint64_t tk_rand(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

__attribute__((unused)) static uint64_t tk_seed(uint64_t n) {
    uint64_t z = n * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 1;
}

/* What the statistics counted between s0 and s1 against what the test ran:
 * begun outermost transactions, committed of them; and abort handlers that
 * ran `handlers` times for `restarts` restarts that registered one: at least
 * once each (hardware attempts run none), at most once per counted abort.
 * Returns the aborts counted; under TXKIT_STATS=off (nothing counted) says so
 * with prog's name, checks only the handlers' lower bound and returns
 * LONG_MAX. */
__attribute__((unused)) static long tk_check_block_stats(const char *prog, const tx_stats_t *s0,
                                                         const tx_stats_t *s1, long begun,
                                                         long committed, long handlers,
                                                         long restarts) {
    long aborts = (long)(tx_stats_aborts(s1) - tx_stats_aborts(s0));
    if (s1->transactions == s0->transactions) {
        printf("%s: statistics off, their checks skipped\n", prog);
        aborts = LONG_MAX;
    } else {
        CHECK_EQ((long)(s1->transactions - s0->transactions), begun);
        CHECK_EQ((long)(tx_stats_commits(s1) - tx_stats_commits(s0)), committed);
    }
    CHECK_MSG(handlers >= (txkit_htm_usable() ? 0 : restarts) && handlers <= aborts,
              "abort handlers ran %ld times for %ld restarts, %ld aborts", handlers, restarts,
              aborts);
    return aborts;
}

/* ------------------------------------------------------------ test runner
 *
 *   prog [--no-fork] [SUBSTRING]
 *
 * Runs the tests whose name contains SUBSTRING (all by default), each in a
 * child process of its own, so that a crash or a hang (30 s alarm) in one is
 * reported by name and the others still run. --no-fork runs them in this
 * process, one after the other (for gdb). Returns the exit status for main.
 */
struct tk_test {
    const char *name;
    void (*fn)(void);
};

#define TK_TEST_ALARM 30

__attribute__((unused)) static int tk_run_one(const struct tk_test *t) {
    double t0 = tk_now();
    t->fn();
    if (tx_in_transaction() != 0)
        tk_fail(__FILE__, __LINE__, t->name, "tx_in_transaction() == 0 after the test");
    printf("[  OK  ] %s (%.0f ms)\n", t->name, (tk_now() - t0) * 1e3);
    fflush(stdout);
    return 0;
}

__attribute__((unused)) static int tk_run_tests(const struct tk_test *tests, size_t n, int argc,
                                                char **argv) {
    int use_fork = 1;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-fork") == 0)
            use_fork = 0;
        else
            filter = argv[i];
    }
    int ran = 0, failed = 0;
    char failed_names[1024] = "";
    for (size_t i = 0; i < n; i++) {
        const struct tk_test *t = &tests[i];
        if (filter && !strstr(t->name, filter))
            continue;
        ran++;
        printf("[ RUN  ] %s\n", t->name);
        fflush(stdout);
        fflush(stderr);
        if (!use_fork) {
            tk_run_one(t);
            continue;
        }
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            exit(1);
        }
        if (pid == 0) {
            alarm(TK_TEST_ALARM);
            tk_run_one(t);
            fflush(stdout);
            fflush(stderr);
            _exit(0);
        }
        int st = 0;
        if (waitpid(pid, &st, 0) != pid) {
            perror("waitpid");
            exit(1);
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            continue;
        failed++;
        if (WIFSIGNALED(st))
            printf("[FAILED] %s: killed by signal %d (%s)%s\n", t->name, WTERMSIG(st),
                   strsignal(WTERMSIG(st)),
                   WTERMSIG(st) == SIGALRM ? ": did not finish in time" : "");
        else
            printf("[FAILED] %s: exit status %d\n", t->name, WEXITSTATUS(st));
        if (strlen(failed_names) + strlen(t->name) + 2 < sizeof failed_names) {
            strcat(failed_names, " ");
            strcat(failed_names, t->name);
        }
    }
    if (ran == 0) {
        fprintf(stderr, "no test matches '%s'\n", filter ? filter : "");
        return 1;
    }
    if (failed) {
        printf("%d of %d tests FAILED:%s\n", failed, ran, failed_names);
        fflush(stdout);
        return 1;
    }
    printf("all %d tests passed\n", ran);
    return 0;
}

/* ------------------------------------------------------------ a companion */

#ifndef __cplusplus
/* For tests of auto's method policy: a thread that keeps committing a small
 * transaction (one every pace_us microseconds; 0: back to back), so that
 * the test's own thread never runs alone (auto would run it serially for
 * that). tk_companion_start returns once it has committed 1000;
 * tk_companion_commits counts them; tk_companion_stop joins it. */
struct tk_companion {
    pthread_t th;
    unsigned pace_us;
    int stop;     /* __atomic */
    long commits; /* __atomic */
    long word;    /* the transactions' counter */
};

static void *tk_companion_main(void *arg) {
    struct tk_companion *c = (struct tk_companion *)arg;
    while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
        TX_ATOMIC {
            TX_STORE(&c->word, TX_LOAD(&c->word) + 1);
        }
        __atomic_add_fetch(&c->commits, 1, __ATOMIC_RELAXED);
        if (c->pace_us)
            usleep(c->pace_us);
    }
    return NULL;
}

__attribute__((unused)) static long tk_companion_commits(struct tk_companion *c) {
    return __atomic_load_n(&c->commits, __ATOMIC_RELAXED);
}

__attribute__((unused)) static void tk_companion_start(struct tk_companion *c, unsigned pace_us) {
    memset(c, 0, sizeof *c);
    c->pace_us = pace_us;
    if (pthread_create(&c->th, NULL, tk_companion_main, c) != 0)
        tk_fail(__FILE__, __LINE__, __func__, "pthread_create(companion) == 0");
    while (tk_companion_commits(c) < 1000) /* it runs: the caller is not alone */
        sched_yield();
}

/* Wait (yielding, at most 100000 times) until the companion commits again:
 * it keeps going between the caller's transactions on a loaded machine. */
__attribute__((unused)) static void tk_companion_wait(struct tk_companion *c, long before) {
    for (int spins = 0; tk_companion_commits(c) == before && spins < 100000; spins++)
        sched_yield();
}

__attribute__((unused)) static void tk_companion_stop(struct tk_companion *c) {
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
    if (pthread_join(c->th, NULL) != 0)
        tk_fail(__FILE__, __LINE__, __func__, "pthread_join(companion) == 0");
}
#endif

#endif /* TXKIT_TEST_UTIL_H */
