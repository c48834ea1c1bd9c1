/* SPDX-License-Identifier: MIT */
/* vis.c - visible reads for software TM, so that a contention manager
 * can decide conflicts (timestamp, size, prio).
 *
 * NOrec alone never knows who it conflicts with: a reader finds out at
 * validation that *something* changed. Under NOrec a conflict only ever
 * means "a committing writer overwrites what a running transaction read"
 * (writes are buffered, so two writers meet only through their reads). So it
 * is enough to make reads visible and let the writer decide at its commit:
 *
 *   - each running transaction publishes a read signature in its slot: a
 *     4096-bit Bloom filter of the words it read, in its own cache lines;
 *   - a writer, holding the NOrec clock at its commit point, tests its write
 *     set against the signature of every other running transaction, and for
 *     each hit asks the manager: it kills the reader (CAS on the reader's
 *     status word: ACTIVE -> KILLED) or, when the reader wins, gives the
 *     clock back unused, waits until that reader is done (it serializes
 *     first), and commits after.
 *
 * A transaction checks its status at every barrier and at its own commit
 * point. Decisions follow the manager's total order, so waits cannot form a
 * cycle: if A waits for B, B beats A and kills A rather than wait for it.
 * Ordering: a reader sets its bit with a locked OR (a full barrier), then
 * loads the data; a writer takes the clock (locked), then loads the
 * signatures. So either the writer sees the bit, or the reader's load comes
 * after the clock moved and NOrec makes it read the new value (it
 * revalidates, and reads again, before it returns that load). A conflict
 * abort no manager decided (a party that is not visible) is counted apart,
 * as cm_undecided; among visible software transactions there is none.
 *
 * Correctness stays NOrec's (value validation under the clock); this layer
 * only decides *who* aborts. Parties that are not visible - hardware
 * transactions, serial ones, threads beyond VIS_SLOTS - are still caught by
 * validation, undecided. Bloom collisions only cause extra decisions.
 *
 * Status word of a slot: serial << 2 | state. The serial tells attempts
 * apart, so a kill aimed at one attempt can never hit the next.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "methods/method.h"

#define VIS_SLOTS 64
#define SIG_WORDS 64 /* 4096 bits: few false conflicts for reads of a few hundred words */

enum { ST_IDLE = 0, ST_ACTIVE = 1, ST_COMMITTING = 2, ST_KILLED = 3 };

/* What other threads read of a transaction. Slots are static: threads'
 * descriptors are freed at exit, slots never. */
struct vis_slot {
    _Alignas(TK_CACHELINE) uint64_t status;
    int prio;
    int irrevocable; /* pinned: wins every conflict, never killed */
    unsigned size;   /* words read + written so far */
    uint64_t start;  /* tsc of the transaction's first attempt */
    int used;
    _Alignas(TK_CACHELINE) uint64_t sig[SIG_WORDS];
};

static struct vis_slot slots[VIS_SLOTS];
static int slots_hi;   /* slots [0, slots_hi) were ever used */
static int slots_used; /* slots taken now (changed under slot_lock) */
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint64_t state_of(uint64_t st) { return st & 3; }

static inline unsigned sig_bit(uintptr_t word) {
    return (unsigned)(((uint64_t)(word >> 3) * 0x9e3779b97f4a7c15ull) >> (64 - 12));
}

/* The thread's slot, taken at its first visible attempt; -1 while all are
 * taken. A thread that found none asks again once one is free (a look at
 * slots_used, no lock): else a thread that began while 64 others ran would
 * stay invisible for its whole life, every conflict of it undecided, even
 * alone with three others. */
static int slot_get(tk_thread *t) {
    if (TXKIT_LIKELY(t->vis.slot > 0))
        return t->vis.slot - 1;
    if (t->vis.slot < 0 && __atomic_load_n(&slots_used, __ATOMIC_RELAXED) >= VIS_SLOTS)
        return -1;
    t->vis.slot = 0;
    tk_mutex_lock(&slot_lock);
    for (int i = 0; i < VIS_SLOTS; i++) {
        if (!slots[i].used) {
            slots[i].used = 1;
            __atomic_store_n(&slots_used, slots_used + 1, __ATOMIC_RELAXED);
            t->vis.slot = i + 1;
            if (i + 1 > slots_hi)
                __atomic_store_n(&slots_hi, i + 1, __ATOMIC_RELEASE);
            break;
        }
    }
    tk_mutex_unlock(&slot_lock);
    if (!t->vis.slot)
        t->vis.slot = -1; /* all taken: this thread stays invisible */
    return t->vis.slot - 1;
}

