/* SPDX-License-Identifier: MIT */
/* internal.h - the runtime's private types: thread descriptor, logs, globals.
 *
 * Naming: tk_* is internal (hidden), tx_* / txkit_* / _txkit_* are exported.
 */
#ifndef TK_INTERNAL_H
#define TK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <txkit.h>

#include "arch/x86_64/cpu.h"
#include "runtime/core.h"
#include "abi/itm_thread.h"
#include "cx/cx_thread.h"
#include "methods/stm_thread.h"
#include "runtime/cm.h"
#include "runtime/policy.h"
#include "runtime/sched.h"
#include "runtime/vis.h"
#include "stats/format.h"


/* Counter update. A thread's own row has one writer: one add to memory (a
 * single aligned 8-byte store, so readers never see it torn; the compiler
 * cannot fuse a relaxed load and store into it). The shared row of the
 * statistics segment (stats/format.h), the last one, from tk_seg_shared_lo
 * up, has many: an atomic add. */
extern uintptr_t tk_seg_shared_lo TK_HIDDEN; /* UINTPTR_MAX while there is none */
#define TK_COUNT(field, n)                                             \
    do {                                                               \
        if (TXKIT_UNLIKELY((uintptr_t) & (field) >= tk_seg_shared_lo)) \
            __atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED);       \
        else                                                           \
            TK_COUNT_OWN(field, n);                                    \
    } while (0)
/* TK_COUNT's case of a field known to be in the thread's own row. */
#define TK_COUNT_OWN(field, n)                                                \
    do {                                                                      \
        _Static_assert(sizeof(field) == 8, "TK_COUNT_OWN: a 64-bit counter"); \
        __asm__("addq %1, %0" : "+m"(field) : "er"((uint64_t)(n)) : "cc");    \
    } while (0)

/* ------------------------------------------------------------------ logs */


/* Memory allocated by the running attempt: nobody else can see it before the
 * commit, and it is freed if the attempt aborts, so software TM writes it in
 * place (gcc reads it back without barriers) and never validates it. */
typedef struct tk_range {
    uintptr_t lo, hi;
} tk_range;

/* A C++ exception object allocated by the attempt; live until thrown or freed. */
typedef struct tk_exc {
    void *p;
    int live;
} tk_exc;

/* How a block whose free waits is finally freed: fn(p, size, align). size
 * and align matter only to C++ sized / aligned deletes (0 otherwise). */
typedef void (*tk_free_fn)(void *p, size_t size, size_t align);

/* A block to free at commit, and how. */
typedef struct tk_free {
    void *p;
    tk_free_fn fn;
    size_t size, align;
} tk_free;


/* Undo log entry (serial method): old bytes to put back on abort. */
typedef struct tk_uentry {
    void *addr;
    uint64_t old;
    uint32_t size;
} tk_uentry;

/* A handler registered by the current attempt. */
typedef struct tk_handler {
    tx_handler_fn fn;
    void *arg;       /* argument, unless copy_off != SIZE_MAX */
    size_t copy_off; /* offset of the private copy in the handler arena */
    int on_commit;   /* 1: commit handler, 0: abort handler */
} tk_handler;


/* Saved by arch/x86_64/checkpoint.S: enough to return from _txkit_begin (or
 * _ITM_beginTransaction) again. ssp: the CET shadow-stack pointer to return
 * to, 0 when shadow stacks are off; written and read (longjmp.S) only in a
 * build with shadow-stack support (__CET__ & 2). */
typedef struct tk_jmpbuf {
    uint64_t rsp, rbx, rbp, r12, r13, r14, r15, rip, ssp;
} tk_jmpbuf;

/* ------------------------------------------------------- thread descriptor */


struct tk_thread {
    /* Every field is written by the owner thread only (other threads read a
     * few: epoch, ntx, slot, next/prev under the registry lock). */

