/* stm_vis.c - visible reads and writes for software TM, so that a contention
 * manager can decide conflicts (timestamp, size, prio).
 *
 * NOrec alone never knows who it conflicts with: a reader finds out at
 * validation that *something* changed. Here every software transaction also
 * marks what it touches in a table of ownership records (orecs), one per
 * hashed 8-byte word:
 *   - a reader sets its bit in the orec's reader mask, then looks at the owner;
 *   - a writer takes ownership (CAS) at its first write, then looks at the
 *     readers.
 * Both sides use locked instructions, so of two conflicting transactions at
 * least one sees the other (Dekker), and the one that sees asks the manager:
 * it either aborts itself, or kills the other (CAS on the other's status word:
 * ACTIVE -> KILLED). A transaction checks its own status at every barrier and
 * must turn ACTIVE -> COMMITTING at its commit point, after it holds the NOrec
 * clock, so a killed transaction never writes anything back, and a committing
 * one never waits for anybody (so waiting for it cannot deadlock).
 *
 * Correctness stays NOrec's (value validation under the clock); this layer
 * only decides *who* aborts, early. Conflicts with parties that are not
 * visible - hardware transactions, serial ones, threads beyond VIS_SLOTS - are
 * still caught by NOrec's validation, undecided.
 *
 * Status word of a slot: serial << 2 | state. The serial tells attempts
 * apart, so a kill aimed at one attempt can never hit the next.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "methods/method.h"

#define VIS_SLOTS 64 /* bits of a reader mask */
#define VIS_OREC_BITS 16

enum { ST_IDLE = 0, ST_ACTIVE = 1, ST_COMMITTING = 2, ST_KILLED = 3 };

/* What other threads may read of a transaction: its status and the keys the
 * managers compare. Slots are never freed memory (threads' descriptors are). */
struct vis_slot {
    _Alignas(TK_CACHELINE) uint64_t status;
    int prio;
    int irrevocable;   /* pinned: always wins, never killed */
    unsigned size;     /* orecs read + owned */
    uint64_t start;    /* tsc of the transaction's first attempt */
    int used;
};

struct vis_orec {
    uint64_t owner;    /* slot + 1, 0 when free */
    uint64_t readers;  /* bit per slot */
};

static struct vis_slot slots[VIS_SLOTS];
static struct vis_orec orecs[1u << VIS_OREC_BITS] __attribute__((aligned(TK_CACHELINE)));
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint32_t orec_of(const void *addr) {
    return (uint32_t)((((uintptr_t)addr >> 3) * 0x9e3779b97f4a7c15ull) >> (64 - VIS_OREC_BITS));
}

static inline uint64_t state_of(uint64_t st) { return st & 3; }

/* A slot for the thread, once; none when all are taken (then invisible). */
static int slot_get(tk_thread *t) {
    if (TXKIT_LIKELY(t->vis_slot))
        return t->vis_slot - 1;
    pthread_mutex_lock(&slot_lock);
    for (int i = 0; i < VIS_SLOTS; i++) {
        if (!slots[i].used) {
            slots[i].used = 1;
            t->vis_slot = i + 1;
            break;
        }
    }
    pthread_mutex_unlock(&slot_lock);
    if (!t->vis_slot)
        t->vis_slot = -1; /* never ask again */
    return t->vis_slot - 1;
}

void tk_vis_thread_exit(tk_thread *t) {
    if (t->vis_slot > 0) {
        pthread_mutex_lock(&slot_lock);
        slots[t->vis_slot - 1].used = 0;
        pthread_mutex_unlock(&slot_lock);
    }
    t->vis_slot = 0;
    tk_vec_free(&t->vis_owned);
    tk_vec_free(&t->vis_read);
}

static inline struct vis_slot *my_slot(const tk_thread *t) { return &slots[t->vis_slot - 1]; }

static void party_of(struct _txkit_cm_party *p, const struct vis_slot *s, unsigned id) {
    p->prio = __atomic_load_n(&s->prio, __ATOMIC_RELAXED);
    p->size = __atomic_load_n(&s->size, __ATOMIC_RELAXED);
    p->start = __atomic_load_n(&s->start, __ATOMIC_RELAXED);
    p->id = id;
}

static TK_NORETURN void killed(tk_thread *t) {
    t->vis_decided = 1;
    tk_abort(t, TXKIT_CAUSE_CONFLICT);
}

static inline void check_alive(tk_thread *t) {
    if (TXKIT_UNLIKELY(state_of(__atomic_load_n(&my_slot(t)->status, __ATOMIC_ACQUIRE)) ==
                       ST_KILLED))
        killed(t);
}

static void push_idx(tk_vec *v, uint32_t idx) {
    uint32_t *p = tk_vec_push(v, sizeof *p);
    if (!p)
        TK_FATAL("out of memory growing the visible access log");
    *p = idx;
}

