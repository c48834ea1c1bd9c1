/* SPDX-License-Identifier: MIT */
/* undo.c - the undo log: old bytes of in-place writes, put back on abort.
 * Used by the methods that write in place (TK_CAP_UNDO_LOG: serial, glock),
 * by software TM for memory it writes in place, and by the gcc ABI layer
 * (nested cancel, _ITM_dropReferences). Owner thread only. */
#include <string.h>

#include "methods/method.h"
#include "runtime/internal.h"

/* No memory to grow the undo log. An attempt that excludes everyone (serial)
 * goes on irrevocably, as tx_irrevocable() would make it, logging nothing
 * more: only the program's own tx_restart() could need the log now (and is
 * then refused as after tx_irrevocable()). A software attempt, which logs
 * only what it writes in place, starts again serially. */
static void undo_log_full(tk_thread *t) {
    if (!(t->ctl.m->caps & TK_CAP_EXCLUSIVE))
        tk_abort_serially(t, "undo log");
    t->ctl.irrevocable = 1;
    _txkit_tls.access = 0; /* no more undo records, inline or here */
}

void tk_undo_log_any(tk_thread *t, const void *addr, size_t size) {
    const char *a = addr;
    while (size) {
        size_t n = size < 8 ? size : 8;
        tk_uentry *u = tk_vec_push(&t->ulog, sizeof *u);
        if (!u) {
            undo_log_full(t);
            return;
        }
        u->addr = (void *)a;
        u->size = (uint32_t)n;
        if (n == 8) { /* the common case: no call to memcpy */
            __builtin_memcpy(&u->old, a, 8);
        } else {
            u->old = 0;
            memcpy(&u->old, a, n);
        }
        a += n;
        size -= n;
    }
}

void tk_undo_apply(tk_thread *t, size_t keep, uintptr_t dead_top) {
    tk_ulog_pull(t); /* records that TX_STORE wrote inline */
    uintptr_t dead = dead_top > t->stk_lo ? dead_top - t->stk_lo : 0;
    for (size_t i = t->ulog.len; i-- > keep;) {
        tk_uentry *u = &TK_VEC_AT(&t->ulog, tk_uentry, i);
        if ((uintptr_t)u->addr - t->stk_lo < dead)
            continue; /* a frame that is gone: maybe the rollback's own now */
        memcpy(u->addr, &u->old, u->size);
    }
    t->ulog.len = keep;
    tk_ulog_push(t);
}
