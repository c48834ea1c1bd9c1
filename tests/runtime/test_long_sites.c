/* SPDX-License-Identifier: MIT */
/* test_long_sites.c - auto weighs software TM against serial for a site
 * whose software attempts read TK_LONG_READS (1024) words or more
 * (src/runtime/policy.c: tk_policy_long_serial): a structure learner whose
 * every task re-scores a variable over all records (tests/apps/bayes.c) ran
 * 3x faster serially than as software TM at 2 threads, and 1.75x slower than
 * GCC's libitm, which runs such transactions serially.
 *
 * Run with TXKIT_METHOD=auto TXKIT_RTM=off (CMake sets them), pinned to one
 * CPU (it runs itself again so, see main): every attempt
 * that does not run alone is software TM or serial. A companion thread keeps
 * committing small transactions (one per 20 us), so the main thread never runs
 * alone. The
 * main thread runs, in turns:
 *  - scan:  reads SCAN words (16384 >= 1024) and sums them, with a little
 *           arithmetic per word: a logged read costs several times a plain
 *           one, more than the 2 CPUs a serial run can idle;
 *  - short: reads SHORT words (1000 < 1024).
 * Each notes whether its committed attempt ran software TM (TXKIT_ACC_LOAD:
 * the software read barrier) or not (serial).
 * Oracle: every sum is right; scan's first two transactions ran software TM
 * (the first marks the site, the second measures it), the third serially
 * (measured); of the rest, most ran serially (the choice; a run of the other
 * method now and then keeps both costs current); short always ran software
 * TM; the companion committed throughout.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <stdatomic.h>
#include <unistd.h>

#include "test_util.h"

#define SCAN 16384
#define SHORT 1000
#define ROUNDS 400

static long arr[SCAN];
static long companion_word;
static atomic_int stop;
static atomic_long companion_commits;

static void *companion(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        TX_ATOMIC {
            TX_STORE(&companion_word, TX_LOAD(&companion_word) + 1);
        }
        atomic_fetch_add(&companion_commits, 1);
        usleep(20); /* not preempted in its commits, which a serial begin waits for */
    }
    return NULL;
}

static int in_software(void) { return (_txkit_tls.access & TXKIT_ACC_LOAD) != 0; }

static __attribute__((noinline)) int run_scan(long *sum) {
    volatile int sw = 0;
    volatile long s = 0;
    TX_ATOMIC {
        sw = in_software();
        s = 0;
        for (int i = 0; i < SCAN; i++)
            s += TX_LOAD(&arr[i]);
    }
    *sum = s;
    return sw;
}

static __attribute__((noinline)) int run_short(long *sum) {
    volatile int sw = 0;
    volatile long s = 0;
    TX_ATOMIC {
        sw = in_software();
        s = 0;
        for (int i = 0; i < SHORT; i++)
            s += TX_LOAD(&arr[i]);
    }
    *sum = s;
    return sw;
}

int main(int argc, char **argv) {
    if (tk_env_method() != TXKIT_AUTO) {
        printf("skipped: auto's policy (TXKIT_METHOD=auto)\n");
        return TK_SKIP_CODE;
    }
    /* On one CPU a serial run idles no other: serial wins wherever it costs
     * less than software TM, here about 3x less, a margin that a loaded
     * machine's noise does not undo (at 2 CPUs the margin is 1.5x). The
     * runtime counts the CPUs when it loads: run again, pinned. */
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    if (CPU_COUNT(&set) > 1 && argc == 1) {
        int cpu = 0;
        while (!CPU_ISSET(cpu, &set))
            cpu++;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        CHECK(sched_setaffinity(0, sizeof set, &set) == 0);
        execl("/proc/self/exe", argv[0], "pinned", (char *)NULL);
        CHECK_MSG(0, "execl /proc/self/exe: %s", strerror(errno));
    }
    long want_scan = 0, want_short = 0;
    for (int i = 0; i < SCAN; i++) {
        arr[i] = i % 1000;
        want_scan += arr[i];
        if (i < SHORT)
            want_short += arr[i];
    }
    pthread_t th;
    CHECK(pthread_create(&th, NULL, companion, NULL) == 0);
    while (atomic_load(&companion_commits) < 1000) /* it runs: we are not alone */
        sched_yield();
    static int scan_sw[ROUNDS], short_sw[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        long before = atomic_load(&companion_commits), sum;
        scan_sw[r] = run_scan(&sum);
        CHECK_EQ(sum, want_scan);
        short_sw[r] = run_short(&sum);
        CHECK_EQ(sum, want_short);
        /* keep the companion going between rounds (a loaded machine) */
        for (int spins = 0; atomic_load(&companion_commits) == before && spins < 100000; spins++)
            sched_yield();
    }
    atomic_store(&stop, 1);
    CHECK(pthread_join(th, NULL) == 0);
    int later_sw = 0;
    for (int r = 3; r < ROUNDS; r++)
        later_sw += scan_sw[r];
    printf("scan: rounds 0-2 software %d%d%d, later %d of %d in software; companion commits %ld\n",
           scan_sw[0], scan_sw[1], scan_sw[2], later_sw, ROUNDS - 3,
           atomic_load(&companion_commits));
    CHECK_MSG(scan_sw[0] == 1 && scan_sw[1] == 1, "the first two scans did not run software TM");
    CHECK_MSG(scan_sw[2] == 0, "the third scan did not run serially (to measure it)");
    CHECK_MSG(later_sw <= (ROUNDS - 3) / 2, "most later scans ran software TM: %d of %d", later_sw,
              ROUNDS - 3);
    for (int r = 0; r < ROUNDS; r++)
        CHECK_MSG(short_sw[r] == 1, "a transaction under the threshold left software TM (%d)", r);
    CHECK(atomic_load(&companion_commits) >= 1000 + ROUNDS);
    printf("PASS\n");
    return 0;
}
