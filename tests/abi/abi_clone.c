/* SPDX-License-Identifier: MIT */
/* abi_clone.c - transaction_safe and transaction_callable functions called
 * inside transactions, directly and through function pointers.
 *
 * A call through a pointer inside a transaction asks the runtime for the
 * transactional clone of the target: _ITM_getTMCloneSafe for a pointer of
 * transaction_safe type (atomic transactions), _ITM_getTMCloneOrIrrevocable
 * for any other pointer (relaxed transactions), which returns the clone when
 * there is one and otherwise makes the transaction irrevocable and returns
 * the function itself. The clone tables come from this program and from a
 * -fgnu-tm library loaded with dlopen (argv[1]), loaded twice.
 *
 * That the clone (with barriers), not the plain function, ran inside an atomic
 * transaction shows with __transaction_cancel: the clone's stores are undone,
 * a plain function's would not be.
 *
 * usage: abi_clone LIBABI_CLONELIB.so
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "abi_common.h"

typedef void (*add_fn)(long *, long) __attribute__((transaction_safe));
typedef long (*scale_fn)(long *, long);

static long v[4];
static long plain_calls;
int cancel_now = 1; /* extern linkage: gcc cannot fold the cancel away */

__attribute__((transaction_safe)) static void add_one(long *p, long d) { *p += d; }
__attribute__((transaction_safe)) static void add_twice(long *p, long d) { *p += 2 * d; }
__attribute__((transaction_safe)) void add_square(long *p, long d);
__attribute__((transaction_safe)) void add_square(long *p, long d) { *p += d * d; }
/* Stores only, for the cancelled transactions: a read-modify-write cancelled
 * at -O2 is abi_cancel's business (check cancel_rmw, a libitm defect). */
__attribute__((transaction_safe)) static void set_double(long *p, long d) { *p = 2 * d; }
__attribute__((transaction_safe)) static void set_neg(long *p, long d) { *p = -d; }

__attribute__((transaction_callable, noinline)) long scale_callable(long *p, long k) {
    *p *= k;
    return *p;
}

/* No clone (gcc would make one for any function of this file it can prove
 * safe, unless told otherwise): through a pointer it can only run
 * irrevocably. */
__attribute__((transaction_unsafe, noinline)) long scale_plain(long *p, long k) {
    plain_calls++;
    *p *= k;
    return *p;
}

static add_fn table[3] = {add_one, add_twice, add_square};
static add_fn setters[2] = {set_double, set_neg};
add_fn chosen; /* loaded inside the transaction (extern: not folded to a direct call) */
scale_fn chosen_scale;
size_t (*chosen_strlen)(const char *);

/* Hides where a pointer came from, so that gcc cannot turn the call through
 * it into a direct call (or fold it away). */
#define LAUNDER(fn)                      \
    __extension__({                      \
        __typeof__(&(fn)) l_ = &(fn);    \
        __asm__ volatile("" : "+r"(l_)); \
        l_;                              \
    })

static void reset(void) {
    for (int i = 0; i < 4; i++)
        v[i] = 10 * (i + 1);
}

/* Direct calls and calls through the table, committed and cancelled. */
static void safe_calls(void) {
    reset();
    __transaction_atomic {
        add_one(&v[0], 5); /* direct: gcc calls the clone itself */
        add_square(&v[1], 3);
        for (int i = 0; i < 3; i++)
            table[i](&v[2], i + 1); /* _ITM_getTMCloneSafe, three targets */
    }
    CHECK_EQ(v[0], 15);
    CHECK_EQ(v[1], 29);
    CHECK_EQ(v[2], 30 + 1 + 4 + 9);
    abi_summary("safe=%ld,%ld,%ld", v[0], v[1], v[2]);

    reset();
    chosen = LAUNDER(set_double);
    __transaction_atomic {
        add_fn f = chosen;
        f(&v[3], 7);
        setters[1](&v[0], 1);
        if (cancel_now)
            __transaction_cancel;
        v[1] = -1;
    }
    CHECK_EQ(v[3], 40); /* the clone's stores were undone */
    CHECK_EQ(v[0], 10);
    CHECK_EQ(v[1], 20);
    abi_summary("cancelled=%ld,%ld,%ld", v[3], v[0], v[1]);
}

/* Relaxed transactions: a callable function through a pointer keeps the
 * transaction as it was; a function without clone makes it irrevocable. */
