/* SPDX-License-Identifier: MIT */
/* stm_norec.c - software TM: NOrec (one global sequence lock, value-based
 * validation, write-back at commit).
 *
 * Why NOrec for txkit's software path:
 *  - Hybrid with an uninstrumented hardware path. Orec-based STMs (TinySTM,
 *    TL2) need hardware transactions to read and write ownership records for
 *    every access; NOrec needs only the one clock word, which is what lets
 *    hardware barriers stay plain loads and stores.
 *  - Few cores. With 2 CPUs the global commit lock is rarely contended, and
 *    NOrec has no per-access metadata: a read is a load, a check of the clock,
 *    and a log append, so its single-thread overhead is the lowest of the
 *    usual designs, and read-only transactions commit with no atomic at all.
 *    Where the clock rarely moves while a transaction runs (one thread, a
 *    read-mostly phase), not even the log append: an attempt that reads
 *    unlogged aborts instead of revalidating (TXKIT_ACC_NOLOG, below).
 *  - Opacity for free: a read is returned only if the clock has not moved
 *    since the snapshot, or after the whole read log was revalidated by value
 *    (or, for a long log, after the ring of recent commits' words showed
 *    that none of them wrote a word it read: "the commit ring", below).
 *  - Byte-exact: writes are buffered per 8-byte word with a byte mask and
 *    written back with stores of exactly the bytes written, so neighbouring
 *    fields written by other code are never clobbered.
 * Its limit, one writer committing at a time, matters at many cores; an
 * orec-based algorithm can be added behind the same interface when needed.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "methods/method.h"
#include "runtime/simpoint.h"

extern const struct tk_method tk_method_stm TK_HIDDEN; /* below */

/* ------------------------------------------------------------ memory access */

/* Possibly unaligned (tx_memcpy of an unaligned source): say so to the compiler. */
typedef uint64_t u64_any __attribute__((aligned(1), may_alias));
typedef uint32_t u32_any __attribute__((aligned(1), may_alias));
typedef uint16_t u16_any __attribute__((aligned(1), may_alias));

static inline uint64_t read_mem(const void *addr, uint32_t size) {
    switch (size) {
    case 8:
        return *(const volatile u64_any *)addr;
    case 4:
        return *(const volatile u32_any *)addr;
    case 2:
        return *(const volatile u16_any *)addr;
    case 1:
        return *(const volatile uint8_t *)addr;
    default: {
        uint64_t v = 0;
        for (uint32_t i = 0; i < size; i++)
            ((unsigned char *)&v)[i] = ((const volatile unsigned char *)addr)[i];
        return v;
    }
    }
}

/* Store the low `size` bytes of v at dst (little-endian), without a memcpy call. */
static inline void put_bytes(void *dst, uint64_t v, size_t size) {
    switch (size) {
    case 8:
        __builtin_memcpy(dst, &v, 8);
        break;
    case 4: {
        uint32_t x = (uint32_t)v;
        __builtin_memcpy(dst, &x, 4);
        break;
    }
    case 2: {
        uint16_t x = (uint16_t)v;
        __builtin_memcpy(dst, &x, 2);
        break;
    }
    case 1:
        *(unsigned char *)dst = (unsigned char)v;
        break;
    default:
        memcpy(dst, &v, size);
    }
}

/* No hardware commit since the attempt's hw_commits snapshot (hybrid mode;
 * without it there are none). Owner thread, inside its attempt. */
static inline bool hw_snapshot_current(void) {
    return !tk_g.hybrid || __atomic_load_n(&tk_g.hw_commits, __ATOMIC_ACQUIRE) == _txkit_tls.hsnap;
}

static inline bool snapshot_current(void) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* data loads before the clock load */
    if (__atomic_load_n(&tk_g.clock, __ATOMIC_RELAXED) != _txkit_tls.snap)
        return false;
    return hw_snapshot_current();
}

/* Entries of memory this attempt owns and writes in place (its own stack
 * frames, blocks it allocated) may differ by its own writes: not conflicts. */
static bool rlog_valid(const tk_thread *t) {
    for (const tk_rentry *r = t->stm.rlog; r != _txkit_tls.rcur; r++)
        if (!tk_stack_private(t, r->addr, r->size) && /* not even read: maybe a dead frame */
            read_mem(r->addr, r->size) != r->val &&
            !(t->captured.len && tk_captured(t, r->addr, r->size)))
            return false;
    return true;
}

/* Grow the read log (the inline barrier appends until rcur reaches rend). */
static void rlog_grow(tk_thread *t) {
    size_t used = (size_t)(_txkit_tls.rcur - t->stm.rlog);
    size_t cap = t->stm.rlog_cap;
    cap = cap ? cap * 2 : 1024;
    tk_rentry *n = realloc(t->stm.rlog, cap * sizeof *n);
    if (!n)
        tk_abort_serially(t, "read log");
    t->stm.rlog = n;
    t->stm.rlog_cap = cap;
    _txkit_tls.rcur = n + used;
    _txkit_tls.rend = n + cap;
}

/* Log a read of size bytes at addr that returned v; the log has room. */
static inline void rlog_push(const void *addr, uint64_t v, uint32_t size) {
    tk_rentry *r = _txkit_tls.rcur++;
    r->addr = addr;
    r->val = v;
    r->size = size;
}

/* Bounded revalidation: every transaction must finish, also a long one whose
 * reads all stay valid while other threads keep committing (each commit makes
 * it check its whole read log again: quadratic, for ever). An attempt may
 * extend its snapshot REVAL_MAX times, checking at most REVAL_WORK_MIN +
 * REVAL_WORK_RATIO x (its read-log length) entries in all (the time spent
 * revalidating, counted without a clock: beyond it, running the reads again
 * serially is cheaper). Past that it aborts; TK_REVAL_ABORTS such aborts and
 * the transaction runs serially (txn.c). Irrevocable attempts are never
 * invalidated and never run out. */
#define REVAL_MAX 4096
#define REVAL_WORK_MIN (1u << 20)
#define REVAL_WORK_RATIO 16

/* Count one revalidation that did `work` (entries walked, or ring slots
 * checked); true (and counted as such an abort) when it is one too many.
 * Owner thread, inside its attempt. */
static bool reval_budget_spent(tk_thread *t, uint64_t work) {
    uint64_t n = (uint64_t)(_txkit_tls.rcur - t->stm.rlog);
    t->ctl.revals++;
    t->ctl.reval_work += work;
    if (TXKIT_LIKELY(t->ctl.revals <= REVAL_MAX &&
                     t->ctl.reval_work <= REVAL_WORK_MIN + REVAL_WORK_RATIO * n) ||
        t->ctl.irrevocable)
        return false;
    t->ctl.reval_aborts++;
    return true;
}

/* Unlogged reads (TXKIT_ACC_NOLOG). An attempt that logs no reads cannot
 * revalidate: once the clock moves it aborts, and the transaction runs again
 * logging. It saves the log's stores where the clock rarely moves while a
 * transaction runs (one thread, read-mostly phases). A thread tries it after
 * calm_need commits in a row that never saw the clock move; each unlogged
 * attempt that the clock moved under doubles calm_need (up to NOLOG_NEED_MAX),
 * each unlogged commit takes one off (down to NOLOG_NEED_MIN), so a thread
 * whose transactions keep overlapping commits stays logging. TXKIT_STM_NOLOG
 * (config.c) may force it on for every attempt that may (tests) or off. */