void tk_vis_begin(tk_thread *t) {
    t->vis_active = 0;
    if (slot_get(t) < 0)
        return;
    struct vis_slot *s = my_slot(t);
    if (t->ctl.attempts == 0)
        s->start = tk_rdtsc(); /* age counts from the first attempt */
    s->prio = t->prio;
    s->size = 0;
    s->irrevocable = 0;
    t->vis_owned.len = t->vis_read.len = 0;
    uint64_t st = __atomic_load_n(&s->status, __ATOMIC_RELAXED);
    /* New serial: a kill aimed at an earlier attempt fails its CAS. */
    __atomic_store_n(&s->status, ((st >> 2) + 1) << 2 | ST_ACTIVE, __ATOMIC_SEQ_CST);
    t->vis_active = 1;
}

/* Settle a conflict with slot j: returns once j no longer stands in the way
 * (killed by us or by someone, finished), or aborts this transaction. A
 * committing or irrevocable j cannot be killed: we wait for it. */
static void resolve(tk_thread *t, int j) {
    struct vis_slot *me = my_slot(t), *other = &slots[j];
    for (unsigned spins = 0;; spins++) {
        check_alive(t);
        uint64_t st = __atomic_load_n(&other->status, __ATOMIC_ACQUIRE);
        switch (state_of(st)) {
        case ST_IDLE:
        case ST_KILLED:
            return;
        case ST_ACTIVE: {
            struct _txkit_cm_party a, b;
            party_of(&a, me, (unsigned)(t->vis_slot - 1));
            party_of(&b, other, (unsigned)j);
            int irr_other = __atomic_load_n(&other->irrevocable, __ATOMIC_RELAXED);
            int win = me->irrevocable || (!irr_other && tk_cm->wins(&a, &b));
            if (!win) {
                tk_cm_count(t, b.prio, a.prio);
                killed(t);
            }
            if (__atomic_compare_exchange_n(&other->status, &st, (st & ~3ull) | ST_KILLED, false,
                                            __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
                tk_cm_count(t, a.prio, b.prio);
                return;
            }
            continue; /* it moved on meanwhile: look again */
        }
        default: /* committing (holds the clock, waits for nobody) or irrevocable */
            if (spins < 2000)
                tk_cpu_relax();
            else
                sched_yield();
        }
    }
}

/* Wait while slot j commits (it holds the clock and waits for nobody): what
 * it writes back is what we should read. */
static void wait_commit(tk_thread *t, int j) {
    for (unsigned spins = 0;; spins++) {
        uint64_t st = __atomic_load_n(&slots[j].status, __ATOMIC_ACQUIRE);
        if (state_of(st) != ST_COMMITTING || __atomic_load_n(&slots[j].irrevocable, __ATOMIC_RELAXED))
            return;
        check_alive(t);
        if (spins < 2000)
            tk_cpu_relax();
        else
            sched_yield();
    }
}

/* A read marks the orec and goes on even if an active writer owns it: it
 * reads the old value and so serializes before that writer, which decides
 * against its visible readers at its commit point (tk_vis_commit_point). */
void tk_vis_read(tk_thread *t, const void *addr, size_t size) {
    if (!t->vis_active)
        return;
    check_alive(t);
    uint64_t me = (uint64_t)t->vis_slot, bit = 1ull << (me - 1);
    uint32_t last = orec_of((const char *)addr + size - 1);
    for (uint32_t i = orec_of(addr);; i = last) {
        struct vis_orec *o = &orecs[i];
        if (!(__atomic_load_n(&o->readers, __ATOMIC_RELAXED) & bit)) {
            __atomic_fetch_or(&o->readers, bit, __ATOMIC_SEQ_CST);
            push_idx(&t->vis_read, i);
            my_slot(t)->size++;
        }
        uint64_t ow = __atomic_load_n(&o->owner, __ATOMIC_SEQ_CST);
        if (ow && ow != me)
            wait_commit(t, (int)ow - 1);
        if (i == last)
            break;
    }
}

void tk_vis_write(tk_thread *t, const void *addr, size_t size) {
    if (!t->vis_active)
        return;
    check_alive(t);
    uint64_t me = (uint64_t)t->vis_slot;
    uint32_t last = orec_of((const char *)addr + size - 1);
    for (uint32_t i = orec_of(addr);; i = last) {
        struct vis_orec *o = &orecs[i];
        for (;;) {
            uint64_t ow = __atomic_load_n(&o->owner, __ATOMIC_ACQUIRE);
            if (ow == me)
                break;
            if (ow) {
                uint64_t st = __atomic_load_n(&slots[ow - 1].status, __ATOMIC_ACQUIRE);
                if (state_of(st) != ST_KILLED && state_of(st) != ST_IDLE) {
                    resolve(t, (int)ow - 1);
                    continue;
                }
            }
            /* free, or left by a dead attempt (which never writes back): take it */
            if (__atomic_compare_exchange_n(&o->owner, &ow, me, false, __ATOMIC_SEQ_CST,
                                            __ATOMIC_RELAXED)) {
                push_idx(&t->vis_owned, i);
                my_slot(t)->size++;
                break;
            }
        }
        if (i == last)
            break;
    }
}

/* The commit point, with the NOrec clock held (or nothing written): from
 * here on nobody can kill us, and we wait for nobody. A writer then decides
 * against the active readers of what it owns: it kills those it beats, and
 * aborts if one beats it (the reader then commits first). A reader that
 * comes later sees us committing and waits for the write-back (Dekker: its
 * bit, then our status; our status, then the bits). */
bool tk_vis_commit_point(tk_thread *t) {
    if (!t->vis_active)
        return true;
    struct vis_slot *s = my_slot(t);
    uint64_t st = __atomic_load_n(&s->status, __ATOMIC_ACQUIRE);
    int pinned = state_of(st) == ST_COMMITTING; /* irrevocable: wins every conflict */
    if (!pinned && (state_of(st) != ST_ACTIVE ||
        !__atomic_compare_exchange_n(&s->status, &st, (st & ~3ull) | ST_COMMITTING, false,
                                     __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))) {
        t->vis_decided = 1; /* killed */
        return false;
    }
    uint64_t bit = 1ull << (t->vis_slot - 1);
    const uint32_t *o = (const uint32_t *)t->vis_owned.data;
    for (size_t k = 0; k < t->vis_owned.len; k++) {
        uint64_t r = __atomic_load_n(&orecs[o[k]].readers, __ATOMIC_SEQ_CST) & ~bit;
        while (r) {
            int j = __builtin_ctzll(r);
            struct vis_slot *other = &slots[j];
            uint64_t ost = __atomic_load_n(&other->status, __ATOMIC_ACQUIRE);
            if (state_of(ost) != ST_ACTIVE &&
                !(state_of(ost) == ST_COMMITTING && other->irrevocable && !pinned)) {
                r &= r - 1; /* finished, killed, or committing before us */
                continue;
            }
            struct _txkit_cm_party a, b;
            party_of(&a, s, (unsigned)(t->vis_slot - 1));
            party_of(&b, other, (unsigned)j);
            if (!pinned && (state_of(ost) != ST_ACTIVE || !tk_cm->wins(&a, &b))) {
                tk_cm_count(t, b.prio, a.prio);
                __atomic_store_n(&s->status, st, __ATOMIC_RELEASE); /* active again, to roll back */
                t->vis_decided = 1;
                return false;
            }
            if (__atomic_compare_exchange_n(&other->status, &ost, (ost & ~3ull) | ST_KILLED, false,
                                            __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
                tk_cm_count(t, a.prio, b.prio);
                r &= r - 1;
            } /* else it moved on: look at it again */
        }
    }
    return true;
}

/* Irrevocable: from now on this transaction wins every conflict and cannot be
 * killed (others wait for it, as for a commit). False if killed first. */
bool tk_vis_pin(tk_thread *t) {
    if (!t->vis_active)
        return true;
    struct vis_slot *s = my_slot(t);
    __atomic_store_n(&s->irrevocable, 1, __ATOMIC_RELAXED);
    uint64_t st = __atomic_load_n(&s->status, __ATOMIC_ACQUIRE);
    if (state_of(st) == ST_ACTIVE &&
        __atomic_compare_exchange_n(&s->status, &st, (st & ~3ull) | ST_COMMITTING, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return true;
    __atomic_store_n(&s->irrevocable, 0, __ATOMIC_RELAXED);
    t->vis_decided = 1;
    return false;
}

void tk_vis_end(tk_thread *t) {
    if (!t->vis_active)
        return;
    uint64_t me = (uint64_t)t->vis_slot, bit = 1ull << (me - 1);
    const uint32_t *o = (const uint32_t *)t->vis_owned.data;
    for (size_t k = 0; k < t->vis_owned.len; k++) {
        uint64_t ow = me; /* may have been taken over after we were killed */
        __atomic_compare_exchange_n(&orecs[o[k]].owner, &ow, 0, false, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED);
    }
    const uint32_t *r = (const uint32_t *)t->vis_read.data;
    for (size_t k = 0; k < t->vis_read.len; k++)
        __atomic_fetch_and(&orecs[r[k]].readers, ~bit, __ATOMIC_RELEASE);
    t->vis_owned.len = t->vis_read.len = 0;
    struct vis_slot *s = my_slot(t);
    s->irrevocable = 0;
    uint64_t st = __atomic_load_n(&s->status, __ATOMIC_RELAXED);
    __atomic_store_n(&s->status, (st & ~3ull) | ST_IDLE, __ATOMIC_RELEASE);
    t->vis_active = 0;
}
