/* SPDX-License-Identifier: MIT */
/* test_sw_express.c - the software express begin (runtime/express.h): a
 * transaction after one that committed at its first software attempt begins
 * without the general path's resets. Whatever changed in between must still
 * apply to the very next transaction, and whatever the express one does must
 * end as it would on the general path.
 *
 *   test_sw_express [NAME]
 *
 *  - counts: software TM, transactions back to back, with tx_malloc, tx_free
 *    and now and then a commit handler: each counted once, as a software
 *    commit at its first attempt, every handler run once, every free done;
 *  - restart: a restart undoes its own transaction's stores only, and the
 *    transaction after it counts one attempt again;
 *  - irrevocable: transactions that become irrevocable in place, between
 *    others: every update kept, the token given back each time;
 *  - method: another thread sets the process's method (serial, then software
 *    TM again), then this thread its own: each applies to the next
 *    transaction;
 *  - fault: another thread turns fault injection on: the next transactions
 *    are injected (and finish serially), then off again: no more aborts;
 *  - threads: two threads at once, under stm and then auto, move amounts
 *    between accounts whose sum never changes and count their transactions:
 *    the sum, each count and the statistics are exact.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <txkit.h>

#include "test_util.h"

static long total, junk;
static long *volatile slot; /* swapped by tk_swap_block (test_util.h) */
static long handlers_run;

static void on_commit(void *arg) { (void)arg, handlers_run++; }

static void stats(tx_stats_t *s) { CHECK(tx_stats_get(s) == 0); }

/* One increment of total; restart: its first attempt stores junk and
 * restarts. Returns the attempts. */
static __attribute__((noinline)) int bump(int restart) {
    volatile int tries = 0; /* survives the restart's jump back */
    TX_ATOMIC {
        TX_STORE(&total, TX_LOAD(&total) + 1);
        if (++tries == 1 && restart) {
            TX_STORE(&junk, TX_LOAD(&junk) + 1000);
            tx_restart();
        }
    }
    return tries;
}

static void bumps(int n) {
    for (int i = 0; i < n; i++)
        CHECK_EQ(bump(0), 1);
}

static void test_counts(void) {
    CHECK(txkit_set_method(TXKIT_STM) == 0);
    bumps(100);
    tx_stats_t s0, s1;
    stats(&s0);
    tk_express_mix(&total, &slot, on_commit, NULL);
    stats(&s1);
    CHECK_EQ(total, 10100);
    CHECK_EQ(*slot, 9996);
    CHECK_EQ(handlers_run, 10);
    CHECK_EQ(s1.transactions - s0.transactions, 10000);
    CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 10000);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 10000);
    CHECK_EQ(s1.retries_hist[0] - s0.retries_hist[0], 10000);
    CHECK_EQ(tx_stats_aborts(&s1) - tx_stats_aborts(&s0), 0);
    TX_ATOMIC {
        tx_free((long *)TX_LOAD((uintptr_t *)&slot));
        TX_STORE((uintptr_t *)&slot, (uintptr_t)0);
    }
}

static void test_restart(void) {
    CHECK(txkit_set_method(TXKIT_STM) == 0);
    tx_stats_t s0, s1;
    for (int round = 0; round < 100; round++) {
        bumps(10);
        stats(&s0);
        CHECK_EQ(bump(1), 2);
        stats(&s1);
        CHECK_EQ(s1.aborts[TXKIT_STM] - s0.aborts[TXKIT_STM], 1);
        CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 1);
        bumps(3); /* after the restart: one attempt each again */
    }
    CHECK_EQ(total, 100 * 14);
    CHECK_EQ(junk, 0);
}

static void test_irrevocable(void) {
    CHECK(txkit_set_method(TXKIT_STM) == 0);
    tx_stats_t s0, s1;
    stats(&s0);
    for (int i = 0; i < 3000; i++) {
        TX_ATOMIC {
            TX_STORE(&total, TX_LOAD(&total) + 1);
            if (i % 3 == 0)
                tx_irrevocable();
            TX_STORE(&junk, TX_LOAD(&junk) + 2);
        }
    }
    stats(&s1);
    CHECK_EQ(total, 3000);
    CHECK_EQ(junk, 6000);
    CHECK_EQ(s1.transactions - s0.transactions, 3000);
    CHECK_EQ(s1.irrevocable - s0.irrevocable, 1000);
    CHECK_EQ(tx_stats_aborts(&s1) - tx_stats_aborts(&s0), 0);
    /* the token is back: another thread's transaction can become irrevocable */
    tk_set_method_elsewhere(TXKIT_STM);
    bumps(10);
    CHECK_EQ(total, 3010);
}

