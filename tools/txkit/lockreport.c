/* SPDX-License-Identifier: MIT */
/* lockreport.c - `txkit run --report`: reads the raw lock files of a run
 * (src/cx/lockprof.c writes them), names the call sites (symbolize.c) and
 * prints, per process, the locks sorted so that the one worth transactifying
 * first is on top: the most time lost waiting for it, then the most
 * acquisitions. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "lockreport.h"
#include "symbolize.h"

#define HIST 32 /* LP_HIST of src/cx/lockprof.c */
#define MAX_SITES 8

struct site {
    unsigned long long acq, contended, wait_ns;
    char object[512], func[160];
    int others;
};

struct lock {
    char addr[32], kind[16];
    char name[128];          /* the variable holding it ("" when not known) */
    char obj[512], off[160]; /* where it is: object and offset, from the file */
    unsigned long long acq, contended, wait_ns, hold_ns, timed_holds;
    unsigned max_waiting, elided, max_inside;
    unsigned long long wait_hist[HIST], hold_hist[HIST];
    int nsites, ndeep;
    struct site sites[MAX_SITES];
    struct site deep[MAX_SITES]; /* contended waits through a wrapper, by the caller past it */
};

struct proc {
    long pid;
    char exe[512];
    unsigned long long elapsed_ns;
    double hist_unit; /* ns per histogram unit (log2 buckets of TSC ticks) */
    unsigned threads, untracked;
    int rtm;
    int nlocks, cap;
    struct lock *locks;
};

static void parse_hist(const char *s, unsigned long long *h) {
    for (int b = 0; b < HIST && s && *s; b++) {
        h[b] = strtoull(s, NULL, 10);
        s = strchr(s, ',');
        if (s)
            s++;
    }
}

/* Split line (modified) at tabs into at most max fields; returns the count. */
static int fields(char *line, char **f, int max) {
    int n = 0;
    line[strcspn(line, "\n")] = 0;
    for (char *p = line; n < max; n++) {
        f[n] = p;
        char *t = strchr(p, '\t');
        if (!t)
            return n + 1;
        *t = 0;
        p = t + 1;
    }
    return n;
}

/* A site line's fields from "contended" on (contended, wait_ns, object,
 * func, ["and-others"]) into the next free one of sites[MAX_SITES];
 * NULL when they are full. */
static struct site *parse_site(struct site *sites, int *n_sites, char **f, int n) {
    if (*n_sites == MAX_SITES)
        return NULL;
    struct site *s = &sites[(*n_sites)++];
    s->contended = strtoull(f[0], NULL, 10);
    s->wait_ns = strtoull(f[1], NULL, 10);
    snprintf(s->object, sizeof s->object, "%s", f[2]);
    snprintf(s->func, sizeof s->func, "%s", f[3]);
    s->others = n >= 5 && !strcmp(f[4], "and-others");
    return s;
}

/* One process's text (name: where it came from, for messages); f is read
 * to its end, not closed. */
