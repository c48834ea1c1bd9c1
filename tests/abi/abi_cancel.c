/* SPDX-License-Identifier: MIT */
/* abi_cancel.c - __transaction_cancel: of the outermost transaction, of a
 * nested one (closed nesting: only the nested part is undone, the enclosing
 * transaction goes on and commits), and __transaction_cancel [[outer]] from a
 * nested transaction or from a transaction_may_cancel_outer function.
 *
 * Built twice, at -O0 and -O2: at -O2 gcc emits the "after" barriers
 * (_ITM_RfW*, _ITM_WaW*, ...) that tell the runtime a location was already
 * read or written in the transaction, and at -O0 only the plain ones.
 *
 * Every case is a named check (see ABI_XFAIL in abi_common.h): the system
 * libitm fails some of them at -O2, and tests/abi/CMakeLists.txt says which.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "abi_common.h"

#define NARR 64

long a, b, c, d, e;
long arr[NARR];
long *shared_ptr;
int cancel_now = 1; /* extern linkage: gcc cannot fold the cancels away */

static void reset(void) {
    a = 100;
    b = 200;
    c = 300;
    d = 400;
    e = 500;
    for (int i = 0; i < NARR; i++)
        arr[i] = i;
    shared_ptr = NULL;
}

/* Compares n (got, want) pairs; a named check with the values in its message. */
static void expect_values(const char *file, int line, const char *name, int n, const long *got,
                          const long *want, const char *names) {
    char detail[512];
    size_t len = 0;
    int ok = 1;
    detail[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (got[i] != want[i])
            ok = 0;
        len += (size_t)snprintf(detail + len, sizeof detail - len, "%s%c=%ld (want %ld)",
                                i ? ", " : "", names[i], got[i], want[i]);
        if (len >= sizeof detail)
            break;
    }
    abi_expect_at(file, line, name, ok, detail);
}

#define EXPECT5(name, wa, wb, wc, wd, we)                                      \
    do {                                                                       \
        const long got_[5] = {a, b, c, d, e}, want_[5] = {wa, wb, wc, wd, we}; \
        expect_values(__FILE__, __LINE__, name, 5, got_, want_, "abcde");      \
    } while (0)

static int arr_is_reset(void) {
    for (int i = 0; i < NARR; i++)
        if (arr[i] != i)
            return 0;
    return 1;
}

/* ------------------------------------------------------------ outermost */

static void outer_cancel(void) {
    reset();
    __transaction_atomic {
        a = 1;
        b = 2;
        for (int i = 0; i < NARR; i++)
            arr[i] = -i;
        if (cancel_now)
            __transaction_cancel;
        c = 3; /* never reached */
    }
    EXPECT5("outer_cancel", 100, 200, 300, 400, 500);
    ABI_EXPECT("outer_cancel_array", arr_is_reset(), "arr[] not restored");
}

/* A read-modify-write that is cancelled: at -O2, _ITM_RfW + _ITM_WaW. */
static void cancel_rmw(void) {
    reset();
    __transaction_atomic {
        a += 5;
        b = a * 2;
        arr[3] += 10;
        if (cancel_now)
            __transaction_cancel;
    }
    EXPECT5("cancel_rmw", 100, 200, 300, 400, 500);
    ABI_EXPECT("cancel_rmw_array", arr[3] == 3, "arr[3] not restored");
}

/* One transaction per call (a loop counter live across the transaction's
 * start would trip -Wclobbered). */
__attribute__((noinline)) static void rmw_then_maybe_cancel(int i) {
    __transaction_atomic {
        a++;
        arr[i % NARR] += 1000;
        if ((i & 1) && cancel_now)
            __transaction_cancel;
    }
}

/* Many transactions, every other one cancelled after an increment. */
static void cancel_rmw_loop(void) {
    reset();
    for (int i = 0; i < 1000; i++)
        rmw_then_maybe_cancel(i);
    long sum = 0;
    for (int i = 0; i < NARR; i++)
        sum += arr[i] - i;
    char detail[96];
    snprintf(detail, sizeof detail, "a=%ld (want 600), arr[] grew by %ld (want 500000)", a, sum);
    ABI_EXPECT("cancel_rmw_loop", a == 600 && sum == 500000, detail);
}