static void test_method(void) {
    CHECK(txkit_set_method(TXKIT_STM) == 0);
    bumps(50);
    tx_stats_t s0, s1;
    tk_set_method_elsewhere(TXKIT_SERIAL);
    stats(&s0);
    bumps(100);
    stats(&s1);
    CHECK_EQ(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL], 100);
    CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 0);
    tk_set_method_elsewhere(TXKIT_STM);
    stats(&s0);
    bumps(100);
    stats(&s1);
    CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 100);
    CHECK(txkit_set_thread_method(TXKIT_SERIAL) == 0);
    stats(&s0);
    bumps(100);
    stats(&s1);
    CHECK_EQ(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL], 100);
    CHECK(txkit_set_thread_method(-1) == 0);
    bumps(10);
    stats(&s0);
    bumps(100);
    stats(&s1);
    CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 100);
    CHECK_EQ(total, 460);
}

static void test_fault(void) {
    CHECK(txkit_set_method(TXKIT_STM) == 0);
    bumps(50);
    tx_stats_t s0, s1;
    tk_set_fault_elsewhere(TXKIT_STM, 1.0);
    stats(&s0);
    for (int i = 0; i < 20; i++) /* every software attempt injected: each ends serially */
        CHECK(bump(0) > 1);
    stats(&s1);
    CHECK_EQ(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL], 20);
    CHECK(s1.aborts_by_cause[TXKIT_CAUSE_INJECTED] - s0.aborts_by_cause[TXKIT_CAUSE_INJECTED] >=
          20);
    tk_set_fault_elsewhere(TXKIT_STM, 0.0);
    bumps(10);
    stats(&s0);
    bumps(100);
    stats(&s1);
    CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 100);
    CHECK_EQ(tx_stats_aborts(&s1) - tx_stats_aborts(&s0), 0);
    CHECK_EQ(total, 180);
}

/* ----------------------------------------------------------- threads */

#define ACCOUNTS 64
#define PER_THREAD 200000
static long balance[ACCOUNTS];
static atomic_int bad_sums;

struct mover {
    uint64_t seed;
    long done;
};

static __attribute__((noinline)) void check_sum(void) {
    volatile long s = 0; /* assigned inside the block: -Wclobbered */
    TX_ATOMIC {
        long v = 0;
        for (int k = 0; k < ACCOUNTS; k++)
            v += TX_LOAD(&balance[k]);
        s = v;
    }
    if (s != 0)
        atomic_fetch_add(&bad_sums, 1);
}

static __attribute__((noinline)) void move(uint64_t x) {
    TX_ATOMIC {
        int from = (int)(x % ACCOUNTS), to = (int)((x >> 20) % ACCOUNTS);
        long amount = (long)(x >> 40) % 50;
        TX_STORE(&balance[from], TX_LOAD(&balance[from]) - amount);
        TX_STORE(&balance[to], TX_LOAD(&balance[to]) + amount);
        TX_STORE(&total, TX_LOAD(&total) + 1);
    }
}

static void *run_mover(void *arg) {
    struct mover *mv = arg;
    uint64_t x = mv->seed;
    for (long i = 0; i < PER_THREAD; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (i % 64 == 0) /* a sum now and then: never anything but 0 */
            check_sum();
        move(x);
        mv->done++;
    }
    return NULL;
}


static pthread_barrier_t start_line;

static void *run_mover_together(void *arg) {
    pthread_barrier_wait(&start_line); /* both at once: neither runs alone */
    return run_mover(arg);
}

/* Two threads at once under method m; returns the software commits. */
static uint64_t movers(txkit_method_t m) {
    CHECK(txkit_set_method(m) == 0);
    total = 0;
    tx_stats_t s0, s1;
    stats(&s0);
    struct mover mv[2] = {{0x9e3779b97f4a7c15ull, 0}, {0xbf58476d1ce4e5b9ull, 0}};
    pthread_t th[2];
    CHECK(pthread_barrier_init(&start_line, NULL, 2) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, run_mover_together, &mv[i]) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    CHECK(pthread_barrier_destroy(&start_line) == 0);
    stats(&s1);
    long sum = 0;
    for (int k = 0; k < ACCOUNTS; k++)
        sum += balance[k];
    CHECK_EQ(sum, 0);
    CHECK_EQ(atomic_load(&bad_sums), 0);
    CHECK_EQ(mv[0].done + mv[1].done, 2 * PER_THREAD);
    CHECK_EQ(total, 2 * PER_THREAD);
    uint64_t n = 2 * PER_THREAD + 2 * ((PER_THREAD + 63) / 64);
    CHECK_EQ(s1.transactions - s0.transactions, n);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), n);
    uint64_t sw = s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM];
    printf("  %s: software commits %llu of %llu\n", txkit_method_name(m), (unsigned long long)sw,
           (unsigned long long)n);
    return sw;
}

static void test_threads(void) {
    /* software TM throughout (serial only after 16 aborts of one transaction) */
    CHECK(movers(TXKIT_STM) > 0);
    movers(TXKIT_AUTO); /* whatever auto picks: hardware, software, alone */
}

int main(int argc, char **argv) {
    static const struct tk_test tests[] = {
        {"counts", test_counts}, {"restart", test_restart}, {"irrevocable", test_irrevocable},
        {"method", test_method}, {"fault", test_fault},     {"threads", test_threads},
    };
    return tk_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