static int read_proc(FILE *f, const char *name, struct proc *p) {
    memset(p, 0, sizeof *p);
    char line[8192];
    char *fl[16];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        int n = fields(line, fl, 16);
        if (n >= 2 && !strcmp(fl[0], "txkit-lock-report")) {
            ok = 1;
        } else if (n >= 2 && !strcmp(fl[0], "pid")) {
            p->pid = strtol(fl[1], NULL, 10);
        } else if (n >= 2 && !strcmp(fl[0], "exe")) {
            snprintf(p->exe, sizeof p->exe, "%s", fl[1]);
        } else if (n >= 2 && !strcmp(fl[0], "elapsed_ns")) {
            p->elapsed_ns = strtoull(fl[1], NULL, 10);
        } else if (n >= 2 && !strcmp(fl[0], "hist_ns_per_unit")) {
            p->hist_unit = strtod(fl[1], NULL);
        } else if (n >= 2 && !strcmp(fl[0], "threads")) {
            p->threads = (unsigned)strtoul(fl[1], NULL, 10);
        } else if (n >= 2 && !strcmp(fl[0], "rtm")) {
            p->rtm = atoi(fl[1]);
        } else if (n >= 2 && !strcmp(fl[0], "untracked_locks")) {
            p->untracked = (unsigned)strtoul(fl[1], NULL, 10);
        } else if (n >= 12 && !strcmp(fl[0], "L")) {
            if (p->nlocks == p->cap) {
                int cap = p->cap ? 2 * p->cap : 64;
                struct lock *l = realloc(p->locks, (size_t)cap * sizeof *l);
                if (!l) {
                    fprintf(stderr, "txkit: lock report: out of memory\n");
                    free(p->locks);
                    return -1;
                }
                p->locks = l;
                p->cap = cap;
            }
            struct lock *l = &p->locks[p->nlocks++];
            memset(l, 0, sizeof *l);
            snprintf(l->addr, sizeof l->addr, "%s", fl[1]);
            snprintf(l->kind, sizeof l->kind, "%.*s", strncmp(fl[2], "rwlock", 6) ? 15 : 6, fl[2]);
            l->acq = strtoull(fl[3], NULL, 10);
            l->contended = strtoull(fl[4], NULL, 10);
            l->wait_ns = strtoull(fl[5], NULL, 10);
            l->hold_ns = strtoull(fl[6], NULL, 10);
            l->timed_holds = strtoull(fl[7], NULL, 10);
            l->max_waiting = (unsigned)strtoul(fl[8], NULL, 10);
            l->elided = (unsigned)strtoul(fl[9], NULL, 10);
            parse_hist(fl[10], l->wait_hist);
            parse_hist(fl[11], l->hold_hist);
            if (n >= 14) {
                snprintf(l->obj, sizeof l->obj, "%s", fl[12]);
                snprintf(l->off, sizeof l->off, "%s", fl[13]);
            }
            if (n >= 15)
                l->max_inside = (unsigned)strtoul(fl[14], NULL, 10);
        } else if (n >= 5 && !strcmp(fl[0], "D") && p->nlocks > 0) {
            struct lock *l = &p->locks[p->nlocks - 1];
            parse_site(l->deep, &l->ndeep, fl + 1, n - 1);
        } else if (n >= 6 && !strcmp(fl[0], "S") && p->nlocks > 0) {
            struct lock *l = &p->locks[p->nlocks - 1];
            struct site *s = parse_site(l->sites, &l->nsites, fl + 2, n - 2);
            if (s)
                s->acq = strtoull(fl[1], NULL, 10);
        }
    }
    if (!ok) {
        fprintf(stderr, "txkit: %s: not a txkit lock report\n", name);
        free(p->locks);
        return -1;
    }
    return 0;
}

static int by_cost(const void *a, const void *b) {
    const struct lock *x = a, *y = b;
    if (x->wait_ns != y->wait_ns)
        return x->wait_ns < y->wait_ns ? 1 : -1;
    if (x->acq != y->acq)
        return x->acq < y->acq ? 1 : -1;
    return strcmp(x->addr, y->addr);
}

/* The upper bound (in the histogram's units) of the bucket holding quantile
 * q of a log2 histogram. */
static unsigned long long quantile_units(const unsigned long long *h, double q) {
    unsigned long long n = 0, run = 0;
    for (int b = 0; b < HIST; b++)
        n += h[b];
    if (!n)
        return 0;
    for (int b = 0; b < HIST; b++) {
        run += h[b];
        if ((double)run >= q * (double)n)
            return 2ull << b;
    }
    return 2ull << (HIST - 1);
}

/* ... in ns: unit is the file's hist_ns_per_unit. */
static unsigned long long quantile(const unsigned long long *h, double q, double unit) {
    if (unit <= 0)
        unit = 1.0;
    return (unsigned long long)((double)quantile_units(h, q) * unit);
}

static void fmt_ns(char *buf, size_t len, unsigned long long ns) {
    if (ns < 1000)
        snprintf(buf, len, "%lluns", ns);
    else if (ns < 1000000)
        snprintf(buf, len, "%.3gus", (double)ns / 1e3);
    else if (ns < 1000000000ull)
        snprintf(buf, len, "%.3gms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.3gs", (double)ns / 1e9);
}

/* One histogram line: the counts of the log2 buckets, merged two by two
 * (factors of 4), each labelled by its upper bound in time; empty ones left
 * out. */
static void print_hist(FILE *out, const char *what, const unsigned long long *h, double unit) {
    if (unit <= 0)
        unit = 1.0;
    unsigned long long total = 0;
    for (int b = 0; b < HIST; b++)
        total += h[b];
    if (!total)
        return;
    fprintf(out, "       %s:", what);
    for (int b = 0; b < HIST; b += 2) {
        unsigned long long n = h[b] + (b + 1 < HIST ? h[b + 1] : 0);
        if (!n)
            continue;
        char bound[32];
        fmt_ns(bound, sizeof bound, (unsigned long long)((double)(4ull << b) * unit));
        fprintf(out, " <%s %llu", bound, n);
    }
    fputc('\n', out);
}

