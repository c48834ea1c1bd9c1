/* SPDX-License-Identifier: MIT */
/* stat_data.c - counts over a period, totals, sites merged over processes. */
#include "stat_data.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "segment_reader.h"

#define NWORDS (sizeof(struct tks_counters) / sizeof(uint64_t))
#define W_INSIDE_MAX (offsetof(struct tks_counters, inside_max) / sizeof(uint64_t))
#define W_EXPLICIT (offsetof(struct tks_counters, explicit_code) / sizeof(uint64_t))

void tkc_add(struct tks_counters *d, const struct tks_counters *s) {
    uint64_t *dw = (uint64_t *)d;
    const uint64_t *sw = (const uint64_t *)s;
    for (size_t i = 0; i < NWORDS; i++) {
        if (i == W_INSIDE_MAX)
            dw[i] = dw[i] > sw[i] ? dw[i] : sw[i];
        else if (i == W_EXPLICIT)
            dw[i] = sw[i] ? sw[i] : dw[i];
        else
            dw[i] += sw[i];
    }
}

void tkc_delta(struct tks_counters *out, const struct tks_counters *cur,
               struct tks_counters *prev) {
    uint64_t *ow = (uint64_t *)out, *pw = (uint64_t *)prev;
    const uint64_t *cw = (const uint64_t *)cur;
    for (size_t i = 0; i < NWORDS; i++) {
        if (i == W_INSIDE_MAX || i == W_EXPLICIT) {
            ow[i] = cw[i];
            pw[i] = cw[i];
            continue;
        }
        ow[i] = cw[i] > pw[i] ? cw[i] - pw[i] : 0;
        if (cw[i] > pw[i])
            pw[i] = cw[i];
    }
}

void tkc_sum_transactions(struct tks_counters *out, const struct tks_counters *counters,
                          const struct tkr_site *sites, unsigned nsites) {
    memset(out, 0, sizeof *out);
    for (unsigned s = 0; s < nsites; s++)
        if (!(sites[s].valid && sites[s].kind == TKS_SITE_LOCK))
            tkc_add(out, &counters[s]);
}

uint64_t tkc_commits(const struct tks_counters *c) {
    uint64_t n = 0;
    for (int m = 0; m < TKS_NMETHODS; m++)
        n += c->commits[m];
    return n;
}

uint64_t tkc_aborts(const struct tks_counters *c) {
    uint64_t n = 0;
    for (int m = 0; m < TKS_NMETHODS; m++)
        n += c->aborts[m];
    return n;
}

double tkc_lost_ns(const struct tks_counters *c, double ns_per_tick) {
    if (ns_per_tick > 0)
        return (double)c->ticks_aborted * ns_per_tick;
    return c->ticks_aborted || tkc_aborts(c) ? -1.0 : 0.0; /* nothing aborted: nothing lost */
}

double st_abort_rate(const struct tks_counters *c) {
    uint64_t a = tkc_aborts(c), n = a + tkc_commits(c);
    return n ? (double)a / (double)n : 0.0;
}

static int active(const struct tks_counters *c) {
    return c->transactions || tkc_commits(c) || tkc_aborts(c);
}

/* An aggregate's time: n/a as soon as one process that aborted in the
 * period has no calibrated clock. */
static void add_lost(double *acc, const struct tks_counters *c, double ns_per_tick) {
    double ns = tkc_lost_ns(c, ns_per_tick);
    if (*acc >= 0)
        *acc = ns < 0 ? -1.0 : *acc + ns;
}

/* ------------------------------------------------------------ site merging */

/* Sites are the same across processes when they describe the same code: the
 * same kind, file (or object), line and function (or symbol+offset); their
 * keys (addresses) differ from process to process. A lock is an object, not
 * code: locks first taken at the same place stay apart (by address). */
static uint64_t merge_key(uint32_t kind, uint64_t key) { return kind == TKS_SITE_LOCK ? key : 0; }