/* Stores only, through memset / memcpy as well. */
static void cancel_memops(void) {
    long src[NARR];
    for (int i = 0; i < NARR; i++)
        src[i] = 7 * i;
    reset();
    __transaction_atomic {
        memset(arr, 0xff, sizeof arr / 2);
        memcpy(arr + NARR / 2, src, sizeof arr / 2);
        d = 4;
        if (cancel_now)
            __transaction_cancel;
    }
    ABI_EXPECT("cancel_memops", arr_is_reset() && d == 400, "arr[] or d not restored");
}

/* Locals of the function, changed in the cancelled transaction. */
static void cancel_locals(void) {
    long loc = 1;
    long buf[4] = {1, 2, 3, 4};
    long *volatile escape = buf; /* the address escapes: buf lives in memory */
    (void)escape;
    reset();
    __transaction_atomic {
        loc = 2;
        buf[1] = 20;
        a = loc + buf[1];
        if (cancel_now)
            __transaction_cancel;
    }
    char detail[96];
    snprintf(detail, sizeof detail, "loc=%ld (want 1), buf[1]=%ld (want 2), a=%ld (want 100)", loc,
             buf[1], a);
    ABI_EXPECT("cancel_locals", loc == 1 && buf[1] == 2 && a == 100, detail);
}

/* malloc in a cancelled transaction is freed: no leak over many of them. */
static void cancel_malloc(void) {
    reset();
    for (int i = 0; i < 200; i++) /* warm up the runtime's own logs */
        __transaction_atomic {
            shared_ptr = malloc(256);
            if (cancel_now)
                __transaction_cancel;
        }
    size_t before = abi_heap_in_use();
    for (int i = 0; i < 1000; i++)
        __transaction_atomic {
            long *p = malloc(256);
            p[0] = i;
            shared_ptr = p;
            if (cancel_now)
                __transaction_cancel;
        }
    size_t after = abi_heap_in_use();
    char detail[128];
    snprintf(detail, sizeof detail, "heap grew by %zu bytes over 1000 cancelled mallocs of 256",
             after > before ? after - before : 0);
    ABI_EXPECT("cancel_malloc", shared_ptr == NULL && after < before + 64 * 1024, detail);
}

/* ------------------------------------------------------------- nested */

static void nested_cancel(void) {
    reset();
    __transaction_atomic {
        a = 10;
        __transaction_atomic {
            b = 20;
            if (cancel_now)
                __transaction_cancel;
            d = 40; /* never reached */
        }
        c = 30;
    }
    EXPECT5("nested_cancel", 10, 200, 30, 400, 500);
}

/* The nested transaction writes again what its parent wrote: the cancel must
 * bring back the parent's value, not the value before the outer transaction
 * and not the nested one's. */
static void nested_rewrite(void) {
    reset();
    __transaction_atomic {
        a = 10;
        __transaction_atomic {
            a = 11;
            b = 9;
            if (cancel_now)
                __transaction_cancel;
        }
        c = 3;
    }
    EXPECT5("nested_rewrite", 10, 200, 3, 400, 500);
}

/* The nested transaction reads its parent's write, updates it, cancels; the
 * parent then reads its own value again. */
static void nested_read_own(void) {
    reset();
    __transaction_atomic {
        a = 5;
        __transaction_atomic {
            long t = a;
            a = t + 1;
            c = t;
            if (cancel_now)
                __transaction_cancel;
        }
        d = a;
    }
    EXPECT5("nested_read_own", 5, 200, 300, 5, 500);
}

static void nested_three_levels(void) {
    reset();
    __transaction_atomic {
        a = 1;
        __transaction_atomic {
            b = 2;
            __transaction_atomic {
                c = 3;
                if (cancel_now)
                    __transaction_cancel;
            }
            d = 4;
        }
        e = 5;
    }
    EXPECT5("nested_three_levels", 1, 2, 300, 4, 5);

    /* the middle one cancelled after its own nested transaction committed */
    reset();
    __transaction_atomic {
        a = 1;
        __transaction_atomic {
            b = 2;
            __transaction_atomic { c = 3; }
            if (cancel_now)
                __transaction_cancel;
        }
        e = 5;
    }
    EXPECT5("nested_middle_cancel", 1, 200, 300, 400, 5);
}

