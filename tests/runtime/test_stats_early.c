/* SPDX-License-Identifier: MIT */
/* test_stats_early.c - the statistics right after the process started: the
 * runtime converts TSC ticks to nanoseconds with a ratio it measures once
 * (core.c), and asked within 10 ms of loading it used to sleep 10 ms to
 * measure it, inside tx_stats_get (and the opt-in scheduler's abort path).
 *
 *   test_stats_early
 *
 * Its own process, so that main() runs within a few ms of libtxkit's
 * constructors. Oracle: the first tx_stats_get returns 0 within 9 ms (it
 * took at least 10 ms before), the counts are there, and the time aborted
 * transactions lost (the ticks converted) is plausible: under a second.
 */
#include <stdio.h>
#include <time.h>

#include <txkit.h>

#include "test_util.h"

static long x;

static __attribute__((noinline)) void bump(void) {
    TX_ATOMIC {
        TX_STORE(&x, TX_LOAD(&x) + 1);
    }
}

int main(void) {
    for (int i = 0; i < 100; i++)
        bump();
    double t0 = tk_now();
    tx_stats_t s;
    CHECK_EQ(tx_stats_get(&s), 0);
    double ms = (tk_now() - t0) * 1e3;
    printf("first tx_stats_get: %.3f ms, %llu transactions\n", ms,
           (unsigned long long)s.transactions);
    CHECK_MSG(ms < 9, "the first tx_stats_get took %.1f ms", ms);
    CHECK(s.transactions >= 100);
    CHECK(s.ns_aborted < 1000000000ull);
    CHECK_EQ(x, 100);
    printf("PASS\n");
    return 0;
}
