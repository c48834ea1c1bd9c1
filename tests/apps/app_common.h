/* SPDX-License-Identifier: MIT */
/* app_common.h - what the application corpus (tests/apps) shares.
 *
 * Each app is a multi-threaded gcc -fgnu-tm program in the style of a real
 * TM benchmark application. It runs unchanged on GCC's libitm and on txkit
 * (drop-in libitm.so.1 or linked), checks its final state with an oracle and
 * exits 0 (pass), 77 (skipped: TXKIT_METHOD=htm without RTM), or aborts (a
 * failed check: the oracle failed).
 *
 * Command line of every app:  <app> [THREADS [SIZE [SEED]]]
 * Environment:
 *   TXKIT_STRESS_SECONDS=S  run rounds (fresh state, the workload, the
 *                           oracle) until S seconds have passed; default one
 *                           round
 *   APPS_MIX=1              on txkit, each worker thread picks its own method
 *                           (txkit_set_thread_method, looked up with dlsym so
 *                           that libitm runs need no txkit): auto, stm, serial
 *                           and, with RTM, htm, rotating with the thread and
 *                           the round
 *   TXKIT_METHOD=htm        skip (77) when RTM is not usable
 *   APPS_EXPECT_RUNTIME=txkit|libitm  fail unless that is the runtime
 */
#ifndef TXKIT_TESTS_APPS_COMMON_H
#define TXKIT_TESTS_APPS_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* The checks (CHECK, CHECK_EQ, CHECK_MSG) are tests/common/check.h's; a
 * failure names the app, its round and its threads first. */
#include "check.h"

#ifdef __cplusplus
extern "C" {
#endif

#define APP_SKIP_CODE 77

typedef struct app_cfg {
    const char *name;
    int threads;     /* worker threads, >= 1 */
    long size;       /* problem size, app-specific meaning */
    uint64_t seed;   /* deterministic seed */
    double stress_s; /* TXKIT_STRESS_SECONDS, 0 when unset */
    int mix;         /* APPS_MIX */
    int round;       /* current round, from 0 */
} app_cfg;

/* Parses the command line and the environment, prints the INFO line, exits 77
 * for htm without RTM. Call once from main, before any thread. */
void app_init(app_cfg *c, const char *name, int argc, char **argv, long def_size);

/* Whether another round should run (round 0 always does); advances c->round.
 * Main thread only. */
int app_next_round(app_cfg *c);

/* Runs fn(tid, arg) on c->threads threads (tid 0..threads-1) and waits for
 * them. Every thread first runs one small transaction (so that every runtime
 * knows every thread before work starts), sets its method under APPS_MIX, and
 * then waits at a barrier. Main thread only. */
void app_parallel(app_cfg *c, void (*fn)(int tid, void *arg), void *arg);

/* Runs the rounds (app_next_round): setup(), the phase first on c->threads
 * threads (app_parallel, arg NULL), then the phase then (unless NULL), then
 * check_and_free() (the oracle, which also frees the round's state). Main
 * thread only. */
typedef void (*app_phase_fn)(int tid, void *arg);
void app_rounds(app_cfg *c, void (*setup)(void), app_phase_fn first, app_phase_fn then,
                void (*check_and_free)(void));

/* Prints the final "PASS <app>: ..." line. */
void app_pass(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* 1 when the runtime is txkit. */
int app_on_txkit(void);

/* Monotonic seconds. */
double app_now(void);

/* malloc that never returns NULL (outside transactions). */
void *app_xmalloc(size_t n);

/* xorshift64*: deterministic, state != 0. Pure arithmetic on a caller's
 * state: safe inside transactions (the state is written through the pointer,
 * so it is rolled back with the transaction). */
__attribute__((transaction_safe)) static inline uint64_t app_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* A seed for thread tid of round r, never 0. */
static inline uint64_t app_seed(const app_cfg *c, int tid, uint64_t salt) {
    uint64_t s = c->seed * 0x9e3779b97f4a7c15ull + (uint64_t)tid * 0xbf58476d1ce4e5b9ull +
                 (uint64_t)c->round * 0x94d049bb133111ebull + salt;
    s ^= s >> 31;
    return s ? s : 1;
}

#ifdef __cplusplus
}
#endif

#endif /* TXKIT_TESTS_APPS_COMMON_H */