#define NOLOG_NEED_MIN 4u
#define NOLOG_NEED_MAX 1024u

/* An unlogged attempt saw the clock move: it aborts (the caller says so). */
static void nolog_lost(tk_thread *t) {
    t->stm.calm = 0;
    t->stm.calm_need =
        t->stm.calm_need < NOLOG_NEED_MAX / 2 ? t->stm.calm_need * 2 : NOLOG_NEED_MAX;
}

/* Whether t's next attempt may read unlogged: not visible to a contention
 * manager (its reads must be marked), not irrevocable (other writers'
 * give-backs move the clock under it), not timed (the read-set histogram
 * samples those). Hybrid too: its reads check hw_commits as well
 * (TXKIT_ACC_NOLOG_HW), and any hardware commit since its begin aborts it.
 * Owner thread, in stm_begin after the visibility and irrevocability are
 * decided. */
static inline bool nolog_wanted(const tk_thread *t) {
    int mode = tk_cfg.stm_nolog; /* TXKIT_STM_NOLOG */
    return (mode == TK_NOLOG_ON || (mode == TK_NOLOG_AUTO && t->stm.calm >= t->stm.calm_need)) &&
           !t->ctl.attempt_tsc;
}
static inline bool nolog_ok(const tk_thread *t) {
    return nolog_wanted(t) && !t->vis.active && !t->ctl.irrevocable;
}

/* The attempt committed: count it calm if it never moved its snapshot (no
 * revalidation: t->ctl.revals counts them, also acquire_clock's). */
static inline void nolog_committed(tk_thread *t) {
    if (t->ctl.revals)
        t->stm.calm = 0;
    else if (t->stm.calm < NOLOG_NEED_MAX)
        t->stm.calm++;
    if (t->stm.nolog && t->stm.calm_need > NOLOG_NEED_MIN)
        t->stm.calm_need--;
}

/* Stop reading unlogged (the attempt becomes irrevocable): from now on its
 * reads are logged, those before need no check (nobody commits under it). */
static inline void nolog_off(tk_thread *t) {
    t->stm.nolog = 0;
    t->ctl.acc_add &= ~TXKIT_ACC_NOLOG;
    unsigned acc = _txkit_tls.access;
    if (acc & TXKIT_ACC_NOLOG_HW) /* hybrid: logged reads that check hw_commits */
        acc = (acc & ~TXKIT_ACC_NOLOG_HW) | TXKIT_ACC_FASTREAD_HW;
    _txkit_tls.access = acc & ~TXKIT_ACC_NOLOG;
}

/* ----------------------------------------------------- the commit ring
 *
 * NOrec revalidates by value: after any other commit, a long attempt checks
 * its whole read log again. Where one long reader runs beside small writers
 * (the application corpus's bayes: a 70 k-entry log, a commit every few
 * microseconds) that is most of its time, and with privatization safety
 * every writer waits for it too. So each software commit also says which
 * words it wrote: ring[(tag / 2) % RING_SLOTS] holds the tag (the clock value
 * its commit released), the words, or RING_WORDS + 1 for more. An attempt
 * whose log has RSET_MIN to RSET_MAX entries indexes the words it read (rset)
 * and moves its snapshot from s to c by checking the slots of s + 2 .. c
 * against that index instead: no word written, still valid at c. Anything
 * else (a slot that holds another tag, because that clock move was no
 * software commit: serial, solo, cx; or came before ring_on; or the slot was
 * overwritten; a big write set; a word it read; hardware commits since the
 * snapshot) falls back to the walk by value. Only a software attempt holding
 * the clock writes the slot of the tag it will release, before releasing it
 * (seqlock: the tag is 0 while the words change): the words of its write
 * set, or none when it gives the clock back unused. Writers publish once
 * ring_on is set (by the first attempt that indexes): until then no cost but
 * one load. */
#define RING_SLOTS 256u
#define RING_WORDS 14u
#define RSET_MIN 1024u
#define RSET_MAX (1u << 20) /* longer logs walk: the index would take 32 MB and more */
struct ring_slot {
    uint64_t tag;
    uint64_t n;
    uintptr_t word[RING_WORDS];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct ring_slot) == 128, "two cache lines a slot");
static struct ring_slot ring[RING_SLOTS];
/* Each on a line of its own: every writing commit reads ring_on, and the
 * readers' ring moves write ring_moves. */
static int ring_on __attribute__((aligned(64))); /* atomic: some attempt has indexed its reads */
static unsigned long ring_moves __attribute__((aligned(64))); /* atomic: snapshots moved (tests) */

/* For the tests (test_ring): how many times the ring moved a snapshot. */
TK_EXPORT unsigned long _txkit_stm_ring_moves(void);
unsigned long _txkit_stm_ring_moves(void) { return __atomic_load_n(&ring_moves, __ATOMIC_RELAXED); }

static inline struct ring_slot *ring_slot_of(uint64_t tag) {
    return &ring[(tag >> 1) & (RING_SLOTS - 1)];
}

/* The commit that holds the clock at tag - 1 (odd) says what it will have
 * written when it releases tag: the words of its write set (t NULL:
 * nothing). Owner of the clock, before the release store. */
