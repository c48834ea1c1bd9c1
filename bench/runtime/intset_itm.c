/* SPDX-License-Identifier: MIT */
/* intset_itm.c - the integer-set operations as gcc transactions (libitm).
 *
 * Compiled with -fgnu-tm (and only this file, with bank_itm.c): the plain
 * instantiation of intset_ds.h, the same code as seq / mutex / rwlock, and
 * each operation one __transaction_atomic. gcc instruments every shared access
 * inside the transaction and maps malloc / free to _ITM_malloc / _ITM_free;
 * GCC's libitm runs the method named by ITM_DEFAULT_METHOD, which the runner
 * sets in each measurement's child process before its first transaction (see
 * bench_itm_prepare() in bench_util.c); under txkit's libitm drop-in (`txkit
 * run`), txkit runs them with the method txkit_set_method() chose.
 */
#include "intset.h"

#include <stdlib.h>

#ifdef BENCH_NO_ITM
/* Built without gcc's -fgnu-tm / libitm: the itm rows are n/a (see
 * bench_select_method()), so these are never called. */
#define DEFINE_ITMOP(S, op)                          \
    int S##_##op##_itm(struct intset *s, long key) { \
        (void)s;                                     \
        (void)key;                                   \
        abort();                                     \
    }
#else
#include "itm_probe.h"

#include <string.h>
#include <unistd.h>

/* Neither path is ever taken by a correct run: an allocation failure, or an
 * impossible shape (libitm's methods are opaque, so a transaction never sees
 * an inconsistent state). transaction_pure: called without instrumentation
 * from inside the transaction, which it ends with the process (the measurement
 * is then reported as crashed, with this message on stderr). */
__attribute__((transaction_pure, noreturn, cold)) static void itm_die(const char *what) {
    static const char pre[] = "error: intset (itm): ";
    ssize_t rc = write(STDERR_FILENO, pre, sizeof pre - 1);
    rc = write(STDERR_FILENO, what, strlen(what));
    rc = write(STDERR_FILENO, "\n", 1);
    (void)rc;
    _exit(2);
}

#define DS_NAME(x) x##_plain
#define DS_LD(p) (*(p))
/* DS_LD_SEL: the default, both children loaded, as for every method. */
#define DS_ST(p, v) ((void)(*(p) = (v)))
#define DS_ALLOC(n) malloc(n)
#define DS_FREE(p) free(p)
#define DS_BAD() itm_die("corrupt structure seen inside a transaction")
#define DS_OOM() itm_die("out of memory")
#include "intset_ds.h"

/* One transaction per operation, a separate function as for txkit's TX_ATOMIC
 * wrappers in intset.c. */
#define DEFINE_ITMOP(S, op)                                                    \
    __attribute__((noinline)) int S##_##op##_itm(struct intset *s, long key) { \
        int r;                                                                 \
        int probe = itm_probe_pick();                                          \
        __transaction_atomic {                                                 \
            if (probe)                                                         \
                itm_probe_attempt();                                           \
            r = S##_##op##_plain(s, key);                                      \
            if (probe)                                                         \
                itm_probe_end();                                               \
        }                                                                      \
        if (probe)                                                             \
            itm_probe_commit();                                                \
        return r;                                                              \
    }
#endif /* BENCH_NO_ITM */

#define DEFINE_ITMOPS(S) DEFINE_ITMOP(S, contains) DEFINE_ITMOP(S, insert) DEFINE_ITMOP(S, delete)
DEFINE_ITMOPS(list)
DEFINE_ITMOPS(hash)
DEFINE_ITMOPS(tree)
DEFINE_ITMOPS(skip)
