/* SPDX-License-Identifier: MIT */
/* test_ring.c - long software readers revalidated by the commit ring
 * (stm_norec.c): a reader whose log is long moves its snapshot by checking
 * which words the commits since wrote, instead of its whole log by value.
 * A wrong "nothing you read was written" lets it see two states at once.
 *
 *   test_ring [--cells N] [--seconds S] [--irrevocable]
 *
 * Shared: N 32-bit cells, two to a 64-bit word; the odd ones (the high half
 * of each word) add up to N / 2. Writers move value between random odd
 * cells (4-byte stores), most transactions one move, one in 16 many (a
 * write set too big for a ring slot), and one move in 8 also stores to the
 * even cell beside (the low half, which nobody sums). The reader sums the
 * odd cells in one transaction, so it reads only the high half of each
 * word: the ring must match the words written, not the addresses (a reader
 * that indexed its entries' addresses would miss every write there). It
 * checks inside the transaction each value's range and the sum: an
 * inconsistent snapshot shows as a sum that is not N / 2.
 *
 * --irrevocable: the first writer's transactions are irrevocable (they
 * call tx_irrevocable() first), so the other writer's commits often find
 * the token taken and give the clock back unused, writing an empty slot
 * (clock_give_back). That write read the NULL write set's fields: SIGSEGV
 * in the RelWithDebInfo build, 10 of the application tests on an RTM
 * machine, where the hybrid gives the clock back too.
 *
 * Oracle: every committed sum and every sum seen inside an attempt is N,
 * the reader and the writers commit, the final cells add up to N, and the
 * ring moved the reader's snapshot at least once (otherwise the test did
 * not test it: reported as a failure).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress_env.h"
#include "test_util.h"

/* In libtxkit (stm_norec.c), for this test. */
extern unsigned long _txkit_stm_ring_moves(void);

#define WRITERS 2
static int32_t *cells;
static long ncells = 8192;
static atomic_int stop;
static atomic_long bad_inside, reader_commits, writer_commits;
static uint64_t seed;
static int irrevocable_writer; /* --irrevocable */

/* One writer transaction: `moves` moves between odd cells from cell i on,
 * and now and then a store to the even cell beside one (rng in memory: the
 * attempts of a transaction draw on from where the last one stopped). */
static __attribute__((noinline)) void write_tx(long i, int moves, uint64_t *rng, int irr) {
    TX_ATOMIC {
        if (irr)
            tx_irrevocable();
        for (int m = 0; m < moves; m++) {
            uint64_t q = tk_rand(rng);
            long a = ((i + m * 97) % ncells) | 1, b = (long)((q >> 8) % (uint64_t)ncells) | 1;
            int32_t va = TX_LOAD(&cells[a]);
            if (va > 0 && a != b) {
                TX_STORE(&cells[a], va - 1);
                TX_STORE(&cells[b], TX_LOAD(&cells[b]) + 1);
            }
            if (q % 8 == 0) /* the other half of a's word: nobody's sum */
                TX_STORE(&cells[a ^ 1], (int32_t)(q >> 40));
        }
    }
}

static void *writer(void *arg) {
    uint64_t rng = tk_seed(seed + (uint64_t)(uintptr_t)arg);
    int irr = irrevocable_writer && (uintptr_t)arg == 1;
    while (!atomic_load(&stop)) {
        uint64_t r = tk_rand(&rng);
        write_tx((long)((r >> 8) % (uint64_t)ncells), r % 16 == 0 ? 24 : 1, &rng, irr);
        atomic_fetch_add(&writer_commits, 1);
    }
    return NULL;
}

/* Until a writer commits, 2 ms at most: the reader's snapshot then moves
 * at its next read, also on a loaded machine where the threads take turns. */
static void await_writer(void) {
    long w0 = atomic_load(&writer_commits);
    double end = tk_now() + 0.002;
    while (atomic_load(&writer_commits) == w0 && tk_now() < end)
        ;
}

/* One transaction summing the odd cells (half of them, then a writer's
 * commit, then the rest); returns the committed sum. */
static long read_all(void) {
    long sum = 0;
    TX_ATOMIC {
        long s = 0;
        for (long i = 1; i < ncells; i += 2) {
            if (i == ncells / 2 + 1) /* let a writer commit under us (2 ms at most) */
                await_writer();
            int32_t v = TX_LOAD(&cells[i]);
            if (v < 0 || v > ncells)
                atomic_fetch_add(&bad_inside, 1);
            s += v;
        }
        if (s != ncells / 2)
            atomic_fetch_add(&bad_inside, 1); /* opacity: never even inside */
        sum = s;
    }
    return sum;
}

int main(int argc, char **argv) {
    double secs = 2.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cells") && i + 1 < argc)
            ncells = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "--irrevocable"))
            irrevocable_writer = 1;
        else {
            fprintf(stderr, "usage: test_ring [--cells N] [--seconds S] [--irrevocable]\n");
            return 2;
        }
    }
    secs = tk_stress_seconds(secs);
    seed = tk_stress_seed("test_ring");
    CHECK(ncells >= 4096 && ncells % 2 == 0);
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    cells = aligned_alloc(64, (size_t)ncells * sizeof *cells);
    CHECK(cells != NULL);
    for (long i = 0; i < ncells; i++)
        cells[i] = 1;
    unsigned long moves0 = _txkit_stm_ring_moves();
    pthread_t w[WRITERS];
    for (int k = 0; k < WRITERS; k++)
        CHECK_EQ(pthread_create(&w[k], NULL, writer, (void *)(uintptr_t)(k + 1)), 0);
    double end = tk_now() + secs;
    long bad_committed = 0;
    while (tk_now() < end) {
        if (read_all() != ncells / 2)
            bad_committed++;
        atomic_fetch_add(&reader_commits, 1);
    }
    atomic_store(&stop, 1);
    for (int k = 0; k < WRITERS; k++)
        CHECK_EQ(pthread_join(w[k], NULL), 0);
    long total = 0;
    for (long i = 1; i < ncells; i += 2)
        total += cells[i];
    unsigned long moved = _txkit_stm_ring_moves() - moves0;
    printf("test_ring: %ld reader commits, %ld writer commits, ring moved %lu snapshots, "
           "%ld bad sums inside, %ld committed\n",
           atomic_load(&reader_commits), atomic_load(&writer_commits), moved,
           atomic_load(&bad_inside), bad_committed);
    CHECK_EQ(bad_committed, 0);
    CHECK_EQ(atomic_load(&bad_inside), 0);
    CHECK_EQ(total, ncells / 2);
    CHECK(atomic_load(&reader_commits) > 0);
    CHECK(atomic_load(&writer_commits) > 0);
    CHECK(moved > 0);
    free(cells);
    printf("PASS test_ring\n");
    return 0;
}
