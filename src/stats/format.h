/* SPDX-License-Identifier: MIT */
/* format.h - the statistics segment a txkit process publishes, and the dump
 * it writes at exit (TXKIT_STATS=FILE). Shared by the library (the writer)
 * and the txkit command (the reader). Version 1.
 *
 * Where: one file per process, DIR/<pid>.seg, DIR = $TXKIT_STATS_DIR or
 * /dev/shm/txkit-<uid>. DIR is created mode 0700 and must be owned by the
 * user; the file is mode 0600, so other users cannot read it.
 *
 * Liveness: the owner holds an exclusive flock() on its segment for its whole
 * life; a reader that can take the lock (non-blocking) knows the owner died,
 * reports it gone and removes the file.
 *
 * Layout (all offsets in the header, all counters 8-byte, little-endian):
 *
 *   struct tks_header
 *   struct tks_thread  threads[max_threads]     at threads_offset
 *   struct tks_site    sites[max_sites]         at sites_offset
 *   struct tks_ucounter ucounters[max_ucounters] at ucounters_offset
 *   struct tks_counters matrix[max_threads][max_sites]   at matrix_offset
 *
 * Each thread owns one threads[] slot and its matrix row, and is their only
 * writer: plain stores, no atomics. Around each group of updates it makes its
 * slot's seq odd, then even again, so a reader that sees the same even seq
 * before and after copying a row has a consistent snapshot (seqlock). The
 * matrix is a sparse file: rows and sites never used cost nothing.
 *
 * Slot 0 holds the rows of threads that exited, added up. The last slot
 * (header shared_slot, when not 0) is shared: the threads that found every
 * other slot taken count there together, with atomic adds; its seq stays
 * even (a reader's copy of that row is not one snapshot), its state is LIVE
 * once used, and its `shared` field says how many threads count there now.
 * No number of threads ever stops a program; beyond max_threads - 2 at once
 * only the per-thread detail is merged.
 *
 * A dump (TXKIT_STATS=FILE) has the same layout with max_threads = 1 (all
 * threads added up) and max_sites = nsites, so one reader serves both; its
 * application counters come last.
 *
 * Application counters (txkit_counter(), include/txkit/stats.h) are shared by
 * the threads of the process: updated with atomic adds, never under the
 * seqlock. ucounters_offset 0 means there are none.
 */
#ifndef TK_STATS_FORMAT_H
#define TK_STATS_FORMAT_H

#include <stdint.h>

#define TKS_MAGIC "TXKITSG1"
#define TKS_VERSION 5u
#define TKS_MAX_THREADS 128u
#define TKS_SHARED_SLOT (TKS_MAX_THREADS - 1u) /* the shared slot of a segment */
#define TKS_MAX_SITES 256u
#define TKS_NMETHODS 4 /* txkit_method_t: auto (unused), htm, stm, serial */
#define TKS_M_HTM 1    /* TXKIT_HTM: the index of hardware commits */
#define TKS_M_STM 2    /* TXKIT_STM: the index of software commits */
#define TKS_M_SERIAL 3 /* TXKIT_SERIAL: the index of serial commits */
#define TKS_NCAUSES 12 /* room for txkit_cause_t (9 today) */
#define TKS_HIST 8
/* A transaction site's inside_hist and inside_max: the threads inside the
 * site, counted at one transaction in TKS_INSIDE_EVERY of each thread (the
 * runtime, runtime/txn.c; the readers' text). A power of 2. */
#define TKS_INSIDE_EVERY 1024
#define TKS_MAX_UCOUNTERS 64u /* TXKIT_MAX_COUNTERS */

/* Site 0 collects transactions of sites beyond max_sites, site 1 (a lock
 * site, so never counted as transactions) the sections of cx locks beyond. */
#define TKS_SITE_OTHER 0u
#define TKS_SITE_OTHER_LOCKS 1u

/* Histogram buckets. Read/write set sizes (software commits, words):
 * 0, 1, 2-3, 4-7, 8-15, 16-63, 64-255, >= 256.
 * Threads inside the same site at a (sampled) entry, this one included:
 * 1, 2, 3, 4, 5-8, 9-16, 17-64, > 64.
 * Retries before a commit: 0, 1, 2, 3-4, 5-8, 9-16, 17-32, > 32. */

/* A record is 9 cache lines, and rows start on a page, so the first line is
 * one line: what a transaction that commits at its first or second attempt
 * updates (transactions, commits, retries_hist[0..2]). Version 2: the same
 * fields as version 1 (520 bytes), in that order and padded. Version 3:
 * solo_commits, folded by readers (tks_fold). Version 4: sw_commits, folded
 * the same way. Version 5: hw_commits, likewise. */