    /* -- current transaction (txn.c, the engine; the front ends set kind,
     *    props, code, resume, thrower at the outermost begin): saved around
     *    abort handlers, which may run transactions of their own on it */
    struct tk_txctl {
        tk_jmpbuf jb;              /* outermost checkpoint: checkpoint.S at each outermost begin */
        txkit_site_t *site;        /* the outermost block's site: tk_start_transaction */
        const struct tk_method *m; /* method of the running attempt: tk_run_attempts (and
                                       * stm_norec.c when a serial attempt becomes software) */
        int kind;                  /* TK_KIND_*: who began the outermost block */
        uint32_t props;            /* TK_KIND_ITM: _ITM_codeProperties of the outermost */
        unsigned code;             /* TK_CODE_*: what the front end's code allows (set at begin) */
        /* this attempt began by tk_hw_express_begin (express.h sets it; cleared
         * as sw_express is, below). Here, in what was padding: the fields after
         * it keep their offsets, and the lone thread's express path the cache
         * lines it touches (a shift by 8 bytes cost it 2-4%) */
        int hw_express;
        /* How an aborted attempt resumes, set by the front end at the outermost
         * begin: start the next attempt and get back into the transaction's
         * code (jump or throw). depth: _txkit_tls.depth when it aborted. */
        TK_NORETURN void (*resume)(tk_thread *t, unsigned depth);
        void (*thrower)(void);     /* throws the C++ restart signal */
        int irrevocable;           /* this attempt runs non-speculatively */
        int force_serial;          /* next attempts must be serial (irrevocable asked) */
        int inject;                /* fault injection: abort this attempt at commit */
        unsigned serial_injected;  /* serial attempts injection aborted (tk_fault_hit) */
        int fell_htm, fell_serial; /* fallbacks already counted for this transaction */
        unsigned attempts;         /* aborted attempts of this transaction */
        unsigned htm_tries, htm_locked_waits, stm_aborts; /* policy.c / txn.c after each abort */
        unsigned htm_zero;       /* hardware aborts with status 0 (txn.c) */
        uint64_t htm_lost;       /* ticks in this transaction's timed hardware attempts
                                  * that ended in a conflict (policy.c) */
        int htm_irr_other;       /* the last hardware abort: another was irrevocable (htm.c) */
        unsigned revals;         /* software: snapshot extensions of this attempt, */
        uint64_t reval_work;     /* and the read-log entries they checked */
        unsigned reval_aborts;   /* attempts that ran out of that budget (stm_norec.c) */
        uint64_t attempt_tsc;    /* start of the current attempt, 0 if not timed */
        unsigned attempt_weight; /* attempts this timing stands for */
        int cancelled;           /* ITM: a hardware attempt was cancelled (outer) */
        int irr_token;           /* holds tk_g.irr_owner: irrevocable from the start */
        int cancelling;          /* ITM cancel: an end, not a conflict to back off from */
        unsigned acc_add;        /* access bits the method's begin adds to its own for this
                                  * attempt (stm_norec.c: TXKIT_ACC_NOLOG); tk_attempt_reset
                                  * clears it, attempt_running and express.h use it */
        int sw_express;          /* this attempt began by tk_sw_express_begin (express.h sets it);
                         * attempt_prepare, tk_abort_attempt and every commit clear it
                         * (txn.c): tk_finish_commit may then finish it the short way */
        int no_priv;             /* tx_no_privatization (reclaim.c): this attempt's commit
                                  * skips the privatization wait; tk_attempt_ended clears it */
        /* a long site's transaction (TK_SITE_FLAG_LONG): when its first attempt in
         * software or serial began, 0 if not measured, and which of the two the
         * policy chose (policy.c: tk_policy_long_serial; start_reset clears it) */
        uint64_t cost_tsc;
        int cost_serial;
    } ctl;
    struct tk_itm_thread itm; /* the gcc ABI layer (abi/itm_thread.h) */
    tk_jmpbuf jb_nested;      /* where nested blocks save theirs (unused): checkpoint.S */
    int retry_pending;        /* C++: aborted, waiting for the next begin: txn.c */
    int doomed;               /* C++: rolled back, unwinding to txkit::atomic: txn.c */
    int time_first;           /* time the next first attempt (a sampled transaction): txn.c */

    struct tk_stm_thread stm; /* software TM (methods/stm_thread.h) */

    /* -- in-place writes */
    uint64_t serial_clock; /* odd value we installed in tk_g.clock: serial.c, glock.c begin */
    tk_vec ulog;           /* tk_uentry: undo.c appends, attempt reset / rollback empty it */

    /* -- effects of the attempt that wait for commit or abort (handlers.c,
     *    reclaim.c for the limbo; filled by the barriers and the ABI layers
     *    while the attempt runs, emptied at its commit, abort or reset) */
    tk_vec allocs;                /* void*: tx_malloc'ed, freed on abort */
    tk_vec captured;              /* tk_range: memory this attempt allocated (private) */
    tk_vec excs;                  /* tk_exc: C++ exceptions this attempt allocated */
    unsigned cxa_catches;         /* catch handlers this attempt began and did not end */
    int cxa_undo;                 /* the undo action for them is registered */
    tk_vec frees;                 /* tk_free: tx_free'd, freed at commit */
    struct tk_limbo *limbo_head;  /* freed at commit, waiting for readers (reclaim.c): */
    struct tk_limbo *limbo_tail;  /* buckets, oldest first */
    struct tk_limbo *limbo_spare; /* an empty bucket kept for reuse */
    uint64_t *epoch;              /* snapshot+1 of the running software attempt, or 0:
                                   * stm_norec.c at begin / end; others read it (reclaim.c):
                                   * a cell of thread.c's, which outlives the descriptor;
                                   * epoch[1]: its hw_commits snapshot (tk_epoch_publish_hw) */
    tk_vec handlers;              /* tk_handler */
    tk_vec arena;                 /* bytes: tx_on_commit_copy copies (16-byte units) */

    uint64_t rng;             /* tk_rand's state (core.c): thread.c seeds it, tk_rand advances it */
    struct tk_cm_thread cm;   /* contention management (runtime/cm.h) */
    struct tk_vis_thread vis; /* visible reads (runtime/vis.h) */
    struct tk_sched_thread sched;   /* transaction-aware scheduling (runtime/sched.h) */
    struct tk_policy_thread policy; /* the method policy (runtime/policy.h) */
    struct tk_cx cx;                /* cx lock sections (cx/cx_thread.h) */

    int thread_method; /* -1: follow the process: txkit_set_thread_method (config.c) */
    /* -- the thread's stack [stk_lo, stk_hi) (thread.c, 0 when unknown), and
     *    the part of it private to the running transaction (txn.c): the
     *    frames below its outermost begin, [stk_lo, stk_lo + stk_span) */
    uintptr_t stk_lo, stk_hi, stk_span;
    uintptr_t stk_top;   /* the stack pointer stk_span was computed for: tk_stack_enter */
    uint64_t priv_clock; /* a commit's privatization wait, deferred: tk_finish_commit */

