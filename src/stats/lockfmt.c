/* SPDX-License-Identifier: MIT */
/* lockfmt.c - the lock report's text (lockfmt.h), written by the library at
 * a process's exit and by `txkit stat --sites` from a live table. */
#include "lockfmt.h"

static const char *const kind_name[LP_NKINDS] = {"mutex", "rwlock-read", "rwlock-write",
                                                 "spinlock"};

static void hist(FILE *f, const uint64_t *h) {
    for (int b = 0; b < LP_HIST; b++)
        fprintf(f, "%s%llu", b ? "," : "", (unsigned long long)h[b]);
}

void lp_write_text(FILE *f, const struct lp_file *h, const struct lp_lock *tab, unsigned n,
                   const char *exe, uint64_t elapsed_ns, double npt, lp_where_fn where, void *arg) {
#define NS(x) ((unsigned long long)((double)(x)*npt))
    fprintf(f, "txkit-lock-report\t1\n");
    fprintf(f, "pid\t%llu\nexe\t%s\nelapsed_ns\t%llu\nthreads\t%u\nrtm\t%u\nuntracked_locks\t%u\n",
            (unsigned long long)h->pid, exe, (unsigned long long)elapsed_ns, h->threads, h->rtm,
            h->lost);
    fprintf(f, "hist_ns_per_unit\t%.6f\n", npt); /* the histograms count log2 ticks */
    for (unsigned i = 0; i < n; i++) {
        const struct lp_lock *e = &tab[i];
        if (!e->key || !e->acq)
            continue;
        fprintf(f, "L\t%#lx\t%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%u\t%u\t", (unsigned long)e->key,
                kind_name[e->kind < LP_NKINDS ? e->kind : 0], (unsigned long long)e->acq,
                (unsigned long long)e->contended, NS(e->wait_ticks), NS(e->hold_ticks),
                (unsigned long long)e->timed_holds, e->max_waiting, e->elided);
        hist(f, e->wait_hist);
        fputc('\t', f);
        hist(f, e->hold_hist);
        fputc('\t', f);
        where(f, e->key, arg); /* a lock in an object's data: its variable, if named */
        fprintf(f, "\t%u\n", e->max_inside);
        for (int s = 0; s < LP_SITES; s++) {
            const struct lp_site *st = &e->sites[s];
            if (!st->caller || !st->acq)
                continue;
            fprintf(f, "S\t%llu\t%llu\t%llu\t", (unsigned long long)st->acq,
                    (unsigned long long)st->contended, NS(st->wait_ticks));
            where(f, st->caller, arg);
            fprintf(f, "\t%s\n", s == LP_SITES - 1 ? "and-others" : "");
        }
        for (int s = 0; s < LP_DEEP; s++) {
            const struct lp_deep *d = &e->deep[s];
            if (!d->pc || !d->contended)
                continue;
            fprintf(f, "D\t%llu\t%llu\t", (unsigned long long)d->contended, NS(d->wait_ticks));
            where(f, d->pc, arg);
            fprintf(f, "\t%s\n", s == LP_DEEP - 1 ? "and-others" : "");
        }
    }
#undef NS
}
