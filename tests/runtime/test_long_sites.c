/* SPDX-License-Identifier: MIT */
/* test_long_sites.c - auto weighs software TM against serial for a site
 * whose software attempts read TK_LONG_READS (1024) words or more
 * (src/runtime/policy.c: tk_policy_long_serial): a structure learner whose
 * every task re-scores a variable over all records (tests/apps/bayes.c) ran
 * 3x faster serially than as software TM at 2 threads, and 1.75x slower than
 * GCC's libitm, which runs such transactions serially.
 *
 * Run with TXKIT_METHOD=auto TXKIT_RTM=off (CMake sets them), pinned to one
 * CPU (it runs itself again so, see main): every attempt that does not run
 * alone is software TM or serial. A companion thread keeps committing small
 * transactions (one per 20 us), so the main thread never runs alone. The main
 * thread runs, in turns:
 *  - scan:  reads SCAN words (16384 >= 1024) and sums them: a logged read
 *           costs several times a plain one;
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
#include <sched.h>
#include <string.h>

#include "test_util.h"

#define SCAN 16384
#define SHORT 1000
#define ROUNDS 400

static long arr[SCAN];

static int in_software(void) { return (_txkit_tls.access & TXKIT_ACC_LOAD) != 0; }

/* The sum of the first n words of arr, read in one transaction; *sw: whether
 * its committed attempt ran software TM. One site per n (the caller's). */
#define RUN_READS(n, sw)                  \
    __extension__({                       \
        volatile int sw_ = 0;             \
        volatile long s_ = 0;             \
        TX_ATOMIC {                       \
            sw_ = in_software();          \
            s_ = 0;                       \
            for (int i = 0; i < (n); i++) \
                s_ += TX_LOAD(&arr[i]);   \
        }                                 \
        *(sw) = sw_;                      \
        (long)s_;                         \
    })

static __attribute__((noinline)) long run_scan(int *sw) { return RUN_READS(SCAN, sw); }
static __attribute__((noinline)) long run_short(int *sw) { return RUN_READS(SHORT, sw); }

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
    struct tk_companion comp;
    /* paced: not preempted in its commits, which a serial begin waits for */
    tk_companion_start(&comp, 20);
    static int scan_sw[ROUNDS], short_sw[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        long before = tk_companion_commits(&comp);
        CHECK_EQ(run_scan(&scan_sw[r]), want_scan);
        CHECK_EQ(run_short(&short_sw[r]), want_short);
        tk_companion_wait(&comp, before);
    }
    tk_companion_stop(&comp);
    int later_sw = 0;
    for (int r = 3; r < ROUNDS; r++)
        later_sw += scan_sw[r];
    printf("scan: rounds 0-2 software %d%d%d, later %d of %d in software; companion commits %ld\n",
           scan_sw[0], scan_sw[1], scan_sw[2], later_sw, ROUNDS - 3, tk_companion_commits(&comp));
    CHECK_MSG(scan_sw[0] == 1 && scan_sw[1] == 1, "the first two scans did not run software TM");
    CHECK_MSG(scan_sw[2] == 0, "the third scan did not run serially (to measure it)");
    CHECK_MSG(later_sw <= (ROUNDS - 3) / 2, "most later scans ran software TM: %d of %d", later_sw,
              ROUNDS - 3);
    for (int r = 0; r < ROUNDS; r++)
        CHECK_MSG(short_sw[r] == 1, "a transaction under the threshold left software TM (%d)", r);
    CHECK(tk_companion_commits(&comp) >= 1000 + ROUNDS);
    printf("PASS\n");
    return 0;
}
