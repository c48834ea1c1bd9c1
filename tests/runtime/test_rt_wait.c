/* SPDX-License-Identifier: MIT */
/* test_rt_wait.c - a real-time thread that waits inside the runtime for a
 * lower-priority thread on the same CPU must let that thread run.
 *
 *   test_rt_wait [case] [--no-fork]
 *
 * sched_yield() gives the CPU only to threads of the caller's priority or
 * higher: a SCHED_FIFO waiter that spins and yields while a lower-priority
 * SCHED_FIFO thread holds what it waits for keeps that thread off the CPU for
 * good (the kernel's real-time throttling lets only SCHED_OTHER threads in).
 *
 * Each case pins two SCHED_FIFO threads to one CPU: LOW (priority 1) enters
 * a section and then works there for WORK_MS of CPU time; HIGH (priority 2)
 * sleeps until LOW is inside, wakes (so it preempts LOW) and does what has to
 * wait for LOW:
 *   clock        LOW: a serial transaction (it holds the clock);
 *                HIGH: a transaction
 *   privatize    LOW: a software transaction that read x;
 *                HIGH: a software transaction that writes x, whose commit
 *                waits for older readers
 *   irrevocable  LOW: an irrevocable transaction; HIGH: tx_irrevocable()
 *   cx           LOW: holds a cx lock exclusively; HIGH: cx_exclusive on it
 * Oracle: HIGH finishes within DEADLINE_S (the main thread, not pinned and
 * not real-time, fails the case otherwise) after LOW's section, and LOW's
 * work is whole. Skipped when the process may not use SCHED_FIFO (EPERM).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
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

#define WORK_MS 40
#define DEADLINE_S 10

enum rt_case { C_CLOCK, C_PRIVATIZE, C_IRREVOCABLE, C_CX };

static enum rt_case g_case;
static long x, y;
static cx_lock_t g_cx = CX_LOCK_INITIALIZER;
static atomic_int low_inside, low_done, high_done;
static int g_cpu;

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* WORK_MS of this thread's CPU time: only progresses while it runs. */
static void work(void) {
    double t0 = thread_cpu_ms();
    while (thread_cpu_ms() - t0 < WORK_MS)
        __builtin_ia32_pause();
}

/* Pin the caller to g_cpu at SCHED_FIFO prio; false when not permitted. */
static int go_realtime(int prio) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(g_cpu, &set);
    CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
    struct sched_param sp = {.sched_priority = prio};
    int r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (r == EPERM)
        return 0;
    CHECK_EQ(r, 0);
    return 1;
}

static __attribute__((noinline)) void low_section(void) {
    switch (g_case) {
    case C_CLOCK:
        CHECK_EQ(txkit_set_thread_method(TXKIT_SERIAL), 0);
        TX_ATOMIC {
            atomic_store(&low_inside, 1);
            work();
            TX_STORE(&y, TX_LOAD(&y) + 1);
        }
        break;
    case C_PRIVATIZE:
        CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
        TX_ATOMIC {
            long v = TX_LOAD(&x);
            atomic_store(&low_inside, 1);
            work();
            TX_STORE(&y, TX_LOAD(&y) + 1 + 0 * v);
        }
        break;
    case C_IRREVOCABLE:
        CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
        TX_ATOMIC {
            tx_irrevocable();
            atomic_store(&low_inside, 1);
            work();
            TX_STORE(&y, TX_LOAD(&y) + 1);
        }
        break;
    case C_CX:
        cx_exclusive(&g_cx);
        atomic_store(&low_inside, 1);
        work();
        y++;
        cx_unlock(&g_cx);
        break;
    }
}

static __attribute__((noinline)) void high_section(void) {
    switch (g_case) {
    case C_CLOCK:
        TX_ATOMIC {
            TX_STORE(&x, TX_LOAD(&x) + 1);
        }
        break;
    case C_PRIVATIZE:
        CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
        TX_ATOMIC {
            TX_STORE(&x, TX_LOAD(&x) + 1);
        }
        break;
    case C_IRREVOCABLE:
        CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
        TX_ATOMIC {
            tx_irrevocable();
            TX_STORE(&x, TX_LOAD(&x) + 1);
        }
        break;
    case C_CX:
        cx_exclusive(&g_cx);
        x++;
        cx_unlock(&g_cx);
        break;
    }
}

static atomic_int g_denied;

static void *low_main(void *arg) {
    (void)arg;
    if (!go_realtime(1)) {
        atomic_store(&g_denied, 1);
        atomic_store(&low_inside, 1);
        return NULL;
    }
    low_section();
    atomic_store(&low_done, 1);
    return NULL;
}

static void *high_main(void *arg) {
    (void)arg;
    if (!go_realtime(2)) {
        atomic_store(&g_denied, 1);
        return NULL;
    }
    /* Sleep (LOW runs meanwhile) until LOW is inside; the wake-up preempts it. */
    struct timespec ms = {0, 1000000};
    while (!atomic_load(&low_inside))
        nanosleep(&ms, NULL);
    high_section();
    atomic_store(&high_done, 1);
    return NULL;
}

static void run_case(enum rt_case c) {
    g_case = c;
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    for (g_cpu = 0; g_cpu < CPU_SETSIZE && !CPU_ISSET(g_cpu, &set); g_cpu++)
        ;
    CHECK(g_cpu < CPU_SETSIZE);
    pthread_t lo, hi;
    CHECK_EQ(pthread_create(&lo, NULL, low_main, NULL), 0);
    CHECK_EQ(pthread_create(&hi, NULL, high_main, NULL), 0);
    double t0 = tk_now();
    while (!atomic_load(&high_done) && !atomic_load(&g_denied) && tk_now() - t0 < DEADLINE_S) {
        struct timespec ms = {0, 10000000};
        nanosleep(&ms, NULL);
    }
    CHECK_EQ(atomic_load(&g_denied), 0); /* main probed it */
    if (!atomic_load(&high_done)) {
        fprintf(stderr,
                "FAIL: the priority-2 thread still waits for the priority-1 one after %d s "
                "(low inside %d, low done %d)\n",
                DEADLINE_S, atomic_load(&low_inside), atomic_load(&low_done));
        fflush(stderr);
        _exit(1); /* the threads spin at real-time priority: no join */
    }
    CHECK_EQ(pthread_join(hi, NULL), 0);
    CHECK_EQ(pthread_join(lo, NULL), 0);
    CHECK_EQ(atomic_load(&low_done), 1);
    CHECK_EQ(y, 1);
    CHECK_EQ(x, 1);
}

static void test_clock(void) { run_case(C_CLOCK); }
static void test_privatize(void) { run_case(C_PRIVATIZE); }
static void test_irrevocable(void) { run_case(C_IRREVOCABLE); }
static void test_cx(void) { run_case(C_CX); }

static void *probe_main(void *arg) {
    struct sched_param sp = {.sched_priority = 1};
    *(int *)arg = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    return NULL;
}

int main(int argc, char **argv) {
    int r = -1;
    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, probe_main, &r), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);
    if (r != 0) {
        printf("SKIPPED test_rt_wait: SCHED_FIFO not permitted here (pthread_setschedparam: %s)\n",
               strerror(r));
        return TK_SKIP_CODE;
    }
    static const struct tk_test tests[] = {{"clock", test_clock},
                                           {"privatize", test_privatize},
                                           {"irrevocable", test_irrevocable},
                                           {"cx", test_cx}};
    return tk_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
