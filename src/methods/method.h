/* method.h - the one interface every TM method implements (one file each).
 *
 * The engine (runtime/txn.c) picks a method per attempt, calls begin(), lets
 * the user's code run with the method's barriers, and then calls commit() or,
 * for a software abort, rollback(). A hardware method's aborts never reach
 * rollback(): the CPU undoes the attempt and begin() returns again, with the
 * cause.
 */
#ifndef TK_METHOD_H
#define TK_METHOD_H

#include "runtime/internal.h"

/* Success for begin(), commit() and make_irrevocable(). Failures are a
 * txkit_cause_t, and TXKIT_CAUSE_CONFLICT is 0: never test results for zero. */
#define TK_OK (-1)

struct tk_method {
    const char *name;
    txkit_method_t id;
    /* TXKIT_ACC_* bits for the inline barriers while an attempt runs. */
    unsigned access;
    /* Start an attempt. TK_OK, or a txkit_cause_t when the attempt ended
     * before user code could run (hardware aborts come back this way). */
    int (*begin)(tk_thread *t);
    /* Try to commit. TK_OK when committed (shared memory final, locks
     * released), else a txkit_cause_t with the attempt still to be rolled back. */
    int (*commit)(tk_thread *t);
    /* Undo the attempt's effects on shared memory and release what it holds. */
    void (*rollback)(tk_thread *t);
    /* Barriers for any size 1..8 (tx_memcpy and friends split bigger ranges). */
    void (*load)(tk_thread *t, void *dst, const void *addr, size_t size);
    void (*store)(tk_thread *t, void *addr, const void *src, size_t size);
    /* Become irrevocable in place: TK_OK, else a cause to restart with. */
    int (*make_irrevocable)(tk_thread *t);
    /* Abort the attempt explicitly (tx_restart, injection): may not return. */
    void (*explicit_abort)(tk_thread *t, int cause);
};

extern const struct tk_method tk_method_htm TK_HIDDEN;
extern const struct tk_method tk_method_stm TK_HIDDEN;
extern const struct tk_method tk_method_serial TK_HIDDEN;

TK_HIDDEN const struct tk_method *tk_method_by_id(int id);

#endif /* TK_METHOD_H */
