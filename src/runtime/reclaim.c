/* SPDX-License-Identifier: MIT */
/* reclaim.c - freeing memory that concurrent software transactions may still read.
 *
 * A NOrec transaction may load through a pointer it read before another
 * transaction unlinked and freed that node: validation discards the value,
 * but the load itself must not touch memory the allocator gave back (a crash
 * once the page is unmapped, and a use-after-free in any case). So a block
 * freed at commit waits in its thread's limbo list, tagged with the global
 * clock at that time, until every software attempt running then has ended:
 * an attempt whose snapshot is at least that clock began after the unlink and
 * cannot reach the block.
 *
 * Each thread publishes the snapshot of its running software attempt (epoch,
 * 0 when none) in a cell of thread.c's, with a full fence before its first
 * shared read (stm_begin: the store is an xchg). So a reclaimer, or a writer
 * waiting for doomed readers after its commit (tk_privatization_wait, below),
 * needs only a fence of its own between its clock store and its loads of the
 * epochs. (The readers' side used to be a compiler barrier, ordered by the
 * reclaimer's membarrier(2); privatization safety reads the epochs at every
 * writing commit, which a system call there could not afford.)
 *
 * Cost must not grow with the backlog (a long reader holds everything back
 * while another thread keeps freeing): the limbo list is a queue of buckets of
 * BUCKET_CAP blocks, each tagged with the clock at its newest free (a
 * thread's frees come in clock order, so the oldest bucket has the smallest
 * tag). A reclaim pass runs once per bucket filled, looks at the oldest tag
 * only, first against a plain read of the published snapshots (no barrier),
 * and pays a fence and the real check only when that look says
 * something can go: the look only decides whether to pay, so a stale view
 * costs a delay or one more scan, never safety. It then frees at most
 * PASS_BUCKETS buckets. So each free costs O(1) amortized.
 *
 * Hardware attempts need none of this (a freed node's unlink conflicts with
 * them first), nor does serial execution, and a process that never ran a
 * software attempt frees at once.
 */
#include <sched.h>
#include <stdlib.h>

#include "methods/method.h"

/* Frees per bucket: one reclaim pass per bucket filled. (When the pass paid a
 * membarrier, which interrupts every other CPU that runs the process, some
 * 30 us of CPU time each in a virtual machine, 64 cost the 4096-key tree under
 * stm at 2 threads 3.5% of its CPU time in the kernel, 256 1.1%.) A bucket
 * is 8 KB. */
#define BUCKET_CAP 256
#define PASS_BUCKETS 4 /* buckets one pass frees at most: bounds a commit's work */

struct tk_limbo {
    struct tk_limbo *next;
    uint64_t tag; /* the clock at the newest free in it */
    unsigned n;
    tk_free e[BUCKET_CAP];
};

/* Our stores (the clock) before our loads of the epochs; the readers fence
 * theirs before their first shared read (stm_begin). */
static void epochs_fence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

bool tk_no_software_readers(const tk_thread *self) {
    epochs_fence(); /* every epoch published before the call is visible now */
    return tk_threads_min_epoch(self) == UINT64_MAX;
}

void tk_free_plain(void *p, size_t size, size_t align) {
    (void)size, (void)align;
    free(p);
}

static void free_bucket(tk_thread *t, struct tk_limbo *b) {
    for (unsigned i = 0; i < b->n; i++)
        b->e[i].fn(b->e[i].p, b->e[i].size, b->e[i].align);
    if (!t->limbo_spare) {
        t->limbo_spare = b;
    } else {
        free(b);
    }
}

/* Free the oldest buckets that no running software attempt can reach, at
 * most max of them. Owner thread only. */
static void reclaim_pass(tk_thread *t, size_t max) {
    struct tk_limbo *b = t->limbo_head;
    if (!b || b->tag > tk_threads_min_epoch(t)) /* cheap look: not yet */
        return;
    epochs_fence();
    uint64_t safe = tk_threads_min_epoch(t); /* UINT64_MAX when none runs */
    for (size_t k = 0; k < max && (b = t->limbo_head) && b->tag <= safe; k++) {
        t->limbo_head = b->next;
        if (!b->next)
            t->limbo_tail = NULL;
        free_bucket(t, b);
    }
}

