/* SPDX-License-Identifier: MIT */
/* test_serial_token.c - serial transactions and the irrevocability token
 * must not wait for each other (issue 11, defect 2: every wait bounded).
 *
 *   test_serial_token [--iters N] [--deadline S]
 *
 * Three threads, software TM for two of them:
 *  - A: transactions that read x, then call tx_irrevocable(). A writer moved x
 *    meanwhile often enough that the upgrade fails validation: the attempt
 *    restarts holding the token (irrevocable from the start);
 *  - C: increments x (software) until A and B are done, so that A's
 *    upgrades fail;
 *  - B: serial transactions (txkit_set_thread_method), which wait for the
 *    token's owner, and once they wait, announce themselves (serial_pending)
 *    so that new software attempts hold back.
 * Before the fix, A's restart waited at its begin for B's announcement to go
 * away while B waited for A's token: both for ever.
 * First that exact interleaving, forced step by step (exact() below), then
 * the three threads freely.
 * Oracle: every thread finishes its N transactions before the deadline (the
 * main thread fails with a message otherwise), and the counters add up.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <txkit.h>

#include "test_util.h"

static long iters = 5000;
static double deadline_s = 30;
static long x, y, z, pad[256];
static atomic_long done_a, done_b, done_c;
static pthread_barrier_t start;

static void tk_spin(void) { __builtin_ia32_pause(); }

static __attribute__((noinline)) void tx_a(void) {
    TX_ATOMIC {
        long v = TX_LOAD(&x);
        /* Let C commit in between (bounded: C cannot while we hold the token). */
        long seen = atomic_load(&done_c);
        for (int k = 0; k < 2000 && atomic_load(&done_c) == seen; k++)
            tk_spin();
        tx_irrevocable();
        TX_STORE(&y, TX_LOAD(&y) + 1 + 0 * v);
    }
}

static __attribute__((noinline)) void tx_b(void) {
    TX_ATOMIC {
        TX_STORE(&z, TX_LOAD(&z) + 1);
    }
}

/* x and a long write-back (the clock stays odd a while: B's first try to
 * take it often fails, and B announces itself). */
static __attribute__((noinline)) void tx_c(void) {
    TX_ATOMIC {
        TX_STORE(&x, TX_LOAD(&x) + 1);
        for (int i = 0; i < 256; i++)
            TX_STORE(&pad[i], TX_LOAD(&pad[i]) + 1);
    }
}

static void *run_a(void *arg) {
    (void)arg;
    CHECK(txkit_set_thread_method(TXKIT_STM) == 0);
    pthread_barrier_wait(&start);
    for (long i = 0; i < iters; i++) {
        tx_a();
        atomic_fetch_add(&done_a, 1);
    }
    return NULL;
}

static void *run_b(void *arg) {
    (void)arg;
    CHECK(txkit_set_thread_method(TXKIT_SERIAL) == 0);
    pthread_barrier_wait(&start);
    for (long i = 0; i < iters; i++) {
        tx_b();
        atomic_fetch_add(&done_b, 1);
    }
    return NULL;
}

static void *run_c(void *arg) {
    (void)arg;
    CHECK(txkit_set_thread_method(TXKIT_STM) == 0);
    pthread_barrier_wait(&start);
    while (atomic_load(&done_a) < iters || atomic_load(&done_b) < iters) {
        tx_c();
        atomic_fetch_add(&done_c, 1);
    }
    return NULL;
}

/* ------------------------------------------------- the exact interleaving
 * D (serial) writes x and holds the clock; B (serial) arrives and waits for
 * the clock: it announces itself; A (software, x read before D wrote it)
 * asks to become irrevocable: it takes the token and waits for the clock;
 * D commits: A's read of x is stale, A restarts holding the token, and B's
 * next try finds the token taken and waits for A. Before the fix A's restart
 * waited for B's announcement at its begin: neither moved again. */
static atomic_int ph_a_read, ph_d_in, ph_a_restarted, ph_b_done, ph_a_done;
static long a_runs;

