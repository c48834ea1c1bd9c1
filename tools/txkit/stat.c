/* SPDX-License-Identifier: MIT */
/* stat.c - `txkit stat` (live processes, like vmstat/top) and `txkit report`
 * (a dump written at exit with TXKIT_STATS=FILE). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "locklive.h"
#include "segment_reader.h"
#include "stat_data.h"
#include "stat_print.h"

#define DEFAULT_TOP 10

void stat_usage(FILE *f) {
    fprintf(f,
            "usage: txkit stat [-p PID[,PID...]] [-n NAME] [-u USER] [-v] [-s [--top N]] [--json]\n"
            "                  [INTERVAL [COUNT]]\n"
            "  Transaction statistics of a user's running txkit processes (yours unless\n"
            "  -u), read from their segments in $TXKIT_STATS_DIR (default\n"
            "  /dev/shm/txkit-UID). A process that has not run a transaction yet is absent.\n"
            "  Without INTERVAL: one report of the totals since each process started, a\n"
            "  row per process and their total.\n"
            "  With INTERVAL (seconds, fractions allowed), like vmstat: one header, then a\n"
            "  line per INTERVAL with rates per second (the first line: averages since\n"
            "  each process started); COUNT lines in all (default: until interrupted).\n"
            "  Columns: TIME, PROC processes, THR threads, COMMIT/s, HTM%% STM%% SER%% of the\n"
            "  commits, ABORT/s, ABRT%% aborts per attempt, CONF%% CAPA%% OTHR%% of the aborts\n"
            "  by cause, ABRT thr-ms/s: thread-milliseconds per second spent in attempts\n"
            "  that then aborted (wall clock summed over threads, descheduled time\n"
            "  included: it can exceed 1000; n/a until a process calibrated its clock).\n"
            "  -p, --pid PID[,PID...]  only these processes (repeatable)\n"
            "  -n, --name NAME         only processes of this name (the 15-character comm\n"
            "                          name, e.g. httpd; repeatable); -p and -n add up\n"
            "  -u, --user USER         another user's processes (name or uid; root only),\n"
            "                          e.g. the www-data children of a server started as root\n"
            "  -v, --verbose           with INTERVAL: the full report (a row per process)\n"
            "                          every interval instead of one line\n"
            "  -s, --sites             also the busiest atomic blocks, gcc -fgnu-tm\n"
            "                          transactions and locks, by commits in the period\n"
            "                          (implies -v); and the lock report of each program\n"
            "                          running under txkit run --report: its pthread\n"
            "                          locks by time lost waiting, in the period\n"
            "                          (JSON: lock_reports)\n"
            "  -t, --top N             how many sites (default %d, 0 = all; with --json:\n"
            "                          all unless given)\n"
            "  -j, --json              one JSON document per report, each on one line\n"
            "  -h, --help              this text\n"
            "  Exit status: 0; 1 when the directory cannot be used or no process matched\n"
            "  (in any report); 2 for bad arguments.\n",
            DEFAULT_TOP);
}

void report_usage(FILE *f) {
    fprintf(f,
            "usage: txkit report [--top N] [--json] FILE\n"
            "  The statistics a process wrote at exit with TXKIT_STATS=FILE (or any\n"
            "  segment file): the same tables as txkit stat, sites included.\n"
            "  -t, --top N   how many sites (default all)\n"
            "  -j, --json    one JSON document\n"
            "  -h, --help    this text\n"
            "  Exit status: 0, 1 when FILE cannot be read or is not valid, 2 for bad arguments.\n");
}

/* --------------------------------------------------------------- arguments */

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    if (!*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_seconds(const char *s, double *out) {
    if (!*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < 0.001 || v > 86400.0)
        return -1;
    *out = v;
    return 0;
}

struct selection {
    uint64_t *pids;
    size_t npids;
    const char **names;
    size_t nnames;
};

/* "PID[,PID...]": every item a positive number, no empty ones. */
static int add_pids(struct selection *sel, const char *list) {
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, ",");
        char item[24];
        uint64_t pid;
        if (n == 0 || n >= sizeof item)
            return -1;
        memcpy(item, p, n);
        item[n] = '\0';
        if (parse_u64(item, 1, INT_MAX, &pid) != 0)
            return -1;
        uint64_t *a = realloc(sel->pids, (sel->npids + 1) * sizeof *a);
        if (!a)
            return -1;
        sel->pids = a;
        sel->pids[sel->npids++] = pid;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

static int add_name(struct selection *sel, const char *name) {
    const char **a = realloc(sel->names, (sel->nnames + 1) * sizeof *a);
    if (!a)
        return -1;
    sel->names = a;
    sel->names[sel->nnames++] = name;
    return 0;
}

static int selected(const struct selection *sel, uint64_t pid, const char *name) {
    if (!sel->npids && !sel->nnames)
        return 1;
    for (size_t i = 0; i < sel->npids; i++)
        if (sel->pids[i] == pid)
            return 1;
    for (size_t i = 0; i < sel->nnames; i++)
        if (strcmp(sel->names[i], name) == 0)
            return 1;
    return 0;
}

struct opts {
    struct selection sel;
    int sites, json, verbose;
    size_t top;
    int top_given;
    double interval; /* 0: once */
    uint64_t count;  /* 0: until interrupted */
};

static const struct option long_opts[] = {
    {"pid", required_argument, NULL, 'p'},
    {"name", required_argument, NULL, 'n'},
    {"sites", no_argument, NULL, 's'},
    {"top", required_argument, NULL, 't'},
    {"json", no_argument, NULL, 'j'},
    {"help", no_argument, NULL, 'h'},
    {"user", required_argument, NULL, 'u'},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* Returns 0, 1 after --help, 2 for bad arguments (said on stderr). */
static int parse_args(int argc, char **argv, const char *cmd, struct opts *o, char **file) {
    void (*usage)(FILE *) = strcmp(cmd, "stat") == 0 ? stat_usage : report_usage;
    int is_stat = usage == stat_usage;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, is_stat ? ":p:n:u:vst:jh" : ":st:jh", long_opts, NULL)) !=
           -1) {
        uint64_t v;
        switch (c) {
        case 'p':
            if (add_pids(&o->sel, optarg) != 0) {
                fprintf(stderr, "txkit %s: -p %s: expected PID[,PID...] (positive numbers)\n", cmd,
                        optarg);
                goto bad;
            }
            break;
        case 'n':
            if (!*optarg || strlen(optarg) > 15) {
                fprintf(stderr, "txkit %s: -n '%s': a process name has 1 to 15 characters\n", cmd,
                        optarg);
                goto bad;
            }
            if (add_name(&o->sel, optarg) != 0)
                goto bad;
            break;
        case 'u': {
            struct passwd *pw = getpwnam(optarg);
            uint64_t id;
            if (pw)
                id = pw->pw_uid;
            else if (parse_u64(optarg, 0, UINT32_MAX - 1, &id) != 0) {
                fprintf(stderr, "txkit %s: -u %s: no such user\n", cmd, optarg);
                goto bad;
            }
            if ((uid_t)id != getuid() && getuid() != 0) {
                fprintf(stderr, "txkit %s: -u %s: only root may read another user's statistics\n",
                        cmd, optarg);
                goto bad;
            }
            tkr_set_uid((uid_t)id);
            break;
        }
        case 's':
            o->sites = 1;
            break;
        case 'v':
            o->verbose = 1;
            break;
        case 't':
            if (parse_u64(optarg, 0, 1000000, &v) != 0) {
                fprintf(stderr, "txkit %s: --top %s: expected a number of sites (0 = all)\n", cmd,
                        optarg);
                goto bad;
            }
            o->top = (size_t)v;
            o->top_given = 1;
            break;
        case 'j':
            o->json = 1;
            break;
        case 'h':
            usage(stdout);
            return 1;
        case ':':
            fprintf(stderr, "txkit %s: option '%s' needs a value\n", cmd, argv[optind - 1]);
            goto bad;
        default:
            if (optopt && (!is_stat && strchr("pnuv", optopt)))
                fprintf(stderr, "txkit %s: option '-%c' is for txkit stat only\n", cmd, optopt);
            else if (optopt)
                fprintf(stderr, "txkit %s: unknown option '-%c'\n", cmd, optopt);
            else
                fprintf(stderr, "txkit %s: unknown option '%s'\n", cmd, argv[optind - 1]);
            goto bad;
        }
    }
    int npos = argc - optind;
    if (is_stat) {
        if (npos > 2) {
            fprintf(stderr, "txkit stat: too many arguments ('%s')\n", argv[optind + 2]);
            goto bad;
        }
        if (npos >= 1 && parse_seconds(argv[optind], &o->interval) != 0) {
            fprintf(stderr, "txkit stat: INTERVAL '%s': expected seconds, 0.001 to 86400\n",
                    argv[optind]);
            goto bad;
        }
        if (npos == 2 && parse_u64(argv[optind + 1], 1, UINT64_MAX, &o->count) != 0) {
            fprintf(stderr, "txkit stat: COUNT '%s': expected a number of reports, at least 1\n",
                    argv[optind + 1]);
            goto bad;
        }
    } else {
        if (npos != 1) {
            fprintf(stderr,
                    npos ? "txkit report: one FILE, please ('%s' is one too many)\n"
                         : "txkit report: no FILE given%s\n",
                    npos ? argv[optind + 1] : "");
            goto bad;
        }
        *file = argv[optind];
    }
    return 0;
