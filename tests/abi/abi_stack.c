/* SPDX-License-Identifier: MIT */
/* abi_stack.c - stack memory of a transaction's own callees (issue 11.1).
 *
 * gcc instruments stores through pointers in transaction_safe code, also when
 * they point into the stack of a callee of the transaction, but it reads a
 * callee's own locals directly. Memory below the stack pointer at the begin
 * of the outermost transaction belongs to frames that the transaction itself
 * created: a runtime must write it in place (a write-back buffer would write
 * into dead frames at commit, and hide the store from the direct read), and a
 * rollback must not put old values back into frames that are gone (they may
 * hold the rollback's own frames by then). Frames above that point (the
 * function holding the transaction) stay transactional: a nested cancel must
 * still restore them.
 *
 * Checks (each in every mode the test runs in; 2 threads where it helps to
 * have software TM really used):
 *   dead_frame_writeback  a callee's struct local written through a pointer,
 *                         dead at commit (was: SIGSEGV in the commit)
 *   callee_local_read     a callee writes its caller's array through a
 *                         pointer, the caller reads it directly
 *   rollback_dead_frames  aborts (injected, cancels) after callees wrote their
 *                         own stack: no crash, right results (the cancels in a
 *                         child process of their own)
 *   nested_cancel_live    a nested transaction cancelled: the outer frame's
 *                         local, written before it through a pointer, gets
 *                         back its value (live frame restored), while writes to
 *                         the nested block's own callee frames are not
 *   enclosing_local       a local of the function holding the transaction,
 *                         written by a callee: its value after commit
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_common.h"

#define NTHREADS 2

long g_arr[4] = {1, 2, 3, 4};
long g_total[NTHREADS];
double g_out[NTHREADS];
long g_shared;
long g_cancel_seen;
long g_got[NTHREADS];
int cancel_now = 1;   /* extern: gcc cannot fold the cancel away */
int cancel_never = 0; /* the outer block may cancel too: run with undo logs */
static long rounds = 20000;

/* ------------------------------------------------ dead_frame_writeback */

struct iter {
    long *p;
    long n;
    long pad[6];
};

__attribute__((transaction_safe, noinline)) static void iter_reset(struct iter *it, long *p) {
    it->p = p;
    it->n = 0;
    for (int k = 0; k < 6; k++)
        it->pad[k] = 0x4141414141414141L;
}

__attribute__((transaction_safe, noinline)) static long iter_sum(long *arr) {
    struct iter it;
    iter_reset(&it, arr);
    long s = 0;
    for (int k = 0; k < 4; k++)
        s += it.p[k];
    return s;
}

/* ---------------------------------------------------- callee_local_read */

__attribute__((transaction_safe, noipa)) static void get_point(double *c) {
    c[0] = 1.5;
    c[1] = 2.5;
}

__attribute__((transaction_safe, noipa)) static double point_sum(void) {
    double c[2] = {0, 0};
    get_point(c);
    return c[0] + c[1];
}

/* ------------------------------------------------ rollback_dead_frames */

__attribute__((transaction_safe, noinline)) static void set_long(long *p, long v) { *p = v; }

/* Writes a deep frame of its own, then returns: its frame is dead when the
 * commit (or an abort) comes. The buffer is large so that the commit's and
 * the rollback's own frames land on it. */
__attribute__((transaction_safe, noinline)) static long scribble(long seed) {
    long buf[256];
    for (int k = 0; k < 256; k++)
        set_long(&buf[k], seed + k);
    long s = 0;
    for (int k = 0; k < 256; k += 37)
        s += buf[k];
    return s;
}

/* Fill the stack below the caller with a pattern that is no return address:
 * an undo log that puts "old" values back into dead frames then breaks the
 * frames of whatever runs there (the commit, the rollback). */
__attribute__((transaction_pure, noinline)) static void poison_stack(void) {
    long buf[1024];
    for (int k = 0; k < 1024; k++)
        buf[k] = 0x4141414141414141L;
    __asm__ volatile("" : : "r"(buf) : "memory"); /* keep the stores */
}

static long scribble_expect(long seed) {
    long s = 0;
    for (int k = 0; k < 256; k += 37)
        s += seed + k;
    return s;
}

/* ---------------------------------------------------- nested_cancel_live */

__attribute__((transaction_safe, noinline)) static void nested_part(long *outer_local) {
    poison_stack();
    __transaction_atomic {
        scribble(5); /* a dead frame of the nested block when it is cancelled */
        long mine[8];
        for (int k = 0; k < 8; k++)
            set_long(&mine[k], 100 + k);
        set_long(outer_local, mine[3]); /* 103: must be undone by the cancel */
        set_long(&g_shared, g_shared + 1000);
        if (cancel_now)
            __transaction_cancel;
    }
}