    /* -- statistics: this thread's row of the published segment (stats/),
     *    written only by this thread; cnt is the current site's entry */
    struct tks_thread *slot;        /* in the segment, or own_slot (shared row): segment.c attach */
    unsigned slot_index;            /* its index in the segment: segment.c attach */
    struct tks_thread own_slot;     /* seqlock and cur_site of a thread counting in
                                   * the shared row: nobody else reads them */
    struct tks_counters *row, *cnt; /* row: segment.c attach; cnt: txn.c at each begin */
    /* transactions begun (sampling; solo detection: other threads read it,
     * tk_others_transactions): txn.c at each begin */
    uint64_t ntx;
    /* TK_HOOK_ARMED(point): an extension has work there (set by the
     * extension, cleared by txn.c before it runs them) */
    unsigned hooks_armed;
    unsigned inside_sample_ctr; /* cx sections since the last inside sample: cx.c */
    /* 1 while a transaction runs on a parked clock (solo.h): txn.c's fast
     * begin and commit, solo.c; read by revoking threads */
    int solo_in;
    /* 1: when this thread last parked the clock (methods/serial.c, after
     * tk_solo_park) no other thread was inside a software attempt, and none
     * can begin one while the clock stays parked for it (tk_solo_parked_by):
     * gcc's uninstrumented code may run, whose frees wait for no reader
     * (abi/itm.c: uninstrumented_ok). Meaningless when not parked. */
    int solo_clean;
    /* Nonzero: this thread's next transaction of the kind in ctl.kind may
     * take an express begin (runtime/express.h). TK_EXPRESS (with xsite
     * and xtls): the clock is still parked for it (solo.h), its last
     * transaction committed there with no abort and no handlers, so the
     * transaction state is as a parked begin sets it; set by tk_solo_commit
     * (txn.c), kept by the express commit. TK_EXPRESS_SW: its last
     * transaction committed at its first software attempt with nothing left
     * over; set by tk_finish_commit, cleared by the software express begin.
     * TK_EXPRESS_HW: the same at its first hardware attempt, for the
     * hardware express begin.
     * Cleared by every other begin, tk_finish_commit, tk_solo_unpark and a
     * fork's child (solo.c), txkit_set_thread_method (config.c): each
     * through tk_express_set, which also clears xsite. */
    unsigned express;
    /* With TK_EXPRESS: the last block's site (t->ctl.site, t->cnt its
     * entry; a site belongs to one front end, TX_ATOMIC's or gcc's), whose
     * next begin takes the express begin with no look at the site or kind
     * (tk_express_begin_same: txn.c, abi/itm.c); NULL otherwise. Set by
     * tk_solo_commit and tk_express_begin (txn.c, express.h), cleared by
     * tk_express_set. */
    txkit_site_t *xsite;
    /* With TK_EXPRESS: _txkit_tls's first two words (the barriers' access
     * bits | depth 1 << 32) as the express begin sets them: tk_solo_commit. */
    uint64_t xtls;

    /* The registry: thread.c, under its lock. Other threads read these
     * (tk_others_transactions walks them), so they have a line of their own:
     * one that this thread's hardware attempts never read. A remote read of a
     * line that an attempt read inside and wrote just before its XBEGIN
     * (t->express, beside them before) aborted the attempt: auto at 2 threads
     * lost one transaction in each look at the others (one in 256). */
    _Alignas(TK_CACHELINE) tk_thread *next;
    tk_thread *prev;
};

/* Who began the outermost transaction, which decides how a software abort
 * gets back to its start. */
enum tk_kind {
    TK_KIND_C = 0,   /* TX_ATOMIC: jump to the checkpoint, "return" 1 */
    TK_KIND_CXX = 1, /* txkit::atomic: throw to its retry loop */
    TK_KIND_ITM = 2, /* gcc -fgnu-tm: jump to the checkpoint, return _ITM_actions */
};

/* tk_txctl.code bits: what the code of the outermost block allows. */
#define TK_CODE_INSTRUMENTED 1u     /* it has barriers: software TM can run it */
#define TK_CODE_GOES_IRREVOCABLE 2u /* it will ask to become irrevocable */
/* its stores under htm do not set _txkit_tls.wrote (gcc's uninstrumented
 * path): every hardware commit of it counts as a writing one (htm.c) */
#define TK_CODE_UNTRACKED_WRITES 4u
/* a serial attempt may run a copy of it without barriers, irrevocable (gcc's
 * uninstrumented code, pr_hasNoAbort): itm.c, uninstrumented_ok */
#define TK_CODE_PLAIN_SERIAL 8u

/* txkit_site_t.flags bits (runtime-private). */
#define TK_SITE_FLAG_ITM 1u /* a gcc -fgnu-tm call site, key = return address */
/* auto runs the site serially where it would run software TM: a software
 * attempt of it wrote TK_BIG_WRITES words or more (policy.c, set once) */
#define TK_SITE_FLAG_SERIAL 2u
#define TK_BIG_WRITES 1024
/* a long site: a software attempt of it committed having read TK_LONG_READS
 * words or more (txn.c, set once); auto chooses between software TM and serial
 * for it by what each costs (policy.c: tk_policy_long_serial) */
#define TK_SITE_FLAG_LONG 4u
#define TK_LONG_READS 1024
/* txkit_site_t.htm_fail (policy.c): bits 0-15 the site's transactions left
 * to skip hardware (after capacity aborts), bits 16-23 the length of the
 * last skip; a hardware commit of the site clears the length. */