bad:
    fprintf(stderr, "try 'txkit %s --help'\n", cmd);
    return 2;
}

/* ------------------------------------------------------------------ stat */

static volatile sig_atomic_t stop_requested;
static void on_stop(int sig) {
    (void)sig;
    stop_requested = 1;
}

/* Problems are said on stderr once per file and message, not every interval. */
struct said {
    struct tkr_problem *v;
    size_t n;
};

static void say_problems(const struct tkr_scan *scan, const char *dir, struct said *said) {
    for (size_t i = 0; i < scan->nproblems; i++) {
        const struct tkr_problem *pr = &scan->problems[i];
        int dup = 0;
        for (size_t k = 0; k < said->n && !dup; k++)
            dup = said->v[k].dev == pr->dev && said->v[k].ino == pr->ino &&
                  strcmp(said->v[k].file, pr->file) == 0 && strcmp(said->v[k].msg, pr->msg) == 0;
        if (dup)
            continue;
        fprintf(stderr, "txkit stat: %s/%s: %s%s\n", dir, pr->file,
                pr->fatal ? "" : "note: ", pr->msg);
        struct tkr_problem *a = realloc(said->v, (said->n + 1) * sizeof *a);
        if (a) {
            said->v = a;
            said->v[said->n++] = *pr;
        }
    }
}

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep until *next (CLOCK_MONOTONIC), then move it one interval on. Returns
 * -1 when interrupted by SIGINT or SIGTERM. */