/* wait_ns as a percentage of the threads' time (threads x elapsed). */
static double lost_pct(const struct proc *p, unsigned long long wait_ns) {
    double denom = (double)p->elapsed_ns * (p->threads ? p->threads : 1);
    return denom > 0 ? 100.0 * (double)wait_ns / denom : 0.0;
}

/* The time lost waiting for all of p's locks. */
static unsigned long long proc_wait_ns(const struct proc *p) {
    unsigned long long lost = 0;
    for (int i = 0; i < p->nlocks; i++)
        lost += p->locks[i].wait_ns;
    return lost;
}

/* How many of p's locks a report shows: top (0: all). */
static int shown_locks(const struct proc *p, size_t top) {
    return top && top < (size_t)p->nlocks ? (int)top : p->nlocks;
}

/* A site's "symbol+0xN" (the recorded name when the symbol tables do not
 * say), its object's file name, and "file:line" when want_line and known. */
static void site_name(const struct proc *p, const struct site *s, int want_line, char *sym,
                      size_t slen, char *obj, size_t olen, char *line, size_t llen) {
    sym[0] = line[0] = 0;
    if (strcmp(s->object, "?") != 0)
        sym_lookup(s->object, s->func, (unsigned long long)p->pid, want_line, sym, slen, line,
                   llen);
    if (!sym[0])
        snprintf(sym, slen, "%s", s->func);
    char path[sizeof s->object];
    snprintf(path, sizeof path, "%s", s->object);
    snprintf(obj, olen, "%s", basename(path));
}

/* how: "run as: CMD", "live, ..."; top: locks printed (0: all). */
static void print_proc(const struct proc *p, const char *how, size_t top, FILE *out) {
    double secs = (double)p->elapsed_ns / 1e9;
    unsigned long long lost = proc_wait_ns(p);
    fprintf(out, "txkit lock report: %s (pid %ld; %s), %.3f s, %u threads took locks, RTM %s\n",
            p->exe, p->pid, how, secs, p->threads, p->rtm ? "yes" : "no");
    fprintf(out,
            "time lost waiting for locks: %.3f ms = %.2f%% of %u threads x %.3f s "
            "(the estimate of what transactifying them could win)\n",
            (double)lost / 1e6, lost_pct(p, lost), p->threads, secs);
    if (p->untracked)
        fprintf(out, "(%u locks beyond the report's table were not counted)\n", p->untracked);
    fprintf(out, "%4s %-24s %-8s %10s %10s %6s %10s %7s %10s %10s %4s%s\n", "rank", "lock", "kind",
            "acquired", "contended", "%", "wait", "lost%", "wait p99", "hold p99", "maxw",
            p->rtm ? "  elided% maxin" : "");
    for (int i = 0, shown = shown_locks(p, top); i < shown; i++) {
        const struct lock *l = &p->locks[i];
        char w[32], wq[32], hq[32];
        fmt_ns(w, sizeof w, l->wait_ns);
        fmt_ns(wq, sizeof wq, quantile(l->wait_hist, 0.99, p->hist_unit));
        fmt_ns(hq, sizeof hq, quantile(l->hold_hist, 0.99, p->hist_unit));
        fprintf(out, "%4d %-24s %-8s %10llu %10llu %5.1f%% %10s %6.2f%% %10s %10s %4u", i + 1,
                l->name[0] ? l->name : l->addr, l->kind, l->acq, l->contended,
                l->acq ? 100.0 * (double)l->contended / (double)l->acq : 0.0, w,
                lost_pct(p, l->wait_ns), l->contended ? wq : "-", l->timed_holds ? hq : "-",
                l->max_waiting);
        if (p->rtm)
            fprintf(out, "  %7.1f%% %5u", l->acq ? 100.0 * (double)l->elided / (double)l->acq : 0.0,
                    l->max_inside);
        fputc('\n', out);
        if (i < 10) { /* the distributions of the top ten */
            print_hist(out, "waits", l->wait_hist, p->hist_unit);
            print_hist(out, "holds", l->hold_hist, p->hist_unit);
        }
        char sym[256], obj[256], line[512], ws[32];
        for (int k = 0; k < l->nsites; k++) {
            const struct site *s = &l->sites[k];
            site_name(p, s, 1, sym, sizeof sym, obj, sizeof obj, line, sizeof line);
            fmt_ns(ws, sizeof ws, s->wait_ns);
            fprintf(out, "       at %s (%s)%s%s: %llu acquired, %llu contended, %s waiting\n", sym,
                    obj, line[0] ? " " : "", line, s->acq, s->contended, ws);
            if (s->others)
                fprintf(out, "       (and other sites, counted with the one above)\n");
        }
        for (int k = 0; k < l->ndeep; k++) {
            const struct site *s = &l->deep[k];
            site_name(p, s, 1, sym, sizeof sym, obj, sizeof obj, line, sizeof line);
            fmt_ns(ws, sizeof ws, s->wait_ns);
            fprintf(out, "       waited for from %s (%s)%s%s: %llu contended, %s%s\n", sym, obj,
                    line[0] ? " " : "", line, s->contended, ws,
                    s->others ? " (with other callers)" : "");
        }
    }
    fputc('\n', out);
}