#define TK_SKIP_LEFT 0xffffu
#define TK_SKIP_LEN_SHIFT 16

/* The method the user asked for (thread override, else process): t's thread. */
/* The access bits an attempt of a method with access bits m_access runs
 * with: the inline software read (TXKIT_ACC_FASTREAD) checks the clock only,
 * so in hybrid mode it becomes TXKIT_ACC_FASTREAD_HW, whose inline read also
 * checks the hardware-commit counter (code built before that bit existed
 * takes the full barrier), and an unlogged one (TXKIT_ACC_NOLOG) becomes
 * TXKIT_ACC_NOLOG_HW alone (likewise); with visible reads (a contention
 * manager that decides conflicts, vis.c) none, the inline read would not mark
 * them. */
__attribute__((always_inline)) static inline unsigned tk_read_access(unsigned m_access,
                                                                     int visible) {
    if (!(m_access & TXKIT_ACC_FASTREAD))
        return m_access & ~TXKIT_ACC_NOLOG;
    if (visible)
        return m_access & ~(TXKIT_ACC_FASTREAD | TXKIT_ACC_NOLOG);
    if (tk_g.hybrid) /* reads must see hardware commits too */
        return (m_access & ~(TXKIT_ACC_FASTREAD | TXKIT_ACC_NOLOG)) |
               (m_access & TXKIT_ACC_NOLOG ? TXKIT_ACC_NOLOG_HW : TXKIT_ACC_FASTREAD_HW);
    return m_access;
}

static inline int tk_configured_method(const tk_thread *t) {
    return t->thread_method >= 0 ? t->thread_method
                                 : __atomic_load_n(&tk_cfg.method, __ATOMIC_RELAXED);
}

TK_HIDDEN tk_thread *tk_thread_get(void); /* creates on first use */
static inline tk_thread *tk_self(void) {
    tk_thread *t = tk_cur;
    return TXKIT_LIKELY(t != NULL) ? t : tk_thread_get();
}
/* Record [p, p+size) as allocated by the running attempt (see tk_range);
 * false, with nothing recorded, when there is no memory for it. Owner thread. */
TK_HIDDEN bool tk_capture(tk_thread *t, const void *p, size_t size);
/* tk_capture, or when that fails in a software attempt (which must know the
 * block is its own: it writes it in place), the transaction again serially.
 * Owner thread, inside the attempt. */
TK_HIDDEN void tk_capture_or_serial(tk_thread *t, const void *p, size_t size);
static inline bool tk_captured(const tk_thread *t, const void *addr, size_t size) {
    uintptr_t a = (uintptr_t)addr;
    const tk_range *r = (const tk_range *)t->captured.data;
    for (size_t i = t->captured.len; i-- > 0;)
        if (a >= r[i].lo && a + size <= r[i].hi)
            return true;
    return false;
}
TK_HIDDEN unsigned tk_thread_count(void); /* threads with a descriptor */
/* 1 while one thread has a descriptor and membarrier(2) reaches the others
 * (tk_barrier_ready): its software attempts say they run without a fence
 * (tk_epoch_enter). thread.c writes it under its registry lock; a thread that
 * registers as the second clears it, then makes every thread pass a barrier
 * (tk_barrier_all) before it runs a transaction. Any thread reads it. */
extern int tk_reg_alone TK_HIDDEN;
/* membarrier(2) for this process is registered (asked once; again in a fork's
 * child). solo.c. Any thread. */
TK_HIDDEN bool tk_barrier_ready(void);
/* Every running thread of the process passes a full barrier (after
 * tk_barrier_ready said yes). solo.c. Any thread. */
TK_HIDDEN void tk_barrier_all(void);

/* Stack memory below the outermost begin of the running transaction: frames
 * the transaction itself made, which no other thread can reach and which are
 * dead once it commits or restarts. Every method writes it in place (gcc
 * reads a callee's own locals without barriers) and no rollback puts old
 * values back there (the rollback's own frames may be there by then). */
static inline bool tk_stack_private(const tk_thread *t, const void *addr, size_t size) {
    uintptr_t off = (uintptr_t)addr - t->stk_lo;
    return off < t->stk_span && size <= t->stk_span - off;
}
/* The end of the private part: frames below it die when the attempt ends. */
static inline uintptr_t tk_stack_private_top(const tk_thread *t) { return t->stk_lo + t->stk_span; }
/* The private part's size for an outermost begin whose caller's stack pointer
 * is stack_top (0 when it is not on the thread's known stack). */
static inline uintptr_t tk_stack_span(const tk_thread *t, uintptr_t stack_top) {
    return stack_top > t->stk_lo && stack_top <= t->stk_hi ? stack_top - t->stk_lo : 0;
}

/* Set t->stk_span for an outermost begin whose caller's stack pointer is
 * stack_top; recomputed only when it moved (a loop's transactions begin at
 * the same depth). Owner thread, at the begin. */
static inline void tk_stack_enter(tk_thread *t, uintptr_t stack_top) {
    if (TXKIT_UNLIKELY(stack_top != t->stk_top)) {
        t->stk_top = stack_top;
        t->stk_span = tk_stack_span(t, stack_top);
        _txkit_tls.stk_span = t->stk_span; /* the inline store's copy (txkit/tx.h) */
    }
}

