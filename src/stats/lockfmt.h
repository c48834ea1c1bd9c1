/* SPDX-License-Identifier: MIT */
/* lockfmt.h - the lock report's table, shared by its writer (the library,
 * cx/lockprof.c) and its readers (the txkit command: `txkit run --report`
 * reads the text a process writes at exit, `txkit stat --sites` the live
 * table). Version 1.
 *
 * Live table: while a process runs with TXKIT_LOCK_REPORT, its table is the
 * file DIR/<pid>.locks of the statistics directory (stats/format.h's rules:
 * DIR = $TXKIT_STATS_DIR or /dev/shm/txkit-<uid>, mode 0700; the owner holds
 * an exclusive flock() for its whole life; a reader that gets the lock knows
 * the owner died and removes the file). Layout: struct lp_file at 0 (magic
 * written last), then lp_file.tab_size entries of struct lp_lock at
 * tab_offset. The owner's threads update the counters with relaxed atomic
 * adds: a reader's copy is not one snapshot, each counter is exact. Times
 * are TSC ticks; the reader converts them by the ratio of CLOCK_MONOTONIC to
 * the TSC since start_ns/start_tsc. Code addresses (lock keys, callers) are
 * the owner's: a reader names them through /proc/<pid>/maps.
 *
 * Text (PREFIX.PID, written at exit, read by tools/txkit/lockreport.c):
 * tab-separated lines, a header line per fact, then an L line per lock each
 * followed by its S (call site) and D (waits through a wrapper) lines;
 * lp_write_text() is the only writer of both.
 */
#ifndef TK_STATS_LOCKFMT_H
#define TK_STATS_LOCKFMT_H

#include <stdint.h>
#include <stdio.h>

#define LP_MAGIC "TXKITLK1"
#define LP_VERSION 1u
#define LP_TAB_BITS 12
#define LP_TAB_SIZE (1u << LP_TAB_BITS)
#define LP_SITES 6 /* call sites kept per lock; the last collects the rest */
#define LP_HIST 32 /* log2 buckets of TSC ticks: [2^k, 2^(k+1)), the last open */
#define LP_DEEP 4  /* callers past a wrapper kept per lock; the last collects the rest */

enum { LP_MUTEX, LP_RWLOCK_RD, LP_RWLOCK_WR, LP_SPIN, LP_NKINDS };

struct lp_site {
    uintptr_t caller; /* return address into the program, 0: free */
    uint64_t acq, contended, wait_ticks;
};

/* A contended acquisition through a wrapper (the immediate caller is in a
 * shared library, e.g. APR's apr_thread_mutex_lock): the first frame outside
 * that library. */
struct lp_deep {
    uintptr_t pc; /* 0: free */
    uint64_t contended, wait_ticks;
};

struct lp_lock {
    uintptr_t key; /* lock address, 0: free */
    unsigned kind;
    uint64_t acq, contended, wait_ticks, hold_ticks, timed_holds; /* times: TSC ticks */
    unsigned waiting, max_waiting, elided;
    int inside;          /* threads inside its sections now (RTM: elision lets several in) */
    unsigned max_inside; /* ... the most at once */
    uint64_t wait_hist[LP_HIST], hold_hist[LP_HIST];
    struct lp_site sites[LP_SITES];
    struct lp_deep deep[LP_DEEP]; /* the last collects the rest */
} __attribute__((aligned(64)));

#define LP_FILE_HEAD 4096u /* the table starts a page in */

struct lp_file {
    char magic[8];
    uint32_t version, header_size, lock_size, tab_size;
    uint64_t tab_offset, file_size;
    uint64_t pid;
    uint64_t start_tsc, start_ns; /* the report's start: TSC and CLOCK_MONOTONIC */
    uint32_t threads;             /* threads that took a profiled lock */
    uint32_t lost;                /* locks the table had no room for */
    uint32_t rtm;                 /* the process elides on RTM */
    uint32_t sample;              /* TXKIT_LOCK_SAMPLE in force */
};

/* Names a code or data address of the owner as "OBJECT<TAB>symbol+0xN" or
 * "OBJECT<TAB>0xOFFSET" (from the object's load base), or "?<TAB>0xADDR". */
typedef void (*lp_where_fn)(FILE *f, uintptr_t addr, void *arg);

/* The text report of tab[0..n) (entries with key 0 or no acquisition are
 * skipped): h's facts, exe, elapsed_ns of life, ticks converted at
 * ns_per_tick. Any thread; reads tab with plain loads. */
void lp_write_text(FILE *f, const struct lp_file *h, const struct lp_lock *tab, unsigned n,
                   const char *exe, uint64_t elapsed_ns, double ns_per_tick, lp_where_fn where,
                   void *arg);

#endif /* TK_STATS_LOCKFMT_H */