struct tks_counters {
    uint64_t transactions;          /* outermost transactions begun (see tks_fold) */
    uint64_t commits[TKS_NMETHODS]; /* by the method of the committing attempt */
    uint64_t retries_hist[TKS_HIST];
    uint64_t ticks_committed;      /* TSC ticks in committed attempts (estimate) */
    uint64_t ticks_aborted;        /* TSC ticks in aborted attempts (estimate) */
    uint64_t aborts[TKS_NMETHODS]; /* aborted attempts, by method */
    uint64_t aborts_by_cause[TKS_NCAUSES];
    uint64_t htm_to_stm, to_serial; /* transactions that fell back */
    uint64_t irrevocable;           /* entries that needed to run irrevocably (I/O) */
    uint64_t rset_hist[TKS_HIST];   /* sampled like the times (estimates) */
    uint64_t wset_hist[TKS_HIST];
    uint64_t inside_hist[TKS_HIST];
    uint64_t inside_max;
    uint64_t explicit_code; /* last foreign _xabort code */
    uint64_t cm_decided;    /* conflicts a contention manager decided */
    uint64_t cm_inversions; /* ... against the thread of higher conflict priority */
    uint64_t sched_waits;   /* retries deferred by transaction-aware scheduling */
    uint64_t sched_queued;  /* transactions that waited in their site's queue */
    uint64_t cm_undecided;  /* conflict aborts a visible manager did not decide */
    uint64_t solo_commits;  /* transactions begun and committed on a parked clock (below) */
    uint64_t sw_commits;    /* software commits at the first attempt, not timed (below) */
    uint64_t hw_commits;    /* hardware commits at the first attempt, not timed (below) */
    uint64_t reserved[4];   /* zero */
};                          /* 72 x 8 = 576 bytes */
_Static_assert(sizeof(struct tks_counters) % 64 == 0, "tks_counters: whole cache lines");

/* A lone thread's transaction on its parked clock (runtime/solo.h) is a
 * serial commit at the first attempt; its writer counts it only in
 * solo_commits, one add instead of four (and no seqlock round). A software
 * commit at the first attempt (not a timed one) is counted in sw_commits
 * only, one add instead of two and the seqlock round (its begin counted it in
 * transactions), and a hardware one in hw_commits the same way. Readers fold
 * them: call this on every record they copy, before adding records up or
 * looking at transactions or commits. Versions 3 (solo_commits), 4
 * (sw_commits) and 5 (hw_commits). */
static inline void tks_fold(struct tks_counters *c) {
    c->transactions += c->solo_commits;
    c->commits[TKS_M_SERIAL] += c->solo_commits;
    c->retries_hist[0] += c->solo_commits + c->sw_commits + c->hw_commits;
    c->commits[TKS_M_STM] += c->sw_commits;
    c->commits[TKS_M_HTM] += c->hw_commits;
    c->solo_commits = 0;
    c->sw_commits = 0;
    c->hw_commits = 0;
}

enum tks_thread_state { TKS_FREE = 0, TKS_LIVE = 1, TKS_EXITED = 2 };

struct tks_thread {
    uint32_t state; /* enum tks_thread_state */
    uint32_t tid;
    uint64_t seq;      /* seqlock over this slot's matrix row */
    uint64_t cur_site; /* site index + 1 of the transaction running now, 0 if none */
    uint64_t shared;   /* the shared slot: threads counting in it now (else 0) */
    uint64_t reserved[4];
}; /* 64 bytes: one cache line (the array starts on a page) */

enum tks_site_kind {
    TKS_SITE_NONE = 0,
    TKS_SITE_C = 1,    /* TX_ATOMIC: file, line, function */
    TKS_SITE_CXX = 2,  /* txkit::atomic */
    TKS_SITE_ITM = 3,  /* gcc -fgnu-tm: return address of _ITM_beginTransaction */
    TKS_SITE_LOCK = 4, /* cx lock or elided mutex: address, first acquisition */
};

struct tks_site {
    uint32_t state; /* 1 once every other field is written */
    uint32_t kind;  /* enum tks_site_kind */
    uint64_t key;   /* site object, return address or lock address */
    uint32_t line;
    uint32_t reserved0;
    char file[160]; /* source file, or the object file for -fgnu-tm code */
    char func[80];  /* function, or symbol+offset */
};                  /* 264 bytes */

enum tks_ucounter_kind { TKS_UC_EVENTS = 0, TKS_UC_LEVEL = 1 };

struct tks_ucounter {
    uint32_t state; /* 1 once name and kind are written */
    uint32_t kind;  /* enum tks_ucounter_kind */
    int64_t value;
    char name[48]; /* NUL-terminated */
};                 /* 64 bytes */

struct tks_header {
    char magic[8];        /* TKS_MAGIC */
    uint32_t version;     /* TKS_VERSION */
    uint32_t header_size; /* sizeof(struct tks_header) */
    uint32_t counters_size, thread_size, site_size;
    uint32_t max_threads, max_sites;
    uint32_t uid;
    uint64_t pid;
    uint64_t start_time; /* /proc/PID/stat starttime: tells a reused pid apart */
    uint64_t created_ns; /* CLOCK_REALTIME at creation */
    uint64_t threads_offset, sites_offset, matrix_offset, file_size;
    uint32_t nthreads;  /* slots used so far (high-water mark) */
    uint32_t nsites;    /* sites used so far (high-water mark) */
    double ns_per_tick; /* 0 until calibrated */
    uint32_t is_dump;   /* 1 for a TXKIT_STATS=FILE dump */
    uint32_t reserved0;
    char name[16];             /* process name (comm) */
    char cmdline[128];         /* argv, spaces between, truncated */
    uint64_t ucounters_offset; /* 0: no application counters */
    uint32_t max_ucounters;
    uint32_t nucounters;     /* used so far (high-water mark) */
    char cm[16];             /* the contention manager in use ("backoff", "prio", ...) */
    uint64_t shared_threads; /* threads that ever counted in the shared slot */
    uint32_t shared_slot;    /* index of the shared slot; 0: none (a dump) */
    uint32_t reserved1;
    uint64_t reserved[2];
};

static inline uint64_t tks_matrix_index(const struct tks_header *h, uint32_t thread,
                                        uint32_t site) {
    return (uint64_t)thread * h->max_sites + site;
}

#endif /* TK_STATS_FORMAT_H */