/* Nonzero while libtxkit's own code runs on this thread in a way that may
 * call back into the preload hooks (cx/self.h): one of its own mutexes held
 * (tk_mutex_lock), a hook's slow path (cx/elide.c, cx/lockprof.c), a fork
 * between the runtime's PREPARE and its PARENT or CHILD. A lock that whatever
 * the runtime calls takes meanwhile (a replacement malloc's own, as jemalloc
 * takes at its first allocations) goes straight to glibc, uncounted: a hook
 * would need the runtime's locks again (the statistics' lock, held while the
 * segment is made, which reads its directory: opendir's malloc). Owner
 * thread. */
extern __thread unsigned tk_in_self TK_HIDDEN;
static inline void tk_self_enter(void) { tk_in_self++; }
static inline void tk_self_exit(void) { tk_in_self--; }
/* libtxkit's own mutexes, held with tk_in_self counted; tk_mutex_child: in
 * a fork's child, a mutex that the runtime's PREPARE took, made fresh. */
static inline void tk_mutex_lock(pthread_mutex_t *m) {
    tk_self_enter();
    pthread_mutex_lock(m);
}
static inline void tk_mutex_unlock(pthread_mutex_t *m) {
    pthread_mutex_unlock(m);
    tk_self_exit();
}
static inline void tk_mutex_child(pthread_mutex_t *m) {
    pthread_mutex_init(m, NULL);
    tk_self_exit();
}

/* fork(): each module that has locks or per-thread global state gets these
 * calls from the one set of fork handlers (thread.c), in a fixed order:
 * PREPARE (take its locks, in the forking thread), then PARENT (give them
 * back) or CHILD (the only thread left is `me`, possibly NULL: reset every
 * lock and whatever belonged to the threads that are gone). */
enum tk_fork_phase { TK_FORK_PREPARE, TK_FORK_PARENT, TK_FORK_CHILD };
/* The usual part of it for one mutex: lock, unlock, or a fresh one. */
static inline void tk_atfork_mutex(pthread_mutex_t *m, int phase) {
    if (phase == TK_FORK_PREPARE)
        tk_mutex_lock(m);
    else if (phase == TK_FORK_PARENT)
        tk_mutex_unlock(m);
    else
        tk_mutex_child(m);
}
/* Order numbers of the fork hooks (TK_HOOK_FORK; PREPARE runs them up, PARENT
 * and CHILD down): the locks of a lower number are taken first. */
enum {
    TK_FORK_ORDER_SEGMENT = 5,   /* stats/segment.c: child only, last */
    TK_FORK_ORDER_ITM = 10,      /* abi/itm.c */
    TK_FORK_ORDER_TXN = 20,      /* txn.c: site registration */
    TK_FORK_ORDER_CX = 30,       /* cx/cx.c */
    TK_FORK_ORDER_SCHED = 35,    /* sched.c: child only */
    TK_FORK_ORDER_STM = 36,      /* stm_norec.c: child only */
    TK_FORK_ORDER_REGISTRY = 40, /* thread.c: the thread registry */
    TK_FORK_ORDER_SOLO = 45,     /* solo.c */
    TK_FORK_ORDER_VIS = 50,      /* vis.c: takes its lock under the registry's */
};
/* Order numbers of the thread-exit hooks (TK_HOOK_THREAD_EXIT). */
enum {
    TK_EXIT_ORDER_SOLO = 5,     /* give a parked clock back before anything waits */
    TK_EXIT_ORDER_RECLAIM = 10, /* wait for the readers, free the limbo */
    TK_EXIT_ORDER_VIS = 20,
    TK_EXIT_ORDER_SCHED = 30,
    TK_EXIT_ORDER_SEGMENT = 40, /* the statistics row last: the others may count */
    TK_EXIT_ORDER_CX = 50,
    TK_EXIT_ORDER_METHODS = 60, /* the methods' per-thread state */
};
/* The statistics segment (stats/segment.c). */
TK_HIDDEN void tk_seg_thread_attach(tk_thread *t);
TK_HIDDEN void tk_seg_thread_detach(tk_thread *t);
TK_HIDDEN unsigned tk_seg_site_register(unsigned kind, uint64_t key, const char *file,
                                        const char *func, int line);
TK_HIDDEN void tk_seg_sum(struct tks_counters *out, unsigned *threads);
/* Print one line per cx lock entered, elided mutexes aside (they have their
 * own lines); any thread, takes the segment's lock. */
TK_HIDDEN void tk_seg_print_locks(FILE *f);
/* Threads that counted in the shared slot so far (any thread). */
TK_HIDDEN unsigned tk_seg_shared_threads(void);
TK_HIDDEN void tk_seg_unpublish(void);
TK_HIDDEN int tk_seg_dump(const char *path, char *why, size_t wlen);
TK_HIDDEN void tk_seg_set_ns_per_tick(double v);
TK_HIDDEN void tk_seg_set_cm(const char *name);
TK_HIDDEN struct tks_thread *tk_seg_threads(void);
TK_HIDDEN int tk_seg_dir(char *buf, size_t len);
/* Publish a file DIR/<pid>.SUFFIX in the statistics directory (the
 * segment's rules: private directory, owner's flock held for life, made
 * under a temporary name, fill(map, size) run before it appears): its shared
 * mapping (which holds the file's lock: no descriptor stays open) and its
 * path; NULL and why when it cannot be. Any
 * thread; the caller serializes calls for one suffix. */
