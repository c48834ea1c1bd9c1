/* SPDX-License-Identifier: MIT */
/* test_solo_park.c - a lone thread keeps the global clock between its
 * transactions (runtime/solo.h: "parked"); everyone who then needs it must get
 * it back, whatever the lone thread is doing, and never while it is inside a
 * transaction.
 *
 *   test_solo_park [--no-fork] [NAME]
 *
 * Each case first makes the main thread (or a thread of its own) the lone
 * thread: the auto method, transactions back to back, nobody else. Then:
 *  - join: the lone thread blocks in pthread_join on a thread that runs
 *    transactions, with each method in turn (auto, stm, serial, htm where
 *    usable): they must get the clock while the lone thread is outside any
 *    transaction (before parking: every one hung);
 *  - invariant: the lone thread updates two words that must stay equal, with
 *    a pause between the two stores, while a second thread (software TM, or
 *    auto) now and then goes quiet (the first becomes alone and parks again)
 *    and then reads and updates them: it must never see them differ, and no
 *    update is lost (with the revoker not waiting for the lone thread to
 *    leave its transaction, the software case fails in most runs);
 *  - exit: a lone thread exits; the others' transactions proceed;
 *  - fork: the lone thread forks; parent and child (with a thread of its
 *    own) both run transactions;
 *  - restart, irrevocable, effects: tx_restart, tx_irrevocable, tx_malloc,
 *    tx_free and commit handlers inside transactions of a lone thread, then
 *    another thread's transactions;
 *  - method: the lone thread switches its own method, or the process's;
 *  - express: its back-to-back transactions are counted once each, keep
 *    their effects and handlers, and see a method the thread itself or
 *    another thread sets.
 *  - registered: before its first transaction, with a second thread
 *    running, the process is registered for membarrier(2) already (the
 *    runtime asks at load and in a fork's child, while there is one thread:
 *    registering later, at the first park, holding the clock, took 18 ms
 *    with two threads, and every other thread waited for the clock).
 * A hang is a failure (the runner's 30 s alarm).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <txkit.h>

#include "test_util.h"

static long a, b, total;

/* Enough transactions back to back to be the lone thread and park. */
static void go_solo(void) {
    for (int i = 0; i < 1000; i++)
        TX_ATOMIC {
            TX_STORE(&total, TX_LOAD(&total) + 1);
        }
}

struct worker {
    txkit_method_t method;
    int set_method;
    long n;
};

static void *run_worker(void *arg) {
    struct worker *w = arg;
    if (w->set_method)
        CHECK(txkit_set_thread_method(w->method) == 0);
    for (long i = 0; i < w->n; i++)
        TX_ATOMIC {
            long x = TX_LOAD(&a);
            TX_STORE(&a, x + 1);
            TX_STORE(&b, x + 1);
        }
    return NULL;
}

static void join_with(txkit_method_t m, int set) {
    a = b = total = 0;
    go_solo();
    struct worker w = {m, set, 20000};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, run_worker, &w) == 0);
    CHECK(pthread_join(th, NULL) == 0); /* blocked here: parked, outside */
    CHECK_EQ(a, 20000);
    CHECK_EQ(b, 20000);
    go_solo(); /* alone again */
    CHECK_EQ(total, 2000);
}

static void test_join_auto(void) { join_with(TXKIT_AUTO, 0); }
static void test_join_stm(void) { join_with(TXKIT_STM, 1); }
static void test_join_serial(void) { join_with(TXKIT_SERIAL, 1); }
static void test_join_htm(void) {
    if (!txkit_htm_usable()) {
        printf("  (htm not usable here: the worker runs auto)\n");
        join_with(TXKIT_AUTO, 0);
        return;
    }
    join_with(TXKIT_HTM, 1);
}

/* ---------------------------------------------------------- invariant */

static atomic_int stop, seen_bad;
static atomic_long lone_done, other_done;

static void *run_lone(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        TX_ATOMIC {
            long x = TX_LOAD(&a);
            TX_STORE(&a, x + 1);
            for (volatile int k = 0; k < 20000; k++) /* a window between the stores */
                ;
            TX_STORE(&b, x + 1);
        }
        atomic_fetch_add(&lone_done, 1);
    }
    return NULL;
}

