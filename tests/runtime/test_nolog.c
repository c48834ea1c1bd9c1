/* SPDX-License-Identifier: MIT */
/* test_nolog.c - software TM's unlogged reads (TXKIT_ACC_NOLOG,
 * methods/stm_norec.c): after a few commits that never saw the clock move,
 * a thread's software attempts log no reads; such an attempt cannot
 * revalidate, so any commit of another thread while it runs must abort it
 * (the transaction runs again, logging), never let it go on at a newer
 * snapshot.
 *
 *   test_nolog [NAME]
 *
 * Under the stm method:
 *  - unlogged: after warm-up a read-only transaction of 200 TX_LOADs leaves
 *    the read log's fill pointer where it was and runs with TXKIT_ACC_NOLOG;
 *    a new thread's early transactions log their reads;
 *  - moved_inline, moved_runtime: an unlogged attempt reads x, another
 *    thread then commits x and y together (x == y always), the attempt reads
 *    y: inline (8-byte words, tx.h's barrier) and through the runtime (2-byte
 *    words, stm_load_any). The pair it returns is equal, and its first
 *    attempt was aborted;
 *  - moved_commit: an unlogged attempt reads x, another thread commits x and
 *    z together, the attempt stores z = x and commits (no read after the
 *    other commit: only its commit can see it): z == x at the end;
 *  - irrevocable: an unlogged attempt becomes irrevocable, then another
 *    thread's writer takes the clock, gives it back (the clock moves, nothing
 *    written) and waits; the irrevocable attempt reads on and commits (an
 *    unlogged one could not: it would have to abort);
 *  - own_writes: an unlogged attempt reads words before it writes any (the
 *    inline read's shortcut while nothing is written), writes some 8- and
 *    4-byte words, then reads back each written word (its new value), a
 *    word it did not write that shares a written word's wbloom bit (its
 *    value in memory), and words it only read; after the commit memory holds
 *    exactly the writes;
 *  - mode_on, mode_off (with TXKIT_STM_NOLOG=on, =off; without it they say so
 *    and check nothing): a new thread's second transaction already reads
 *    unlogged; after 64 transactions every read is still logged.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define NR 200
static long words[NR];
static long x, y, z;
static short sx, sy;
static atomic_int phase; /* 0 idle, 1 the reader read x, 2 the writer committed */

static void set_stm(void) { CHECK(txkit_set_method(TXKIT_STM) == 0); }

/* A read-only transaction of NR loads: the log entries it added (rcur's
 * move) and whether it ran unlogged. */
static __attribute__((noinline)) long read_all(long *logged, int *nolog) {
    volatile long sum = 0, before = 0, after = 0;
    volatile int bits = 0;
    TX_ATOMIC {
        long s = 0;
        before = (long)(uintptr_t)_txkit_tls.rcur;
        for (int i = 0; i < NR; i++)
            s += TX_LOAD(&words[i]);
        after = (long)(uintptr_t)_txkit_tls.rcur;
        bits = (int)_txkit_tls.access;
        sum = s;
    }
    *logged = (after - before) / (long)sizeof(struct _txkit_rentry);
    *nolog = !!(bits & TXKIT_ACC_NOLOG);
    return sum;
}

/* A new thread's second and third transactions (its first is timed for the
 * statistics, and logs): with nothing calm yet, unlogged only when forced.
 * In: whether they must run unlogged; out: the third's log entries. */
struct fresh {
    int want_nolog;
    long logged;
};
static void *fresh_thread(void *arg) {
    struct fresh *f = arg;
    int nolog;
    CHECK_EQ(read_all(&f->logged, &nolog), 0);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(read_all(&f->logged, &nolog), 0);
        CHECK_EQ(nolog, f->want_nolog);
    }
    return NULL;
}

/* The third transaction of a new thread: its log entries. */
static long fresh_logged(int want_nolog) {
    struct fresh f = {want_nolog, -1};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, fresh_thread, &f) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    return f.logged;
}

static void test_unlogged(void) {
    set_stm();
    long logged;
    int nolog;
    /* one transaction in 64 is timed for the statistics, and logs */
    for (int i = 0; i < 62; i++)
        CHECK_EQ(read_all(&logged, &nolog), 0);
    CHECK_EQ(nolog, 1);
    CHECK_EQ(logged, 0);
    /* a new thread: nothing calm yet, so it logs */
    CHECK_EQ(fresh_logged(0), NR);
}

/* The other thread: once the reader read x, commit the pair (or x and z). */
static int pair_kind; /* 0 x and y, 1 sx and sy, 2 x and z */
static void *writer(void *arg) {
    (void)arg;
    while (atomic_load(&phase) != 1)
        ;
    TX_ATOMIC {
        if (pair_kind == 1) {
            TX_STORE(&sx, (short)(TX_LOAD(&sx) + 1));
            TX_STORE(&sy, (short)(TX_LOAD(&sy) + 1));
        } else {
            long v = TX_LOAD(&x) + 1;
            TX_STORE(&x, v);
            TX_STORE(pair_kind == 2 ? &z : &y, v);
        }
    }
    atomic_store(&phase, 2);
    return NULL;
}