TK_HIDDEN void *tk_seg_publish(const char *suffix, size_t size,
                               void (*fill)(void *map, size_t size), char *path, size_t plen,
                               char *why, size_t wlen);

/* A group of counter updates that a reader must see whole (seqlock). */
static inline void tk_stats_open(tk_thread *t) {
    __atomic_store_n(&t->slot->seq, t->slot->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}
static inline void tk_stats_close(tk_thread *t) {
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&t->slot->seq, t->slot->seq + 1, __ATOMIC_RELAXED);
}
/* The smallest snapshot of any running software attempt, UINT64_MAX if none. */
TK_HIDDEN uint64_t tk_threads_min_epoch(const tk_thread *self);
/* Does a software attempt of a thread but self run whose reads are not known
 * valid at hw_commits h (its published epoch[1] is below h)? Any thread. */
TK_HIDDEN bool tk_threads_hw_behind(const tk_thread *self, uint64_t h);
/* Is no thread but self inside a software attempt? Exact for attempts that
 * published their epoch before the call began (they fence it, reclaim.c).
 * Any thread. */
TK_HIDDEN bool tk_no_software_readers(const tk_thread *self);
/* Free f->p with f->fn once no running software attempt can still read it:
 * the one path of every free a transaction committed (tx_free, _ITM_free, C++
 * delete). Owner thread only; O(1) amortized, whatever the backlog. */
TK_HIDDEN void tk_free_later(tk_thread *t, const tk_free *f);
/* Privatization safety: after a commit that wrote shared memory (the clock
 * now at least c), wait until no other thread's software attempt still runs
 * on a snapshot older than c. The committing thread may then free or reuse,
 * outside any transaction, memory that it unlinked: a doomed attempt that
 * read the old pointer has revalidated (and aborted) or ended by then.
 * Nothing under TXKIT_PRIVATIZATION=off. Owner thread, after its commit gave
 * everything back (clock, token). */
TK_HIDDEN void tk_privatization_wait(tk_thread *t, uint64_t c);
/* The same after a hardware commit (htm.c, a cx section) that moved
 * hw_commits to h: until no other thread's software attempt runs on reads
 * not known valid at h. Owner thread, after its XEND. Neither waits for an
 * attempt that called tx_no_privatization. */
TK_HIDDEN void tk_privatization_wait_hw(tk_thread *t, uint64_t h);
/* Blocks waiting in t's limbo (owner thread, or a test looking at itself). */
TK_HIDDEN size_t tk_limbo_count(const tk_thread *t);
/* Inside a transaction: defer fn(p, size, align) to its commit, then to the
 * readers (tk_free_later); outside: free now. Dropped by a doomed attempt. */
TK_HIDDEN void tk_tx_free_with(void *p, tk_free_fn fn, size_t size, size_t align);
/* tk_free_fn for malloc'ed blocks: free(p). */
TK_HIDDEN void tk_free_plain(void *p, size_t size, size_t align);
/* Say that t's software attempt runs (t->epoch nonzero) before its first
 * shared read: the store, then a full fence, for the reclaimer and for a
 * writer that waits for doomed readers after its commit (tk_privatization_wait;
 * both fence before they read the epochs). A lone thread (tk_reg_alone) skips
 * the fence: the store comes before its look at tk_reg_alone, so if that look
 * is older than the barrier a registering thread forces on it, the store is
 * visible once the barrier is done, before that thread runs a transaction;
 * a later look sees 0 and fences. Owner thread, before its snapshot. */
