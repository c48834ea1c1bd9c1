/* SPDX-License-Identifier: MIT */
/* test_bufstore.c - software TM's inline buffered store (TXKIT_ACC_BUFSTORE,
 * include/txkit/tx.h _txkit_store_buf: TX_STORE of an aligned 4- or 8-byte
 * value to a word not yet written appends its write-set entry itself; the
 * method takes every other store and brings the set's length up to date).
 *
 *   test_bufstore [NAME]
 *
 * Under stm (TXKIT_RTM=off):
 *  - read_own: two words written and read back before any store that the
 *    method takes, then 24 words (past the set's unindexed size, so the
 *    method indexes what the inline store appended), each written as two
 *    4-byte halves or a whole word, some twice; read back inside (TX_LOAD,
 *    both sizes) and after the commit;
 *  - restart: the same stores, then tx_restart(): nothing reaches memory, the
 *    second attempt's stores do;
 *  - frames: a function called inside the transaction writes its own locals
 *    with TX_STORE: in place (a plain read sees them at once), never buffered
 *    (an entry would be written back into a dead frame at the commit);
 *  - allocated: after tx_malloc(), stores to the new block go in place (gcc
 *    code reads such memory without barriers; an entry would also be written
 *    back after a tx_free of the block), stores to shared words before and
 *    after it still commit.
 */
#include <stdint.h>

#include "test_util.h"

#define NW 24
static uint64_t words[NW];

static void set_stm(void) { CHECK(txkit_set_method(TXKIT_STM) == 0); }

/* word i: 4-byte halves when i % 3 == 0, the whole word otherwise, and a
 * second whole store over words with i % 4 == 1 */
static uint64_t want_word(uint64_t r, int i) {
    if (i % 3 == 0)
        return (r + (uint64_t)i) << 32 | (uint32_t)(i * 7 + 1);
    return i % 4 == 1 ? r * 1000 + (uint64_t)i : r + (uint64_t)i;
}

static void store_all(uint64_t r) {
    for (int i = 0; i < NW; i++) {
        if (i % 3 == 0) {
            uint32_t *h = (uint32_t *)(void *)&words[i];
            TX_STORE(&h[0], (uint32_t)(i * 7 + 1));
            TX_STORE(&h[1], (uint32_t)(r + (uint64_t)i));
        } else {
            TX_STORE(&words[i], r + (uint64_t)i);
        }
    }
    for (int i = 1; i < NW; i += 4)
        if (i % 3 != 0)
            TX_STORE(&words[i], r * 1000 + (uint64_t)i);
}

/* The transactions are in functions of their own: no check's locals live
 * across a returns_twice begin (-Wclobbered). */
static __attribute__((noinline)) int read_own_tx(uint64_t r) {
    volatile int bad = 0;
    TX_ATOMIC {
        int b = 0;
        /* fresh words read back before any store the method takes */
        TX_STORE(&words[4], r + 40);
        TX_STORE(&words[5], r + 50);
        b += TX_LOAD(&words[5]) != r + 50;
        b += TX_LOAD(&words[4]) != r + 40;
        store_all(r);
        for (int i = 0; i < NW; i++) {
            const uint32_t *h = (const uint32_t *)(const void *)&words[i];
            uint64_t w = want_word(r, i);
            b += TX_LOAD(&words[i]) != w;
            b += TX_LOAD(&h[0]) != (uint32_t)w;
            b += TX_LOAD(&h[1]) != (uint32_t)(w >> 32);
        }
        bad = b;
    }
    return bad;
}

static void test_read_own(void) {
    set_stm();
    for (uint64_t r = 1; r <= 200; r++) {
        CHECK_EQ(read_own_tx(r), 0);
        for (int i = 0; i < NW; i++)
            CHECK_EQ(words[i], want_word(r, i));
    }
}

static __attribute__((noinline)) int restart_tx(uint64_t r) {
    volatile int tries = 0;
    TX_ATOMIC {
        if (++tries == 1) {
            store_all(r + 7777);
            tx_restart();
        }
        TX_STORE(&words[2], r);
    }
    return tries;
}

static void test_restart(void) {
    set_stm();
    for (uint64_t r = 1; r <= 200; r++) {
        for (int i = 0; i < NW; i++)
            words[i] = (uint64_t)i;
        CHECK_EQ(restart_tx(r), 2);
        for (int i = 0; i < NW; i++)
            CHECK_EQ(words[i], i == 2 ? r : (uint64_t)i);
    }
}

/* Returns how many of its locals a plain read did not see written. */
static __attribute__((noinline)) int frame_writer(uint64_t r) {
    volatile uint64_t local[4] = {0, 0, 0, 0};
    volatile uint32_t half = 0;
    int missed = 0;
    for (int i = 0; i < 4; i++) {
        TX_STORE(&local[i], r + (uint64_t)i);
        missed += local[i] != r + (uint64_t)i;
    }
    TX_STORE(&half, (uint32_t)r);
    missed += half != (uint32_t)r;
    return missed;
}

static __attribute__((noinline)) int frames_tx(uint64_t r) {
    volatile int missed = 0;
    TX_ATOMIC {
        TX_STORE(&words[0], r);
        missed = frame_writer(r);
        TX_STORE(&words[1], r);
    }
    return missed;
}

static void test_frames(void) {
    set_stm();
    for (uint64_t r = 1; r <= 200; r++) {
        CHECK_EQ(frames_tx(r), 0);
        CHECK_EQ(words[0], r);
        CHECK_EQ(words[1], r);
    }
}

static __attribute__((noinline)) int allocated_tx(uint64_t r, uint64_t **keep) {
    volatile int missed = 0;
    uint64_t *volatile kept = NULL;
    TX_ATOMIC {
        int m = 0;
        TX_STORE(&words[0], r);
        uint64_t *p = tx_malloc(8 * sizeof *p);
        uint64_t *q = tx_malloc(8 * sizeof *q);
        CHECK(p && q);
        for (int i = 0; i < 8; i++) {
            TX_STORE(&p[i], r + (uint64_t)i);
            TX_STORE((uint32_t *)(void *)&q[i], (uint32_t)r);
            m += ((volatile uint64_t *)p)[i] != r + (uint64_t)i;
            m += *(volatile uint32_t *)(void *)&q[i] != (uint32_t)r;
        }
        tx_free(q); /* freed at the commit: no entry may be written back into it */
        TX_STORE(&words[1], r);
        missed = m;
        kept = p;
    }
    *keep = kept;
    return missed;
}

static void test_allocated(void) {
    set_stm();
    for (uint64_t r = 1; r <= 200; r++) {
        uint64_t *p = NULL;
        CHECK_EQ(allocated_tx(r, &p), 0);
        CHECK(p != NULL);
        for (int i = 0; i < 8; i++)
            CHECK_EQ(p[i], r + (uint64_t)i);
        free(p);
        CHECK_EQ(words[0], r);
        CHECK_EQ(words[1], r);
    }
}

int main(int argc, char **argv) {
    static const struct tk_test tests[] = {
        {"read_own", test_read_own},
        {"restart", test_restart},
        {"frames", test_frames},
        {"allocated", test_allocated},
    };
    return tk_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
