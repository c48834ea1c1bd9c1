/* SPDX-License-Identifier: MIT */
/* test_stats.c - the statistics of src/runtime/stats.c (include/txkit/stats.h):
 * tx_stats_get totals and their consistency, the retry histogram, time lost to
 * aborts, threads that exited, cause names, the printed summary. See
 * api_util.h for how these programs run. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "api_util.h"

/* ================================================================= stats */

static long g_mx;

static void increment_mx(void) {
    TX_ATOMIC {
        TX_STORE(&g_mx, TX_LOAD(&g_mx) + 1);
    }
}

static void *thread_three_commits(void *p) {
    (void)p;
    for (int i = 0; i < 3; i++)
        increment_mx();
    return NULL;
}

static void run_with_restarts(int k) {
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        if (tk_attempt_no(&a) < k)
            tx_restart();
    }
}

/* noinline: a TX_ATOMIC (setjmp) inside test_stats would let longjmp clobber its loop variables */
static __attribute__((noinline)) void run_irrevocable(void) {
    TX_ATOMIC {
        tx_irrevocable();
    }
}

static void one_of_three_kinds(int i) {
    if (i % 3 == 0)
        TX_ATOMIC {
            TX_STORE(&g_mx, i);
        }
    else if (i % 3 == 1)
        TX_ATOMIC {
            (void)TX_LOAD(&g_mx);
        }
    else
        TX_ATOMIC {
        }
}

static void test_stats(void) {
    CHECK_EQ(tx_stats_get(NULL), -EINVAL);
    increment_mx(); /* this thread has run a transaction */
    tx_stats_t s0 = tk_stats();
    CHECK(s0.threads >= 1);
    CHECK_EQ(s0.commits[TXKIT_AUTO], 0);
    CHECK_EQ(s0.aborts[TXKIT_AUTO], 0);
    CHECK_EQ(tx_stats_commits(&s0), s0.commits[0] + s0.commits[1] + s0.commits[2] + s0.commits[3]);
    CHECK_EQ(tx_stats_aborts(&s0), s0.aborts[0] + s0.aborts[1] + s0.aborts[2] + s0.aborts[3]);
    uint64_t by_cause = 0;
    for (int c = 0; c < TXKIT_NCAUSES; c++)
        by_cause += s0.aborts_by_cause[c];
    CHECK_EQ(by_cause, tx_stats_aborts(&s0));
    uint64_t hist = 0;
    for (int b = 0; b < TXKIT_RETRY_BUCKETS; b++)
        hist += s0.retries_hist[b];
    CHECK_EQ(hist, tx_stats_commits(&s0));

    /* K commits add K, read-only ones and empty ones included. */
    const int K = 250;
    for (int i = 0; i < K; i++)
        one_of_three_kinds(i);
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), K);
    CHECK_EQ(s1.transactions - s0.transactions, K);
    CHECK_EQ(s1.commits[TXKIT_AUTO], 0);
    if (!tk_hw_possible()) {
        CHECK_EQ(tx_stats_aborts(&s1), tx_stats_aborts(&s0));
        CHECK_EQ(s1.retries_hist[0] - s0.retries_hist[0], K);
    }

    /* Retry histogram buckets: 0, 1, 2, 3-4, 5-8, 9-16, 17-32, >32. */
    static const int restarts[] = {0, 1, 2, 3, 4, 5, 8, 9, 16, 17};
    static const int bucket[] = {0, 1, 2, 3, 3, 4, 4, 5, 5, 6};
    for (size_t i = 0; i < ARRAY_LEN(restarts); i++) {
        int k = restarts[i];
        tx_stats_t a0 = tk_stats();
        run_with_restarts(k);
        tx_stats_t a1 = tk_stats();
        CHECK_EQ(
            a1.aborts_by_cause[TXKIT_CAUSE_EXPLICIT] - a0.aborts_by_cause[TXKIT_CAUSE_EXPLICIT], k);
        CHECK(tx_stats_aborts(&a1) - tx_stats_aborts(&a0) >= (uint64_t)k);
        /* however often it restarted: one transaction, one commit */
        CHECK_EQ(a1.transactions - a0.transactions, 1);
        CHECK_EQ(tx_stats_commits(&a1) - tx_stats_commits(&a0), 1);
        if (!tk_hw_possible()) {
            CHECK_EQ(tx_stats_aborts(&a1) - tx_stats_aborts(&a0), k);
            for (int b = 0; b < TXKIT_RETRY_BUCKETS; b++)
                CHECK_MSG(a1.retries_hist[b] - a0.retries_hist[b] == (b == bucket[i] ? 1u : 0u),
                          "%d restarts: bucket %d moved by %llu (want bucket %d)", k, b,
                          (unsigned long long)(a1.retries_hist[b] - a0.retries_hist[b]), bucket[i]);
        }
        /* A running total of time: it can only grow, and grows with aborts
         * (first attempts are timed only by sampling; retries always). */
        CHECK_MSG(a1.ns_aborted >= a0.ns_aborted, "%d restarts: ns_aborted went from %llu to %llu",
                  k, (unsigned long long)a0.ns_aborted, (unsigned long long)a1.ns_aborted);
        if (k >= 2 && !tk_hw_possible())
            CHECK_MSG(a1.ns_aborted > a0.ns_aborted, "%d restarts: ns_aborted stayed at %llu", k,
                      (unsigned long long)a0.ns_aborted);
    }

    /* One that goes irrevocable (under auto, on a parked clock, it hands the
     * clock back and goes on in software): one transaction, one commit. */
    for (int i = 0; i < 3; i++) {
        tx_stats_t i0 = tk_stats();
        run_irrevocable();
        tx_stats_t i1 = tk_stats();
        CHECK_EQ(i1.transactions - i0.transactions, 1);
        CHECK_EQ(tx_stats_commits(&i1) - tx_stats_commits(&i0), 1);
    }

    /* A thread that exits still counts. */
    tx_stats_t t0 = tk_stats();
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, thread_three_commits, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    tx_stats_t t1 = tk_stats();
    CHECK_EQ(t1.threads - t0.threads, 1);
    CHECK_EQ(tx_stats_commits(&t1) - tx_stats_commits(&t0), 3);
    CHECK_EQ(t1.transactions - t0.transactions, 3);

    /* Cause names. */
    CHECK(strcmp(txkit_cause_name(TXKIT_CAUSE_CONFLICT), "conflict") == 0);
    CHECK(strcmp(txkit_cause_name(TXKIT_CAUSE_CAPACITY), "capacity") == 0);
    for (int c = 0; c < TXKIT_NCAUSES; c++) {
        const char *n = txkit_cause_name(c);
        CHECK(n != NULL && *n && strcmp(n, "?") != 0);
        for (int d = 0; d < c; d++)
            CHECK(strcmp(n, txkit_cause_name(d)) != 0);
    }
    CHECK(strcmp(txkit_cause_name(TXKIT_NCAUSES), "?") == 0);
    CHECK(strcmp(txkit_cause_name(-1), "?") == 0);

    /* The printed summary says something. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    tx_stats_t s2 = tk_stats();
    tx_stats_print(&s2, f);
    CHECK_EQ(fclose(f), 0);
    CHECK(text != NULL && len > 20);
    CHECK(strlen(text) == len);
    free(text);
}

/* ================================================================== main */

static const struct tk_test tests[] = {
    {"stats", test_stats},
};

int main(int argc, char **argv) {
    return api_main("test_stats", tests, ARRAY_LEN(tests), argc, argv);
}
