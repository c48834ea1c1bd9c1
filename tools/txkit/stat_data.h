/* SPDX-License-Identifier: MIT */
/* stat_data.h - what `txkit stat` and `txkit report` print: per-process
 * counts over a period (since start, or one interval), their total, and the
 * sites merged over the processes. */
#ifndef TXKIT_CLI_STAT_DATA_H
#define TXKIT_CLI_STAT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "format.h" /* src/stats/format.h, shared with the library */

struct tkr_proc;
struct tkr_scan;

/* ------------------------------------------------ counter arithmetic */

/* d += s: sums, except inside_max (the larger) and explicit_code (the last non-zero). */
void tkc_add(struct tks_counters *d, const struct tks_counters *s);
/* out = cur - *prev, each counter at least 0; then *prev = max(*prev, cur), so
 * a counter seen too high once (a thread exiting mid-read) is not counted twice.
 * inside_max and explicit_code are copied from cur (not counts). */
void tkc_delta(struct tks_counters *out, const struct tks_counters *cur, struct tks_counters *prev);
/* The process's transactions: every site but locks (cx sections are counted
 * at their lock's site, not as transactions; tx_stats_get() does the same). */
struct tkr_site;
void tkc_sum_transactions(struct tks_counters *out, const struct tks_counters *counters,
                          const struct tkr_site *sites, unsigned nsites);
uint64_t tkc_commits(const struct tks_counters *c);
uint64_t tkc_aborts(const struct tks_counters *c);

/* Time lost in aborted attempts, ns: negative (n/a) when something aborted
 * but the process has not calibrated its clock yet (ns_per_tick 0). */
double tkc_lost_ns(const struct tks_counters *c, double ns_per_tick);

/* ------------------------------------------------------------ a period */

struct st_proc {
    const struct tkr_proc *p;   /* identity: pid, name, file, threads, clock */
    struct tks_counters *sites; /* [p->nsites], counts in the period */
    struct tks_counters total;  /* summed over the transaction sites (not locks) */
    double lost_ns;             /* < 0: n/a */
};

struct st_site {
    uint32_t kind, line;
    uint64_t key;
    const char *file, *func; /* point into a tkr_proc's site table */
    struct tks_counters c;
    double lost_ns; /* < 0: n/a (a process without a calibrated clock) */
    uint64_t *pids;
    size_t npids;
};

struct st_ref { /* a process mentioned by pid and name */
    uint64_t pid;
    char name[17];
    char file[256];
    uint64_t commits, aborts;
    int removed;
};

struct st_ucounter { /* an application counter, over the processes */
    char name[49];
    uint32_t kind;   /* enum tks_ucounter_kind */
    int64_t value;   /* events: in the period; levels: now */
    unsigned nprocs; /* processes that have it */
};

struct st_report {
    int since_start;  /* totals since each process started */
    double seconds;   /* length of the interval (not since_start) */
    double when;      /* CLOCK_REALTIME of the reading */
    const char *dir;  /* stat: the directory read */
    const char *path; /* report: the file read */
    const char *user; /* stat: whose segments, "NAME (uid N)" */
    unsigned uid;
    struct st_proc *procs;
    size_t nprocs;
    struct tks_counters total;
    unsigned total_threads;
    double total_lost_ns;  /* < 0: n/a */
    struct st_site *sites; /* merged, active in the period, busiest first */
    size_t nsites;
    struct st_ref *gone, *exited;
    size_t ngone, nexited;
    const struct tkr_scan *scan;   /* problems */
    struct st_ucounter *ucounters; /* by name, in order of first appearance */
    size_t nucounters;
};

/* Per-process state between intervals: the last counts seen. */
struct st_prev_proc {
    uint64_t pid, created_ns;
    char name[17];
    char file[256];
    unsigned nsites;
    struct tks_counters *c;
    unsigned nuc;
    int64_t uc[TKS_MAX_UCOUNTERS]; /* event counters at the last reading */
    int seen;
};

struct st_history {
    struct st_prev_proc *procs;
    size_t n, cap;
    int primed; /* a first report was made */
};

/* Build the report of procs[0..n): since start when h is NULL or not primed
 * yet, else the difference with the previous reading, which h then becomes.
 * gone[0..ngone) are listed in r->gone; processes h had that are missing now
 * and are not gone go to r->exited. Returns 0, or -1 when out of memory. */
struct tkr_gone;
int st_build(struct st_report *r, const struct tkr_proc *const *procs, size_t n,
             const struct tkr_gone *gone, size_t ngone, struct st_history *h);
void st_report_free(struct st_report *r);
void st_history_free(struct st_history *h);

/* Derived numbers. */
double st_abort_rate(const struct tks_counters *c); /* aborts / attempts, 0 without attempts */

#endif /* TXKIT_CLI_STAT_DATA_H */
