/* SPDX-License-Identifier: MIT */
/* segment_reader.h - reading statistics segments and dumps (src/stats/format.h).
 *
 * The reader never blocks or slows a writer: it maps the file read-only,
 * copies each counter record under its thread's seqlock with a bounded number
 * of retries (then accepts what it has), and never takes a lock a live writer
 * holds. Everything in the file is untrusted: the header is validated against
 * the file size before anything else is touched, counts are clamped, strings
 * are bounded and made printable, and a file that shrinks under the mapping
 * (SIGBUS) is reported instead of crashing.
 */
#ifndef TXKIT_CLI_SEGMENT_READER_H
#define TXKIT_CLI_SEGMENT_READER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format.h" /* src/stats/format.h, shared with the library */

#define TKR_FILE_MAX 256

/* A site's description, copied out of the file and made printable. */
struct tkr_site {
    uint32_t kind; /* enum tks_site_kind */
    uint32_t line;
    uint64_t key;
    int valid; /* the writer had finished writing it */
    char file[sizeof(((struct tks_site *)0)->file) + 1];
    char func[sizeof(((struct tks_site *)0)->func) + 1];
};

/* An application counter (txkit_counter()), copied out and made printable. */
struct tkr_ucounter {
    char name[49];
    uint32_t kind; /* enum tks_ucounter_kind */
    int64_t value;
};

/* One process (a live segment) or one dump, copied out of its file. */
struct tkr_proc {
    char file[TKR_FILE_MAX]; /* name in the directory, or the path given */
    uint64_t pid, start_time, created_ns;
    uint32_t uid;
    char name[17];
    char cmdline[129];
    double ns_per_tick; /* 0: not calibrated, times are n/a */
    int is_dump;
    unsigned threads; /* threads with a slot now; in a dump, threads that ran transactions */
    unsigned nsites;
    unsigned torn;                 /* records accepted after the seqlock retries ran out */
    unsigned shared_now;           /* threads counting in the shared slot now (in threads) */
    uint64_t shared_threads;       /* threads that ever counted in the shared slot */
    struct tkr_site *sites;        /* [nsites] */
    struct tks_counters *counters; /* [nsites], summed over the threads */
    char cm[17];                   /* contention manager, "" if not said */
    unsigned nucounters;
    struct tkr_ucounter *ucounters; /* [nucounters] */
};

enum tkr_result {
    TKR_LIVE,   /* a live process (or a readable file): *p filled */
    TKR_ABSENT, /* nothing to report: a segment being created, or removed meanwhile */
    TKR_GONE,   /* its owner died: *p filled (final counts); removed with TKR_REMOVE_GONE */
    TKR_BAD,    /* unreadable, foreign, truncated, wrong version...: why says what */
};

#define TKR_SEGMENT 1u     /* a file of the statistics directory: liveness, owner, name */
#define TKR_REMOVE_GONE 2u /* remove the segment of a dead owner */

/* Read one file: dirfd/name (dirfd may be AT_FDCWD). why gets a one-line
 * reason for TKR_BAD; note gets a remark about a readable file (a clamped
 * count), or "". Free *p with tkr_proc_free() after TKR_LIVE and TKR_GONE. */
enum tkr_result tkr_read(int dirfd, const char *name, unsigned flags, struct tkr_proc *p, char *why,
                         size_t wlen, char *note, size_t nlen);
void tkr_proc_free(struct tkr_proc *p);

/* Whose segments are read and trusted: the caller's (default), or another
 * user's (txkit stat -u, checked by the caller). */
uid_t tkr_uid(void);
void tkr_set_uid(uid_t uid);

/* The statistics directory: $TXKIT_STATS_DIR or /dev/shm/txkit-<uid>. */
int tkr_default_dir(char *buf, size_t len);

/* Open the directory after checking that it is a real directory of this user,
 * mode 0700 (no group or other bits). Returns 0 (*fd set), 1 when it does not
 * exist (no process published anything), -1 with why. */
int tkr_open_dir(const char *dir, int *fd, char *why, size_t wlen);

/* A file that could not be read, or a remark about one that could. */
struct tkr_problem {
    char file[TKR_FILE_MAX];
    char msg[320];
    int fatal; /* the file was skipped */
    dev_t dev;
    ino_t ino; /* to say it once per file */
};

struct tkr_gone {
    uint64_t pid;
    char name[17];
    char file[TKR_FILE_MAX];
    uint64_t commits, aborts; /* its totals when it died */
    int removed;
};

struct tkr_scan {
    struct tkr_proc *procs;
    size_t nprocs;
    struct tkr_gone *gone;
    size_t ngone;
    struct tkr_problem *problems;
    size_t nproblems;
};

/* Read every *.seg file of the directory: live processes, gone ones
 * (removed), problems. Returns 0, 1 when the directory does not exist (an
 * empty scan), -1 with why when it cannot be used. */
int tkr_scan_dir(const char *dir, struct tkr_scan *out, char *why, size_t wlen);
void tkr_scan_free(struct tkr_scan *s);

#endif /* TXKIT_CLI_SEGMENT_READER_H */
