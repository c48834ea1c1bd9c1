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
 * 0 when none). Publishing must be ordered before its first shared read; to
 * keep that off the fast path, the reclaiming side (rare: every 64 frees) uses
 * membarrier(2), which runs a full barrier on every thread of the process, and
 * the publishing side a compiler barrier only (the liburcu technique). Without
 * membarrier the publishing side pays a fence.
 *
 * Hardware attempts need none of this (a freed node's unlink conflicts with
 * them first), nor does serial execution, and a process that never ran a
 * software attempt frees at once.
 */
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/internal.h"

#define LIMBO_BATCH 64

typedef struct tk_limbo {
    void *p;
    void (*fn)(void *);
    uint64_t clock;
} tk_limbo;

int tk_membarrier_ok;

__attribute__((constructor)) static void reclaim_init(void) {
    tk_membarrier_ok =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

static void heavy_barrier(void) {
    if (tk_membarrier_ok && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Free what no running software attempt can reach. Returns what is left. */
size_t tk_reclaim(tk_thread *t) {
    if (t->limbo.len == 0)
        return 0;
    heavy_barrier();
    uint64_t safe = tk_threads_min_epoch(t); /* UINT64_MAX when none runs */
    size_t keep = 0;
    for (size_t i = 0; i < t->limbo.len; i++) {
        tk_limbo *e = &TK_VEC_AT(&t->limbo, tk_limbo, i);
        if (e->clock <= safe)
            e->fn(e->p);
        else
            TK_VEC_AT(&t->limbo, tk_limbo, keep++) = *e;
    }
    t->limbo.len = keep;
    return keep;
}

void tk_free_later(tk_thread *t, void *p, void (*fn)(void *)) {
    /* Nobody else can be reading when no software attempt ever ran, or when
     * we are the only thread with a descriptor. The fence keeps our commit's
     * clock store before these loads (x86 may reorder a store with a later
     * load): a thread arriving now sees our commit in its first snapshot. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&tk_g.stm_started, __ATOMIC_RELAXED) || tk_thread_count() <= 1) {
        fn(p);
        return;
    }
    tk_limbo *e = tk_vec_push(&t->limbo, sizeof *e);
    if (!e) { /* no memory to wait with: wait now */
        while (tk_reclaim(t))
            sched_yield();
        heavy_barrier();
        while (tk_threads_min_epoch(t) < __atomic_load_n(&tk_g.clock, __ATOMIC_ACQUIRE))
            sched_yield();
        fn(p);
        return;
    }
    e->p = p;
    e->fn = fn;
    e->clock = __atomic_load_n(&tk_g.clock, __ATOMIC_ACQUIRE);
    if (t->limbo.len >= LIMBO_BATCH)
        tk_reclaim(t);
}

void tk_reclaim_all(tk_thread *t) {
    while (tk_reclaim(t))
        sched_yield();
    tk_vec_free(&t->limbo);
}