static void vis_thread_exit(tk_thread *t, int arg) {
    (void)arg;
    if (t->vis.slot > 0) {
        tk_mutex_lock(&slot_lock);
        slots[t->vis.slot - 1].used = 0;
        __atomic_store_n(&slots_used, slots_used - 1, __ATOMIC_RELAXED);
        tk_mutex_unlock(&slot_lock);
    }
    t->vis.slot = 0;
}

/* fork(): in the child, the slots of the threads that are gone are free and
 * idle (a writer must not wait for, or be killed by, a reader that no longer
 * exists); the forking thread keeps its own. */
static void vis_atfork(tk_thread *me, int phase) {
    tk_atfork_mutex(&slot_lock, phase);
    if (phase != TK_FORK_CHILD)
        return;
    int mine = me && me->vis.slot > 0 ? me->vis.slot - 1 : -1;
    slots_used = mine >= 0;
    for (int i = 0; i < VIS_SLOTS; i++) {
        if (i == mine)
            continue;
        struct vis_slot *s = &slots[i];
        s->used = 0;
        s->irrevocable = 0;
        s->status = (s->status & ~3ull) | ST_IDLE;
        memset(s->sig, 0, sizeof s->sig);
    }
}

static inline struct vis_slot *my_slot(const tk_thread *t) { return &slots[t->vis.slot - 1]; }

static void party_of(struct _txkit_cm_party *p, const struct vis_slot *s, unsigned id) {
    p->prio = __atomic_load_n(&s->prio, __ATOMIC_RELAXED);
    p->size = __atomic_load_n(&s->size, __ATOMIC_RELAXED);
    p->start = __atomic_load_n(&s->start, __ATOMIC_RELAXED);
    p->id = id;
}

/* Does the writer a, at its commit point, win against the reader b? The
 * manager in use now decides. The manager may have changed since either
 * attempt began (txkit_set_cm), so attempts that are still visible can meet
 * under backoff, which is not a visible manager: there the writer that
 * commits first wins (docs/cm.md), as NOrec's validation would decide.
 * (backoff's own wins() answers for the party that found a conflict: it
 * always backs off, so two visible writers would both wait for the other.) */
static int writer_wins(const struct _txkit_cm_party *a, const struct _txkit_cm_party *b) {
    const struct tk_cm *cm = __atomic_load_n(&tk_cm, __ATOMIC_RELAXED);
    return cm->visible ? cm->wins(a, b) : 1;
}

static TK_NORETURN void killed(tk_thread *t) {
    t->vis.decided = 1;
    tk_abort(t, TXKIT_CAUSE_CONFLICT);
}

static inline bool is_killed(const tk_thread *t) {
    return state_of(__atomic_load_n(&my_slot(t)->status, __ATOMIC_ACQUIRE)) == ST_KILLED;
}

void tk_vis_begin(tk_thread *t) {
    t->vis.active = 0;
    if (slot_get(t) < 0)
        return;
    struct vis_slot *s = my_slot(t);
    if (t->ctl.attempts == 0)
        s->start = tk_rdtsc(); /* age counts from the first attempt */
    s->prio = t->cm.prio;
    s->size = 0;
    s->irrevocable = 0;
    t->vis.nread = 0;
    uint64_t st = __atomic_load_n(&s->status, __ATOMIC_RELAXED);
    /* A new serial: a kill aimed at an earlier attempt fails its CAS. */
    __atomic_store_n(&s->status, ((st >> 2) + 1) << 2 | ST_ACTIVE, __ATOMIC_RELEASE);
    t->vis.active = 1;
}

void tk_vis_read(tk_thread *t, const void *addr, size_t size) {
    if (!t->vis.active)
        return;
    if (TXKIT_UNLIKELY(is_killed(t)))
        killed(t);
    struct vis_slot *s = my_slot(t);
    uintptr_t w = (uintptr_t)addr & ~(uintptr_t)7, end = (uintptr_t)addr + size;
    for (; w < end; w += 8) {
        unsigned b = sig_bit(w);
        uint64_t m = 1ull << (b & 63);
        if (!(s->sig[b >> 6] & m)) {
            /* Locked OR on our own line: the bit, and a full barrier before
             * the data load (see the top of the file). Measured: without it,
             * about 0.5% of decisions go missing and show up as inversions. */
            __atomic_fetch_or(&s->sig[b >> 6], m, __ATOMIC_SEQ_CST);
            t->vis.sig_touched |= 1ull << (b >> 6);
        }
    }
    t->vis.nread++;
    __atomic_store_n(&s->size, t->vis.nread + (unsigned)t->stm.wset.len, __ATOMIC_RELAXED);
}