/* Reads a and b, says whether they differed, updates both. */
static __attribute__((noinline)) int other_tx(void) {
    volatile int bad = 0; /* set inside, read after: survives a restart */
    TX_ATOMIC {
        long x = TX_LOAD(&a), y = TX_LOAD(&b);
        bad = x != y;
        TX_STORE(&a, x + 1);
        TX_STORE(&b, x + 1);
    }
    return bad;
}

static void *run_other(void *arg) {
    CHECK(txkit_set_thread_method(*(int *)arg) == 0);
    double end = tk_now() + 1.5;
    uint64_t rng = 42;
    while (tk_now() < end) {
        /* quiet for a while: the other one becomes alone and parks */
        usleep(7000 + (unsigned)(tk_rand(&rng) % 5000));
        int burst = 1 + (int)(tk_rand(&rng) % 200);
        for (int i = 0; i < burst; i++) {
            if (other_tx())
                atomic_store(&seen_bad, 1);
            atomic_fetch_add(&other_done, 1);
        }
    }
    atomic_store(&stop, 1);
    return NULL;
}

/* The other thread in software (its reads see the lone thread's stores, where
 * a hardware transaction would abort on them), or auto. */
static void invariant_with(int method) {
    a = b = 0;
    pthread_t l, o;
    CHECK(pthread_create(&l, NULL, run_lone, NULL) == 0);
    CHECK(pthread_create(&o, NULL, run_other, &method) == 0);
    CHECK(pthread_join(o, NULL) == 0);
    CHECK(pthread_join(l, NULL) == 0);
    CHECK_MSG(!atomic_load(&seen_bad), "a transaction saw a != b: another ran inside the lone one");
    CHECK_EQ(a, b);
    CHECK_EQ(a, atomic_load(&lone_done) + atomic_load(&other_done));
    printf("  lone %ld, other %ld transactions\n", atomic_load(&lone_done),
           atomic_load(&other_done));
}

static void test_invariant_stm(void) { invariant_with(TXKIT_STM); }
static void test_invariant_auto(void) { invariant_with(-1); }

/* --------------------------------------------------------------- exit */

static void *run_solo_and_exit(void *arg) {
    (void)arg;
    go_solo();
    return NULL;
}

static __attribute__((noinline)) void bump_a(void) {
    TX_ATOMIC {
        TX_STORE(&a, TX_LOAD(&a) + 1);
    }
}

static void *sleeper(void *arg) {
    (void)arg;
    pause();
    return NULL;
}

static void test_registered(void) {
    long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    const long get = 1L << 9; /* MEMBARRIER_CMD_GET_REGISTRATIONS (Linux 6.3) */
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) || !(cmds & get)) {
        printf("note: membarrier(2) cannot say its registrations here (query 0x%lx): "
               "nothing checked\n",
               cmds);
        return;
    }
    pthread_t th; /* a second thread: as in most programs at their first transaction */
    CHECK_EQ(pthread_create(&th, NULL, sleeper, NULL), 0);
    long regs = syscall(__NR_membarrier, get, 0, 0);
    CHECK(regs >= 0);
    CHECK_MSG((regs & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0,
              "not registered for membarrier(PRIVATE_EXPEDITED) before the first transaction "
              "(registrations 0x%lx)",
              regs);
    static long v;
    TX_ATOMIC {
        TX_STORE(&v, TX_LOAD(&v) + 1);
    }
    CHECK_EQ(v, 1);
}

static void test_exit(void) {
    total = a = b = 0;
    for (int round = 0; round < 20; round++) {
        pthread_t th;
        CHECK(pthread_create(&th, NULL, run_solo_and_exit, NULL) == 0);
        CHECK(pthread_join(th, NULL) == 0);
        /* the exited thread parked: this one (stm) needs the clock */
        CHECK(txkit_set_thread_method(round % 2 ? TXKIT_STM : TXKIT_AUTO) == 0);
        bump_a();
    }
    CHECK(txkit_set_thread_method(-1) == 0);
    CHECK_EQ(total, 20000);
    CHECK_EQ(a, 20);
}

