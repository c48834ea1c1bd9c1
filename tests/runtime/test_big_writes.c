/* SPDX-License-Identifier: MIT */
/* test_big_writes.c - auto runs a site serially, not as software TM, once a
 * software attempt of it wrote TK_BIG_WRITES (1024) words or more
 * (src/runtime/policy.c: tk_policy_big_writes). A maze router that copies its
 * grid inside every transaction ran 10x slower at 2 threads as software TM
 * than serially (tests/apps/labyrinth.c).
 *
 * Run with TXKIT_METHOD=auto TXKIT_RTM=off (CMake sets them): every attempt
 * that does not run alone is software TM or serial. A companion thread keeps
 * committing small transactions, so the main thread never runs alone (auto
 * would run it serially for that reason). The main thread runs, in turns:
 *  - big:   writes BIG words of a shared array (2048 >= 1024);
 *  - under: writes UNDER words of another array (1000 < 1024);
 *  - small: writes one word.
 * Each notes whether its committed attempt ran software TM (TXKIT_ACC_LOAD:
 * the software read barrier) or not (serial).
 * Oracle: big's first transaction ran software TM and every later one
 * serially; under and small always ran software TM (the mark is the site's,
 * and only at the threshold); the arrays hold the last values written; the
 * companion committed throughout.
 */
#include "test_util.h"

#define BIG 2048
#define UNDER 1000
#define ROUNDS 12

static long big_arr[BIG], under_arr[UNDER], small_word;

static int in_software(void) { return (_txkit_tls.access & TXKIT_ACC_LOAD) != 0; }

static __attribute__((noinline)) int run_big(long v) {
    volatile int sw = 0;
    TX_ATOMIC {
        sw = in_software();
        for (int i = 0; i < BIG; i++)
            TX_STORE(&big_arr[i], v + i);
    }
    return sw;
}

static __attribute__((noinline)) int run_under(long v) {
    volatile int sw = 0;
    TX_ATOMIC {
        sw = in_software();
        for (int i = 0; i < UNDER; i++)
            TX_STORE(&under_arr[i], v - i);
    }
    return sw;
}

static __attribute__((noinline)) int run_small(long v) {
    volatile int sw = 0;
    TX_ATOMIC {
        sw = in_software();
        TX_STORE(&small_word, v);
    }
    return sw;
}

int main(void) {
    if (tk_env_method() != TXKIT_AUTO) {
        printf("skipped: auto's policy (TXKIT_METHOD=auto)\n");
        return TK_SKIP_CODE;
    }
    struct tk_companion comp;
    tk_companion_start(&comp, 0);
    int big_sw[ROUNDS], under_sw[ROUNDS], small_sw[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        long before = tk_companion_commits(&comp);
        big_sw[r] = run_big(r * 10000);
        under_sw[r] = run_under(r * 10000);
        small_sw[r] = run_small(r);
        tk_companion_wait(&comp, before);
    }
    tk_companion_stop(&comp);
    int r0 = ROUNDS - 1;
    printf("software TM per round (big under small):");
    for (int r = 0; r < ROUNDS; r++)
        printf(" %d%d%d", big_sw[r], under_sw[r], small_sw[r]);
    printf("; companion commits %ld\n", tk_companion_commits(&comp));
    CHECK_MSG(big_sw[0] == 1, "the first big transaction did not run software TM");
    for (int r = 1; r < ROUNDS; r++)
        CHECK_MSG(big_sw[r] == 0, "big transaction %d ran software TM after a big software commit",
                  r);
    for (int r = 0; r < ROUNDS; r++) {
        CHECK_MSG(under_sw[r] == 1, "a transaction under the threshold left software TM (%d)", r);
        CHECK_MSG(small_sw[r] == 1, "another site's small transaction left software TM (%d)", r);
    }
    for (int i = 0; i < BIG; i++)
        CHECK_EQ(big_arr[i], (long)r0 * 10000 + i);
    for (int i = 0; i < UNDER; i++)
        CHECK_EQ(under_arr[i], (long)r0 * 10000 - i);
    CHECK_EQ(small_word, (long)r0);
    CHECK(tk_companion_commits(&comp) >= 1000 + ROUNDS);
    printf("PASS\n");
    return 0;
}