static inline void tk_epoch_enter(tk_thread *t) {
    __atomic_store_n(t->epoch, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the store before the look */
    if (TXKIT_UNLIKELY(!__atomic_load_n(&tk_reg_alone, __ATOMIC_RELAXED)))
        (void)__atomic_exchange_n(t->epoch, 1, __ATOMIC_SEQ_CST); /* a full fence */
}
/* Publish the snapshot of a software attempt (before its first shared read). */
static inline void tk_epoch_publish(tk_thread *t, uint64_t snap) {
    __atomic_store_n(t->epoch, snap + 1, __ATOMIC_RELAXED);
}
/* Publish the hw_commits value h that a software attempt's reads are valid
 * at (hybrid: hardware commits do not move the clock): at begin after the
 * epoch, and after each revalidation that moved its snapshot, never before
 * its reads were checked (a hardware writer's privatization wait trusts it). */
static inline void tk_epoch_publish_hw(tk_thread *t, uint64_t h) {
    __atomic_store_n(&t->epoch[1], h, __ATOMIC_RELAXED);
}

/* Transactions begun so far by every other live thread. */
TK_HIDDEN uint64_t tk_others_transactions(const tk_thread *self);


/* ------------------------------------------------------------- configuration */

TK_HIDDEN void tk_config_init(void);

/* ---------------------------------------------------------------- the engine */

TK_HIDDEN TK_NORETURN void tk_longjmp(const tk_jmpbuf *jb, int value);
TK_HIDDEN void tk_run_attempts(tk_thread *t);
/* stack_top: the stack pointer of the caller of the outermost begin; below
 * it, the transaction's own frames (tk_stack_private). */
TK_HIDDEN void tk_start_transaction(tk_thread *t, txkit_site_t *site, uintptr_t stack_top);
/* Instead of tk_start_transaction + tk_run_attempts, when the auto method runs
 * this thread alone and nothing else applies: begins its serial attempt and
 * returns true; false (nothing done) otherwise. Owner thread, outermost begin,
 * after the front end set ctl.kind, code and resume. */
TK_HIDDEN bool tk_solo_begin(tk_thread *t, txkit_site_t *site, uintptr_t stack_top);
/* Instead of the method's commit + tk_finish_commit, for an attempt that runs
 * on a parked clock (tk_solo_begin) when tk_solo_commit_ok: the clock stays
 * parked. Owner thread, outermost commit. */
TK_HIDDEN void tk_solo_commit(tk_thread *t);
static inline bool tk_solo_commit_ok(const tk_thread *t) {
    return t->solo_in && TXKIT_LIKELY(!(t->hooks_armed & TK_HOOK_ARMED(TK_HOOK_COMMITTED)));
}
TK_HIDDEN void tk_finish_commit(tk_thread *t);
TK_HIDDEN void tk_abort_attempt(tk_thread *t, int cause);
TK_HIDDEN void tk_site_init(txkit_site_t *site, const char *file, const char *func, int line);
/* A transaction whose software attempts ran out of their revalidation budget
 * this many times runs serially (stm_norec.c, choose_method). */
#define TK_REVAL_ABORTS 2
TK_HIDDEN void tk_stm_adopt_irrevocable(tk_thread *t, uint64_t clock);
/* stm_norec.c: t leaves tk_g.sw_active if it is still counted there (a thread
 * of the stm method stays between its attempts). Owner thread, outside any
 * software attempt. */
TK_HIDDEN void tk_stm_sw_leave(tk_thread *t);
/* stm_norec.c: software attempts running now whose long read log hardware
 * commits made them walk by value (the commit ring speaks only for software
 * commits). While there are any, auto runs other transactions in software
 * too (choose.h), so that their commits say what they wrote. */
extern unsigned tk_stm_long_readers TK_HIDDEN;
static inline bool tk_stm_long_readers_on(void) {
    return __atomic_load_n(&tk_stm_long_readers, __ATOMIC_RELAXED) != 0;
}
/* The transaction holds or depends on cx locks (cheap test, owner thread). */
static inline bool tk_cx_owned(const tk_thread *t) { return (t->cx.ntxheld | t->cx.nsubs) != 0; }
/* The running hardware attempt entered a cx lock section (owner thread,
 * inside the attempt). */
static inline bool tk_cx_entered_hw(const tk_thread *t) { return t->cx.hw_ntx == t->ntx; }
/* The undo log written inline (TXKIT_ACC_UNDO in _txkit_tls.access: tx.h's
 * _txkit_store_undo appends tk_uentry records, laid out as _txkit_rentry, at
 * _txkit_tls.rcur, up to rend). While that bit is set the log's length is
 * rcur's and t->ulog.len may be behind: whoever reads or changes the log
 * calls tk_ulog_pull first (len from rcur) and tk_ulog_push after (rcur and
 * rend from len and cap: the vector may have moved); whoever clears the bit
 * pulls first. tk_ulog_push also starts the inline log when an attempt gets
 * the bit. No-ops without the bit. Owner thread. */
_Static_assert(sizeof(tk_uentry) == sizeof(struct _txkit_rentry) &&
                   offsetof(tk_uentry, addr) == offsetof(struct _txkit_rentry, addr) &&
                   offsetof(tk_uentry, old) == offsetof(struct _txkit_rentry, val) &&
                   offsetof(tk_uentry, size) == offsetof(struct _txkit_rentry, size),
               "tx.h's inline undo records are undo log entries");
static inline void tk_ulog_pull(tk_thread *t) {
    if (_txkit_tls.access & TXKIT_ACC_UNDO)
        t->ulog.len =
            (size_t)((tk_uentry *)(void *)_txkit_tls.rcur - (tk_uentry *)(void *)t->ulog.data);
}
static inline void tk_ulog_push(tk_thread *t) {
    if (_txkit_tls.access & TXKIT_ACC_UNDO) {
        tk_uentry *base = (tk_uentry *)(void *)t->ulog.data;
        _txkit_tls.rcur = (struct _txkit_rentry *)(void *)(base + t->ulog.len);
        _txkit_tls.rend = (struct _txkit_rentry *)(void *)(base + t->ulog.cap);
    }
}
/* Record the current bytes at addr, put back if the attempt aborts. */
TK_HIDDEN void tk_undo_log_any(tk_thread *t, const void *addr, size_t size);
/* Log addr's size bytes for the rollback. Inline for the barriers' common
 * case, one aligned word with room in the log (tk_undo_log_any: the rest).
 * It checks the room itself: through tk_vec_push and its NULL test it cost
 * about 8 instructions more per store (callgrind, vacation). */
static inline void tk_undo_log(tk_thread *t, const void *addr, size_t size) {
    /* TXKIT_ACC_UNDO: the record TX_STORE writes itself (tx.h), no pull/push */
    if (_txkit_store_undo((void *)addr, (unsigned)size, _txkit_tls.access))
        return;
    tk_ulog_pull(t);
    if (TXKIT_LIKELY(size == 8 && t->ulog.len < t->ulog.cap)) {
        tk_uentry *u = &TK_VEC_AT(&t->ulog, tk_uentry, t->ulog.len++);
        u->addr = (void *)addr;
        u->size = 8;
        __builtin_memcpy(&u->old, addr, 8);
    } else {
        tk_undo_log_any(t, addr, size);
    }
    tk_ulog_push(t);
}
/* TK_ACC_UNDO_STORE (the runtime's own bit of _txkit_tls.access; the public
 * macros test only the TXKIT_ACC_* bits): the running attempt's stores are
 * tk_undo_store, which the barriers then run inline instead of calling the
 * method (serial with its undo log: vacation, 1 thread, 54 -> 37 instructions
 * per store; always inline, down to the barrier, so that the size is a
 * constant there: 70 -> 39 with the barrier's own). A method sets it in its access bits; becoming irrevocable clears
 * every bit. */
#define TK_ACC_UNDO_STORE 0x100u
/* In-place store with an undo log: the transaction's own frames need no undo,
 * unless a nested block that may be cancelled needs the part of them that
 * outlives it. Owner thread, inside an attempt. */
__attribute__((always_inline)) static inline void tk_undo_store(tk_thread *t, void *addr,
                                                                const void *src, size_t size) {
    if (t->itm.cps.len || !tk_stack_private(t, addr, size))
        tk_undo_log(t, addr, size);
    switch (size) { /* the barriers' sizes, without a call to memcpy */
    case 8:
        __builtin_memcpy(addr, src, 8);
        break;
    case 4:
        __builtin_memcpy(addr, src, 4);
        break;
    default:
        memcpy(addr, src, size);
    }
}
/* Put back, newest first, what the undo log recorded after its first keep
 * entries, except in the thread's stack below dead_top: frames that are gone
 * once the rollback jumps back to its checkpoint (whose stack pointer that is). */
TK_HIDDEN void tk_undo_apply(tk_thread *t, size_t keep, uintptr_t dead_top);
/* Copy n bytes; src_tx / dst_tx: whether each side is shared (goes through
 * the barriers); move: the ranges may overlap (memmove). */
TK_HIDDEN void tk_copy(void *dst, const void *src, size_t n, int src_tx, int dst_tx, int move);

/* The length of the piece of [addr, addr+left) that starts at addr and does
 * not cross an 8-byte boundary: one write-set word, at most 8 bytes. */
static inline size_t tk_piece(uintptr_t addr, size_t left) {
    size_t room = 8 - (addr & 7);
    return left < room ? left : room;
}
TK_HIDDEN void tk_run_handlers(tk_thread *t, int on_commit);
TK_HIDDEN void tk_discard_effects(tk_thread *t, int committed);
/* Empty the logs of the attempt (its effects were applied or discarded).
 * Owner thread, between attempts; inline: it runs for every transaction. */
static inline void tk_attempt_reset(tk_thread *t) {
    t->ctl.acc_add = 0;
    t->ulog.len = 0;
    t->allocs.len = 0;
    t->captured.len = 0;
    t->excs.len = 0;
    t->cxa_catches = 0;
    t->cxa_undo = 0;
    t->frees.len = 0;
    t->handlers.len = 0;
    t->arena.len = 0;
}
/* Whether the contention manager's on_commit would do nothing for t (cm.c:
 * it resets the aborts in a row and tells the scheduler), so that the engine
 * may skip the call. Owner thread. */
static inline bool tk_cm_commit_quiet(const tk_thread *t) {
    return !t->cm.consecutive_aborts && !tk_sched_on && !t->sched.queue_held;
}
/* t->express = v (0, TK_EXPRESS_SW or TK_EXPRESS_HW), and no express begin at t->xsite.
 * Owner thread (or a fork's only thread). */
static inline void tk_express_set(tk_thread *t, unsigned v) {
    t->express = v;
    t->xsite = NULL;
}
/* The attempt is over (committed or rolled back): no barriers, not
 * irrevocable. Owner thread. */
static inline void tk_attempt_ended(tk_thread *t) {
    _txkit_tls.depth = 0;
    _txkit_tls.access = 0;
    t->ctl.irrevocable = 0;
    t->ctl.no_priv = 0;
}
/* Give back the irrevocability token (tk_g.irr_owner) if t holds it. Owner
 * thread; inline: every serial begin and every commit ask. */
static inline void tk_irr_release(tk_thread *t) {
    if (TXKIT_UNLIKELY(t->ctl.irr_token)) {
        __atomic_store_n(&tk_g.irr_owner, 0, __ATOMIC_RELEASE);
        t->ctl.irr_token = 0;
    }
}

/* ------------------------------------------------------------------- stats */

TK_HIDDEN void tk_stats_at_exit(void);
/* TXKIT_STATS output: tk_stats_out_init() (start-up, one thread) keeps a
 * duplicate of stderr; tk_stats_out() (at exit) is a stream on it, NULL if
 * there was no stderr to duplicate. */
TK_HIDDEN void tk_stats_out_init(void);
TK_HIDDEN FILE *tk_stats_out(void);
TK_HIDDEN void tk_calibrate_maybe(void);
TK_HIDDEN void tk_sample_inside(tk_thread *t, uint64_t site, struct tks_counters *c);
/* One transaction (and one cx section) in TK_SAMPLE_EVERY is sampled: its
 * first attempt timed; a cx section's sample also counts the threads inside
 * its lock's sections (a transaction's: one in TKS_INSIDE_EVERY, a multiple,
 * stats/format.h). A power of 2. A sampled transaction takes the general
 * begin and commit (about 250 instructions more than a lone thread's
 * express one): at one in 64 the statistics cost 4-5% on the 4096-key hash
 * set (auto, 1 and 2 threads, on vs off), at one in 256 0-3%. */
#define TK_SAMPLE_EVERY 256

#endif /* TK_INTERNAL_H */
