/* SPDX-License-Identifier: MIT */
/* solo.h - the parked clock of a lone thread (runtime/solo.c).
 *
 * The auto method runs a thread that runs transactions alone serially
 * (choose.h: tk_auto_solo, tk_g.solo names it). A serial attempt holds the
 * global clock (odd), which keeps every other transaction out; taking and
 * giving it back costs two atomic operations per transaction. So at the commit
 * of such a transaction the thread keeps the clock ("parks" it: tk_g.solo =
 * the thread | TK_SOLO_PARKED) and its next transactions begin and commit
 * without any atomic operation (txn.c: tk_solo_begin, the fast commit): for
 * everyone else it is one long serial transaction.
 *
 * Anyone who then waits for the clock (tk_wait_clock_even, a cx section that
 * finds it odd, a new transaction of another thread) revokes it
 * (tk_solo_revoke): marks tk_g.solo TK_SOLO_REVOKING, makes every thread of
 * the process pass a memory barrier (membarrier(2); then TK_SOLO_FENCED, so
 * that the next waiters skip it), and gives the clock back for the lone
 * thread once that thread is outside a transaction (t->solo_in 0). The lone
 * thread stores solo_in = 1 before it looks at tk_g.solo, with no
 * fence: the barrier the revoker forces on it orders the two, so either the
 * revoker sees solo_in = 1 (and waits, or leaves the rest to the thread's
 * commit) or the thread sees the mark (and takes the general path). Without
 * membarrier(2) nothing is parked.
 *
 * A transaction on a parked clock runs alone and cannot abort but by its own
 * hand (a restart, which unparks first): it does not call the contention
 * manager's begin and commit hooks, which have nothing to decide or reset
 * (the commit that parked the clock had no abort; fast_ok rules out the
 * scheduler), and is counted once, in one word, when it commits
 * (stats/format.h: solo_commits). A transaction after one of the same kind
 * that committed there with nothing left to do but its own code takes the
 * express begin and commit (runtime/express.h). */
#ifndef TK_SOLO_H
#define TK_SOLO_H

#include "runtime/internal.h"
#include "runtime/sched.h"

/* tk_g.solo's low bits beside a descriptor's address (thread.c: 128-aligned). */
#define TK_SOLO_PARKED ((uintptr_t)2)   /* the named thread keeps the clock between transactions */
#define TK_SOLO_REVOKING ((uintptr_t)4) /* someone is taking it back */
#define TK_SOLO_FENCED ((uintptr_t)8)   /* ... and the barrier after the mark is done */
#define TK_SOLO_FLAGS (TK_SOLO_PARKED | TK_SOLO_REVOKING)
/* tk_thread.express: set when the express begin applies. */
#define TK_EXPRESS 0x80000000u
static inline uintptr_t tk_solo_owner(uintptr_t s) { return s & ~(uintptr_t)15; }

/* Can t's next transactions take the solo fast path (and so keep a parked
 * clock)? The auto method, no fault injection, no scheduler. Owner thread. */
static inline bool tk_solo_fast_ok(const tk_thread *t) {
    return tk_configured_method(t) == TXKIT_AUTO && !tk_cfg.any_fault && !tk_sched_on &&
           !t->sched.queue_held && t->slot;
}

/* At the commit of a serial attempt, still holding the clock: keep it parked
 * (true: the caller must not release it) when t runs alone, began it with
 * TX_ATOMIC or gcc's __transaction (whose begins take the fast path,
 * tk_solo_begin) and had no abort. The caller asks tk_solo_fast_ok first. Owner
 * thread. */
TK_HIDDEN bool tk_solo_park(tk_thread *t);
/* End t's parked state, from inside its attempt (solo_in 1: the transaction
 * goes on elsewhere, and is counted now) or outside: afterwards t->solo_in is
 * 0 and the parked clock is given back (by t or by a revoker). No-op when t
 * parks nothing. Owner thread. */
TK_HIDDEN void tk_solo_unpark(tk_thread *t);
/* Another thread keeps the clock parked: take it back if that thread is
 * outside its transactions, else mark it so that it gives it back at its
 * commit. Never waits; waiters call it again now and then. self may be NULL;
 * when self parks the clock itself and is outside a transaction, unparks it.
 * Any thread, outside a transaction of its own. */
TK_HIDDEN void tk_solo_revoke(tk_thread *self);
static inline bool tk_solo_parked(void) {
    return __atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED) & TK_SOLO_FLAGS;
}
/* Is the clock parked for t, and not being revoked? Any thread. */
static inline bool tk_solo_parked_by(const tk_thread *t) {
    /* + for |: t is 128-aligned (thread.c), and gcc makes one lea of it */
    return __atomic_load_n(&tk_g.solo, __ATOMIC_RELAXED) == (uintptr_t)t + TK_SOLO_PARKED;
}
/* The end of t's attempt on its parked clock, after its writes: no barriers,
 * solo_in 0. False when the clock was revoked meanwhile: the caller gives it
 * back (tk_solo_unpark; tk_solo_leave does). Owner thread, at the commit. */
static inline bool tk_solo_left(tk_thread *t) {
    tk_attempt_ended(t);
    __atomic_store_n(&t->solo_in, 0, __ATOMIC_RELEASE); /* after our writes */
    return TXKIT_LIKELY(tk_solo_parked_by(t));
}
/* tk_solo_left, and the clock given back when it was revoked meanwhile. */
static inline bool tk_solo_leave(tk_thread *t) {
    if (tk_solo_left(t))
        return true;
    tk_solo_unpark(t); /* revoked meanwhile: give the clock back */
    return false;
}

#endif /* TK_SOLO_H */
