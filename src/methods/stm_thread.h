/* SPDX-License-Identifier: MIT */
/* stm_thread.h - software TM's (NOrec, methods/stm_norec.c) part of the
 * thread descriptor: tk_thread.stm. Written by its owner thread only, in
 * stm_norec.c (thread_init/fini, begin, barriers, commit, rollback);
 * read elsewhere only for statistics at commit (txn.c) and by the visible
 * reads (vis.c, the write set's words). */
#ifndef TK_STM_THREAD_H
#define TK_STM_THREAD_H

#include "runtime/core.h"

/* Software read log entry: the exact bytes read, revalidated by value. Its
 * layout is public (the inline read barrier in txkit/tx.h appends to it). */
typedef struct _txkit_rentry tk_rentry;

/* Software write set: one entry per 8-byte word, with a byte mask. Its
 * layout is public (the inline store in txkit/tx.h appends to it). */
typedef struct _txkit_wentry tk_wentry;

/* Per-thread hash index over the write set (open addressing, no clearing:
 * a slot is live when its generation matches). */
typedef struct tk_wslot {
    uintptr_t word;
    uint32_t idx;
    uint32_t gen;
} tk_wslot;

struct tk_stm_thread {
    int long_reader;      /* counted in tk_stm_long_readers: this attempt walked its long read
                           * log because hardware commits ran under it (try_extend sets;
                           * unregister, at the attempt's end, clears) */
    int sw_registered;    /* counted in tk_g.sw_active: stm_begin sets; the attempt's end clears
                             (under the stm method only tk_stm_sw_leave, thread exit) */
    tk_rentry *rlog;      /* read log (grown by the barriers); its fill pointer and end are in
                          * _txkit_tls (rcur, rend) for the inline barrier; the snapshot and
                          * write bloom too (snap, wbloom) */
    size_t rlog_cap;      /* entries rlog has room for: rlog_grow; stm_attempt_reset sets rend
                           * from it (the pair is the undo log's between software attempts) */
    tk_vec wset;          /* tk_wentry, in first-write order: stores append, begin empties;
                           * while an attempt runs, the inline store (TXKIT_ACC_BUFSTORE)
                           * appends too, and _txkit_tls.wcur is the end: wset.len is
                           * brought up to it by ws_sync where the method is entered */
    tk_wentry *wlim;      /* what the inline store may fill of wset's storage (the first
                           * WS_SMALL entries, or fewer): set where wset grows (ws_reserve) */
    tk_wslot *windex;     /* hash index over wset, capacity windex_mask + 1: thread_init, stores */
    uint32_t windex_mask; /* thread_init, index growth */
    uint32_t wgen;        /* generation of live windex slots: bumped by ws_clear when indexed */
    int windexed;         /* windex holds every wset entry (more than WS_SMALL of them) */
    /* with windexed, the written words by bit _TXKIT_WFINE_BIT(word), for the
     * barriers that ask (_txkit_tls.wfine points here; NULL otherwise):
     * windex_build and the stores set, ws_clear clears */
    uint64_t wfine[16];
    /* the words a long attempt read, for revalidation against the commit
     * ring (stm_norec.c): open addressing over word addresses, 0 empty;
     * rset_upto read-log entries are in it (0: not built in this attempt),
     * rset_cap (a power of two) of its rset_alloc slots in use */
    uintptr_t *rset;
    size_t rset_alloc, rset_cap, rset_len, rset_upto;
    /* unlogged reads (TXKIT_ACC_NOLOG): stm_begin decides, try_extend and commit count */
    int nolog;          /* this attempt logs no reads: it cannot move its snapshot */
    unsigned calm;      /* commits in a row that never saw the clock move */
    unsigned calm_need; /* how many it takes to try unlogged reads again (doubles at each
                         * unlogged attempt the clock moved under, then decays) */
};

#endif /* TK_STM_THREAD_H */
