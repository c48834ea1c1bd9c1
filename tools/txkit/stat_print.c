/* SPDX-License-Identifier: MIT */
/* stat_print.c - the tables and JSON documents of `txkit stat` and `txkit report`. */
#include "stat_print.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <txkit.h>

#include "json.h"
#include "segment_reader.h"
#include "symbolize.h"

typedef unsigned long long ull;

/* Bucket names of the histograms (src/stats/format.h). */
static const char *const set_buckets[TKS_HIST] = {"0",    "1",     "2-3",    "4-7",
                                                  "8-15", "16-63", "64-255", ">=256"};
static const char *const inside_buckets[TKS_HIST] = {"1",   "2",    "3",     "4",
                                                     "5-8", "9-16", "17-64", ">64"};
static const char *const retry_buckets[TKS_HIST] = {"0",   "1",    "2",     "3-4",
                                                    "5-8", "9-16", "17-32", ">32"};
/* A lock counts hardware tries per section: 0, 1, 2, 3 or more. */
static const char *const lock_retry_buckets[TKS_HIST] = {"0", "1", "2", ">=3", "?", "?", "?", "?"};

static const char *kind_name(uint32_t kind) {
    switch (kind) {
    case TKS_SITE_C:
        return "c";
    case TKS_SITE_CXX:
        return "c++";
    case TKS_SITE_ITM:
        return "itm";
    case TKS_SITE_LOCK:
        return "lock";
    default:
        return "other";
    }
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The code of a gcc -fgnu-tm site or of a lock's first caller: symbol+offset
 * (from the object's ELF symbol tables when dladdr had only an offset) and,
 * with debug information, file:line. */
static void site_code(const struct st_site *s, char *sym, size_t slen, char *line, size_t llen) {
    if (sym_lookup(s->file, s->func, s->npids ? (ull)s->pids[0] : 0, 1, sym, slen, line, llen) != 0)
        snprintf(sym, slen, "%s", s->func);
}

/* What identifies a site to a reader: file:line for an atomic block,
 * symbol+offset and object for gcc -fgnu-tm code, the address for a lock. */
static void site_label(const struct st_site *s, char *buf, size_t len) {
    char sym[128], line[128];
    switch (s->kind) {
    case TKS_SITE_C:
    case TKS_SITE_CXX:
        snprintf(buf, len, "%s:%u", s->file, s->line);
        break;
    case TKS_SITE_ITM:
        site_code(s, sym, sizeof sym, line, sizeof line);
        snprintf(buf, len, "%s (%s)", sym, base_name(s->file));
        break;
    case TKS_SITE_LOCK:
        snprintf(buf, len, "lock %#llx", (ull)s->key);
        break;
    default:
        snprintf(buf, len, "%s", s->file);
        break;
    }
}

/* The symbol of "symbol+0x1c" (gcc -fgnu-tm sites, and the code that first
 * took a lock), "" when there is none. */
static void site_symbol(const struct st_site *s, char *buf, size_t len) {
    buf[0] = '\0';
    char sym[128], line[128];
    if (s->kind != TKS_SITE_ITM && s->kind != TKS_SITE_LOCK)
        return;
    site_code(s, sym, sizeof sym, line, sizeof line);
    if (!sym[0] || sym[0] == '?' || (sym[0] == '0' && sym[1] == 'x'))
        return;
    size_t n = strcspn(sym, "+");
    if (n >= len)
        n = len - 1;
    memcpy(buf, sym, n);
    buf[n] = '\0';
}

static double pct(uint64_t part, uint64_t whole) {
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* ------------------------------------------------------------------ text */

static void time_text(char *buf, size_t len, double ns) {
    if (ns < 0)
        snprintf(buf, len, "n/a");
    else
        snprintf(buf, len, "%.3f", ns / 1e6);
}

static void causes_text(FILE *f, const struct tks_counters *c) {
    int any = 0;
    for (int k = 0; k < TKS_NCAUSES; k++) {
        if (!c->aborts_by_cause[k])
            continue;
        if (k < TXKIT_NCAUSES)
            fprintf(f, "%s%s %llu", any ? ", " : "", txkit_cause_name(k),
                    (ull)c->aborts_by_cause[k]);
        else
            fprintf(f, "%scause%d %llu", any ? ", " : "", k, (ull)c->aborts_by_cause[k]);
        any = 1;
    }
    if (!any)
        fputc('-', f);
}

/* Non-empty buckets as name:count; when all are empty, "-" and why that may be. */
static void hist_text(FILE *f, const char *title, const uint64_t *h, const char *const *names,
                      const char *if_empty) {
    fprintf(f, "       %-21s", title);
    int any = 0;
    for (int b = 0; b < TKS_HIST; b++) {
        if (!h[b])
            continue;
        fprintf(f, " %s:%llu", names[b], (ull)h[b]);
        any = 1;
    }
    if (!any)
        fprintf(f, " -%s%s", if_empty[0] ? " " : "", if_empty);
    fputc('\n', f);
}

static void table_header(FILE *f) {
    fprintf(f, "%8s %-16s %4s %10s %9s %9s %9s %10s %6s %11s  %s\n", "PID", "NAME", "THR",
            "COMMITS", "HTM", "STM", "SERIAL", "ABORTS", "ABORT%", "ABRT thr-ms",
            "ABORTS BY CAUSE");
}

static void table_row(FILE *f, const char *pid, const char *name, unsigned threads,
                      const struct tks_counters *c, double lost_ns) {
    char t[32];
    time_text(t, sizeof t, lost_ns);
    fprintf(f, "%8s %-16s %4u %10llu %9llu %9llu %9llu %10llu %5.1f%% %11s  ", pid, name, threads,
            (ull)tkc_commits(c), (ull)c->commits[TXKIT_HTM], (ull)c->commits[TXKIT_STM],
            (ull)c->commits[TXKIT_SERIAL], (ull)tkc_aborts(c), 100.0 * st_abort_rate(c), t);
    causes_text(f, c);
    fputc('\n', f);
}

static void methods_text(FILE *f, const uint64_t *v) {
    int first = 1;
    for (int m = 0; m < TKS_NMETHODS; m++) {
        if (m == 0 && !v[0])
            continue; /* "auto" is never the method of an attempt */
        fprintf(f, "%s%s %llu", first ? "" : ", ", txkit_method_name(m), (ull)v[m]);
        first = 0;
    }
}

static void site_pids(FILE *f, const struct st_site *s) {
    fprintf(f, "   [pid");
    for (size_t i = 0; i < s->npids && i < 4; i++)
        fprintf(f, "%s %llu", i ? "," : "", (ull)s->pids[i]);
    if (s->npids > 4)
        fprintf(f, " +%zu more", s->npids - 4);
    fprintf(f, "]\n");
}

/* A cx lock: sections end optimistic (hardware), shared (cx_shared without
 * RTM: commits[TXKIT_STM]) or exclusive (holding it). */
static void lock_text(FILE *f, size_t rank, const struct st_site *s) {
    const struct tks_counters *c = &s->c;
    char label[512], sym[128], line[128];
    site_label(s, label, sizeof label);
    site_code(s, sym, sizeof sym, line, sizeof line);
    fprintf(f, "%3zu. %-5s %s, first taken in %s (%s)%s%s", rank, kind_name(s->kind), label, sym,
            base_name(s->file), line[0] ? " at " : "", line);
    site_pids(f, s);
    fprintf(f, "       sections %llu (optimistic %llu, ", (ull)tkc_commits(c),
            (ull)c->commits[TXKIT_HTM]);
    if (c->commits[TXKIT_STM])
        fprintf(f, "shared %llu, ", (ull)c->commits[TXKIT_STM]);
    fprintf(f, "exclusive %llu) of %llu entries\n", (ull)c->commits[TXKIT_SERIAL],
            (ull)c->transactions);
    fprintf(f, "       aborts %llu (", (ull)tkc_aborts(c));
    causes_text(f, c);
    fprintf(f, "), abort rate %.1f%%, went exclusive after aborts %llu\n", 100.0 * st_abort_rate(c),
            (ull)c->to_serial);
    hist_text(f, "hardware tries", c->retries_hist, lock_retry_buckets, "");
}

static void site_text(FILE *f, size_t rank, const struct st_site *s) {
    if (s->kind == TKS_SITE_LOCK) {
        lock_text(f, rank, s);
        return;
    }
    char label[512], t[32];
    site_label(s, label, sizeof label);
    fprintf(f, "%3zu. %-5s %s", rank, kind_name(s->kind), label);
    if (s->kind == TKS_SITE_C && s->func[0])
        fprintf(f, " in %s", s->func);
    if (s->kind == TKS_SITE_ITM) {
        char sym[128], line[128];
        site_code(s, sym, sizeof sym, line, sizeof line);
        if (line[0])
            fprintf(f, " at %s", line);
    }
    site_pids(f, s);
    const struct tks_counters *c = &s->c;
    fprintf(f, "       commits %llu (", (ull)tkc_commits(c));
    methods_text(f, c->commits);
    fprintf(f, ") of %llu transactions\n", (ull)c->transactions);
    fprintf(f, "       aborts %llu (", (ull)tkc_aborts(c));
    causes_text(f, c);
    fprintf(f, "), abort rate %.1f%%\n", 100.0 * st_abort_rate(c));
    time_text(t, sizeof t, s->lost_ns);
    fprintf(f,
            "       in aborted attempts %s%s, irrevocable %.1f%%, fallbacks htm->stm %llu, "
            "->serial %llu\n",
            t, s->lost_ns < 0 ? "" : " thread-ms", pct(c->irrevocable, c->transactions),
            (ull)c->htm_to_stm, (ull)c->to_serial);
    /* A maximum, not a count: over the whole run, whatever the period. */
    if (c->inside_max)
        fprintf(f, "       max threads inside at once %llu (sampled, since start)\n",
                (ull)c->inside_max);
    else
        fprintf(f, "       max threads inside at once: not sampled yet\n");
    hist_text(f, "read set (words)", c->rset_hist, set_buckets, "(software commits only)");
    hist_text(f, "write set (words)", c->wset_hist, set_buckets, "(software commits only)");
    char inside_note[48];
    snprintf(inside_note, sizeof inside_note, "(sampled every %dth transaction)", TKS_INSIDE_EVERY);
    hist_text(f, "threads inside", c->inside_hist, inside_buckets, inside_note);
    hist_text(f, "retries per commit", c->retries_hist, retry_buckets, "");
}

static void clock_text(char *buf, size_t len, double when, int with_date) {
    time_t t = (time_t)when;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
}

void st_print_text(FILE *f, const struct st_report *r, const struct st_print_opts *o) {
    char when[64];
    clock_text(when, sizeof when, r->when, r->since_start);
    int report = strcmp(o->command, "report") == 0;
    if (report && r->nprocs == 1) {
        const struct tkr_proc *p = r->procs[0].p;
        fprintf(f, "txkit report: %s: %s pid %llu (%s), %u thread%s, totals over the %s\n", r->path,
                p->is_dump ? "dump of" : "live segment of", (ull)p->pid, p->name, p->threads,
                p->threads == 1 ? "" : "s", p->is_dump ? "whole run" : "run so far");
        if (p->cmdline[0])
            fprintf(f, "command: %s\n", p->cmdline);
    } else {
        fprintf(f, "txkit %s: %zu process%s, %u thread%s%s%s, ", o->command, r->nprocs,
                r->nprocs == 1 ? "" : "es", r->total_threads, r->total_threads == 1 ? "" : "s",
                r->user ? " of user " : "", r->user ? r->user : "");
        if (r->since_start)
            fprintf(f, "totals since start [%s]\n", when);
        else
            fprintf(f, "last %.2f s [%s]\n", r->seconds, when);
    }
    if (r->nprocs == 0 && r->dir)
        fprintf(f, "(no running txkit process%s%s publishes statistics in %s)\n",
                r->user ? " of user " : "", r->user ? r->user : "", r->dir);
    for (size_t i = 0; i < r->ngone; i++)
        fprintf(f,
                "gone: pid %llu (%s): died without removing its statistics (%llu commits, %llu "
                "aborts)%s\n",
                (ull)r->gone[i].pid, r->gone[i].name, (ull)r->gone[i].commits,
                (ull)r->gone[i].aborts, r->gone[i].removed ? "; segment removed" : "");
    for (size_t i = 0; i < r->nexited; i++)
        fprintf(f, "exited: pid %llu (%s)\n", (ull)r->exited[i].pid, r->exited[i].name);
    for (size_t i = 0; i < r->nprocs; i++) {
        const struct tkr_proc *p = r->procs[i].p;
        if (!p->shared_threads)
            continue;
        fprintf(f,
                "shared slot: pid %llu (%s): %llu thread%s counted together in one statistics slot "
                "(more than %u at once",
                (ull)p->pid, p->name, (ull)p->shared_threads, p->shared_threads == 1 ? "" : "s",
                TKS_SHARED_SLOT - 1);
        if (p->is_dump)
            fprintf(f, ")\n");
        else
            fprintf(f, "; %u there now)\n", p->shared_now);
    }

    table_header(f);
    for (size_t i = 0; i < r->nprocs; i++) {
        const struct st_proc *sp = &r->procs[i];
        char pid[24];
        snprintf(pid, sizeof pid, "%llu", (ull)sp->p->pid);
        table_row(f, pid, sp->p->name, sp->p->threads, &sp->total, sp->lost_ns);
    }
    if (r->nprocs != 1)
        table_row(f, "", "total", r->total_threads, &r->total, r->total_lost_ns);

    /* Contention management and scheduling (issue-7 counters), when anything happened. */
    const struct tks_counters *t = &r->total;
    if (t->cm_decided || t->sched_waits || t->sched_queued) {
        const char *cm = r->nprocs == 1 && r->procs[0].p->cm[0] ? r->procs[0].p->cm : "";
        fprintf(f,
                "contention%s%s: %llu conflicts decided, %llu priority inversions (%.1f%%), %llu "
                "undecided; "
                "scheduling: %llu waits, %llu queued\n",
                cm[0] ? " manager " : "", cm, (ull)t->cm_decided, (ull)t->cm_inversions,
                pct(t->cm_inversions, t->cm_decided), (ull)t->cm_undecided, (ull)t->sched_waits,
                (ull)t->sched_queued);
    }
    if (r->nucounters) {
        fprintf(f, "counters%s:\n", r->since_start ? "" : " (events in this interval, levels now)");
        for (size_t i = 0; i < r->nucounters; i++) {
            const struct st_ucounter *u = &r->ucounters[i];
            fprintf(f, "  %-32s %14lld  %s, %u process%s\n", u->name, (long long)u->value,
                    u->kind == TKS_UC_LEVEL ? "level" : "events", u->nprocs,
                    u->nprocs == 1 ? "" : "es");
        }
    }

    if (o->sites) {
        size_t n = o->top && o->top < r->nsites ? o->top : r->nsites;
        if (r->nsites == 0)
            fprintf(f, "sites: none active%s\n", r->since_start ? "" : " in this interval");
        else
            fprintf(f, "sites and locks by commits%s (%zu of %zu):\n",
                    r->since_start ? "" : " in this interval", n, r->nsites);
        for (size_t i = 0; i < n; i++)
            site_text(f, i + 1, &r->sites[i]);
    }
    fputc('\n', f);
}

/* -------------------------------------------------------- the vmstat view */

/* Columns (92 wide): the time of the reading; processes and threads; commits
 * per second and the share of each method; aborts per second, the abort rate
 * and the share of the main causes; thread-milliseconds per second spent in
 * attempts that then aborted (wall clock, summed over threads: with several
 * threads, or a thread descheduled mid-attempt, it exceeds 1000). */
void st_print_line_header(FILE *f) {
    fprintf(f, "%8s %4s %4s %10s %4s %4s %4s %9s %5s %5s %5s %5s %13s\n", "TIME", "PROC", "THR",
            "COMMIT/s", "HTM%", "STM%", "SER%", "ABORT/s", "ABRT%", "CONF%", "CAPA%", "OTHR%",
            "ABRT thr-ms/s");
}

static void pct_col(FILE *f, int width, uint64_t part, uint64_t whole) {
    if (whole)
        fprintf(f, " %*.0f", width, 100.0 * (double)part / (double)whole);
    else
        fprintf(f, " %*s", width, "-");
}

void st_print_line(FILE *f, const struct st_report *r) {
    double commits = 0, aborts = 0, lost = 0;
    int lost_na = 0;
    for (size_t i = 0; i < r->nprocs; i++) {
        const struct st_proc *sp = &r->procs[i];
        double secs = r->seconds;
        if (r->since_start) /* the first line: over the process's life so far */
            secs = r->when - (double)sp->p->created_ns / 1e9;
        if (secs < 0.001)
            secs = 0.001;
        commits += (double)tkc_commits(&sp->total) / secs;
        aborts += (double)tkc_aborts(&sp->total) / secs;
        if (sp->lost_ns < 0)
            lost_na = 1;
        else
            lost += sp->lost_ns / 1e6 / secs;
    }
    const struct tks_counters *t = &r->total;
    uint64_t nc = tkc_commits(t), na = tkc_aborts(t);
    uint64_t cc =
        t->aborts_by_cause[TXKIT_CAUSE_CONFLICT] + t->aborts_by_cause[TXKIT_CAUSE_CAPACITY];
    uint64_t other = na > cc ? na - cc : 0;
    char when[16];
    clock_text(when, sizeof when, r->when, 0);
    fprintf(f, "%8s %4zu %4u %10.0f", when, r->nprocs, r->total_threads, commits);
    pct_col(f, 4, t->commits[TXKIT_HTM], nc);
    pct_col(f, 4, t->commits[TXKIT_STM], nc);
    pct_col(f, 4, t->commits[TXKIT_SERIAL], nc);
    fprintf(f, " %9.0f", aborts);
    if (nc + na)
        fprintf(f, " %5.1f", 100.0 * (double)na / (double)(nc + na));
    else
        fprintf(f, " %5s", "-");
    pct_col(f, 5, t->aborts_by_cause[TXKIT_CAUSE_CONFLICT], na);
    pct_col(f, 5, t->aborts_by_cause[TXKIT_CAUSE_CAPACITY], na);
    pct_col(f, 5, other, na);
    if (lost_na)
        fprintf(f, " %13s\n", "n/a");
    else
        fprintf(f, " %13.1f\n", lost);
}

/* ------------------------------------------------------------------ JSON */

static void json_methods(struct jw *w, const char *key, const uint64_t *v) {
    jw_object(w, key);
    for (int m = 0; m < TKS_NMETHODS; m++)
        if (m > 0 || v[m])
            jw_u64(w, txkit_method_name(m), v[m]);
    jw_end_object(w);
}

static void json_hist(struct jw *w, const char *key, const uint64_t *h) {
    jw_array(w, key);
    for (int b = 0; b < TKS_HIST; b++)
        jw_u64(w, NULL, h[b]);
    jw_end_array(w);
}

static void json_time(struct jw *w, const char *key, double ns) {
    if (ns < 0)
        jw_null(w, key);
    else
        jw_double(w, key, ns / 1e6);
}

static void json_counters(struct jw *w, const struct tks_counters *c, double lost_ns) {
    jw_u64(w, "transactions", c->transactions);
    jw_u64(w, "commits", tkc_commits(c));
    json_methods(w, "commits_by_method", c->commits);
    jw_u64(w, "aborts", tkc_aborts(c));
    json_methods(w, "aborts_by_method", c->aborts);
    jw_object(w, "aborts_by_cause");
    for (int k = 0; k < TKS_NCAUSES; k++) {
        if (k < TXKIT_NCAUSES) {
            jw_u64(w, txkit_cause_name(k), c->aborts_by_cause[k]);
        } else if (c->aborts_by_cause[k]) {
            char name[16];
            snprintf(name, sizeof name, "cause%d", k);
            jw_u64(w, name, c->aborts_by_cause[k]);
        }
    }
    jw_end_object(w);
    jw_double(w, "abort_rate", st_abort_rate(c));
    jw_u64(w, "htm_to_stm", c->htm_to_stm);
    jw_u64(w, "to_serial", c->to_serial);
    jw_u64(w, "irrevocable", c->irrevocable);
    json_hist(w, "retries_hist", c->retries_hist);
    json_time(w, "aborted_thread_ms", lost_ns);
    jw_u64(w, "cm_decided", c->cm_decided);
    jw_u64(w, "cm_inversions", c->cm_inversions);
    jw_u64(w, "sched_waits", c->sched_waits);
    jw_u64(w, "sched_queued", c->sched_queued);
    jw_u64(w, "cm_undecided", c->cm_undecided);
}

static void json_ref(struct jw *w, const struct st_ref *g, int counts) {
    jw_object(w, NULL);
    jw_u64(w, "pid", g->pid);
    jw_string(w, "name", g->name);
    jw_string(w, "file", g->file);
    if (counts) {
        jw_u64(w, "commits", g->commits);
        jw_u64(w, "aborts", g->aborts);
        jw_bool(w, "removed", g->removed);
    }
    jw_end_object(w);
}

void st_print_json(FILE *f, const struct st_report *r, const struct st_print_opts *o) {
    struct jw w;
    jw_init(&w, f);
    jw_object(&w, NULL);
    jw_string(&w, "command", o->command);
    jw_u64(&w, "format_version", TKS_VERSION);
    jw_double(&w, "time", r->when);
    jw_bool(&w, "since_start", r->since_start);
    if (r->since_start)
        jw_null(&w, "seconds");
    else
        jw_double(&w, "seconds", r->seconds);
    if (r->dir)
        jw_string(&w, "dir", r->dir);
    if (r->user) {
        jw_string(&w, "user", r->user);
        jw_u64(&w, "uid", r->uid);
    }
    if (r->path)
        jw_string(&w, "file", r->path);

    jw_array(&w, "processes");
    for (size_t i = 0; i < r->nprocs; i++) {
        const struct st_proc *sp = &r->procs[i];
        const struct tkr_proc *p = sp->p;
        jw_object(&w, NULL);
        jw_u64(&w, "pid", p->pid);
        jw_string(&w, "name", p->name);
        jw_string(&w, "file", p->file);
        jw_string(&w, "cmdline", p->cmdline);
        jw_u64(&w, "threads", p->threads);
        jw_bool(&w, "dump", p->is_dump);
        if (p->ns_per_tick > 0)
            jw_double(&w, "ns_per_tick", p->ns_per_tick);
        else
            jw_null(&w, "ns_per_tick");
        jw_u64(&w, "unstable_reads", p->torn);
        jw_u64(&w, "shared_slot_threads", p->shared_threads);
        jw_string(&w, "cm", p->cm);
        jw_array(&w, "counters");
        for (unsigned k = 0; k < p->nucounters; k++) {
            jw_object(&w, NULL);
            jw_string(&w, "name", p->ucounters[k].name);
            jw_i64(&w, "value", p->ucounters[k].value);
            jw_end_object(&w);
        }
        jw_end_array(&w);
        json_counters(&w, &sp->total, sp->lost_ns);
        jw_end_object(&w);
    }
    jw_end_array(&w);

    jw_object(&w, "total");
    jw_u64(&w, "processes", r->nprocs);
    jw_u64(&w, "threads", r->total_threads);
    json_counters(&w, &r->total, r->total_lost_ns);
    jw_end_object(&w);

    size_t n = o->top && o->top < r->nsites ? o->top : r->nsites;
    jw_u64(&w, "sites_active", r->nsites);
    jw_array(&w, "sites");
    for (size_t i = 0; i < n; i++) {
        const struct st_site *s = &r->sites[i];
        char label[512], sym[96];
        site_label(s, label, sizeof label);
        site_symbol(s, sym, sizeof sym);
        jw_object(&w, NULL);
        jw_string(&w, "kind", kind_name(s->kind));
        jw_string(&w, "label", label);
        jw_string(&w, "file", s->file);
        jw_u64(&w, "line", s->line);
        jw_string(&w, "func", s->func);
        if (sym[0])
            jw_string(&w, "symbol", sym);
        if (s->kind == TKS_SITE_ITM || s->kind == TKS_SITE_LOCK) {
            char code[128], line[128];
            site_code(s, code, sizeof code, line, sizeof line);
            jw_string(&w, "code", code);
            if (line[0])
                jw_string(&w, "source", line);
        }
        if (s->kind == TKS_SITE_LOCK) {
            char key[32];
            snprintf(key, sizeof key, "%#llx", (ull)s->key);
            jw_string(&w, "address", key);
        }
        jw_array(&w, "pids");
        for (size_t k = 0; k < s->npids; k++)
            jw_u64(&w, NULL, s->pids[k]);
        jw_end_array(&w);
        json_counters(&w, &s->c, s->lost_ns);
        jw_double(&w, "irrevocable_pct", pct(s->c.irrevocable, s->c.transactions));
        jw_u64(&w, "inside_max", s->c.inside_max);
        json_hist(&w, "inside_hist", s->c.inside_hist);
        json_hist(&w, "rset_hist", s->c.rset_hist);
        json_hist(&w, "wset_hist", s->c.wset_hist);
        jw_end_object(&w);
    }
    jw_end_array(&w);

    jw_array(&w, "counters");
    for (size_t i = 0; i < r->nucounters; i++) {
        const struct st_ucounter *u = &r->ucounters[i];
        jw_object(&w, NULL);
        jw_string(&w, "name", u->name);
        jw_string(&w, "kind", u->kind == TKS_UC_LEVEL ? "level" : "events");
        jw_i64(&w, "value", u->value);
        jw_u64(&w, "processes", u->nprocs);
        jw_end_object(&w);
    }
    jw_end_array(&w);

    jw_array(&w, "gone");
    for (size_t i = 0; i < r->ngone; i++)
        json_ref(&w, &r->gone[i], 1);
    jw_end_array(&w);
    jw_array(&w, "exited");
    for (size_t i = 0; i < r->nexited; i++)
        json_ref(&w, &r->exited[i], 0);
    jw_end_array(&w);
    jw_array(&w, "errors");
    if (r->scan)
        for (size_t i = 0; i < r->scan->nproblems; i++) {
            const struct tkr_problem *pr = &r->scan->problems[i];
            jw_object(&w, NULL);
            jw_string(&w, "file", pr->file);
            jw_string(&w, "error", pr->msg);
            jw_bool(&w, "skipped", pr->fatal);
            jw_end_object(&w);
        }
    jw_end_array(&w);
    if (o->json_extra)
        o->json_extra(&w, o->json_arg);
    jw_end_object(&w);
    fputc('\n', f);
}
