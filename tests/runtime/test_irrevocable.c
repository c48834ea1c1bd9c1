/* SPDX-License-Identifier: MIT */
/* test_irrevocable.c - irrevocability does not stop the world.
 *
 * One thread becomes irrevocable and then sleeps (a system call: I/O stands-in)
 * for 200 ms before its update. Meanwhile a reader thread must keep committing
 * read-only transactions, and a writer thread must not commit (it would
 * invalidate what the irrevocable transaction read). At the end the
 * irrevocable update and the writer's update are both there, exactly once.
 * With the serial method everyone waits, by definition: the test then only
 * checks the results.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <txkit.h>
#include <unistd.h>

#include "test_util.h"

static long x = 1, y, z;
static atomic_int phase; /* 0 start, 1 irrevocable and sleeping, 2 done */
static atomic_long reads_during, writes_during;
static atomic_int irrevocable_bodies;

static void irrevocable_update(void) {
    TX_ATOMIC {
        long v = TX_LOAD(&x);
        tx_irrevocable();
        atomic_fetch_add(&irrevocable_bodies, 1); /* past here: runs once */
        atomic_store(&phase, 1);
        usleep(200000);
        TX_STORE(&y, v + 1);
        atomic_store(&phase, 2);
    }
}

static void *irrevocable_main(void *arg) {
    (void)arg;
    irrevocable_update();
    return NULL;
}

static long read_sum(void) {
    volatile long s = 0; /* assigned inside the block: -Wclobbered */
    TX_ATOMIC {
        s = TX_LOAD(&x) + TX_LOAD(&y) + TX_LOAD(&z);
    }
    return s;
}

static void *reader_main(void *arg) {
    (void)arg;
    while (atomic_load(&phase) == 0)
        ;
    while (atomic_load(&phase) == 1) {
        long s = read_sum();
        CHECK(s == 1 || s == 2 || s == 3 || s == 4);
        if (atomic_load(&phase) == 1)
            atomic_fetch_add(&reads_during, 1);
    }
    return NULL;
}

static void bump_z(void) {
    TX_ATOMIC {
        TX_STORE(&z, TX_LOAD(&z) + 1);
    }
}

static void *writer_main(void *arg) {
    (void)arg;
    while (atomic_load(&phase) == 0)
        ;
    bump_z();
    if (atomic_load(&phase) == 1)
        atomic_fetch_add(&writes_during, 1);
    return NULL;
}

int main(void) {
    pthread_t a, b, c;
    CHECK_EQ(pthread_create(&a, NULL, irrevocable_main, NULL), 0);
    CHECK_EQ(pthread_create(&b, NULL, reader_main, NULL), 0);
    CHECK_EQ(pthread_create(&c, NULL, writer_main, NULL), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    txkit_method_t m = txkit_get_method();
    printf("method %s: %ld reads committed while irrevocable, %ld writes; y=%ld z=%ld\n",
           txkit_method_name(m), (long)reads_during, (long)writes_during, y, z);
    CHECK_EQ(atomic_load(&irrevocable_bodies), 1);
    CHECK_EQ(y, 2);
    CHECK_EQ(z, 1);
    CHECK_EQ(atomic_load(&writes_during), 0);
    if (m != TXKIT_SERIAL)
        CHECK_MSG(atomic_load(&reads_during) > 0,
                  "readers were stopped while a transaction was irrevocable");
    tx_stats_t s;
    tx_stats_get(&s);
    CHECK(s.irrevocable >= 1);
    return 0;
}
