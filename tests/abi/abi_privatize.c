/* SPDX-License-Identifier: MIT */
/* abi_privatize.c - privatization safety of gcc -fgnu-tm transactions.
 *
 * Each thread replaces a shared node in a transaction and then frees the old
 * one outside it (the node is privatized by the commit). A concurrent
 * software attempt that read the old pointer before that commit is doomed;
 * it must not load from the freed node (with
 * GLIBC_TUNABLES=glibc.malloc.mmap_threshold=65536 the 160 KB node is
 * unmapped at free: such a load crashes). GCC's libitm waits for those
 * attempts at the writer's commit; so must txkit (tk_privatization_wait).
 * Oracle: no crash; a == b == ops == cur->val; every node seen is alive.
 *
 * usage: abi_privatize [threads [helpers]]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAGIC 0xabcdefL
struct node {
    long magic, val;
    long pad[20000]; /* above the mmap threshold the test sets */
};
static struct node *cur;
static long a, b, ops;
static int stop;
static long bad;

static void step(void) {
    struct node *old = NULL;
    struct node *nn = malloc(sizeof *nn);
    if (!nn)
        abort();
    nn->magic = MAGIC;
    __transaction_atomic {
        if (a != b || cur->magic != MAGIC)
            ops = -1000000000;
        a += 1;
        b += 1;
        ops++;
        nn->val = cur->val + 1;
        old = cur;
        cur = nn;
    }
    old->magic = 0; /* privatized: ours alone now */
    free(old);
}

static __attribute__((noinline)) void check_and_step(void) {
    {
        long x, y, m, v;
        __transaction_atomic {
            x = a;
            y = b;
            m = cur->magic;
            v = cur->val;
        }
        if (x != y || m != MAGIC || v != x)
            __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
        step();
    }
}

static void *helper(void *arg) {
    long k = (long)arg;
    for (int i = 0; i < 3 + (k & 7); i++)
        check_and_step();
    return NULL;
}

/* A reader with a window between loading the pointer and its target. */
static void *reader(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        long m, v, x;
        __transaction_atomic {
            struct node *p = cur;
            long spin = 0;
            for (int k = 0; k < 3000; k++)
                spin += k;
            m = p->magic;
            v = p->val + (spin & 0);
            x = a;
        }
        if (m != MAGIC || v > x)
            __atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void *loop(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        step();
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    int helpers = argc > 2 ? atoi(argv[2]) : 1500;
    if (threads < 1 || threads > 64)
        threads = 4;
    cur = malloc(sizeof *cur);
    cur->magic = MAGIC;
    cur->val = 0;
    pthread_t th[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, (i & 1) ? reader : loop, NULL);
    for (long h = 0; h < helpers; h++) {
        pthread_t t;
        pthread_create(&t, NULL, helper, (void *)h);
        pthread_join(t, NULL);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    int fail = a != b || ops != a || cur->val != a || bad;
    printf("%s privatize threads=%d a=%ld b=%ld ops=%ld val=%ld bad=%ld\n", fail ? "FAIL" : "PASS",
           threads, a, b, ops, cur->val, bad);
    free(cur);
    return fail;
}