static void *exact_a(void *arg) {
    (void)arg;
    CHECK(txkit_set_thread_method(TXKIT_STM) == 0);
    TX_ATOMIC {
        long v = TX_LOAD(&x);
        if (++a_runs == 1) { /* plain counter: not rolled back */
            atomic_store(&ph_a_read, 1);
            while (!atomic_load(&ph_d_in))
                usleep(1000);
            usleep(20000); /* B is waiting for the clock by now */
        } else {
            atomic_store(&ph_a_restarted, 1);
        }
        tx_irrevocable(); /* first run: token, then the clock; stale x: restart */
        TX_STORE(&y, TX_LOAD(&y) + 1 + 0 * v);
    }
    atomic_store(&ph_a_done, 1);
    return NULL;
}

static void *exact_d(void *arg) {
    (void)arg;
    CHECK(txkit_set_thread_method(TXKIT_SERIAL) == 0);
    while (!atomic_load(&ph_a_read))
        usleep(1000);
    TX_ATOMIC {
        TX_STORE(&x, TX_LOAD(&x) + 1);
        atomic_store(&ph_d_in, 1);
        usleep(60000); /* B arrives, A takes the token */
    }
    return NULL;
}

static void *exact_b(void *arg) {
    (void)arg;
    CHECK(txkit_set_thread_method(TXKIT_SERIAL) == 0);
    while (!atomic_load(&ph_d_in))
        usleep(1000);
    usleep(5000);
    tx_b();
    atomic_store(&ph_b_done, 1);
    return NULL;
}

static void exact(void) {
    pthread_t a, b, d;
    double t0 = tk_now();
    CHECK(pthread_create(&a, NULL, exact_a, NULL) == 0);
    CHECK(pthread_create(&d, NULL, exact_d, NULL) == 0);
    CHECK(pthread_create(&b, NULL, exact_b, NULL) == 0);
    while (!atomic_load(&ph_a_done) || !atomic_load(&ph_b_done)) {
        CHECK_MSG(tk_now() - t0 < deadline_s,
                  "exact interleaving: A %s (restarted: %d), B %s after %.0f s (deadlock)",
                  atomic_load(&ph_a_done) ? "done" : "stuck", atomic_load(&ph_a_restarted),
                  atomic_load(&ph_b_done) ? "done" : "stuck", deadline_s);
        usleep(10000);
    }
    CHECK(pthread_join(a, NULL) == 0);
    CHECK(pthread_join(b, NULL) == 0);
    CHECK(pthread_join(d, NULL) == 0);
    CHECK_EQ(y, 1);
    CHECK_EQ(z, 1);
    CHECK_EQ(x, 1);
    printf("exact interleaving: ok (A ran %ld times)\n", a_runs);
    x = y = z = 0;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "--deadline") && i + 1 < argc)
            deadline_s = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--iters N] [--deadline S]\n", argv[0]);
            return 2;
        }
    }
    exact();
    pthread_t a, b, c;
    CHECK(pthread_barrier_init(&start, NULL, 3) == 0);
    double t0 = tk_now();
    CHECK(pthread_create(&c, NULL, run_c, NULL) == 0);
    CHECK(pthread_create(&a, NULL, run_a, NULL) == 0);
    CHECK(pthread_create(&b, NULL, run_b, NULL) == 0);
    while (atomic_load(&done_a) < iters || atomic_load(&done_b) < iters) {
        CHECK_MSG(tk_now() - t0 < deadline_s,
                  "no progress: A %ld, B %ld of %ld (C %ld) after %.0f s (deadlock)",
                  atomic_load(&done_a), atomic_load(&done_b), iters, atomic_load(&done_c),
                  deadline_s);
        usleep(10000);
    }
    CHECK(pthread_join(a, NULL) == 0);
    CHECK(pthread_join(b, NULL) == 0);
    CHECK(pthread_join(c, NULL) == 0);
    CHECK_EQ(y, iters);
    CHECK_EQ(z, iters);
    CHECK_EQ(x, atomic_load(&done_c));
    printf("ok: %ld irrevocable, %ld serial, %ld software transactions in %.2f s\n", iters, iters,
           atomic_load(&done_c), tk_now() - t0);
    return 0;
}