static void relaxed_calls(void) {
    int before, after;
    long r;
    reset();
    chosen_scale = LAUNDER(scale_callable);
    __transaction_relaxed {
        before = _ITM_inTransaction();
        r = chosen_scale(&v[0], 3);
        after = _ITM_inTransaction();
    }
    CHECK_EQ(r, 30);
    CHECK_EQ(v[0], 30);
    CHECK(before == ABI_RETRYABLE || before == ABI_IRREVOCABLE);
    if (before == ABI_RETRYABLE)
        CHECK_EQ(after, ABI_RETRYABLE); /* the clone was found: no need to serialize */
    else
        CHECK_EQ(after, ABI_IRREVOCABLE);

    /* A function without clone: irrevocable, or, in a hardware
     * transaction, called as it is (gcc runs the uninstrumented code there
     * and the CPU keeps it atomic). */
    static int hw; /* static: a local here is live across gcc's checkpoint (-Wclobbered) */
    chosen_scale = LAUNDER(scale_plain);
    __transaction_relaxed {
        v[1] += 1;
        r = chosen_scale(&v[1], 2);
        after = _ITM_inTransaction();
        hw = abi_in_hardware();
        v[2] = r;
    }
    CHECK(after == (hw ? ABI_RETRYABLE : ABI_IRREVOCABLE));
    CHECK_EQ(plain_calls, 1);
    CHECK_EQ(v[1], 42);
    CHECK_EQ(v[2], 42);

    /* a libc function: no clone anywhere */
    size_t len;
    chosen_strlen = LAUNDER(strlen);
    __transaction_relaxed {
        len = chosen_strlen("transaction");
        after = _ITM_inTransaction();
        hw = abi_in_hardware();
        v[3] = (long)len;
    }
    CHECK_EQ(len, 11);
    CHECK_EQ(v[3], 11);
    CHECK(after == (hw ? ABI_RETRYABLE : ABI_IRREVOCABLE));
    abi_summary("relaxed=%ld,%ld,%ld,%ld plain_calls=%ld", v[0], v[1], v[2], v[3], plain_calls);
}

/* The library's clone table: found through dlsym'ed pointers, then gone and
 * registered again after dlclose / dlopen. */
static void library_calls(const char *path, int round) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        CHECK(h != NULL);
    }
    add_fn add = (add_fn)dlsym(h, "clonelib_add");
    add_fn set = (add_fn)dlsym(h, "clonelib_set");
    scale_fn scale = (scale_fn)dlsym(h, "clonelib_scale");
    long *calls = (long *)dlsym(h, "clonelib_calls");
    CHECK(add && set && scale && calls);
    CHECK_EQ(*calls, 0); /* a fresh copy each round */

    reset();
    __transaction_atomic {
        add(&v[0], 7);
        add(&v[1], -5);
    }
    CHECK_EQ(v[0], 17);
    CHECK_EQ(v[1], 15);
    CHECK_EQ(*calls, 2);

    __transaction_atomic {
        set(&v[2], 100);
        if (cancel_now)
            __transaction_cancel;
    }
    CHECK_EQ(v[2], 30); /* the library clone's store was undone */
    CHECK_EQ(*calls, 2);

    int before, after;
    long r;
    __transaction_relaxed {
        before = _ITM_inTransaction();
        r = scale(&v[3], 3);
        after = _ITM_inTransaction();
    }
    CHECK_EQ(r, 120);
    CHECK_EQ(*calls, 3);
    if (before == ABI_RETRYABLE)
        CHECK_EQ(after, ABI_RETRYABLE);
    abi_summary("lib%d=%ld,%ld,%ld,%ld", round, v[0], v[1], v[2], v[3]);
    CHECK_EQ(dlclose(h), 0);
}

/* Many calls through the table (and enough transactions for fault
 * injection to hit some). */
__attribute__((noinline)) static void table_call(int i) {
    __transaction_atomic { table[i % 3](&v[i % 4], i % 7); }
}

static void many_table_calls(void) {
    long want[4];
    reset();
    for (int k = 0; k < 4; k++)
        want[k] = v[k];
    for (int i = 0; i < 600; i++) {
        long d = i % 7;
        want[i % 4] += i % 3 == 0 ? d : i % 3 == 1 ? 2 * d : d * d;
        table_call(i);
    }
    for (int k = 0; k < 4; k++)
        CHECK_EQ(v[k], want[k]);
    abi_summary("table=%ld,%ld,%ld,%ld", v[0], v[1], v[2], v[3]);
}

int main(int argc, char **argv) {
    abi_init("abi_clone");
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBABI_CLONELIB.so\n", argv[0]);
        return 2;
    }
    safe_calls();
    relaxed_calls();
    for (int round = 1; round <= 2; round++)
        library_calls(argv[1], round);
    /* and the program's own table still works after the library's went away */
    safe_calls();
    many_table_calls();
    return abi_finish();
}