__attribute__((transaction_safe, noinline)) static long outer_part(void) {
    long x;
    set_long(&x, 7); /* a live frame of the outer transaction */
    nested_part(&x);
    return x;
}

/* --------------------------------------------------------------- threads */

struct arg {
    int id;
};

/* One round of a worker: its own function, so that no local of the caller
 * lives across the transactions (-Wclobbered). */
static __attribute__((noinline)) void one_round(int id, long r) {
    __transaction_atomic { g_total[id] += iter_sum(g_arr); }
    __transaction_atomic { g_out[id] = point_sum(); }
    if (g_out[id] != 4.0)
        tk_fail(__FILE__, __LINE__, __func__, "callee_local_read: point_sum() != 4");
    if (r % 16 == 0) {
        poison_stack();
        __transaction_atomic {
            g_got[id] = scribble(r);
            g_shared++;
        }
        if (g_got[id] != scribble_expect(r))
            tk_fail(__FILE__, __LINE__, __func__, "rollback_dead_frames: wrong sum");
    }
}

static void *worker(void *p) {
    int id = ((struct arg *)p)->id;
    for (long r = 0; r < rounds; r++)
        one_round(id, r);
    return NULL;
}

/* The scribble of one_round, cancelled: the rollback runs where scribble's
 * frame was (and so does the commit of an attempt that may cancel, with undo
 * logs, under serial and fault injection). */
static __attribute__((noinline)) void cancel_round(long r) {
    poison_stack();
    __transaction_atomic {
        g_cancel_seen = scribble(r);
        g_shared += 1000000;
        if (cancel_now)
            __transaction_cancel;
    }
}

static void *cancel_worker(void *p) {
    (void)p;
    for (long r = 0; r < rounds; r += 16)
        cancel_round(r);
    return NULL;
}

/* Both threads cancel their scribbles, at once: nothing of them stays. In a
 * child process (ABI_RUN_ISOLATED): GCC 12's libitm sometimes runs such a
 * contended block irrevocably and then abort()s at its __transaction_cancel
 * (seen in CI, about one run in 30 here), and that is the rollback_dead_frames
 * defect its runs leave out (ABI_MAYFAIL), not the end of the program. */
static void cancel_phase(void) {
    long before = g_shared;
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, cancel_worker, NULL), 0);
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    CHECK_EQ(g_shared, before); /* a cancelled transaction's write stayed */
}

long g_x;

static __attribute__((noinline)) long nested_round(void) {
    __transaction_atomic {
        g_x = outer_part();
        if (cancel_never)
            __transaction_cancel;
    }
    return g_x;
}

static long enclosing(void) {
    long local[4] = {0, 0, 0, 0};
    __transaction_atomic {
        for (int k = 0; k < 4; k++)
            set_long(&local[k], k + 10);
        g_shared += local[2];
    }
    return local[0] + local[1] + local[2] + local[3];
}

int main(int argc, char **argv) {
    abi_init("abi_stack");
    if (argc > 1)
        rounds = atol(argv[1]);
    long shared_before = g_shared;

    pthread_t th[NTHREADS];
    struct arg a[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        a[i].id = i;
        CHECK_EQ(pthread_create(&th[i], NULL, worker, &a[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < NTHREADS; i++) {
        ABI_EXPECT("dead_frame_writeback", g_total[i] == rounds * 10, "iter_sum total");
        ABI_EXPECT("callee_local_read", g_out[i] == 4.0, "point_sum");
    }
    long scribbles = (rounds + 15) / 16 * NTHREADS;
    ABI_EXPECT("rollback_dead_frames", g_shared - shared_before == scribbles, "g_shared");
    ABI_RUN_ISOLATED("rollback_dead_frames", cancel_phase);

    long before = g_shared;
    long x = 0;
    for (int k = 0; k < 100; k++) {
        x = nested_round();
        ABI_EXPECT("nested_cancel_live", x == 7, "outer local after the nested cancel");
    }
    ABI_EXPECT("nested_cancel_live", g_shared == before, "nested writes cancelled");

    long e = enclosing();
    ABI_EXPECT("enclosing_local", e == 10 + 11 + 12 + 13, "locals of the enclosing frame");

    abi_summary("rounds=%ld totals=%ld,%ld x=%ld enclosing=%ld", rounds, g_total[0], g_total[1], x,
                e);
    return abi_finish();
}
