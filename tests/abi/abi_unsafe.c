/* SPDX-License-Identifier: MIT */
/* abi_unsafe.c - a relaxed transaction that calls code gcc cannot instrument.
 *
 * Before such a call gcc makes the transaction irrevocable and then runs the
 * function as it is: its loads and stores go straight to memory. So (1) the
 * function must see what the transaction wrote before, through barriers, and
 * (2) no other transaction may see its stores half done. A software
 * transaction that kept its write set after becoming irrevocable, and let
 * other transactions read while the function wrote, broke both.
 *
 * Checks:
 *   sees_own_writes  the function reads a value the transaction stored just
 *                    before it (the final sum counts every increment)
 *   atomic_to_others atomic readers never see a != b (the function writes a,
 *                    then b = a)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "abi_common.h"

#define WRITERS 2
#define READERS 1

long a, b;
int flag = 1; /* extern: gcc cannot drop the call */
static long ops = 20000;
static long torn;

/* The asm makes the function unsafe for gcc: it cannot be instrumented. */
__attribute__((noinline)) void unsafe_bump(void) {
    __asm__ volatile("" ::: "memory");
    a++;
    __asm__ volatile("" ::: "memory");
    b = a;
}

static __attribute__((noinline)) void relaxed_once(void) {
    __transaction_relaxed {
        a += 5;
        b += 5;
        if (flag)
            unsafe_bump();
    }
}

static void *writer(void *arg) {
    (void)arg;
    for (long i = 0; i < ops; i++)
        relaxed_once();
    return NULL;
}

static volatile int done;

static __attribute__((noinline)) long read_pair(void) {
    long d;
    __transaction_atomic { d = a - b; }
    return d;
}

static void *reader(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        if (read_pair() != 0)
            __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv) {
    abi_init("abi_unsafe");
    if (argc > 1)
        ops = atol(argv[1]);
    pthread_t w[WRITERS], r[READERS];
    for (int i = 0; i < READERS; i++)
        CHECK_EQ(pthread_create(&r[i], NULL, reader, NULL), 0);
    for (int i = 0; i < WRITERS; i++)
        CHECK_EQ(pthread_create(&w[i], NULL, writer, NULL), 0);
    for (int i = 0; i < WRITERS; i++)
        CHECK_EQ(pthread_join(w[i], NULL), 0);
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < READERS; i++)
        CHECK_EQ(pthread_join(r[i], NULL), 0);
    ABI_EXPECT("sees_own_writes", a == WRITERS * ops * 6 && b == a, "final a, b");
    ABI_EXPECT("atomic_to_others", torn == 0, "a reader saw a != b");
    abi_summary("ops=%ld a=%ld b=%ld", ops, a, b);
    if (torn)
        printf("INFO abi_unsafe: %ld torn reads\n", torn);
    return abi_finish();
}