static void ring_publish(const tk_thread *t, uint64_t tag) {
    struct ring_slot *sl = ring_slot_of(tag);
    size_t n = 0;
    const tk_wentry *e = NULL;
    if (t) { /* else nothing: never read t's fields (a NULL deref, SIGSEGV: clock_give_back) */
        n = t->stm.wset.len;
        e = (const tk_wentry *)t->stm.wset.data;
    }
    __atomic_store_n(&sl->tag, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* tag 0 before the words */
    if (n > RING_WORDS) {
        n = RING_WORDS + 1;
    } else {
        for (size_t i = 0; i < n; i++)
            __atomic_store_n(&sl->word[i], e[i].word, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&sl->n, n, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->tag, tag, __ATOMIC_RELEASE);
}

static inline void ring_publish_if_on(const tk_thread *t, uint64_t tag) {
    if (__atomic_load_n(&ring_on, __ATOMIC_RELAXED))
        ring_publish(t, tag);
}

/* Give the clock, held at tag - 1, back unused: tag, with nothing written
 * (an empty ring slot, so long readers need not walk for it). */
static inline void clock_give_back(uint64_t tag) {
    ring_publish_if_on(NULL, tag);
    __atomic_store_n(&tk_g.clock, tag, __ATOMIC_RELEASE);
}

static inline size_t rset_hash(const tk_thread *t, uintptr_t word) {
    return (size_t)(((uint64_t)(word >> 3) * 0x9e3779b97f4a7c15ull) >> 32) & (t->stm.rset_cap - 1);
}

static bool rset_has(const tk_thread *t, uintptr_t word) {
    for (size_t h = rset_hash(t, word);; h = (h + 1) & (t->stm.rset_cap - 1)) {
        uintptr_t w = t->stm.rset[h];
        if (w == word)
            return true;
        if (w == 0)
            return false;
    }
}

static void rset_put(tk_thread *t, uintptr_t word) {
    size_t h = rset_hash(t, word);
    for (; t->stm.rset[h]; h = (h + 1) & (t->stm.rset_cap - 1))
        if (t->stm.rset[h] == word)
            return;
    t->stm.rset[h] = word;
    t->stm.rset_len++;
}

/* An empty index for the log's first `entries` entries, at most a quarter
 * full (each entry may take two words); false: no memory. */
static bool rset_reset(tk_thread *t, size_t entries) {
    size_t cap = 4096;
    while (cap < 4 * entries)
        cap *= 2;
    if (cap > t->stm.rset_alloc) {
        uintptr_t *n = malloc(cap * sizeof *n);
        if (!n)
            return false;
        free(t->stm.rset);
        t->stm.rset = n;
        t->stm.rset_alloc = cap;
    }
    memset(t->stm.rset, 0, cap * sizeof *t->stm.rset); /* what this attempt uses */
    t->stm.rset_cap = cap;
    t->stm.rset_len = 0;
    t->stm.rset_upto = 0;
    return true;
}

/* Bring the index up to the read log (every word of every entry); false: no
 * memory (the caller walks instead). Owner thread, inside its attempt. */
static bool rset_update(tk_thread *t) {
    size_t n = (size_t)(_txkit_tls.rcur - t->stm.rlog);
    /* built in this attempt (from a log that only grew since), and still at
     * most half full with the new entries */
    if (t->stm.rset_upto == 0 || t->stm.rset_upto > n ||
        2 * (t->stm.rset_len + 2 * (n - t->stm.rset_upto)) > t->stm.rset_cap) {
        if (!rset_reset(t, n))
            return false;
    }
    for (size_t i = t->stm.rset_upto; i < n; i++) {
        const tk_rentry *r = &t->stm.rlog[i];
        uintptr_t a = (uintptr_t)r->addr, w = a & ~(uintptr_t)7;
        uintptr_t last = (a + (r->size ? r->size : 1) - 1) & ~(uintptr_t)7;
        for (;; w += 8) {
            rset_put(t, w);
            if (w == last)
                break;
        }
    }
    t->stm.rset_upto = n;
    return true;
}

/* Did no software commit from s (exclusive) to c (inclusive) write a word
 * this attempt read? True only when every slot on the way says so. Owner
 * thread, inside its attempt, c even and read from the clock. */
static bool ring_valid(tk_thread *t, uint64_t s, uint64_t c) {
    if (c - s > 2 * (uint64_t)RING_SLOTS)
        return false;
    if (!__atomic_load_n(&ring_on, __ATOMIC_RELAXED))
        __atomic_store_n(&ring_on, 1, __ATOMIC_RELAXED); /* the next commits publish */
    if (!rset_update(t))
        return false;
    for (uint64_t v = s + 2; v <= c; v += 2) {
        const struct ring_slot *sl = ring_slot_of(v);
        if (__atomic_load_n(&sl->tag, __ATOMIC_ACQUIRE) != v)
            return false;
        uint64_t n = __atomic_load_n(&sl->n, __ATOMIC_RELAXED);
        if (n > RING_WORDS)
            return false;
        for (uint64_t i = 0; i < n; i++)
            if (rset_has(t, __atomic_load_n(&sl->word[i], __ATOMIC_RELAXED)))
                return false;
        __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the words before the tag again */
        if (__atomic_load_n(&sl->tag, __ATOMIC_RELAXED) != v)
            return false;
    }
    return true;
}

/* tk_stm_long_readers (internal.h); each on a line of its own: hardware
 * commits' choice reads it. */
unsigned tk_stm_long_readers __attribute__((aligned(64)));

/* A hardware commit made this long attempt walk its read log: counted until
 * the attempt ends (unregister), so that auto runs the writers in software
 * meanwhile, whose commits the ring then speaks for (bayes at 2 threads with
 * RTM: 8-10 rounds a second before, 12-16 after). Owner thread, inside the attempt. */
static __attribute__((noinline)) void long_reader_on(tk_thread *t) {
    t->stm.long_reader = 1;
    __atomic_add_fetch(&tk_stm_long_readers, 1, __ATOMIC_RELAXED);
}

/* fork(): long readers counted by threads that are gone. */
static void stm_atfork(tk_thread *me, int phase) {
    if (phase == TK_FORK_CHILD)
        tk_stm_long_readers = me && me->stm.long_reader ? 1 : 0;
}

TK_CONSTRUCTOR static void stm_hooks(void) {
    tk_hook_add(TK_HOOK_FORK, TK_FORK_ORDER_STM, stm_atfork);
}

/* May the commit ring answer for an attempt of nlog read-log entries (a log
 * in the index's range, no cx lock subscribed, whose holders write in place)? */
static inline bool ring_may_answer(const tk_thread *t, size_t nlog) {
    return nlog - RSET_MIN <= RSET_MAX - RSET_MIN && !t->cx.nsubs;
}

/* Move the snapshot to now if everything read so far still holds (false:
 * it does not, or the revalidation budget is spent: abort). */
static bool try_extend(tk_thread *t) {
    if (t->stm.nolog) {
        /* Nothing logged, nothing to check: the snapshot holds only while no
         * commit happened since it (every software writer moves the clock
         * on, every hardware one hw_commits). */
        if (tk_wait_clock_even() == _txkit_tls.snap && hw_snapshot_current())
            return true;
        nolog_lost(t);
        return false;
    }
    uint64_t base = _txkit_tls.snap; /* the reads are valid at base */
    size_t nlog = (size_t)(_txkit_tls.rcur - t->stm.rlog);
    for (;;) {
        uint64_t c = tk_wait_clock_even();
        uint64_t h = tk_g.hybrid ? __atomic_load_n(&tk_g.hw_commits, __ATOMIC_ACQUIRE) : 0;
        /* The ring only speaks for software commits since base: a caller that
         * checks with the clock unmoved (after taking cx locks, whose holders
         * write in place) walks, and so does an attempt that depends on cx
         * locks at all, or that hardware commits may have written under. */
        if (c != base && h == _txkit_tls.hsnap && ring_may_answer(t, nlog) &&
            ring_valid(t, base, c)) {
            /* valid at c whatever commits after c: the next round checks from c;
             * the work counted: the slots (the index grows with the log) */
            if (TXKIT_UNLIKELY(reval_budget_spent(t, (c - base) / 2)))
                return false;
            __atomic_add_fetch(&ring_moves, 1, __ATOMIC_RELAXED);
            base = c;
        } else {
            /* a walk that only hardware commits caused: with them in
             * software the ring would answer (outside its range it never
             * does, and sending writers to software would not help) */
            if (TXKIT_UNLIKELY(h != _txkit_tls.hsnap) && !t->stm.long_reader &&
                ring_may_answer(t, nlog))
                long_reader_on(t);
            if (TXKIT_UNLIKELY(reval_budget_spent(t, nlog)))
                return false;
            if (!rlog_valid(t))
                return false;
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&tk_g.clock, __ATOMIC_RELAXED) == c &&
            (!tk_g.hybrid || __atomic_load_n(&tk_g.hw_commits, __ATOMIC_RELAXED) == h)) {
            _txkit_tls.snap = c;
            _txkit_tls.hsnap = h;
            tk_epoch_publish(t, c); /* what we can still reach is valid at c */
            if (tk_g.hybrid)        /* and at h: a hardware writer's wait ends */
                tk_epoch_publish_hw(t, h);
            return true;
        }
    }
}

/* ------------------------------------------------------------- write set */

/* A write set of up to WS_SMALL entries is searched (after a bloom hit), not
 * indexed: most transactions write a few words, and a store then appends
 * one entry and touches no index slot. The entry that makes it larger
 * indexes them all (ws_reserve: windex_build), and from then on the index
 * holds every entry until ws_clear. */
#define WS_SMALL 8

static inline uint64_t bloom_bit(uintptr_t word) { return 1ull << _TXKIT_WBLOOM_BIT(word); }

/* The inline store (txkit/tx.h _txkit_store_buf) appends entries at
 * _txkit_tls.wcur while it is below wend: the first stores of a small write
 * set, of an attempt not visible to its readers (a visible one tells its
 * contention manager at each store: tk_vis_write) that allocated nothing yet
 * (memory it allocated is written in place: gcc reads it without barriers,
 * and it may be freed before the commit; tk_capture sets wend to NULL).
 * Inside a software attempt wcur is always the end of the write set: the
 * method moves it where it appends, clears or grows the set; lookups scan
 * to it (ws_scan); ws_sync, where the method's stores, commit and nesting
 * use the length, brings wset.len up to what the inline store appended;
 * ws_arm (begin, growth) says how far the inline store may go. */
_Static_assert(sizeof(tk_wentry) == 24, "txkit/tx.h: struct _txkit_wentry");
static inline void ws_sync(tk_thread *t) {
    t->stm.wset.len = (size_t)(_txkit_tls.wcur - (tk_wentry *)t->stm.wset.data);
}
static inline void ws_arm_end(tk_thread *t) { /* wcur is already the end */
    _txkit_tls.wend = t->vis.active || t->captured.len ? NULL : t->stm.wlim;
}
static inline void ws_arm(tk_thread *t) {
    _txkit_tls.wcur = (tk_wentry *)t->stm.wset.data + t->stm.wset.len;
    ws_arm_end(t);
}

static inline uint32_t word_hash(uintptr_t word) {
    return (uint32_t)(((uint64_t)(word >> 3) * 0x9e3779b97f4a7c15ull) >> 32);
}

/* The index slot of word: the live one that holds it, else the free slot it
 * would take (there: whether it may be in the index at all). */
static inline uint32_t windex_slot(const tk_thread *t, uintptr_t word, bool there) {
    uint32_t mask = t->stm.windex_mask, h = word_hash(word) & mask;
    for (; t->stm.windex[h].gen == t->stm.wgen; h = (h + 1) & mask)
        if (there && t->stm.windex[h].word == word)
            break;
    return h;
}

static inline bool windex_live(const tk_thread *t, uint32_t h) {
    return t->stm.windex[h].gen == t->stm.wgen;
}

/* The entry of word in a write set that is not indexed, NULL if none. */
static inline tk_wentry *ws_scan(const tk_thread *t, uintptr_t word) {
    /* to wcur, the end (with the inline store's entries: no ws_sync needed) */
    for (tk_wentry *e = (tk_wentry *)t->stm.wset.data, *end = _txkit_tls.wcur; e != end; e++)
        if (e->word == word)
            return e;
    return NULL;
}

/* Record word in wfine (an indexed write set). */
static inline void wfine_add(tk_thread *t, uintptr_t word) {
    unsigned b = _TXKIT_WFINE_BIT(word);
    t->stm.wfine[b >> 6] |= 1ull << (b & 63);
}

static inline tk_wentry *ws_find(const tk_thread *t, uintptr_t word) {
    if (!_TXKIT_MAYBE_WRITTEN(&_txkit_tls, word, 1))
        return NULL;
    if (!t->stm.windexed)
        return ws_scan(t, word);
    uint32_t h = windex_slot(t, word, true);
    return windex_live(t, h) ? &TK_VEC_AT(&t->stm.wset, tk_wentry, t->stm.windex[h].idx) : NULL;
}

static void windex_put(tk_thread *t, uintptr_t word, uint32_t idx) {
    t->stm.windex[windex_slot(t, word, false)] = (tk_wslot){word, idx, t->stm.wgen};
}

/* Index every entry of the write set: when it outgrows WS_SMALL, and into a
 * larger index (windex_grow). */
__attribute__((noinline, cold)) static void windex_build(tk_thread *t) {
    for (size_t i = 0; i < t->stm.wset.len; i++) {
        uintptr_t word = TK_VEC_AT(&t->stm.wset, tk_wentry, i).word;
        windex_put(t, word, (uint32_t)i);
        wfine_add(t, word);
    }
    t->stm.windexed = 1;
    _txkit_tls.wfine = t->stm.wfine;
    /* past what the inline store may fill: its stores ask nothing more (the
     * next attempt's begin sets the bit again) */
    _txkit_tls.access &= ~TXKIT_ACC_BUFSTORE;
}

__attribute__((noinline, cold)) static void windex_grow(tk_thread *t) {
    uint32_t size = (t->stm.windex_mask + 1) * 2;
    tk_wslot *n = calloc(size, sizeof *n);
    if (!n)
        tk_abort_serially(t, "write set index");
    free(t->stm.windex);
    t->stm.windex = n;
    t->stm.windex_mask = size - 1;
    t->stm.wgen = 1;
    windex_build(t);
}

/* Would one more entry fill the index past half? */
static inline bool windex_full(const tk_thread *t) {
    return (t->stm.wset.len + 1) * 2 > (size_t)t->stm.windex_mask + 1;
}

/* Room for one more entry without a call: in the vector, and either below
 * WS_SMALL or in an index that stays at most half full. */
static inline bool ws_room(const tk_thread *t) {
    return TXKIT_LIKELY(t->stm.wset.len < t->stm.wset.cap &&
                        (t->stm.windexed ? !windex_full(t) : t->stm.wset.len < WS_SMALL));
}

/* Make that room: index the entries, or a larger index; a larger vector (it
 * grows by a push taken back at once). */
__attribute__((noinline, cold)) static void ws_reserve(tk_thread *t) {
    if (!t->stm.windexed && t->stm.wset.len >= WS_SMALL)
        windex_build(t);
    if (t->stm.windexed && windex_full(t))
        windex_grow(t);
    if (t->stm.wset.len == t->stm.wset.cap) {
        if (!tk_vec_push(&t->stm.wset, sizeof(tk_wentry)))
            tk_abort_serially(t, "write set");
        t->stm.wset.len--;
        size_t lim = t->stm.wset.cap < WS_SMALL ? t->stm.wset.cap : WS_SMALL;
        t->stm.wlim = (tk_wentry *)t->stm.wset.data + lim;
    }
    ws_arm(t);
}

/* A new entry for word (bit: its bloom bit), nothing written yet (mask 0:
 * every reader of data takes only the bytes the mask names, so data is not
 * cleared); the vector has room. */
static inline __attribute__((always_inline)) tk_wentry *ws_append(tk_thread *t, uintptr_t word,
                                                                  uint64_t bit) {
    tk_wentry *e = &((tk_wentry *)t->stm.wset.data)[t->stm.wset.len++];
    e->word = word;
    e->mask = 0;
    _txkit_tls.wbloom |= bit;
    _txkit_tls.wcur = e + 1;
    return e;
}

/* ws_get's two halves, with room for one more entry: the write set not
 * indexed (a search after a bloom hit, else an append), or indexed (one probe
 * finds the entry or the free slot it goes to). */
static inline __attribute__((always_inline)) tk_wentry *ws_get_small(tk_thread *t, uintptr_t word) {
    uint64_t bit = bloom_bit(word);
    tk_wentry *e = (_txkit_tls.wbloom & bit) ? ws_scan(t, word) : NULL;
    return e ? e : ws_append(t, word, bit);
}
static inline __attribute__((always_inline)) tk_wentry *ws_get_indexed(tk_thread *t,
                                                                       uintptr_t word) {
    /* compare the words themselves: asking the bloom first saved nothing
     * once the set is this large (it saturates), and kept one more value live */
    uint64_t bit = bloom_bit(word);
    uint32_t h = windex_slot(t, word, true);
    tk_wentry *base = (tk_wentry *)t->stm.wset.data;
    if (windex_live(t, h))
        return &base[t->stm.windex[h].idx];
    t->stm.windex[h] = (tk_wslot){word, (uint32_t)t->stm.wset.len, t->stm.wgen};
    wfine_add(t, word);
    return ws_append(t, word, bit);
}

/* The entry of word, a new one if we have not written it yet. */
static inline tk_wentry *ws_get(tk_thread *t, uintptr_t word) {
    if (!ws_room(t))
        ws_reserve(t);
    return t->stm.windexed ? ws_get_indexed(t, word) : ws_get_small(t, word);
}

/* The bytes of a word that an entry's mask says were written, as a 64-bit mask. */
static inline uint64_t byte_mask(uint8_t m) {
    uint64_t r = 0;
    for (unsigned i = 0; i < 8; i++)
        if (m >> i & 1)
            r |= 0xffull << (8 * i);
    return r;
}

/* Copy the written bytes of [a, a+size) into dst; returns how many there were. */
static size_t ws_overlay(const tk_thread *t, unsigned char *dst, uintptr_t a, size_t size) {
    size_t hit = 0;
    while (size) {
        uintptr_t w = a & ~(uintptr_t)7;
        unsigned off = (unsigned)(a & 7);
        size_t n = size < 8 - off ? size : 8 - off;
        const tk_wentry *e = ws_find(t, w);
        if (e) {
            for (size_t i = 0; i < n; i++) {
                if (e->mask >> (off + i) & 1) {
                    dst[i] = ((const unsigned char *)&e->data)[off + i];
                    hit++;
                }
            }
        }
        dst += n;
        a += n;
        size -= n;
    }
    return hit;
}

/* Write back the bytes of a word written in part, with the widest aligned
 * stores: out of line, so that write_back's loop over whole words saves no
 * registers. */
__attribute__((noinline)) static void write_back_part(const tk_wentry *e) {
    const unsigned char *src = (const unsigned char *)&e->data;
    for (unsigned i = 0; i < 8;) {
        unsigned m = e->mask >> i;
        if (!(m & 1)) {
            i++;
        } else if (i % 4 == 0 && (m & 0xf) == 0xf) {
            uint32_t v;
            memcpy(&v, src + i, 4);
            *(volatile uint32_t *)(e->word + i) = v;
            i += 4;
        } else if (i % 2 == 0 && (m & 3) == 3) {
            uint16_t v;
            memcpy(&v, src + i, 2);
            *(volatile uint16_t *)(e->word + i) = v;
            i += 2;
        } else {
            *(volatile unsigned char *)(e->word + i) = src[i];
            i++;
        }
    }
}

/* Write back exactly the bytes written. */
static void write_back(const tk_thread *t) {
    const tk_wentry *e = (const tk_wentry *)t->stm.wset.data;
    for (const tk_wentry *end = e + t->stm.wset.len; e != end; e++) {
        if (TXKIT_LIKELY(e->mask == 0xff))
            *(volatile uint64_t *)e->word = e->data;
        else
            write_back_part(e);
    }
}

/* ws_clear's part for an indexed set: out of line, most sets are small. */
static __attribute__((noinline)) void ws_clear_index(tk_thread *t) {
    t->stm.windexed = 0;
    _txkit_tls.wfine = NULL;
    memset(t->stm.wfine, 0, sizeof t->stm.wfine);
    if (++t->stm.wgen == 0) {
        memset(t->stm.windex, 0, (t->stm.windex_mask + 1) * sizeof *t->stm.windex);
        t->stm.wgen = 1;
    }
}

static inline void ws_clear(tk_thread *t) {
    t->stm.wset.len = 0;
    _txkit_tls.wbloom = 0;
    _txkit_tls.wcur = (tk_wentry *)t->stm.wset.data;
    _txkit_tls.wend = NULL; /* until ws_arm: stm_begin, or the next append's growth */
    if (TXKIT_UNLIKELY(t->stm.windexed))
        ws_clear_index(t); /* else no slot of this generation was taken, no bit of wfine set */
}

/* At the start of each software attempt: empty read log and write set. */
static inline void stm_attempt_reset(tk_thread *t) {
    /* both: between software attempts the pair may have been the undo log's
     * (TXKIT_ACC_UNDO, internal.h) */
    _txkit_tls.rcur = t->stm.rlog;
    _txkit_tls.rend = t->stm.rlog + t->stm.rlog_cap;
    t->stm.rset_upto = 0; /* the index is rebuilt when needed (ring_valid) */
    ws_clear(t);
}

/* ---------------------------------------------------------------- method */

/* tk_g.sw_active counts the threads that may run software attempts now; all
 * its readers only need it above zero while one runs (hardware commits then
 * bump hw_commits, gcc code in hardware takes its instrumented path). */
static void sw_leave(tk_thread *t) {
    __atomic_sub_fetch(&tk_g.sw_active, 1, __ATOMIC_RELEASE);
    t->stm.sw_registered = 0;
}

/* tk_stm_sw_leave (internal.h): the thread runs something else now. */
void tk_stm_sw_leave(tk_thread *t) {
    if (t->stm.sw_registered)
        sw_leave(t);
}

/* The end of a software attempt. A thread whose method is stm stays counted
 * in sw_active until it runs another method or exits: on a CPU with RTM
 * that saves two contended atomic operations on one global line per
 * transaction (tree set, 2 threads: 5.4 -> 7 Mops/s); meanwhile other
 * threads' hardware commits bump hw_commits, which costs them only when they
 * conflict on it. Any other thread leaves at once, so that its own hardware
 * attempts, and everyone else's, need not. */
static inline void unregister(tk_thread *t) {
    __atomic_store_n(t->epoch, 0, __ATOMIC_RELEASE);
    if (TXKIT_UNLIKELY(t->stm.long_reader)) {
        t->stm.long_reader = 0;
        __atomic_sub_fetch(&tk_stm_long_readers, 1, __ATOMIC_RELAXED);
    }
    if (t->stm.sw_registered && tk_configured_method(t) != TXKIT_STM)
        sw_leave(t);
}

/* The caller has just taken a cx lock that software transactions read: the
 * ticket word changed. Two things make that safe:
 *  - a commit that validated the word before the change may be writing back
 *    right now (clock odd): wait for it, so its writes come before the
 *    caller's critical section;
 *  - then the clock must move, so that every snapshot taken before the change
 *    is revalidated (by value, which sees it). A failed CAS means a commit
 *    began meanwhile, possibly validated before the change: wait for it too.
 * A serial transaction holding the clock is not waited for: it may itself be
 * waiting for the caller's lock, and it only touches that lock's data while
 * holding the lock. */

static void stm_refresh_read(tk_thread *t, const void *addr) {
    for (tk_rentry *r = t->stm.rlog; r != _txkit_tls.rcur; r++)
        if (r->addr == addr)
            r->val = read_mem(addr, r->size);
}

/* A software attempt's hw_commits snapshot, taken after its epoch and before
 * its first shared read, and published (hardware writers wait on it). */
static inline void begin_hsnap(tk_thread *t) {
    uint64_t h = 0;
    if (tk_g.hybrid) {
        h = __atomic_load_n(&tk_g.hw_commits, __ATOMIC_ACQUIRE);
        tk_epoch_publish_hw(t, h);
    }
    _txkit_tls.hsnap = h;
}

/* A serial transaction that wrote nothing becomes an irrevocable software one
 * (see serial_make_irrevocable): clock is the even value it will release. */
void tk_stm_adopt_irrevocable(tk_thread *t, uint64_t clock) {
    stm_attempt_reset(t); /* the serial attempt did not reset software state */
    if (tk_g.hybrid && !t->stm.sw_registered) {
        __atomic_add_fetch(&tk_g.sw_active, 1, __ATOMIC_SEQ_CST);
        t->stm.sw_registered = 1;
    }
    _txkit_tls.snap = clock;
    t->stm.nolog = 0; /* irrevocable: nolog_ok */
    __atomic_store_n(&tk_g.stm_started, 1, __ATOMIC_RELAXED);
    tk_epoch_publish(t, clock); /* we hold the clock: no free is pending at it */
    begin_hsnap(t);
    t->ctl.m = &tk_method_stm;
    /* Visible and pinned, as when irrevocable from the start (stm_begin): its
     * commit decides against the readers it overwrites. Its own reads need
     * not be seen (no writer commits under the token): fast reads stay. */
    t->vis.active = 0;
    if (tk_vis_on) {
        tk_vis_begin(t);
        TK_ASSERT(tk_vis_pin(t)); /* we hold the clock: nobody can have killed us */
    }
    ws_arm_end(t); /* now that the attempt's visibility is known (wcur: ws_clear) */
    _txkit_tls.access = tk_read_access(tk_method_stm.access, 0);
}

/* stm_begin's snapshot: the clock once no commit is writing back, published
 * for the reclaimer (after t->epoch said we run). */
static inline void begin_snapshot(tk_thread *t) {
    uint64_t c = __atomic_load_n(&tk_g.clock, __ATOMIC_ACQUIRE);
    if (TXKIT_UNLIKELY(c & 1))
        c = tk_wait_clock_even();
    _txkit_tls.snap = c;
    tk_epoch_publish(t, c);
}

/* stm_begin's last step, once the attempt's visibility and irrevocability
 * are known: how it reads, how far the inline store may append. plain: the
 * attempt is neither visible nor irrevocable, and not hybrid (stm_begin's
 * common case): a constant true drops those tests from the choice of
 * unlogged reads (hybrid is a global the compiler cannot know). */
static inline void begin_reads(tk_thread *t, bool plain) {
    t->stm.nolog = plain ? nolog_wanted(t) : nolog_ok(t);
    t->ctl.acc_add = t->stm.nolog ? TXKIT_ACC_NOLOG : 0;
    ws_arm_end(t); /* wcur: ws_clear */
}

/* stm_begin's common case holds for good once this is set (by its general
 * way, the first time it finds it so): no hybrid (tk_g.hybrid stays what
 * config.c found at start), stm_started set (it stays set). */
static int stm_plain;

/* stm_begin's general way: hybrid registration, a waiting serial
 * transaction, the token holder's irrevocability, a contention manager's
 * visibility. */
static __attribute__((noinline)) int stm_begin_general(tk_thread *t) {
    if (tk_g.hybrid && !t->stm.sw_registered) {
        /* Full barrier: hardware transactions that commit after this see us and
         * bump hw_commits; those that committed before are in our snapshot.
         * (Still counted from an earlier attempt: that barrier did it.) */
        __atomic_add_fetch(&tk_g.sw_active, 1, __ATOMIC_SEQ_CST);
        t->stm.sw_registered = 1;
    }
    /* Let a waiting serial transaction in first, so it cannot starve. Not
     * while holding the irrevocability token: the serial one waits for it. */
    for (unsigned spins = 0;
         !t->ctl.irr_token && __atomic_load_n(&tk_g.serial_pending, __ATOMIC_RELAXED);)
        tk_wait_step(&spins, TK_SPINS_BEFORE_YIELD);
    /* Say we run before reading anything shared (reclaim.c): the store must
     * be visible before our loads. */
    if (TXKIT_UNLIKELY(!tk_g.stm_started))
        __atomic_store_n(&tk_g.stm_started, 1, __ATOMIC_SEQ_CST);
    if (!tk_g.hybrid)
        stm_plain = 1;
    tk_epoch_enter(t); /* we run, before our first shared read */
    begin_snapshot(t);
    begin_hsnap(t);
    /* Holding the token (taken before this attempt, see stm_make_irrevocable),
     * nothing we read can change any more: irrevocable from the start. */
    t->ctl.irrevocable = t->ctl.irr_token;
    if (tk_vis_on) {
        tk_vis_begin(t);        /* a contention manager decides conflicts (vis.c) */
        if (t->ctl.irrevocable) /* nobody can have seen us yet to kill us */
            TK_ASSERT(tk_vis_pin(t));
    } else {
        t->vis.active = 0;
    }
    begin_reads(t, false);
    return TK_OK;
}

/* Begin a software attempt: stm_begin_general's work, less what cannot
 * apply in the common case (stm_plain, no token, no visibility, no serial
 * transaction waiting). */
static int stm_begin(tk_thread *t) {
    stm_attempt_reset(t);
    t->ctl.revals = 0;
    t->ctl.reval_work = 0;
    unsigned slow = t->ctl.irr_token | __atomic_load_n(&tk_vis_on, __ATOMIC_RELAXED) |
                    __atomic_load_n(&tk_g.serial_pending, __ATOMIC_RELAXED);
    if (TXKIT_UNLIKELY(!stm_plain || slow))
        return stm_begin_general(t);
    /* stm_begin_general with none of its cases: no hybrid, no token, not
     * visible. We run, before our first shared read (fenced unless alone). */
    tk_epoch_enter(t);
    begin_snapshot(t);
    _txkit_tls.hsnap = 0;
    t->ctl.irrevocable = 0;
    t->vis.active = 0;
    begin_reads(t, true);
    return TK_OK;
}

/* Take the clock (odd) with the read set still valid.
 *
 * An irrevocable transaction (tk_g.irr_owner) must never see its reads
 * invalidated, so a writer that got the clock while one runs gives it back
 * unused and waits. The two sides order their accesses with locked
 * instructions (CAS clock, then load irr_owner; CAS irr_owner, then wait for
 * an even clock), so at least one of them sees the other. */
static bool acquire_clock(tk_thread *t) {
    uint64_t c = _txkit_tls.snap;
    for (;;) {
        if (__atomic_compare_exchange_n(&tk_g.clock, &c, c + 1, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED)) {
            if (TXKIT_LIKELY(!tk_irr_other(t)))
                break;
            clock_give_back(c + 2);
            tk_wait_no_irrevocable(t);
        }
        if (!try_extend(t))
            return false;
        c = _txkit_tls.snap;
    }
    /* Hardware commits stop once the clock is odd; check those that came
     * before (unlogged reads cannot be checked: any of them aborts). */
    if (!hw_snapshot_current() && (t->stm.nolog || !rlog_valid(t))) {
        clock_give_back(c + 2);
        if (t->stm.nolog)
            nolog_lost(t);
        return false;
    }
    return true;
}

static int stm_commit(tk_thread *t) {
    if (t->ctl.inject && !t->ctl.irrevocable)
        return TXKIT_CAUSE_INJECTED;
    /* read-only (no entry, not even an inline one: wset.len is 0 then, as
     * ws_sync would make it): consistent at its last validation */
    if (_txkit_tls.wcur == (tk_wentry *)t->stm.wset.data) {
        if (t->vis.active) { /* (vis.c does nothing for an attempt not visible) */
            if (!tk_vis_read_commit(t))
                return TXKIT_CAUSE_CONFLICT; /* a manager decided against it */
            tk_vis_end(t);
        }
        nolog_committed(t);
        unregister(t);
        return TK_OK;
    }
    ws_sync(t);
    for (;;) {
        if (!acquire_clock(t))
            return TXKIT_CAUSE_CONFLICT;
        int r = t->vis.active ? tk_vis_commit_point(t) : TK_OK;
        if (r == TK_OK)
            break;
        /* Killed, or a reader that beats us must finish first: give the
         * clock back unused (and wait for that reader). */
        clock_give_back(_txkit_tls.snap + 2);
        TK_SIM_POINT("stm.lost_at_commit"); /* cm.waitrace: the winner moves on here */
        if (r == TK_VIS_KILLED || !tk_vis_wait_for(t, r))
            return TXKIT_CAUSE_CONFLICT;
    }
    tk_g.last_writer_prio = t->cm.prio;
    ring_publish_if_on(t, _txkit_tls.snap + 2);
    write_back(t);
    __atomic_store_n(&tk_g.clock, _txkit_tls.snap + 2, __ATOMIC_RELEASE);
    if (t->vis.active)
        tk_vis_end(t);
    nolog_committed(t);
    unregister(t);
    /* With the irrevocability token, a reader may be waiting for it
     * (acquire_clock): tk_finish_commit waits once it is given back. */
    if (!t->ctl.irr_token)
        tk_privatization_wait(t, _txkit_tls.snap + 2);
    else
        t->priv_clock = _txkit_tls.snap + 2;
    return TK_OK;
}

/* Closed nesting: the write set as it is now, to go back to. */
static void stm_checkpoint(tk_thread *t, tk_vec *save) {
    ws_sync(t);
    for (size_t i = 0; i < t->stm.wset.len; i++) {
        tk_wentry *e = tk_vec_push(save, sizeof *e);
        if (!e)
            tk_abort_serially(t, "nested checkpoint");
        *e = TK_VEC_AT(&t->stm.wset, tk_wentry, i);
    }
}

/* Closed nesting: the write set back to a checkpoint, its index rebuilt. */
static void stm_rollback_to(tk_thread *t, const tk_vec *save) {
    ws_clear(t);
    const tk_wentry *saved = (const tk_wentry *)save->data;
    for (size_t i = 0; i < save->len; i++) {
        tk_wentry *e = ws_get(t, saved[i].word);
        e->data = saved[i].data;
        e->mask = saved[i].mask;
    }
    ws_arm(t);
}

#define WINDEX_INITIAL 256

static void stm_thread_init(tk_thread *t) {
    t->stm.windex = calloc(WINDEX_INITIAL, sizeof *t->stm.windex);
    if (!t->stm.windex)
        TK_FATAL("out of memory creating a thread descriptor");
    t->stm.windex_mask = WINDEX_INITIAL - 1;
    t->stm.wgen = 1;
    t->stm.windexed = 0;
    t->stm.calm = 0;
    t->stm.calm_need = NOLOG_NEED_MIN;
}

static void stm_thread_fini(tk_thread *t) {
    tk_stm_sw_leave(t);
    free(t->stm.rlog);
    t->stm.rlog = NULL;
    t->stm.rlog_cap = 0;
    _txkit_tls.rcur = _txkit_tls.rend = NULL;
    _txkit_tls.wfine = NULL;
    _txkit_tls.wcur = _txkit_tls.wend = NULL;
    tk_vec_free(&t->stm.wset);
    t->stm.wlim = NULL;
    free(t->stm.windex);
    t->stm.windex = NULL;
    free(t->stm.rset);
    t->stm.rset = NULL;
    t->stm.rset_alloc = t->stm.rset_cap = t->stm.rset_len = t->stm.rset_upto = 0;
}

static void stm_rollback(tk_thread *t) {
    tk_vis_end(t);
    ws_clear(t);
    tk_undo_apply(t, 0, tk_stack_private_top(t)); /* _ITM_L*, nested-cancel stack logs */
    unregister(t);
}

/* Any load: what stm_load does not finish itself. */
__attribute__((noinline)) static void stm_load_any(tk_thread *t, void *dst, const void *addr,
                                                   size_t size) {
    if (tk_stack_private(t, addr, size)) { /* our own frames: written in place */
        memcpy(dst, addr, size);
        return;
    }
    uintptr_t a = (uintptr_t)addr;
    /* Read-after-write: the common access (one aligned word) looks its entry
     * up once; others overlay what we wrote, byte by byte. */
    bool word = size == 8 && !(a & 7);
    const tk_wentry *e = NULL;
    size_t overlaid = 0;
    if (_txkit_tls.wcur != (tk_wentry *)t->stm.wset.data) { /* an entry (ws_scan: to wcur) */
        if (word) {
            e = ws_find(t, a);
            if (e && e->mask == 0xff) {
                __builtin_memcpy(dst, &e->data, 8);
                return;
            }
        } else if ((overlaid = ws_overlay(t, dst, a, size)) == size) {
            return; /* bytes all written by us */
        }
    }
    if (t->vis.active)
        tk_vis_read(t, addr, size);
    uint64_t v = read_mem(addr, (uint32_t)size);
    while (TXKIT_UNLIKELY(!snapshot_current())) {
        if (!try_extend(t)) {
            TK_ASSERT(!t->ctl.irrevocable); /* nobody may write while it runs */
            tk_abort(t, TXKIT_CAUSE_CONFLICT);
        }
        v = read_mem(addr, (uint32_t)size);
    }
    if (!t->stm.nolog) {
        if (TXKIT_UNLIKELY(_txkit_tls.rcur == _txkit_tls.rend))
            rlog_grow(t);
        rlog_push(addr, v, (uint32_t)size);
    }
    if (e) { /* some bytes of the word are ours */
        uint64_t m = byte_mask(e->mask);
        v = (v & ~m) | (e->data & m);
    }
    put_bytes(dst, v, size);
    if (overlaid)
        ws_overlay(t, dst, a, size);
}

/* The common load, one aligned word (gcc's pointers and counters, a read the
 * inline barrier passed on because the word may be written), finished here
 * without spilling registers: a word this attempt wrote whole, or a plain
 * logged read while the snapshot holds. Anything else, stm_load_any. */
static void stm_load(tk_thread *t, void *dst, const void *addr, size_t size) {
    uintptr_t a = (uintptr_t)addr;
    if (TXKIT_LIKELY(size == 8 && !(a & 7) && !tk_stack_private(t, addr, 8))) {
        const tk_wentry *e = ws_find(t, a);
        if (e) {
            if (TXKIT_LIKELY(e->mask == 0xff)) {
                __builtin_memcpy(dst, &e->data, 8);
                return;
            }
        } else if (TXKIT_LIKELY(!t->vis.active &&
                                (t->stm.nolog || _txkit_tls.rcur != _txkit_tls.rend))) {
            uint64_t v = *(const volatile uint64_t *)addr;
            if (TXKIT_LIKELY(snapshot_current())) {
                if (!t->stm.nolog)
                    rlog_push(addr, v, 8);
                __builtin_memcpy(dst, &v, 8);
                return;
            }
        }
    }
    stm_load_any(t, dst, addr, size);
}

/* Any store: what stm_store does not finish itself. */
__attribute__((noinline)) static void stm_store_any(tk_thread *t, void *addr, const void *src,
                                                    size_t size) {
    ws_sync(t);
    if (tk_stack_private(t, addr, size)) {
        /* The attempt's own frames: in place, like gcc's direct accesses to
         * them; undone only for a nested block that may be cancelled (the
         * frames above it outlive the cancel). */
        if (t->itm.cps.len)
            tk_undo_log(t, addr, size);
        memcpy(addr, src, size);
        return;
    }
    if (t->captured.len && tk_captured(t, addr, size)) {
        memcpy(addr, src, size); /* allocated by this attempt: private, in place */
        return;
    }
    uintptr_t a = (uintptr_t)addr;
    const unsigned char *s = src;
    if (size == 8 && !(a & 7)) { /* the common access: one whole word */
        tk_wentry *e = ws_get(t, a);
        __builtin_memcpy(&e->data, src, 8);
        e->mask = 0xff;
        size = 0;
    }
    while (size) {
        uintptr_t w = a & ~(uintptr_t)7;
        unsigned off = (unsigned)(a & 7);
        size_t n = size < 8 - off ? size : 8 - off;
        tk_wentry *e = ws_get(t, w);
        memcpy((unsigned char *)&e->data + off, s, n);
        e->mask |= (uint8_t)(((1u << n) - 1) << off);
        a += n;
        s += n;
        size -= n;
    }
    if (t->vis.active)
        tk_vis_write(t);
}

/* stm_store of a word once the write set is indexed: out of line, so that
 * the common case, a small write set, saves no registers. */
__attribute__((noinline)) static void stm_store_indexed(tk_thread *t, uintptr_t a, uint64_t v) {
    tk_wentry *e = ws_get_indexed(t, a);
    e->data = v;
    e->mask = 0xff;
}

/* The common stores of one aligned word: to shared memory, buffered here
 * without spilling registers; to the attempt's own frames (gcc instruments
 * stores to a local whose address it passed on: an iterator), in place as in
 * stm_store_any. Anything else (a nested block that may be cancelled, memory
 * this attempt allocated, visible readers to tell, other sizes, a full write
 * set) goes to stm_store_any. */
static void stm_store(tk_thread *t, void *addr, const void *src, size_t size) {
    uintptr_t a = (uintptr_t)addr;
    if (TXKIT_UNLIKELY(size != 8 || (a & 7)))
        goto any;
    if (tk_stack_private(t, addr, 8)) {
        if (TXKIT_LIKELY(!t->itm.cps.len)) {
            __builtin_memcpy(addr, src, 8);
            return;
        }
    } else if (TXKIT_LIKELY(!t->vis.active)) {
        if (TXKIT_UNLIKELY(t->captured.len) && tk_captured(t, addr, 8)) {
            __builtin_memcpy(addr, src, 8); /* allocated by this attempt: stm_store_any */
            return;
        }
        /* A small write set (never indexed below WS_SMALL entries: ws_reserve)
         * with room: ws_get_small, without ws_room's questions. An indexed
         * one has no entry of the inline store's to sync: it stopped at
         * WS_SMALL. */
        if (TXKIT_LIKELY(!t->stm.windexed)) {
            ws_sync(t);
            size_t n = t->stm.wset.len;
            if (TXKIT_LIKELY(n < WS_SMALL && n < t->stm.wset.cap)) {
                tk_wentry *e = ws_get_small(t, a);
                __builtin_memcpy(&e->data, src, 8);
                e->mask = 0xff;
                return;
            }
        } else if (ws_room(t)) {
            uint64_t v;
            __builtin_memcpy(&v, src, 8);
            stm_store_indexed(t, a, v);
            return;
        }
    }
any:
    stm_store_any(t, addr, src, size);
}

/* A failed make_irrevocable of an attempt that depends on cx locks: the next
 * attempt must not keep the token. Irrevocable from its start, it would wait
 * for those locks holding the token (cx.c, subscribe), while their holder, if
 * it commits a transaction inside its section, waits for the token: a
 * deadlock. Without the token the next attempt runs serially, which takes
 * the locks or starts again, and never waits holding what a holder needs. */
static int irrevocable_failed(tk_thread *t) {
    if (t->cx.nsubs)
        tk_irr_release(t);
    return TXKIT_CAUSE_IRREVOCABLE;
}

/* Become irrevocable without stopping the world: take the token, so that no
 * other transaction can commit a write from now on (readers go on), let a
 * writer already past its check finish, and check what we read so far. If
 * that still holds, nothing can invalidate us any more and we simply go on
 * as a software transaction that cannot abort; if not, we restart keeping
 * the token, irrevocable from the start (unless the attempt depends on cx
 * locks: irrevocable_failed). */
static int stm_make_irrevocable(tk_thread *t) {
    tk_irr_take(t);
    if (!try_extend(t)) /* waits for an even clock first */
        return irrevocable_failed(t);
    /* cx locks it depends on must now be held for real: nobody may take them
     * exclusively under an irrevocable transaction. An exclusive holder may
     * have written before we held its lock: check again. */
    if (t->cx.nsubs && (tk_hold_subscribed(t) != 0 || !try_extend(t)))
        return irrevocable_failed(t);
    if (!tk_vis_pin(t)) /* killed by a winner before we could pin */
        return TXKIT_CAUSE_IRREVOCABLE;
    t->ctl.irrevocable = 1;
    nolog_off(t);
    return TK_OK;
}

static void stm_explicit_abort(tk_thread *t, int cause) { tk_abort(t, cause); }

const struct tk_method tk_method_stm = {
    .name = "stm",
    .id = TXKIT_STM,
    .stats_id = TXKIT_STM,
    .caps = TK_CAP_SOFTWARE | TK_CAP_CLOSED_NESTING,
    .access = TXKIT_ACC_LOAD | TXKIT_ACC_STORE | TXKIT_ACC_FASTREAD | TXKIT_ACC_BUFSTORE,
    .begin = stm_begin,
    .commit = stm_commit,
    .rollback = stm_rollback,
    .load = stm_load,
    .store = stm_store,
    .make_irrevocable = stm_make_irrevocable,
    .explicit_abort = stm_explicit_abort,
    .thread_init = stm_thread_init,
    .thread_fini = stm_thread_fini,
    .checkpoint = stm_checkpoint,
    .rollback_to = stm_rollback_to,
    .refresh_read = stm_refresh_read,
};
