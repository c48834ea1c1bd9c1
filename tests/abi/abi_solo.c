/* SPDX-License-Identifier: MIT */
/* abi_solo.c - a thread that goes on alone after another one ran gcc
 * transactions beside it, while that one stays alive.
 *
 * Two threads first run blocks together (on txkit's auto method without RTM:
 * software TM), each block a counter increment, a malloc and the free of the
 * block the one before allocated. Then the second thread waits, idle but
 * alive, and the first runs the same blocks alone for a while; then both
 * again. On every runtime the counter and the frees come out exact and no
 * block is lost (SUMMARY for abi.solo.compare).
 *
 * On txkit's auto method (no fault injection, membarrier(2) available), the
 * lone thread soon keeps the clock parked (runtime/solo.h), so nobody else
 * can begin a transaction until it lets go, and no other thread was inside a
 * software transaction when it parked it: its blocks then run gcc's
 * uninstrumented code, as libitm runs a lone thread's (serialirr), whose
 * free() needs no reader to wait for. Check "solo_uninstrumented": a call of
 * abi_code_mark() inside the block reaches the plain function (uninstrumented
 * code) rather than its transaction_wrap wrapper (the instrumented code),
 * within 10 s of running alone. Before, txkit ran the instrumented code with
 * do-nothing barriers for as long as the idle thread lived.
 *
 * usage: abi_solo [blocks per phase]
 */
#include <pthread.h>
#include <stdio.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "abi_common.h"


static long counter, frees;
static long *slot[2];

__attribute__((noinline)) static void block(int who) {
    __transaction_atomic {
        long *p = malloc(sizeof *p * 8);
        if (p) {
            p[0] = counter;
            if (slot[who]) {
                free(slot[who]);
                frees++;
            }
            slot[who] = p;
        }
        counter++;
        abi_code_mark();
    }
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase; /* 1: both run; 2: the second waits; 3: both run again */
static long per_phase;

static void wait_phase(int p) {
    pthread_mutex_lock(&mu);
    while (phase < p)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void set_phase(int p) {
    pthread_mutex_lock(&mu);
    phase = p;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void *second(void *arg) {
    (void)arg;
    wait_phase(1);
    for (long i = 0; i < per_phase; i++)
        block(1);
    wait_phase(3);
    for (long i = 0; i < per_phase; i++)
        block(1);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Where the lone thread must run uninstrumented code: txkit's auto method
 * (the default) without fault injection, and a kernel that can park. */
static int expect_uninstrumented(void) {
    const char *m = getenv("TXKIT_METHOD");
    const char *f = getenv("TXKIT_FAULT");
    long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    return abi_on_txkit() && (!m || !*m || strcmp(m, "auto") == 0) && (!f || !*f) && q >= 0 &&
           (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

int main(int argc, char **argv) {
    abi_init("abi_solo");
    per_phase = argc > 1 ? atol(argv[1]) : 20000;
    CHECK(per_phase > 0);
    int expect = expect_uninstrumented();
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, second, NULL), 0);
    long want = 0;

    set_phase(1); /* together */
    for (long i = 0; i < per_phase; i++)
        block(0);
    want += 2 * per_phase;
    /* the second thread is done with phase 1 when the counter says so */
    while (__atomic_load_n(&counter, __ATOMIC_RELAXED) < want)
        usleep(1000);

    set_phase(2); /* alone, the other thread alive and idle */
    long before = abi_plain_marks();
    double t0 = now_s();
    long alone = 0;
    do {
        for (long i = 0; i < 1000; i++)
            block(0);
        alone += 1000;
    } while (alone < per_phase || (expect && abi_plain_marks() == before && now_s() - t0 < 10.0));
    want += alone;
    long plain_alone = abi_plain_marks() - before;
    printf("INFO abi_solo: alone %ld blocks in %.3f s, %ld of them uninstrumented\n", alone,
           now_s() - t0, plain_alone);
    ABI_EXPECT("solo_uninstrumented", !expect || plain_alone > 0,
               "the lone thread never ran the uninstrumented code");

    set_phase(3); /* together again: the other thread takes the clock back */
    for (long i = 0; i < per_phase; i++)
        block(0);
    want += 2 * per_phase;
    CHECK_EQ(pthread_join(th, NULL), 0);

    ABI_EXPECT("counter", counter == want, "lost or repeated blocks");
    ABI_EXPECT("frees", frees == want - 2, "a free lost or repeated");
    ABI_EXPECT("marks", abi_plain_marks() + abi_wrapped_marks() >= want,
               "a block without its call");
    free(slot[0]);
    free(slot[1]);
    abi_summary("counter_exact=%d frees_exact=%d", counter == want, frees == want - 2);
    return abi_finish();
}