void tk_vis_write(tk_thread *t) {
    if (!t->vis.active)
        return;
    if (TXKIT_UNLIKELY(is_killed(t)))
        killed(t);
    __atomic_store_n(&my_slot(t)->size, t->vis.nread + (unsigned)t->stm.wset.len, __ATOMIC_RELAXED);
}

/* An abort on the way: if a winner had killed us, it was its decision (and
 * counted there), whatever made us notice first. */
static void vis_note_abort(tk_thread *t, int cause) {
    (void)cause;
    if (!t->vis.active)
        return;
    if (t->vis.active && !t->vis.decided && is_killed(t))
        t->vis.decided = 1;
}

bool tk_vis_read_commit(tk_thread *t) {
    if (!t->vis.active || !is_killed(t))
        return true;
    t->vis.decided = 1;
    return false;
}

static bool sig_hits(const struct vis_slot *o, const tk_thread *t) {
    const tk_wentry *e = (const tk_wentry *)t->stm.wset.data;
    for (size_t k = 0; k < t->stm.wset.len; k++) {
        unsigned b = sig_bit(e[k].word);
        if (__atomic_load_n(&o->sig[b >> 6], __ATOMIC_RELAXED) & (1ull << (b & 63)))
            return true;
    }
    return false;
}

/* A writer's commit point, clock held: TK_OK, or TK_VIS_KILLED (abort), or
 * the slot of a reader that beat us (give the clock back, wait, retry). From
 * TK_OK on, nobody can kill us, and we wait for nobody.
 * TK_OK is INT_MIN: "killed" must be another value, or a killed writer would
 * commit without deciding against the readers it overwrites (they then
 * abort by validation, undecided), and its killer's decision would be lost. */
_Static_assert(TK_VIS_KILLED < 0 && TK_VIS_KILLED != TK_OK,
               "commit point results are distinct from slots");
int tk_vis_commit_point(tk_thread *t) {
    if (!t->vis.active)
        return TK_OK;
    struct vis_slot *s = my_slot(t);
    uint64_t st = __atomic_load_n(&s->status, __ATOMIC_ACQUIRE);
    int pinned = state_of(st) == ST_COMMITTING; /* irrevocable */
    if (!pinned && (state_of(st) != ST_ACTIVE ||
                    !__atomic_compare_exchange_n(&s->status, &st, (st & ~3ull) | ST_COMMITTING,
                                                 false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))) {
        t->vis.decided = 1;
        return TK_VIS_KILLED;
    }
    /* Decide against every reader we overwrite first, kill after: a writer
     * that loses to a later reader must not have killed the earlier ones for
     * a commit that does not happen. A kill then fails only if that attempt
     * ended meanwhile, or is a new one, whose reads come after our clock
     * and are NOrec's to check. */
    int me = t->vis.slot - 1, hi = __atomic_load_n(&slots_hi, __ATOMIC_ACQUIRE), nk = 0;
    struct {
        int slot, prio;
        uint64_t st;
    } kill[VIS_SLOTS];
    struct _txkit_cm_party a, b;
    party_of(&a, s, (unsigned)me);
    for (int j = 0; j < hi; j++) {
        if (j == me)
            continue;
        struct vis_slot *o = &slots[j];
        uint64_t ost = __atomic_load_n(&o->status, __ATOMIC_ACQUIRE);
        int o_irr =
            state_of(ost) == ST_COMMITTING && __atomic_load_n(&o->irrevocable, __ATOMIC_RELAXED);
        if ((state_of(ost) != ST_ACTIVE && !o_irr) || !sig_hits(o, t))
            continue;
        party_of(&b, o, (unsigned)j);
        if (!pinned && (o_irr || !writer_wins(&a, &b))) {
            tk_cm_count(t, b.prio, a.prio);
            t->vis.lost_to = ost; /* the attempt we wait out: see tk_vis_wait_for */
            __atomic_store_n(&s->status, st, __ATOMIC_RELEASE); /* active again */
            return j;
        }
        if (o_irr)
            continue; /* cannot happen with the token; never kill an irrevocable one */
        kill[nk].slot = j;
        kill[nk].prio = b.prio;
        kill[nk++].st = ost;
    }
    for (int k = 0; k < nk; k++) {
        uint64_t ost = kill[k].st;
        if (__atomic_compare_exchange_n(&slots[kill[k].slot].status, &ost,
                                        (ost & ~3ull) | ST_KILLED, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED))
            tk_cm_count(t, a.prio, kill[k].prio);
    }
    return TK_OK;
}