static int wait_interval(struct timespec *next, double interval) {
    long long ns = next->tv_nsec + (long long)llround(interval * 1e9);
    next->tv_sec += (time_t)(ns / 1000000000LL);
    next->tv_nsec = (long)(ns % 1000000000LL);
    while (!stop_requested) {
        int e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL);
        if (e == 0)
            return 0;
        if (e != EINTR)
            return -1;
    }
    return -1;
}

static int want_proc(uint64_t pid, const char *comm, void *arg) { return selected(arg, pid, comm); }

/* txkit stat --sites --json: the live lock reports, a "lock_reports" array. */
struct lock_json {
    struct locklive *live;
    const char *dir;
    const struct opts *o;
    int n;
};
static void lock_reports_json(struct jw *w, void *arg) {
    struct lock_json *lj = arg;
    jw_array(w, "lock_reports");
    lj->n = locklive_print(lj->live, lj->dir, want_proc, (void *)&lj->o->sel,
                           lj->o->top_given ? lj->o->top : 0, NULL, w);
    jw_end_array(w);
}

/* One reading of the directory, printed. *matched: processes selected. live:
 * the lock tables' previous counts (interval reports), NULL: totals. */
static int one_report(const char *dir, const struct opts *o, struct st_history *hist,
                      double seconds, struct said *said, const char *user, size_t *matched,
                      struct locklive *live) {
    char why[512];
    struct tkr_scan scan;
    if (tkr_scan_dir(dir, &scan, why, sizeof why) < 0) {
        fprintf(stderr, "txkit stat: %s\n", why);
        return 1;
    }
    say_problems(&scan, dir, said);
    const struct tkr_proc **procs = calloc(scan.nprocs ? scan.nprocs : 1, sizeof *procs);
    struct tkr_gone *gone = calloc(scan.ngone ? scan.ngone : 1, sizeof *gone);
    size_t n = 0, ng = 0;
    int rc = 0;
    if (!procs || !gone) {
        fprintf(stderr, "txkit stat: out of memory\n");
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < scan.nprocs; i++)
        if (selected(&o->sel, scan.procs[i].pid, scan.procs[i].name))
            procs[n++] = &scan.procs[i];
    for (size_t i = 0; i < scan.ngone; i++)
        if (selected(&o->sel, scan.gone[i].pid, scan.gone[i].name))
            gone[ng++] = scan.gone[i];
    struct st_report rep;
    memset(&rep, 0, sizeof rep);
    if (st_build(&rep, procs, n, gone, ng, hist) != 0) {
        fprintf(stderr, "txkit stat: out of memory\n");
        st_report_free(&rep);
        rc = 1;
        goto out;
    }
    rep.seconds = seconds;
    rep.dir = dir;
    rep.scan = &scan;
    rep.user = user;
    rep.uid = (unsigned)tkr_uid();
    *matched = n;
    struct st_print_opts po = {"stat", o->sites, o->json && !o->top_given ? 0 : o->top, NULL, NULL};
    struct lock_json lj = {live, dir, o, 0};
    if (o->json && o->sites) {
        po.json_extra = lock_reports_json;
        po.json_arg = &lj;
    }
    if (o->json)
        st_print_json(stdout, &rep, &po);
    else if (o->interval > 0 && !o->verbose && !o->sites)
        st_print_line(stdout, &rep);
    else if (n || ng || rep.nexited || o->interval > 0)
        st_print_text(stdout, &rep, &po);
    if (o->sites && !o->json) { /* the locks of programs under txkit run --report */
        int k = locklive_print(live, dir, want_proc, (void *)&o->sel, o->top, stdout, NULL);
        if (k > 0)
            *matched += (size_t)k;
    } else if (lj.n > 0) {
        *matched += (size_t)lj.n;
    }
    fflush(stdout);
    st_report_free(&rep);
out:
    free(procs);
    free(gone);
    tkr_scan_free(&scan);
    return rc;
}

