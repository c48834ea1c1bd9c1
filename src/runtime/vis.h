/* SPDX-License-Identifier: MIT */
/* vis.h - visible reads (runtime/vis.c) and its part of the thread
 * descriptor, tk_thread.vis. */
#ifndef TK_VIS_H
#define TK_VIS_H

#include "runtime/core.h"

/* Written by the owner thread in vis.c (begin, reads, end, thread exit);
 * decided is also written by txn.c's abort path, which clears it. */
struct tk_vis_thread {
    int slot;             /* visible-TM slot + 1, 0 none yet, -1 none free: slot_get, exit */
    unsigned nread;       /* reads of the running attempt: tk_vis_read, tk_vis_begin */
    uint64_t sig_touched; /* words of the read signature set: tk_vis_read, tk_vis_end */
    int active;           /* the running attempt's accesses are visible: begin / end */
    int decided;          /* the attempt aborts by a manager's decision: a kill; txn.c clears */
    uint64_t lost_to;     /* status word of the attempt this writer lost to at its commit
                              * point: tk_vis_commit_point sets it, tk_vis_wait_for waits it out */
};

/* Visible reads for software TM (runtime/vis.c): NOrec keeps
 * correctness; this layer lets a committing writer see whose reads it would
 * invalidate, so the manager decides who gives way. Called by stm_norec.c. */
TK_HIDDEN void tk_vis_begin(tk_thread *t);
TK_HIDDEN void tk_vis_read(tk_thread *t, const void *addr, size_t size);
TK_HIDDEN void tk_vis_write(tk_thread *t);       /* after adding to the write set */
TK_HIDDEN bool tk_vis_read_commit(tk_thread *t); /* read-only: false when killed */
/* Writer, clock held: TK_OK (runtime/core.h); TK_VIS_KILLED: a winner
 * killed us (give the clock back, abort); else the slot (>= 0) of a reader
 * that won: give the clock back, tk_vis_wait_for() it, then try again. */
#define TK_VIS_KILLED (-2)
TK_HIDDEN int tk_vis_commit_point(tk_thread *t);
/* Waits out the attempt of `slot` that tk_vis_commit_point() lost to (not a
 * later one of that slot); false if we were killed meanwhile. */
TK_HIDDEN bool tk_vis_wait_for(tk_thread *t, int slot);
TK_HIDDEN bool tk_vis_pin(tk_thread *t); /* irrevocable: never killed; false if killed */
TK_HIDDEN void tk_vis_end(tk_thread *t); /* release everything */

#endif /* TK_VIS_H */
