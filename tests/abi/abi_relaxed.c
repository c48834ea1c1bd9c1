/* SPDX-License-Identifier: MIT */
/* abi_relaxed.c - __transaction_relaxed blocks that do I/O (fprintf, write(2),
 * printf), concurrently with atomic transactions on the same data.
 *
 * gcc makes a relaxed transaction irrevocable before a call it cannot
 * instrument (_ITM_changeTransactionMode). From then on it must run once and
 * alone: no attempt that printed may be rolled back and printed again.
 *
 * Each transaction takes the next number from a shared sequence and marks it
 * in taken[] (1: by an atomic transaction, 2: by a relaxed one, which also
 * prints it, to a stdio file or with write(2)). Afterwards every number must
 * be taken exactly once, and the printed numbers must be exactly those marked
 * 2, each printed once.
 *
 * usage: abi_relaxed [relaxed-ops-per-thread]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi_common.h"

#define NRELAXED 2

static long ops = 1500; /* relaxed transactions per relaxed thread */
static long atomic_ops; /* atomic transactions of the atomic thread: 2 * ops */
static long seq;
static unsigned char *taken;
static FILE *out_stdio;               /* relaxed thread 0 prints here with fprintf */
static int out_fd;                    /* relaxed thread 1 prints here with write(2) */
static unsigned long not_irrevocable; /* I/O done while not irrevocable */

ABI_PURE static void note_mode(int mode) {
    if (mode != ABI_IRREVOCABLE)
        __atomic_fetch_add(&not_irrevocable, 1, __ATOMIC_RELAXED);
}

/* One transaction per function: a loop counter live across the start of a
 * transaction (returns_twice) would trip -Wclobbered. */
__attribute__((noinline)) static void relaxed_once(long self) {
    __transaction_relaxed {
        long s = seq;
        seq = s + 1;
        taken[s] = 2;
        if (self == 0) {
            fprintf(out_stdio, "%ld\n", s);
        } else {
            char buf[32];
            int n = snprintf(buf, sizeof buf, "%ld\n", s);
            if (write(out_fd, buf, (size_t)n) != n)
                tk_fail(__FILE__, __LINE__, __func__, "write");
        }
        note_mode(_ITM_inTransaction());
    }
}

__attribute__((noinline)) static void atomic_once(void) {
    __transaction_atomic {
        long s = seq;
        seq = s + 1;
        taken[s] = 1;
    }
}

static void *relaxed_thread(void *arg) {
    for (long i = 0; i < ops; i++)
        relaxed_once((long)(intptr_t)arg);
    return NULL;
}

static void *atomic_thread(void *arg) {
    (void)arg;
    for (long i = 0; i < atomic_ops; i++)
        atomic_once();
    return NULL;
}

/* Marks in seen[] every number the file holds; returns how many lines. */
static long read_back(FILE *f, unsigned char *seen, long total, long *dups, long *bad) {
    long n = 0, v;
    rewind(f);
    while (fscanf(f, "%ld", &v) == 1) {
        n++;
        if (v < 0 || v >= total || taken[v] != 2)
            (*bad)++;
        else if (seen[v]++)
            (*dups)++;
    }
    return n;
}

int main(int argc, char **argv) {
    abi_init("abi_relaxed");
    if (argc > 1)
        ops = atol(argv[1]);
    CHECK(ops > 0);
    atomic_ops = 2 * ops;
    long total = NRELAXED * ops + atomic_ops;
    taken = calloc((size_t)total, 1);
    unsigned char *seen = calloc((size_t)total, 1);
    out_stdio = tmpfile();
    FILE *fd_file = tmpfile();
    CHECK(taken && seen && out_stdio && fd_file);
    out_fd = fileno(fd_file);

    /* a relaxed transaction printing to stdout, from the main thread */
    int mode = -1;
    long first;
    __transaction_relaxed {
        first = seq;
        printf("INFO abi_relaxed: printed from inside a relaxed transaction\n");
        mode = _ITM_inTransaction();
    }
    CHECK_EQ(mode, ABI_IRREVOCABLE);
    CHECK_EQ(first, 0);
    CHECK_EQ(_ITM_inTransaction(), ABI_OUTSIDE);

    pthread_t th[NRELAXED + 1];
    for (long t = 0; t < NRELAXED; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, relaxed_thread, (void *)(intptr_t)t), 0);
    CHECK_EQ(pthread_create(&th[NRELAXED], NULL, atomic_thread, NULL), 0);
    for (int t = 0; t <= NRELAXED; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);
    CHECK_EQ(fflush(out_stdio), 0);

    long by_relaxed = 0, by_atomic = 0, untaken = 0;
    for (long s = 0; s < total; s++) {
        by_relaxed += taken[s] == 2;
        by_atomic += taken[s] == 1;
        untaken += taken[s] == 0;
    }
    long dups = 0, bad = 0;
    long printed = read_back(out_stdio, seen, total, &dups, &bad);
    printed += read_back(fd_file, seen, total, &dups, &bad);
    long missing = 0;
    for (long s = 0; s < total; s++)
        missing += taken[s] == 2 && !seen[s];

    CHECK_EQ(seq, total);
    CHECK_EQ(untaken, 0);
    CHECK_EQ(by_relaxed, NRELAXED * ops);
    CHECK_EQ(by_atomic, atomic_ops);
    CHECK_EQ(dups, 0);
    CHECK_EQ(bad, 0);
    CHECK_EQ(missing, 0);
    CHECK_EQ(printed, NRELAXED * ops);
    CHECK_EQ(not_irrevocable, 0);

    abi_summary("sequence=%ld relaxed=%ld atomic=%ld printed=%ld duplicates=%ld missing=%ld "
                "not_irrevocable=%lu",
                seq, by_relaxed, by_atomic, printed, dups, missing, not_irrevocable);
    fclose(out_stdio);
    fclose(fd_file);
    free(taken);
    free(seen);
    return abi_finish();
}