/* Wait (tk_wait_step) while behind(t, v): another thread's software attempt
 * still runs on reads not known valid at v. The fence first: attempts that
 * begin after it see what our commit wrote. */
static void wait_while_behind(tk_thread *t, uint64_t v,
                              bool (*behind)(const tk_thread *, uint64_t)) {
    epochs_fence();
    for (unsigned spins = 0; behind(t, v);)
        tk_wait_step(&spins, 64);
}

/* Does an attempt run on a snapshot older than clock value c? */
static bool older_than(const tk_thread *t, uint64_t c) { return tk_threads_min_epoch(t) < c; }

/* No memory to wait with: wait for the readers now, then free. */
static void free_after_readers(tk_thread *t, const tk_free *f) {
    wait_while_behind(t, __atomic_load_n(&tk_g.clock, __ATOMIC_ACQUIRE), older_than);
    f->fn(f->p, f->size, f->align);
}

void tk_free_later(tk_thread *t, const tk_free *f) {
    /* Nobody else can be reading when no software attempt ever ran, or when
     * we are the only thread with a descriptor. The fence keeps our commit's
     * clock store before these loads (x86 may reorder a store with a later
     * load): a thread arriving now sees our commit in its first snapshot. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&tk_g.stm_started, __ATOMIC_RELAXED) || tk_thread_count() <= 1) {
        f->fn(f->p, f->size, f->align);
        return;
    }
    struct tk_limbo *b = t->limbo_tail;
    if (!b || b->n == BUCKET_CAP) {
        b = t->limbo_spare;
        if (b)
            t->limbo_spare = NULL;
        else if (!(b = malloc(sizeof *b))) {
            free_after_readers(t, f);
            return;
        }
        b->next = NULL;
        b->n = 0;
        if (t->limbo_tail)
            t->limbo_tail->next = b;
        else
            t->limbo_head = b;
        t->limbo_tail = b;
    }
    b->e[b->n++] = *f;
    b->tag = __atomic_load_n(&tk_g.clock, __ATOMIC_ACQUIRE);
    /* A hardware commit does not move the clock: a software reader whose
     * snapshot is this very value may have read the pointer before it. Only
     * snapshots past the next software commit (or no reader) are safe. */
    if (tk_method_has(t->ctl.m, TK_CAP_HARDWARE))
        b->tag |= 1;
    if (b->n == BUCKET_CAP)
        reclaim_pass(t, PASS_BUCKETS);
}

void tx_no_privatization(void) {
    tk_thread *t = tk_cur;
    if (t && _txkit_tls.depth > 0)
        t->ctl.no_priv = 1;
}

/* The program said it privatizes nothing: for the process, or in this attempt. */
static inline bool privatization_skipped(const tk_thread *t) {
    return tk_cfg.no_privatization || (t && t->ctl.no_priv);
}

void tk_privatization_wait(tk_thread *t, uint64_t c) {
    if (!__atomic_load_n(&tk_g.stm_started, __ATOMIC_RELAXED) || tk_thread_count() <= 1 ||
        privatization_skipped(t))
        return;
    wait_while_behind(t, c, older_than);
}

/* A hardware commit's h has no place in the clock's order, so each reader's
 * own hw_commits snapshot says whether it may have read before the commit. */
void tk_privatization_wait_hw(tk_thread *t, uint64_t h) {
    if (!privatization_skipped(t))
        wait_while_behind(t, h, tk_threads_hw_behind);
}

size_t tk_limbo_count(const tk_thread *t) {
    size_t n = 0;
    for (const struct tk_limbo *b = t->limbo_head; b; b = b->next)
        n += b->n;
    return n;
}

/* Thread exit: wait for the readers and free everything left. */
static void reclaim_all(tk_thread *t, int arg) {
    (void)arg;
    for (unsigned steps = 0; t->limbo_head;) {
        reclaim_pass(t, SIZE_MAX);
        if (t->limbo_head)
            tk_wait_step(&steps, 0);
    }
    free(t->limbo_spare);
    t->limbo_spare = NULL;
}

TK_CONSTRUCTOR static void reclaim_hooks(void) {
    tk_hook_add(TK_HOOK_THREAD_EXIT, TK_EXIT_ORDER_RECLAIM, reclaim_all);
}
