/* SPDX-License-Identifier: MIT */
/* env_helper - a txkit process for the environment tests (env_test.sh).
 *
 *   env_helper N [--close-stderr-at-exit]
 *
 * Runs N transactions at one TX_ATOMIC site in the main thread, then prints
 * one line on stdout:
 *   done TRANSACTIONS COMMITS ABORTS INJECTED SERIAL_COMMITS SECONDS
 * (from tx_stats_get(), SECONDS the wall time of the N transactions).
 * --close-stderr-at-exit registers, after txkit's start-up, an atexit handler
 * that closes stderr: it runs before txkit's own exit handler, which must
 * still get its summary out. An alarm kills it after 50 s: a livelock fails
 * instead of hanging the test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <txkit.h>
#include <unistd.h>

static long counter;

__attribute__((noinline)) static void one_tx(void) {
    TX_ATOMIC {
        TX_STORE(&counter, TX_LOAD(&counter) + 1);
    }
}

static void close_stderr(void) { fclose(stderr); }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [--close-stderr-at-exit]\n", argv[0]);
        return 2;
    }
    alarm(50);
    long n = atol(argv[1]);
    if (argc > 2 && strcmp(argv[2], "--close-stderr-at-exit") == 0)
        atexit(close_stderr); /* after txkit's constructor: runs before its handler */
    double t0 = now();
    for (long i = 0; i < n; i++)
        one_tx();
    double secs = now() - t0;
    tx_stats_t s;
    if (tx_stats_get(&s) != 0 || counter != n)
        return 1;
    printf("done %llu %llu %llu %llu %llu %.3f\n", (unsigned long long)s.transactions,
           (unsigned long long)tx_stats_commits(&s), (unsigned long long)tx_stats_aborts(&s),
           (unsigned long long)s.aborts_by_cause[TXKIT_CAUSE_INJECTED],
           (unsigned long long)s.commits[TXKIT_SERIAL], secs);
    fflush(stdout);
    return 0;
}
