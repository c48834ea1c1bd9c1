/* SPDX-License-Identifier: MIT */
/* test_undo_inline.c - the undo log that TX_STORE writes inline
 * (TXKIT_ACC_UNDO, include/txkit/tx.h: a lone thread's or a serial
 * transaction's aligned 4- and 8-byte stores log the old bytes at
 * _txkit_tls.rcur themselves; the runtime's own records go to the same log).
 *
 *   test_undo_inline [NAME]
 *
 * Each case runs under auto (a lone thread: serial on its parked clock) and
 * under serial:
 *  - restart: a first attempt stores 5000 words (8 and 4 bytes, past the
 *    log's first capacity: the runtime grows it and TX_STORE goes on) and
 *    restarts; everything is put back, the second attempt's few stores stay;
 *  - order: one word stored whole, then 2 of its bytes (the runtime's path),
 *    then whole again, then a restart: put back newest first across both
 *    kinds of record, the word is as before;
 *  - irrevocable: after an inline-logged store tx_irrevocable() must see that
 *    the transaction wrote (it stays serial and is committed so, counted as
 *    serial); without a store first it may become an irrevocable software
 *    transaction (counted as stm);
 *  - then_stm: a serial transaction with a long undo log, then this thread's
 *    software transactions read 3000 words: the read log's end is the read
 *    log's again (under AddressSanitizer an overflow would be reported; the
 *    sums are checked everywhere).
 */
#include <stdint.h>

#include "test_util.h"

#define NW 5000
static long words[NW];
static uint32_t halves[NW];
static uint64_t one = 0x0102030405060708ull;

static void set_method(txkit_method_t m) { CHECK(txkit_set_method(m) == 0); }

/* The transactions are in functions of their own: no check's locals live
 * across a returns_twice begin (-Wclobbered). */
static __attribute__((noinline)) int restart_tx(void) {
    volatile int tries = 0;
    TX_ATOMIC {
        if (++tries == 1) {
            for (int i = 0; i < NW; i++) {
                TX_STORE(&words[i], -1 - (long)i);
                TX_STORE(&halves[i], 0xdead0000u + (uint32_t)i);
            }
            tx_restart();
        }
        for (int i = 0; i < 10; i++)
            TX_STORE(&words[i], TX_LOAD(&words[i]) + 100);
    }
    return tries;
}

static void restart_round(void) {
    for (int i = 0; i < NW; i++) {
        words[i] = i;
        halves[i] = (uint32_t)i;
    }
    CHECK_EQ(restart_tx(), 2);
    for (int i = 0; i < NW; i++) {
        CHECK_EQ(words[i], i < 10 ? i + 100 : i);
        CHECK_EQ(halves[i], i);
    }
}

/* rounds of round under auto (a lone thread: serial on its parked clock),
 * then as many under serial */
static void under_both(void (*round)(void), int rounds) {
    static const txkit_method_t methods[] = {TXKIT_AUTO, TXKIT_SERIAL};
    for (int k = 0; k < 2; k++) {
        set_method(methods[k]);
        for (int r = 0; r < rounds; r++)
            round();
    }
}

static void test_restart(void) { under_both(restart_round, 20); }

static __attribute__((noinline)) int order_tx(void) {
    volatile int tries = 0;
    TX_ATOMIC {
        if (++tries == 1) {
            TX_STORE(&one, 0x1111111111111111ull);
            TX_STORE((uint16_t *)&one + 1, (uint16_t)0x2222);
            TX_STORE(&one, 0x3333333333333333ull);
            TX_STORE((uint16_t *)&one + 2, (uint16_t)0x4444);
            tx_restart();
        }
    }
    return tries;
}

static void order_round(void) {
    one = 0x0102030405060708ull;
    CHECK_EQ(order_tx(), 2);
    CHECK_EQ(one, 0x0102030405060708ull);
}

static void test_order(void) { under_both(order_round, 100); }

static void stats(tx_stats_t *s) { CHECK(tx_stats_get(s) == 0); }

static __attribute__((noinline)) void store_then_irrevocable(long r) {
    TX_ATOMIC {
        TX_STORE(&words[0], r);
        tx_irrevocable();
        TX_STORE(&words[1], r);
    }
}

static __attribute__((noinline)) long irrevocable_then_store(long r) {
    volatile long x = 0;
    TX_ATOMIC {
        x = TX_LOAD(&words[0]);
        tx_irrevocable();
        TX_STORE(&words[2], r);
    }
    return x;
}

static void test_irrevocable(void) {
    set_method(TXKIT_AUTO); /* serial would never hand over to software TM */
    tx_stats_t s0, s1;
    long x = 0;
    for (int r = 0; r < 100; r++) {
        stats(&s0);
        store_then_irrevocable(r);
        stats(&s1);
        CHECK_EQ(words[0], r);
        CHECK_EQ(words[1], r);
        CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 0);
        CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);
        /* nothing written before: it may go on as software TM */
        stats(&s0);
        x += irrevocable_then_store(r);
        stats(&s1);
        CHECK_EQ(words[2], r);
        CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 1);
    }
    CHECK_EQ(x, 99 * 100 / 2);
}

static __attribute__((noinline)) long sum_words(int n) {
    volatile long s = 0;
    TX_ATOMIC {
        long t = 0;
        for (int i = 0; i < n; i++)
            t += TX_LOAD(&words[i]);
        s = t;
    }
    return s;
}

static __attribute__((noinline)) void fill_words(long r) {
    TX_ATOMIC {
        for (int i = 0; i < NW; i++)
            TX_STORE(&words[i], i + r);
    }
}

static void test_then_stm(void) {
    for (int r = 0; r < 10; r++) {
        set_method(TXKIT_SERIAL);
        fill_words(r);
        set_method(TXKIT_STM);
        long want = 0;
        for (int i = 0; i < 3000; i++)
            want += i + r;
        CHECK_EQ(sum_words(3000), want);
        CHECK_EQ(sum_words(3000), want);
    }
}

int main(int argc, char **argv) {
    static const struct tk_test tests[] = {
        {"restart", test_restart},
        {"order", test_order},
        {"irrevocable", test_irrevocable},
        {"then_stm", test_then_stm},
    };
    return tk_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