/* --------------------------------------------------------------- fork */

static void test_fork(void) {
    total = a = b = 0;
    go_solo();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* the child: alone, then with a thread of its own */
        go_solo();
        struct worker w = {TXKIT_STM, 1, 5000};
        pthread_t th;
        if (pthread_create(&th, NULL, run_worker, &w) != 0)
            _exit(3);
        pthread_join(th, NULL);
        go_solo();
        _exit(total == 3000 && a == 5000 && b == 5000 ? 0 : 4);
    }
    struct worker w = {TXKIT_AUTO, 0, 5000};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, run_worker, &w) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (status %d)", st);
    CHECK_EQ(a, 5000);
    CHECK_EQ(total, 1000);
}

/* ------------------------------------- restart, irrevocable, effects */

static int restarts;
static int committed_handlers;
static void on_commit(void *arg) { committed_handlers += arg == &a; }

static void *run_stm_worker(void *arg) {
    (void)arg;
    struct worker w = {TXKIT_STM, 1, 2000};
    return run_worker(&w);
}

static void other_thread_runs(void) {
    pthread_t th;
    CHECK(pthread_create(&th, NULL, run_stm_worker, NULL) == 0);
    CHECK(pthread_join(th, NULL) == 0);
}

static void test_restart(void) {
    total = a = b = 0;
    restarts = 0;
    go_solo();
    for (int i = 0; i < 100; i++) {
        volatile int tries = 0; /* survives the restart's jump back */
        TX_ATOMIC {
            TX_STORE(&total, TX_LOAD(&total) + 1);
            if (++tries == 1 && i % 3 == 0) {
                restarts++;
                tx_restart(); /* the first store must be undone */
            }
        }
        CHECK_EQ(total, 1001 + i);
    }
    CHECK_EQ(restarts, 34);
    go_solo();
    other_thread_runs();
    CHECK_EQ(a, 2000);
    CHECK_EQ(total, 2100);
}

static void test_irrevocable(void) {
    total = a = b = 0;
    go_solo();
    for (int i = 0; i < 100; i++)
        TX_ATOMIC {
            if (i % 2)
                tx_irrevocable(); /* before any store: may continue in software */
            TX_STORE(&total, TX_LOAD(&total) + 1);
            if (!(i % 2))
                tx_irrevocable(); /* after a store: stays serial */
        }
    go_solo();
    other_thread_runs();
    go_solo();
    CHECK_EQ(total, 3100);
    CHECK_EQ(a, 2000);
}

static long *volatile slot; /* swapped by tk_swap_block (test_util.h) */

static void test_effects(void) {
    total = a = b = 0;
    committed_handlers = 0;
    go_solo();
    for (int i = 0; i < 200; i++)
        TX_ATOMIC {
            tk_swap_block(&slot, i);
            tx_on_commit(on_commit, &a);
        }
    CHECK_EQ(committed_handlers, 200);
    CHECK_EQ(*slot, 199);
    other_thread_runs();
    TX_ATOMIC {
        tx_free((long *)TX_LOAD((uintptr_t *)&slot));
    }
    CHECK_EQ(a, 2000);
}

/* ------------------------------------------------------------- method */

static void test_method(void) {
    total = a = b = 0;
    go_solo();
    CHECK(txkit_set_thread_method(TXKIT_STM) == 0);
    go_solo(); /* general path from here: gives the parked clock back first */
    CHECK(txkit_set_thread_method(TXKIT_AUTO) == 0);
    go_solo();
    CHECK(txkit_set_method(TXKIT_STM) == 0);
    go_solo();
    CHECK(txkit_set_method(TXKIT_AUTO) == 0);
    go_solo();
    other_thread_runs();
    CHECK_EQ(total, 5000);
    CHECK_EQ(a, 2000);
}

/* ------------------------------------------------------------- express */

/* One increment of total; restart: its first attempt restarts after it.
 * Returns the attempts. */
static __attribute__((noinline)) int bump(int restart) {
    volatile int tries = 0; /* survives the restart's jump back */
    TX_ATOMIC {
        TX_STORE(&total, TX_LOAD(&total) + 1);
        if (++tries == 1 && restart)
            tx_restart();
    }
    return tries;
}