/* A CSV field: commas and quotes are not expected in paths or symbols, but
 * quoted when they occur. */
static void csv_str(FILE *f, const char *v) {
    if (!strpbrk(v, ",\"\n")) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"')
            fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

/* One row per lock: what plots and tables need (bench/run-locks.sh). */
static void csv_proc(const struct proc *p, const char *cmd, FILE *csv) {
    for (int i = 0; i < p->nlocks; i++) {
        const struct lock *l = &p->locks[i];
        char sym[256] = "", obj[256] = "", line[8];
        const struct site *top = NULL;
        for (int k = 0; k < l->nsites; k++)
            if (!top || l->sites[k].wait_ns > top->wait_ns ||
                (l->sites[k].wait_ns == top->wait_ns && l->sites[k].acq > top->acq))
                top = &l->sites[k];
        if (top)
            site_name(p, top, 0, sym, sizeof sym, obj, sizeof obj, line, sizeof line);
        csv_str(csv, cmd);
        fprintf(csv, ",%ld,", p->pid);
        csv_str(csv, p->exe);
        fprintf(csv, ",%.6f,%u,%d,%d,%s,%s,%llu,%llu,%llu,%llu,%.4f,%llu,%llu,%u,%u,",
                (double)p->elapsed_ns / 1e9, p->threads, p->rtm, i + 1, l->addr, l->kind, l->acq,
                l->contended, l->wait_ns, l->hold_ns, lost_pct(p, l->wait_ns),
                quantile(l->wait_hist, 0.99, p->hist_unit),
                quantile(l->hold_hist, 0.99, p->hist_unit), l->max_waiting, l->elided);
        csv_str(csv, sym);
        fputc(',', csv);
        csv_str(csv, obj);
        fputc(',', csv);
        csv_str(csv, l->name);
        fprintf(csv, ",%u\n", l->max_inside);
    }
}

/* The JSON form of print_proc (txkit stat --sites --json): one object. */
static void json_sites(struct jw *w, const char *key, const struct proc *p, const struct site *v,
                       int n, int with_acq) {
    jw_array(w, key);
    for (int k = 0; k < n; k++) {
        char sym[256], obj[256], line[512];
        site_name(p, &v[k], 1, sym, sizeof sym, obj, sizeof obj, line, sizeof line);
        jw_object(w, NULL);
        jw_string(w, "symbol", sym);
        jw_string(w, "object", obj);
        jw_string(w, "line", line);
        if (with_acq)
            jw_u64(w, "acquired", v[k].acq);
        jw_u64(w, "contended", v[k].contended);
        jw_u64(w, "wait_ns", v[k].wait_ns);
        jw_bool(w, "and_others", v[k].others);
        jw_end_object(w);
    }
    jw_end_array(w);
}

static void json_proc(const struct proc *p, const char *how, size_t top, struct jw *w) {
    unsigned long long lost = proc_wait_ns(p);
    jw_object(w, NULL);
    jw_u64(w, "pid", (uint64_t)p->pid);
    jw_string(w, "exe", p->exe);
    jw_string(w, "period", how);
    jw_double(w, "seconds", (double)p->elapsed_ns / 1e9);
    jw_u64(w, "threads", p->threads);
    jw_bool(w, "rtm", p->rtm);
    jw_u64(w, "untracked_locks", p->untracked);
    jw_u64(w, "wait_ns", lost);
    jw_double(w, "lost_pct", lost_pct(p, lost));
    jw_array(w, "locks");
    for (int i = 0, shown = shown_locks(p, top); i < shown; i++) {
        const struct lock *l = &p->locks[i];
        jw_object(w, NULL);
        jw_u64(w, "rank", (uint64_t)i + 1);
        jw_string(w, "lock", l->addr);
        jw_string(w, "name", l->name);
        jw_string(w, "kind", l->kind);
        jw_u64(w, "acquired", l->acq);
        jw_u64(w, "contended", l->contended);
        jw_u64(w, "wait_ns", l->wait_ns);
        jw_u64(w, "hold_ns", l->hold_ns);
        jw_double(w, "lost_pct", lost_pct(p, l->wait_ns));
        jw_u64(w, "wait_p99_ns", quantile(l->wait_hist, 0.99, p->hist_unit));
        jw_u64(w, "hold_p99_ns", quantile(l->hold_hist, 0.99, p->hist_unit));
        jw_u64(w, "max_waiting", l->max_waiting);
        if (p->rtm) {
            jw_u64(w, "elided", l->elided);
            jw_u64(w, "max_inside", l->max_inside);
        }
        json_sites(w, "sites", p, l->sites, l->nsites, 1);
        json_sites(w, "waits_through_wrappers", p, l->deep, l->ndeep, 0);
        jw_end_object(w);
    }
    jw_end_array(w);
    jw_end_object(w);
}

/* Name the locks in globals by their variables; sort by cost. */
static void name_and_sort(struct proc *p) {
    for (int k = 0; k < p->nlocks; k++) {
        struct lock *l = &p->locks[k];
        char sym[256], line[8];
        if (l->obj[0] && strcmp(l->obj, "?") != 0 &&
            sym_lookup(l->obj, l->off, (unsigned long long)p->pid, 0, sym, sizeof sym, line,
                       sizeof line) == 0) {
            size_t m = strlen(sym); /* "name+0": the variable itself */
            if (m > 2 && strcmp(sym + m - 2, "+0") == 0)
                sym[m - 2] = 0;
            snprintf(l->name, sizeof l->name, "%s", sym);
        }
    }
    if (p->nlocks) /* (qsort wants a non-null base even for none) */
        qsort(p->locks, (size_t)p->nlocks, sizeof *p->locks, by_cost);
}

int lockreport_print_text(FILE *text, const char *name, const char *how, size_t top, FILE *out,
                          struct jw *json) {
    struct proc p;
    if (read_proc(text, name, &p) != 0)
        return -1;
    name_and_sort(&p);
    int any = p.nlocks > 0;
    if (json)
        json_proc(&p, how, top, json);
    else if (any)
        print_proc(&p, how, top, out);
    free(p.locks);
    return any;
}

int lockreport_print(const char *prefix, const char *cmd, FILE *out, FILE *csv) {
    char dirbuf[4096], basebuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", prefix);
    snprintf(basebuf, sizeof basebuf, "%s", prefix);
    const char *dir = dirname(dirbuf), *base = basename(basebuf);
    size_t blen = strlen(base);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "txkit run: --report: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int n = 0, bad = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, base, blen) != 0 || de->d_name[blen] != '.')
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct proc p;
        FILE *f = fopen(path, "r");
        if (!f) {
            fprintf(stderr, "txkit run: --report: %s: %s\n", path, strerror(errno));
            bad = 1;
            continue;
        }
        int rc = read_proc(f, path, &p);
        fclose(f);
        if (rc != 0) {
            bad = 1;
            continue;
        }
        name_and_sort(&p);
        if (p.nlocks) { /* processes that took no lock (a shell) say nothing */
            char how[4200];
            snprintf(how, sizeof how, "run as: %s", cmd);
            print_proc(&p, how, 0, out);
            if (csv)
                csv_proc(&p, cmd, csv);
            n++;
        }
        free(p.locks);
        remove(path);
    }
    closedir(d);
    if (n == 0 && !bad)
        fprintf(out,
                "txkit lock report: %s: no pthread lock was taken (or no process exited "
                "normally, or none is dynamically linked)\n",
                cmd);
    return bad ? -1 : n;
}
