/* SPDX-License-Identifier: MIT */
/* method.h - the one interface every TM method implements (one file each).
 *
 * The engine (runtime/txn.c) picks a method per attempt, calls begin(), lets
 * the user's code run with the method's barriers, and then calls commit() or,
 * for a software abort, rollback(). A hardware method's aborts never reach
 * rollback(): the CPU undoes the attempt and begin() returns again, with the
 * cause.
 *
 * This is the only door into a method: code outside src/methods asks for
 * capabilities (TK_CAP_*) and calls the hooks below, never a method by name.
 * A new method is a file of its own defining a struct tk_method and a row in
 * methods/table.c (methods/glock.c is the smallest, selected by
 * TXKIT_METHOD=glock in tests/runtime/test_method_glock.c); the policy that
 * chooses among methods is runtime/policy.c.
 */
#ifndef TK_METHOD_H
#define TK_METHOD_H

#include "runtime/internal.h"


/* What a method is, for the code outside src/methods that must treat
 * methods differently: it asks for a capability, never for a method. */
enum {
    TK_CAP_HARDWARE = 1u << 0,       /* the CPU runs and undoes attempts (aborts come back
                                     * through begin(), never to rollback()) */
    TK_CAP_SOFTWARE = 1u << 1,       /* speculative in software: read log, write set,
                                     * validation (may not see others' writes in place) */
    TK_CAP_UNDO_LOG = 1u << 2,       /* writes in place and keeps an undo log (t->ulog) */
    TK_CAP_UNINSTRUMENTED = 1u << 3, /* can run code without barriers (gcc's
                                      * uninstrumented clone) while speculative */
    TK_CAP_CLOSED_NESTING = 1u << 4, /* can undo part of an attempt (nested cancel) */
    TK_CAP_EXCLUSIVE = 1u << 5,      /* holds the global clock (odd) for the whole attempt:
                                     * no other transaction runs meanwhile */
};

struct tk_method {
    const char *name;
    /* Index in tk_method_table (methods/table.c); the public txkit_method_t
     * for the public methods. */
    int id;
    /* Where its commits and aborts are counted and its fault injection is
     * set: a public txkit_method_t (TXKIT_HTM..TXKIT_SERIAL). */
    int stats_id;
    unsigned caps; /* TK_CAP_* */
    /* TXKIT_ACC_* bits for the inline barriers while an attempt runs. */
    unsigned access;
    /* Start an attempt, forgetting whatever state of its own the last one
     * left (no hook per attempt: the hot path). TK_OK, or a txkit_cause_t when
     * the attempt ended before user code could run (hardware aborts come back
     * this way). */
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

    /* Optional hooks (NULL: nothing to do). All on the owner thread. */
    /* A thread's descriptor is created / freed (thread.c): per-thread state. */
    void (*thread_init)(tk_thread *t);
    void (*thread_fini)(tk_thread *t);
    /* Closed nesting (TK_CAP_CLOSED_NESTING, abi/itm.c): save into *save
     * what rollback_to() needs to undo the attempt back to this point (the
     * caller frees save with tk_vec_free); state in place is the caller's. */
    void (*checkpoint)(tk_thread *t, tk_vec *save);
    void (*rollback_to)(tk_thread *t, const tk_vec *save);
    /* cx (cx/cx.c): the attempt now holds, for real, the lock whose word is
     * at addr, which it read: what it read there is current again. */
    void (*refresh_read)(tk_thread *t, const void *addr);
};

/* The methods, by id: the one list of them (methods/table.c). Slot 0
 * (TXKIT_AUTO) is NULL: auto is a policy (runtime/policy), not a method.
 * The public ones come first, then methods that only a name selects
 * (TXKIT_METHOD=<name>, for tests). Read-only: any thread. */
#define TK_NMETHODS_ALL (TXKIT_NMETHODS + 1)
extern const struct tk_method *const tk_method_table[TK_NMETHODS_ALL] TK_HIDDEN;
static inline bool tk_method_has(const struct tk_method *m, unsigned cap) {
    return m && (m->caps & cap);
}
/* Does t's attempt hold the clock itself (an exclusive method's: serial.c,
 * glock.c install serial_clock)? Owner thread; or, as fork's prepare handler
 * asks, the forking thread about itself. */
static inline bool tk_holds_clock(const tk_thread *t) {
    return tk_method_has(t->ctl.m, TK_CAP_EXCLUSIVE) &&
           __atomic_load_n(&tk_g.clock, __ATOMIC_RELAXED) == t->serial_clock;
}
/* The running method's store, tk_undo_store inline when the access bits say
 * so (TK_ACC_UNDO_STORE), software TM's inline buffered store when it may
 * (TXKIT_ACC_BUFSTORE). Owner thread, inside an attempt, t not doomed. */
__attribute__((always_inline)) static inline void tk_method_store(tk_thread *t, void *addr,
                                                                  const void *src, size_t size) {
    unsigned acc = _txkit_tls.access;
    uint64_t v = 0;
    if (acc & TK_ACC_UNDO_STORE) {
        tk_undo_store(t, addr, src, size);
        return;
    }
    if (size == 8 || size == 4) { /* a constant in the barriers: txkit/tx.h's inline store */
        __builtin_memcpy(&v, src, size);
        if (_txkit_store_buf(addr, v, (unsigned)size, acc))
            return;
    }
    t->ctl.m->store(t, addr, src, size);
}
/* Name of method id (any of the table, "auto" for 0), NULL if none. Any thread. */
TK_HIDDEN const char *tk_method_name(int id);
/* The id of a method name (all of the table, and "auto"), or -1. Any thread. */
TK_HIDDEN int tk_method_lookup(const char *name);

#endif /* TK_METHOD_H */