static void add_total(int n) {
    for (int i = 0; i < n; i++)
        bump(0);
}

/* Back-to-back transactions of a parked lone thread take the express begin
 * and commit (txn.c): each is counted once, as a serial commit; tx_malloc and
 * tx_free keep it express, a commit handler does not, and both take effect;
 * a restart undoes only its own stores; the process's method and fault
 * injection, changed by another thread meanwhile, apply to the very next
 * transaction. */
static void test_express(void) {
    total = a = b = 0;
    committed_handlers = 0;
    go_solo();
    tx_stats_t s0, s1;
    CHECK(tx_stats_get(&s0) == 0);
    tk_express_mix(&total, &slot, on_commit, &a);
    CHECK(tx_stats_get(&s1) == 0);
    CHECK_EQ(total, 11000);
    CHECK_EQ(*slot, 9996);
    CHECK_EQ(committed_handlers, 10);
    CHECK_EQ(s1.transactions - s0.transactions, 10000);
    CHECK_EQ(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL], 10000);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 10000);
    CHECK_EQ(tx_stats_aborts(&s1) - tx_stats_aborts(&s0), 0);

    /* Express again (a site seen before); a restart undoes its own
     * transaction's stores only. */
    go_solo();
    for (int i = 0; i < 10; i++)
        CHECK_EQ(bump(0), 1);
    CHECK_EQ(bump(1), 2);
    CHECK_EQ(total, 12011);

    /* Express; another thread switches the process to stm. */
    go_solo();
    add_total(10);
    tk_set_method_elsewhere(TXKIT_STM);
    CHECK(tx_stats_get(&s0) == 0);
    add_total(100);
    CHECK(tx_stats_get(&s1) == 0);
    CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 100);
    tk_set_method_elsewhere(TXKIT_AUTO);

    /* Express; the thread switches its own method: the very next
     * transaction (the same block, whose begin the express one knows) runs
     * it. */
    go_solo();
    add_total(10);
    CHECK(txkit_set_thread_method(TXKIT_STM) == 0);
    CHECK(tx_stats_get(&s0) == 0);
    add_total(100);
    CHECK(tx_stats_get(&s1) == 0);
    CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 100);
    CHECK(txkit_set_thread_method(TXKIT_AUTO) == 0);

    /* Express; another thread turns on fault injection: the very next
     * transaction sees it (every serial attempt injected, 8 of them, then
     * one more that commits). */
    go_solo();
    add_total(10);
    tk_set_fault_elsewhere(TXKIT_SERIAL, 1.0);
    CHECK(tx_stats_get(&s0) == 0);
    add_total(1);
    CHECK(tx_stats_get(&s1) == 0);
    CHECK_EQ(s1.aborts_by_cause[TXKIT_CAUSE_INJECTED] - s0.aborts_by_cause[TXKIT_CAUSE_INJECTED],
             8); /* runtime/policy.h: TK_FAULT_SERIAL_MAX */
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);
    add_total(99);
    tk_set_fault_elsewhere(TXKIT_SERIAL, 0.0);
    go_solo();
    other_thread_runs();
    TX_ATOMIC {
        tx_free((long *)TX_LOAD((uintptr_t *)&slot));
        TX_STORE((uintptr_t *)&slot, (uintptr_t)0);
    }
    CHECK_EQ(total, 16341);
    CHECK_EQ(a, 2000);
}

int main(int argc, char **argv) {
    static const struct tk_test tests[] = {
        {"registered", test_registered},
        {"join_auto", test_join_auto},
        {"join_stm", test_join_stm},
        {"join_serial", test_join_serial},
        {"join_htm", test_join_htm},
        {"invariant_stm", test_invariant_stm},
        {"invariant_auto", test_invariant_auto},
        {"exit", test_exit},
        {"fork", test_fork},
        {"restart", test_restart},
        {"irrevocable", test_irrevocable},
        {"effects", test_effects},
        {"method", test_method},
        {"express", test_express},
    };
    return tk_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