/* Then the outermost one is cancelled too: nothing survives. */
static void nested_then_outer_cancel(void) {
    reset();
    __transaction_atomic {
        a = 1;
        __transaction_atomic {
            b = 2;
            if (cancel_now)
                __transaction_cancel;
        }
        c = 3;
        if (cancel_now)
            __transaction_cancel;
    }
    EXPECT5("nested_then_outer_cancel", 100, 200, 300, 400, 500);
}

/* One outer transaction, a hundred nested ones, every odd one cancelled. */
static void nested_loop(void) {
    reset();
    __transaction_atomic {
        for (int k = 0; k < NARR; k++) {
            __transaction_atomic {
                arr[k] = -1;
                if ((k & 1) && cancel_now)
                    __transaction_cancel;
            }
        }
        a = 1;
    }
    int ok = a == 1;
    for (int k = 0; k < NARR; k++)
        ok &= arr[k] == ((k & 1) ? k : -1);
    ABI_EXPECT("nested_loop", ok, "arr[] should be -1 at even k, unchanged at odd k");
}

/* ------------------------------------------------------ cancel [[outer]] */

static void cancel_outer(void) {
    reset();
    __transaction_atomic [[outer]] {
        a = 1;
        __transaction_atomic {
            b = 2;
            if (cancel_now)
                __transaction_cancel [[outer]];
            d = 4; /* never reached */
        }
        c = 3; /* never reached */
    }
    EXPECT5("cancel_outer", 100, 200, 300, 400, 500);
}

__attribute__((transaction_may_cancel_outer, noinline)) static void write_and_cancel_outer(long v) {
    arr[1] = v;
    b = v;
    if (cancel_now)
        __transaction_cancel [[outer]];
    c = v;
}

static void cancel_outer_from_function(void) {
    reset();
    __transaction_atomic [[outer]] {
        a = 1;
        __transaction_atomic {
            __transaction_atomic { write_and_cancel_outer(7); }
        }
        e = 5;
    }
    EXPECT5("cancel_outer_function", 100, 200, 300, 400, 500);
    ABI_EXPECT("cancel_outer_function_array", arr[1] == 1, "arr[1] not restored");
}

/* ----------------------------------------------------------- concurrent */

#define CONC_OPS 1500
static long conc_counter, conc_cancelled_writes;

__attribute__((noinline)) static void conc_one(long self, long i) {
    __transaction_atomic {
        abi_count_attempt();
        conc_counter = conc_counter + 1;
        arr[self] = arr[self] + 1;
        if (i % 3 == 0 && cancel_now) {
            conc_cancelled_writes = -1; /* undone with the rest */
            __transaction_cancel;
        }
    }
}

static void *conc_thread(void *arg) {
    long self = (long)(intptr_t)arg;
    for (long i = 0; i < CONC_OPS; i++)
        conc_one(self, i);
    return NULL;
}

/* Two threads, a third of their transactions cancelled. */
static void cancel_concurrent(void) {
    reset();
    conc_counter = 0;
    conc_cancelled_writes = 0;
    pthread_t th[2];
    for (long t = 0; t < 2; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, conc_thread, (void *)(intptr_t)t), 0);
    for (int t = 0; t < 2; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);
    long kept = CONC_OPS - (CONC_OPS + 2) / 3;
    char detail[160];
    snprintf(detail, sizeof detail,
             "counter=%ld (want %ld), arr[0]=%ld arr[1]=%ld (want %ld), "
             "cancelled write=%ld (want 0)",
             conc_counter, 2 * kept, arr[0], arr[1] - 1, kept, conc_cancelled_writes);
    ABI_EXPECT("cancel_concurrent",
               conc_counter == 2 * kept && arr[0] == kept && arr[1] == 1 + kept &&
                   conc_cancelled_writes == 0,
               detail);
}

int main(void) {
    abi_init("abi_cancel");
    outer_cancel();
    cancel_rmw();
    cancel_rmw_loop();
    cancel_memops();
    cancel_locals();
    cancel_malloc();
    nested_cancel();
    nested_rewrite();
    nested_read_own();
    nested_three_levels();
    nested_then_outer_cancel();
    nested_loop();
    cancel_outer();
    cancel_outer_from_function();
    cancel_concurrent();
    return abi_finish();
}