int cmd_stat(int argc, char **argv) {
    struct opts o;
    memset(&o, 0, sizeof o);
    o.top = DEFAULT_TOP;
    int rc = parse_args(argc, argv, "stat", &o, NULL);
    if (rc) {
        free(o.sel.pids);
        free(o.sel.names);
        return rc == 1 ? 0 : rc;
    }
    char dir[PATH_MAX];
    if (tkr_default_dir(dir, sizeof dir) != 0) {
        fprintf(stderr, "txkit stat: TXKIT_STATS_DIR is too long\n");
        return 1;
    }
    if (o.interval > 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop; /* no SA_RESTART: the sleep ends at once */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    char user[128];
    uid_t uid = tkr_uid();
    struct passwd *pw = getpwuid(uid);
    snprintf(user, sizeof user, "%.64s (uid %u)", pw ? pw->pw_name : "?", (unsigned)uid);
    if (o.interval > 0 && !o.json && !o.verbose && !o.sites) {
        printf("txkit stat: user %s, %s, every %g s; first line: averages since start\n", user, dir,
               o.interval);
        st_print_line_header(stdout);
    }
    struct st_history hist;
    memset(&hist, 0, sizeof hist);
    struct said said = {NULL, 0};
    struct locklive *live = o.interval > 0 ? locklive_new() : NULL;
    size_t ever = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    double last = mono_now();
    for (uint64_t k = 0; o.count == 0 || k < o.count; k++) {
        if (k > 0 && wait_interval(&next, o.interval) != 0)
            break;
        double now = mono_now();
        size_t matched = 0;
        rc = one_report(dir, &o, o.interval > 0 ? &hist : NULL, now - last, &said, user, &matched,
                        live);
        ever += matched;
        last = now;
        if (rc || o.interval <= 0 || stop_requested)
            break;
    }
    if (rc == 0 && ever == 0) {
        if (o.sel.npids || o.sel.nnames)
            fprintf(stderr, "txkit stat: no running txkit process of user %s in %s matches -p/-n\n",
                    user, dir);
        else
            fprintf(stderr,
                    "txkit stat: no running txkit process of user %s publishes statistics in %s\n",
                    user, dir);
        rc = 1;
    }
    st_history_free(&hist);
    locklive_free(live);
    free(said.v);
    free(o.sel.pids);
    free(o.sel.names);
    return rc;
}

/* ---------------------------------------------------------------- report */

int cmd_report(int argc, char **argv) {
    struct opts o;
    memset(&o, 0, sizeof o);
    char *file = NULL;
    int rc = parse_args(argc, argv, "report", &o, &file);
    if (rc)
        return rc == 1 ? 0 : rc;
    struct tkr_proc p;
    char why[512], note[512];
    if (tkr_read(AT_FDCWD, file, 0, &p, why, sizeof why, note, sizeof note) != TKR_LIVE) {
        fprintf(stderr, "txkit report: %s: %s\n", file, why);
        return 1;
    }
    if (note[0])
        fprintf(stderr, "txkit report: %s: note: %s\n", file, note);
    const struct tkr_proc *procs[1] = {&p};
    struct st_report rep;
    memset(&rep, 0, sizeof rep);
    if (st_build(&rep, procs, 1, NULL, 0, NULL) != 0) {
        fprintf(stderr, "txkit report: out of memory\n");
        rc = 1;
    } else {
        rep.path = file;
        struct st_print_opts po = {"report", 1, o.top, NULL, NULL};
        if (o.json)
            st_print_json(stdout, &rep, &po);
        else
            st_print_text(stdout, &rep, &po);
    }
    st_report_free(&rep);
    tkr_proc_free(&p);
    return rc;
}
