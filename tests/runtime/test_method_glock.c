/* SPDX-License-Identifier: MIT */
/* test_method_glock.c - a method selected by name only (methods/glock.c):
 * "a new method is one file and one row of methods/table.c". Runs with
 * TXKIT_METHOD=glock: bank transfers by 3 threads, one of them on the
 * software method (txkit_set_thread_method) so that both run side by side,
 * with tx_restart() on some first attempts; the oracle: every read-only sum
 * inside a transaction and the final sum equal the initial total, and each
 * restarted attempt's write was undone. Commits are counted as serial ones. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

#define ACCOUNTS 64
#define OPS 20000
#define THREADS 3

static long bank[ACCOUNTS];
static long marker;

struct arg {
    int id;
    unsigned long restarts;
};

static void *worker(void *p) {
    struct arg *a = p;
    if (a->id == 0)
        CHECK(txkit_set_thread_method(TXKIT_STM) == 0);
    uint64_t rng = 0x9e3779b97f4a7c15ull * (unsigned)(a->id + 1);
    for (int i = 0; i < OPS; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        unsigned from = rng % ACCOUNTS, to = (rng >> 20) % ACCOUNTS;
        int restart = (rng >> 40) % 16 == 0;
        volatile int tries = 0;
        if ((rng >> 33) % 8 == 0) {
            volatile long sum = 0; /* changed in the block, read after it */
            TX_ATOMIC {
                sum = 0;
                for (int k = 0; k < ACCOUNTS; k++)
                    sum += TX_LOAD(&bank[k]);
            }
            CHECK(sum == 1000L * ACCOUNTS);
            continue;
        }
        TX_ATOMIC {
            TX_STORE(&bank[from], TX_LOAD(&bank[from]) - 1);
            TX_STORE(&bank[to], TX_LOAD(&bank[to]) + 1);
            if (restart && tries++ == 0) {
                TX_STORE(&marker, TX_LOAD(&marker) + 1);
                tx_restart();
            }
        }
        a->restarts += restart;
    }
    return NULL;
}

int main(void) {
    const char *m = getenv("TXKIT_METHOD");
    CHECK(m && strcmp(m, "glock") == 0);
    /* Not a public method: txkit_method_parse() does not know it. */
    txkit_method_t pm;
    CHECK(txkit_method_parse("glock", &pm) != 0);
    CHECK(txkit_get_method() == TXKIT_NMETHODS);
    for (int k = 0; k < ACCOUNTS; k++)
        bank[k] = 1000;
    pthread_t th[THREADS];
    struct arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (struct arg){.id = i};
        CHECK_EQ(pthread_create(&th[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    long sum = 0;
    for (int k = 0; k < ACCOUNTS; k++)
        sum += bank[k];
    CHECK_EQ(sum, 1000L * ACCOUNTS);
    CHECK_EQ(marker, 0); /* every restarted attempt's write undone */
    unsigned long restarts = 0;
    for (int i = 1; i < THREADS; i++)
        restarts += args[i].restarts;
    CHECK(restarts > 0);
    /* Counted where its stats_id says: with the serial commits. */
    tx_stats_t s = tk_stats();
    CHECK(s.commits[TXKIT_SERIAL] >= (uint64_t)OPS * (THREADS - 1));
    printf("glock: ok, %lu restarted, %llu serial-slot commits\n", restarts,
           (unsigned long long)s.commits[TXKIT_SERIAL]);
    return 0;
}