static uint64_t site_hash(uint32_t kind, uint64_t key, uint32_t line, const char *file,
                          const char *func) {
    uint64_t h = 1469598103934665603ull;
    h = (h ^ kind) * 1099511628211ull;
    h = (h ^ merge_key(kind, key)) * 1099511628211ull;
    h = (h ^ line) * 1099511628211ull;
    for (const char *p = file; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *p = func; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

struct merge {
    struct st_site *sites;
    size_t n, cap;
    size_t *table; /* index + 1, 0 = empty; size a power of two */
    size_t tsize;
};

static int merge_rehash(struct merge *m) {
    size_t ns = m->tsize ? m->tsize * 2 : 64;
    size_t *t = calloc(ns, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < m->n; i++) {
        const struct st_site *s = &m->sites[i];
        size_t j = site_hash(s->kind, s->key, s->line, s->file, s->func) & (ns - 1);
        while (t[j])
            j = (j + 1) & (ns - 1);
        t[j] = i + 1;
    }
    free(m->table);
    m->table = t;
    m->tsize = ns;
    return 0;
}

static struct st_site *merge_find(struct merge *m, const struct tkr_site *d) {
    if ((m->n + 1) * 2 > m->tsize && merge_rehash(m) != 0)
        return NULL;
    uint32_t kind = d->valid ? d->kind : TKS_SITE_NONE;
    size_t j = site_hash(kind, d->key, d->line, d->file, d->func) & (m->tsize - 1);
    while (m->table[j]) {
        struct st_site *s = &m->sites[m->table[j] - 1];
        if (s->kind == kind && merge_key(s->kind, s->key) == merge_key(kind, d->key) &&
            s->line == d->line && strcmp(s->file, d->file) == 0 && strcmp(s->func, d->func) == 0)
            return s;
        j = (j + 1) & (m->tsize - 1);
    }
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 32;
        struct st_site *a = realloc(m->sites, nc * sizeof *a);
        if (!a)
            return NULL;
        m->sites = a;
        m->cap = nc;
    }
    struct st_site *s = &m->sites[m->n];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->line = d->line;
    s->key = d->key;
    s->file = d->file;
    s->func = d->func;
    m->table[j] = ++m->n;
    return s;
}

static int merge_add(struct merge *m, const struct tkr_site *d, const struct tks_counters *c,
                     const struct tkr_proc *p) {
    struct st_site *s = merge_find(m, d);
    if (!s)
        return -1;
    tkc_add(&s->c, c);
    add_lost(&s->lost_ns, c, p->ns_per_tick);
    uint64_t *a = realloc(s->pids, (s->npids + 1) * sizeof *a);
    if (!a)
        return -1;
    s->pids = a;
    s->pids[s->npids++] = p->pid;
    return 0;
}

static int busiest_first(const void *a, const void *b) {
    const struct st_site *x = a, *y = b;
    uint64_t cx = tkc_commits(&x->c), cy = tkc_commits(&y->c);
    if (cx != cy)
        return cx > cy ? -1 : 1;
    uint64_t ax = tkc_aborts(&x->c), ay = tkc_aborts(&y->c);
    if (ax != ay)
        return ax > ay ? -1 : 1;
    if (x->c.transactions != y->c.transactions)
        return x->c.transactions > y->c.transactions ? -1 : 1;
    int f = strcmp(x->file, y->file);
    if (f)
        return f;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return strcmp(x->func, y->func);
}

/* ----------------------------------------------------------------- history */

static struct st_prev_proc *history_find(struct st_history *h, const struct tkr_proc *p) {
    for (size_t i = 0; i < h->n; i++)
        if (h->procs[i].pid == p->pid && h->procs[i].created_ns == p->created_ns &&
            strcmp(h->procs[i].file, p->file) == 0)
            return &h->procs[i];
    return NULL;
}

static struct st_prev_proc *history_add(struct st_history *h, const struct tkr_proc *p) {
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 16;
        struct st_prev_proc *a = realloc(h->procs, nc * sizeof *a);
        if (!a)
            return NULL;
        h->procs = a;
        h->cap = nc;
    }
    struct st_prev_proc *e = &h->procs[h->n++];
    memset(e, 0, sizeof *e);
    e->pid = p->pid;
    e->created_ns = p->created_ns;
    snprintf(e->name, sizeof e->name, "%s", p->name);
    snprintf(e->file, sizeof e->file, "%s", p->file);
    return e;
}

/* The period's counts of p: all of them the first time, else what grew. */
static int period_counts(struct tks_counters *out, const struct tkr_proc *p, struct st_history *h) {
    if (!h) {
        memcpy(out, p->counters, (size_t)p->nsites * sizeof *out);
        return 0;
    }
    /* A process seen for the first time starts from zero: all of its counts. */
    struct st_prev_proc *e = history_find(h, p);
    if (!e && !(e = history_add(h, p)))
        return -1;
    e->seen = 1;
    if (e->nsites < p->nsites) {
        struct tks_counters *c = realloc(e->c, (size_t)p->nsites * sizeof *c);
        if (!c)
            return -1;
        memset(c + e->nsites, 0, (size_t)(p->nsites - e->nsites) * sizeof *c);
        e->c = c;
        e->nsites = p->nsites;
    }
    for (unsigned s = 0; s < p->nsites; s++)
        tkc_delta(&out[s], &p->counters[s], &e->c[s]);
    return 0;
}

/* Add p's application counters to r, by name. An event counter counts what
 * grew since the last reading of the same process (all of it the first time). */
