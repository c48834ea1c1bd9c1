/* SPDX-License-Identifier: MIT */
/* stress_env.h - how long a stress test runs, and its seed, from the
 * environment (plain C, no txkit: also for the gcc -fgnu-tm programs).
 *
 *   TXKIT_STRESS_SECONDS=S   run S seconds instead of what the arguments say
 *                            (a fixed amount of work becomes rounds of it
 *                            until S seconds have passed); for runs longer
 *                            than CI's: scripts/soak.sh, `make soak`.
 *   TXKIT_STRESS_SEED=N      the seed of a run to replay; without it every
 *                            run picks a fresh one. Either way the test
 *                            prints "<prog>: seed N (replay with
 *                            TXKIT_STRESS_SEED=N)" before it starts.
 *
 * Thread interleavings are not replayed, only what the seed decides (keys,
 * operations, injected choices): a replay makes the same failure likely, not
 * certain. The functions are for the main thread before the workers start.
 */
#ifndef TXKIT_TEST_STRESS_ENV_H
#define TXKIT_TEST_STRESS_ENV_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Longest accepted TXKIT_STRESS_SECONDS: one week. */
#define TK_STRESS_MAX_SECONDS (7.0 * 24 * 3600)

/* TXKIT_STRESS_SECONDS when it is set, else dflt. A value that is not a
 * number of seconds in (0, one week] is a broken set-up: exit 2. */
__attribute__((unused)) static double tk_stress_seconds(double dflt) {
    const char *s = getenv("TXKIT_STRESS_SECONDS");
    if (!s || !*s)
        return dflt;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v > 0 && v <= TK_STRESS_MAX_SECONDS)) {
        fprintf(stderr, "TXKIT_STRESS_SECONDS=%s is not a number of seconds in (0, %.0f]\n", s,
                TK_STRESS_MAX_SECONDS);
        exit(2);
    }
    return v;
}

/* Whether TXKIT_STRESS_SECONDS is set (a soak run). */
__attribute__((unused)) static int tk_stress_soak(void) {
    const char *s = getenv("TXKIT_STRESS_SECONDS");
    return s && *s && tk_stress_seconds(0) > 0;
}

/* The run's seed: TXKIT_STRESS_SEED when set, else a fresh one (clock, pid);
 * printed with prog's name. Never 0. */
__attribute__((unused)) static uint64_t tk_stress_seed(const char *prog) {
    const char *s = getenv("TXKIT_STRESS_SEED");
    uint64_t seed;
    if (s && *s) {
        char *end = NULL;
        errno = 0;
        seed = strtoull(s, &end, 0);
        if (errno || *end || seed == 0) {
            fprintf(stderr, "TXKIT_STRESS_SEED=%s is not a nonzero integer\n", s);
            exit(2);
        }
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed =
            ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 32);
        seed = (seed ^ (seed >> 29)) * 0xBF58476D1CE4E5B9ULL; /* spread the low bits */
        seed = (seed ^ (seed >> 32)) % 1000000000000ULL;      /* short enough to copy */
        if (!seed)
            seed = 1;
    }
    printf("%s: seed %llu (replay with TXKIT_STRESS_SEED=%llu)%s\n", prog, (unsigned long long)seed,
           (unsigned long long)seed, s && *s ? " [replay]" : "");
    fflush(stdout);
    return seed;
}

#endif