/* Inside the reader's attempt: let the writer commit, and wait until its
 * commit has moved the clock and written back (the clock even again). Not
 * for phase 2: the writer's commit returns only once this attempt has ended
 * (privatization safety), so it sets phase 2 after our abort. */
static void let_writer_commit(void) {
    uint64_t snap = _txkit_tls.snap;
    atomic_store(&phase, 1);
    for (;;) {
        uint64_t c = __atomic_load_n(_txkit_tls.clock, __ATOMIC_ACQUIRE);
        if (c != snap && !(c & 1))
            break;
    }
}

/* Reads x, lets the writer commit (first attempt only), reads y; returns
 * the attempts, the pair in *a, *b. */
static __attribute__((noinline)) int read_pair(long *a, long *b, int *first_nolog) {
    volatile int tries = 0;
    volatile long va = 0, vb = 0;
    TX_ATOMIC {
        if (++tries == 1)
            *first_nolog = !!(_txkit_tls.access & TXKIT_ACC_NOLOG);
        long p = pair_kind == 1 ? TX_LOAD(&sx) : TX_LOAD(&x);
        if (tries == 1 && *first_nolog)
            let_writer_commit();
        long q = pair_kind == 1 ? TX_LOAD(&sy) : TX_LOAD(&y);
        va = p, vb = q;
    }
    *a = va, *b = vb;
    return tries;
}

/* Reads x, lets the writer commit x and z, stores z = x. */
static __attribute__((noinline)) int copy_x(int *first_nolog) {
    volatile int tries = 0;
    TX_ATOMIC {
        if (++tries == 1)
            *first_nolog = !!(_txkit_tls.access & TXKIT_ACC_NOLOG);
        long v = TX_LOAD(&x);
        if (tries == 1 && *first_nolog)
            let_writer_commit();
        TX_STORE(&z, v);
    }
    return tries;
}

static void warm_up(void) {
    long logged;
    int nolog;
    for (int i = 0; i < 16; i++)
        read_all(&logged, &nolog);
}

static void moved(int kind) {
    set_stm();
    pair_kind = kind;
    x = y = z = sx = sy = 0;
    atomic_store(&phase, 0);
    warm_up();
    pthread_t th;
    CHECK(pthread_create(&th, NULL, writer, NULL) == 0);
    /* until a transaction's first attempt is unlogged (not the timed one in
     * 64): only that one lets the writer in */
    int first_nolog = 0, tries = 0, rounds = 0;
    long a = -1, b = -2;
    while (!first_nolog && rounds++ < 8) {
        if (kind == 2)
            tries = copy_x(&first_nolog);
        else
            tries = read_pair(&a, &b, &first_nolog);
    }
    if (!first_nolog)
        atomic_store(&phase, 1); /* let the writer go; the check below fails */
    CHECK(pthread_join(th, NULL) == 0);
    CHECK_EQ(first_nolog, 1);
    CHECK_EQ(tries, 2); /* the writer's commit aborted the unlogged attempt */
    if (kind == 2) {
        CHECK_EQ(x, 1);
        CHECK_EQ(z, 1);
    } else {
        CHECK_EQ(a, 1);
        CHECK_EQ(b, 1);
    }
}

static void test_moved_inline(void) { moved(0); }
static void test_moved_runtime(void) { moved(1); }
static void test_moved_commit(void) { moved(2); }

/* The writer of the irrevocable case: its commit must wait for the
 * irrevocable reader, after moving the clock (taken and given back). */
static void *late_writer(void *arg) {
    (void)arg;
    while (atomic_load(&phase) != 1)
        ;
    TX_ATOMIC {
        TX_STORE(&z, TX_LOAD(&z) + 1);
    }
    atomic_store(&phase, 2);
    return NULL;
}

static __attribute__((noinline)) long irrevocable_reader(int *first_nolog, int *saw_move) {
    volatile long sum = 0;
    volatile int tries = 0;
    TX_ATOMIC {
        if (++tries == 1)
            *first_nolog = !!(_txkit_tls.access & TXKIT_ACC_NOLOG);
        long s = TX_LOAD(&words[0]);
        if (*first_nolog) { /* (not the timed one in 64: the caller tries again) */
            tx_irrevocable();
            uint64_t snap = _txkit_tls.snap;
            atomic_store(&phase, 1);
            /* read on until the writer's give-back moved the clock (1 s at most) */
            double end = tk_now() + 1.0;
            while (*_txkit_tls.clock == snap && tk_now() < end)
                s += TX_LOAD(&words[1]);
            *saw_move = *_txkit_tls.clock != snap;
            for (int i = 0; i < NR; i++)
                s += TX_LOAD(&words[i]);
        }
        sum = s;
    }
    CHECK_EQ(tries, 1);
    return sum;
}