static int add_ucounters(struct st_report *r, const struct tkr_proc *p, struct st_prev_proc *e) {
    for (unsigned i = 0; i < p->nucounters; i++) {
        const struct tkr_ucounter *u = &p->ucounters[i];
        int64_t v = u->value;
        if (u->kind == TKS_UC_EVENTS && e && i < TKS_MAX_UCOUNTERS) {
            int64_t prev = i < e->nuc ? e->uc[i] : 0;
            e->uc[i] = v;
            v -= prev;
        }
        struct st_ucounter *d = NULL;
        for (size_t k = 0; k < r->nucounters && !d; k++)
            if (strcmp(r->ucounters[k].name, u->name) == 0 && r->ucounters[k].kind == u->kind)
                d = &r->ucounters[k];
        if (!d) {
            struct st_ucounter *a = realloc(r->ucounters, (r->nucounters + 1) * sizeof *a);
            if (!a)
                return -1;
            r->ucounters = a;
            d = &a[r->nucounters++];
            memset(d, 0, sizeof *d);
            snprintf(d->name, sizeof d->name, "%s", u->name);
            d->kind = u->kind;
        }
        d->value += v;
        d->nprocs++;
    }
    if (e && p->nucounters > e->nuc)
        e->nuc = p->nucounters < TKS_MAX_UCOUNTERS ? p->nucounters : TKS_MAX_UCOUNTERS;
    return 0;
}

static void ref_fill(struct st_ref *r, uint64_t pid, const char *name, const char *file) {
    memset(r, 0, sizeof *r);
    r->pid = pid;
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->file, sizeof r->file, "%s", file);
}

int st_build(struct st_report *r, const struct tkr_proc *const *procs, size_t n,
             const struct tkr_gone *gone, size_t ngone, struct st_history *h) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->when = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    r->since_start = !h || !h->primed;
    r->procs = calloc(n ? n : 1, sizeof *r->procs);
    r->gone = calloc(ngone ? ngone : 1, sizeof *r->gone);
    if (!r->procs || !r->gone)
        return -1;
    if (h)
        for (size_t i = 0; i < h->n; i++)
            h->procs[i].seen = 0;

    struct merge m;
    memset(&m, 0, sizeof m);
    memset(&r->total, 0, sizeof r->total);
    r->total_lost_ns = 0;
    r->total_threads = 0;
    for (size_t i = 0; i < n; i++) {
        const struct tkr_proc *p = procs[i];
        struct st_proc *sp = &r->procs[r->nprocs++];
        sp->p = p;
        sp->sites = calloc(p->nsites ? p->nsites : 1, sizeof *sp->sites);
        if (!sp->sites || period_counts(sp->sites, p, h) != 0)
            goto oom;
        tkc_sum_transactions(&sp->total, sp->sites, p->sites, p->nsites);
        sp->lost_ns = tkc_lost_ns(&sp->total, p->ns_per_tick);
        tkc_add(&r->total, &sp->total);
        add_lost(&r->total_lost_ns, &sp->total, p->ns_per_tick);
        r->total_threads += p->threads;
        for (unsigned s = 0; s < p->nsites; s++)
            if (active(&sp->sites[s]) && merge_add(&m, &p->sites[s], &sp->sites[s], p) != 0)
                goto oom;
        if (add_ucounters(r, p, h ? history_find(h, p) : NULL) != 0)
            goto oom;
    }
    free(m.table);
    m.table = NULL;
    r->sites = m.sites;
    r->nsites = m.n;
    if (r->nsites > 1)
        qsort(r->sites, r->nsites, sizeof *r->sites, busiest_first);

    for (size_t i = 0; i < ngone; i++) {
        struct st_ref *g = &r->gone[r->ngone++];
        ref_fill(g, gone[i].pid, gone[i].name, gone[i].file);
        g->commits = gone[i].commits;
        g->aborts = gone[i].aborts;
        g->removed = gone[i].removed;
    }
    if (h) {
        /* Who was there last time and is not now: exited (or died, if its
         * segment is still there to say so); forget them. */
        size_t k = 0, nex = 0;
        for (size_t i = 0; i < h->n; i++)
            nex += !h->procs[i].seen;
        r->exited = calloc(nex ? nex : 1, sizeof *r->exited);
        if (!r->exited)
            return -1;
        for (size_t i = 0; i < h->n; i++) {
            struct st_prev_proc *e = &h->procs[i];
            if (e->seen) {
                h->procs[k++] = *e;
                continue;
            }
            int died = 0;
            for (size_t g = 0; g < ngone; g++)
                died |= gone[g].pid == e->pid && strcmp(gone[g].file, e->file) == 0;
            if (!died)
                ref_fill(&r->exited[r->nexited++], e->pid, e->name, e->file);
            free(e->c);
        }
        h->n = k;
        h->primed = 1;
    }
    return 0;
oom:
    free(m.table);
    r->sites = m.sites;
    r->nsites = m.n;
    return -1;
}

void st_report_free(struct st_report *r) {
    for (size_t i = 0; i < r->nprocs; i++)
        free(r->procs[i].sites);
    free(r->procs);
    for (size_t i = 0; i < r->nsites; i++)
        free(r->sites[i].pids);
    free(r->sites);
    free(r->gone);
    free(r->exited);
    free(r->ucounters);
    memset(r, 0, sizeof *r);
}

void st_history_free(struct st_history *h) {
    for (size_t i = 0; i < h->n; i++)
        free(h->procs[i].c);
    free(h->procs);
    memset(h, 0, sizeof *h);
}