/* We lost to slot j at our commit point and gave the clock back: wait until
 * the attempt we lost to is done (it commits before us). False if someone
 * killed us meanwhile.
 * Only that attempt: the status word is the one the decision saw, not the
 * slot's status now. By now j may run a later transaction, which the manager
 * never compared with us; it can lose to us and wait for us in turn (a
 * younger one under timestamp), and waiting for it would close a cycle that
 * nobody breaks: the sanitizer lane hung in cm.noinvert that way.
 * The same cycle closes when the manager changes between two decisions
 * (txkit_set_cm under running transactions): A lost to B under one order, B
 * to A under another, and both wait. So a wait that lasts asks the manager
 * in use again; under one manager the same parties get the same answer (their
 * priority and start are fixed, a reader's size only grows), and one of two
 * that wait for each other wins and goes back to its commit point, where it
 * kills the other. */
bool tk_vis_wait_for(tk_thread *t, int j) {
    const struct vis_slot *o = &slots[j];
    uint64_t st0 = t->vis.lost_to;
    for (unsigned spins = 0;; tk_wait_step(&spins, TK_SPINS_BEFORE_YIELD)) {
        if (is_killed(t)) {
            t->vis.decided = 1;
            return false;
        }
        uint64_t st = __atomic_load_n(&o->status, __ATOMIC_ACQUIRE);
        if (st != st0 || state_of(st) == ST_IDLE || state_of(st) == ST_KILLED)
            return true;
        if (spins < TK_SPINS_BEFORE_YIELD)
            continue;
        if (state_of(st0) == ST_ACTIVE) { /* (never against an irrevocable one) */
            struct _txkit_cm_party a, b;
            party_of(&a, my_slot(t), (unsigned)(t->vis.slot - 1));
            party_of(&b, o, (unsigned)j);
            /* the fields are of the attempt we lost to only if it still runs */
            if (__atomic_load_n(&o->status, __ATOMIC_ACQUIRE) == st0 && writer_wins(&a, &b))
                return true; /* decided again: commit (and kill it) */
        }
    }
}

/* Irrevocable: wins every conflict from now on and cannot be killed. False if
 * it was killed first. */
bool tk_vis_pin(tk_thread *t) {
    if (!t->vis.active)
        return true;
    struct vis_slot *s = my_slot(t);
    __atomic_store_n(&s->irrevocable, 1, __ATOMIC_RELAXED);
    uint64_t st = __atomic_load_n(&s->status, __ATOMIC_ACQUIRE);
    if (state_of(st) == ST_ACTIVE &&
        __atomic_compare_exchange_n(&s->status, &st, (st & ~3ull) | ST_COMMITTING, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return true;
    __atomic_store_n(&s->irrevocable, 0, __ATOMIC_RELAXED);
    t->vis.decided = 1;
    return false;
}

void tk_vis_end(tk_thread *t) {
    if (!t->vis.active)
        return;
    struct vis_slot *s = my_slot(t);
    for (uint64_t m = t->vis.sig_touched; m; m &= m - 1)
        __atomic_store_n(&s->sig[__builtin_ctzll(m)], 0, __ATOMIC_RELAXED);
    t->vis.sig_touched = 0;
    s->irrevocable = 0;
    uint64_t st = __atomic_load_n(&s->status, __ATOMIC_RELAXED);
    __atomic_store_n(&s->status, (st & ~3ull) | ST_IDLE, __ATOMIC_RELEASE);
    t->vis.active = 0;
}

TK_CONSTRUCTOR static void vis_hooks(void) {
    tk_hook_add(TK_HOOK_ABORTING, 10, vis_note_abort);
    tk_hook_add(TK_HOOK_THREAD_EXIT, TK_EXIT_ORDER_VIS, vis_thread_exit);
    tk_hook_add(TK_HOOK_FORK, TK_FORK_ORDER_VIS, vis_atfork);
}