static void test_irrevocable(void) {
    set_stm();
    z = 0;
    atomic_store(&phase, 0);
    warm_up();
    pthread_t th;
    CHECK(pthread_create(&th, NULL, late_writer, NULL) == 0);
    int first_nolog = 0, saw_move = -1, rounds = 0;
    while (!first_nolog && rounds++ < 8)
        CHECK_EQ(irrevocable_reader(&first_nolog, &saw_move), 0);
    if (!first_nolog)
        atomic_store(&phase, 1); /* let the writer go; the check below fails */
    CHECK(pthread_join(th, NULL) == 0);
    CHECK_EQ(first_nolog, 1);
    CHECK_EQ(saw_move, 1);
    CHECK_EQ(atomic_load(&phase), 2);
    CHECK_EQ(z, 1);
}

/* words[i] and words[i + 64] are 512 bytes apart: the same wbloom bit
 * (address bits 3-8). ints[2] and ints[3] are the two 4-byte halves of one
 * 8-byte word. */
static int ints[8];

static __attribute__((noinline)) int own_writes_tx(long got[6], int got_i[2]) {
    volatile int bits = 0;
    TX_ATOMIC {
        bits = (int)_txkit_tls.access;
        got[0] = TX_LOAD(&words[1]) + TX_LOAD(&words[65]); /* nothing written yet */
        got_i[0] = TX_LOAD(&ints[3]);
        TX_STORE(&words[1], 1001L);
        TX_STORE(&words[2], TX_LOAD(&words[2]) + 2002);
        TX_STORE(&ints[2], 33);
        got[1] = TX_LOAD(&words[1]);        /* written: 1001 */
        got[2] = TX_LOAD(&words[2]);        /* written: 2002 */
        got[3] = TX_LOAD(&words[65]);       /* not written, words[1]'s bit: 0 */
        got[4] = TX_LOAD(&words[3]);        /* not written: 0 */
        got[5] = TX_LOAD(&words[66]);       /* not written, words[2]'s bit: 0 */
        got_i[0] += TX_LOAD(&ints[2]) * 10; /* written: 33 */
        got_i[1] = TX_LOAD(&ints[3]);       /* not written, ints[2]'s word: 0 */
    }
    return bits;
}

static void test_own_writes(void) {
    set_stm();
    long logged;
    int nolog;
    for (int i = 0; i < 62; i++) /* calm: the next attempts read unlogged */
        CHECK_EQ(read_all(&logged, &nolog), 0);
    CHECK_EQ(nolog, 1);
    long got[6];
    int got_i[2];
    int bits = own_writes_tx(got, got_i);
    CHECK(bits & TXKIT_ACC_NOLOG);
    CHECK_EQ(got[0], 0);
    CHECK_EQ(got[1], 1001);
    CHECK_EQ(got[2], 2002);
    CHECK_EQ(got[3], 0);
    CHECK_EQ(got[4], 0);
    CHECK_EQ(got[5], 0);
    CHECK_EQ(got_i[0], 330);
    CHECK_EQ(got_i[1], 0);
    for (int i = 0; i < NR; i++)
        CHECK_EQ(words[i], i == 1 ? 1001 : i == 2 ? 2002 : 0);
    for (int i = 0; i < 8; i++)
        CHECK_EQ(ints[i], i == 2 ? 33 : 0);
}

/* Whether TXKIT_STM_NOLOG is want; if not, the case says so and checks nothing. */
static int nolog_env_is(const char *want) {
    const char *v = getenv("TXKIT_STM_NOLOG");
    if (v && strcmp(v, want) == 0)
        return 1;
    printf("  (TXKIT_STM_NOLOG=%s not set: nothing checked)\n", want);
    return 0;
}

static void test_mode_on(void) {
    if (!nolog_env_is("on"))
        return;
    set_stm();
    CHECK_EQ(fresh_logged(1), 0);
}

static void test_mode_off(void) {
    if (!nolog_env_is("off"))
        return;
    set_stm();
    long logged = 0;
    int nolog = -1;
    for (int i = 0; i < 64; i++) {
        CHECK_EQ(read_all(&logged, &nolog), 0);
        CHECK_EQ(nolog, 0);
    }
    CHECK_EQ(logged, NR);
}

int main(int argc, char **argv) {
    static const struct tk_test tests[] = {
        {"unlogged", test_unlogged},           {"moved_inline", test_moved_inline},
        {"moved_runtime", test_moved_runtime}, {"moved_commit", test_moved_commit},
        {"irrevocable", test_irrevocable},     {"mode_on", test_mode_on},
        {"mode_off", test_mode_off},           {"own_writes", test_own_writes},
    };
    return tk_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
