/* SPDX-License-Identifier: MIT */
/* cx_bench.c - txkit-bench-cx: cx locks against pthread_mutex.
 *
 * Every operation runs under one lock, of one kind per row:
 *   mutex          one pthread_mutex_t (pthread_mutex_lock / unlock). The
 *                  label says what the process's mutex really is:
 *                  mutex+elision when GLIBC_TUNABLES asks glibc to elide,
 *                  mutex+preload when pthread_mutex_lock binds to txkit's
 *                  libtxkit-preload.so (LD_PRELOAD, `txkit run`). Both are
 *                  fixed at start-up, so each is its own process.
 *   cx             one cx_lock_t (cx_optimistic / cx_unlock), same code.
 *   cx+shared      the same lock, with the hash set's lookups (and nothing
 *                  else) entered by cx_shared: the same as cx with RTM;
 *                  without, lookups hold the lock shared, side by side.
 * Workloads:
 *   hash           1024-bucket chained hash set (sorted chains), keys drawn
 *                  from [0, 2 x size), 90% lookups, 10% insert-or-delete
 *   counter        one shared word incremented
 *   uncontended    1 thread, empty section: the cost of one lock + unlock
 * A share of the operations (--io) also writes one byte to /dev/null inside
 * the section (cx: after cx_need_exclusive()).
 * Correctness: the hash set's size must equal its initial size plus the net
 * inserts, the counter the number of increments; the exit status is 1 when
 * either fails (or a measurement crashed).
 */
#include "bench_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <txkit/cx.h>
#include <unistd.h>

enum { W_HASH, W_COUNTER, W_UNCONTENDED, W_COUNT };
enum { L_MUTEX, L_CX, L_CXSHARED, L_COUNT };
enum { OP_LOOKUP, OP_INSERT, OP_DELETE };

static const char *const workload_names[W_COUNT] = {"hash", "counter", "uncontended"};

#define MAX_IO 8

struct node {
    long key;
    struct node *next;
};

/* The lock words, the counter and the read-only fields on their own lines. */
struct shared {
    pthread_mutex_t mutex __attribute__((aligned(BENCH_CACHELINE)));
    cx_lock_t cx __attribute__((aligned(BENCH_CACHELINE)));
    volatile uint64_t counter __attribute__((aligned(BENCH_CACHELINE)));
    struct node **buckets __attribute__((aligned(BENCH_CACHELINE)));
    long nbuckets;
    uint64_t range;
    int workload, lock, io_pct, update_pct, devnull;
};

/* Per thread, beside bench_thread: cx_mode() of the committing attempt,
 * sampled in one section in 64. */
struct mode_count {
    uint64_t sampled, optimistic, exclusive;
} __attribute__((aligned(BENCH_CACHELINE)));

static struct mode_count g_modes[BENCH_MAX_THREADS];

/* ------------------------------------------------------------- hash set */

static struct node **bucket_of(struct shared *s, long key) {
    return &s->buckets[key % s->nbuckets];
}

static int hash_contains(struct shared *s, long key) {
    const struct node *n = *bucket_of(s, key);
    while (n && n->key < key)
        n = n->next;
    return n && n->key == key;
}

static int hash_insert(struct shared *s, long key) {
    struct node **pp = bucket_of(s, key);
    while (*pp && (*pp)->key < key)
        pp = &(*pp)->next;
    if (*pp && (*pp)->key == key)
        return 0;
    struct node *n = malloc(sizeof *n);
    if (!n)
        bench_die("out of memory");
    n->key = key;
    n->next = *pp;
    *pp = n;
    return 1;
}

static int hash_delete(struct shared *s, long key) {
    struct node **pp = bucket_of(s, key);
    while (*pp && (*pp)->key < key)
        pp = &(*pp)->next;
    struct node *n = *pp;
    if (!n || n->key != key)
        return 0;
    *pp = n->next;
    free(n);
    return 1;
}

/* Return: the number of keys, or -1 when a chain is unsorted or holds a key
 * of another bucket or out of range. */
static long hash_check(struct shared *s) {
    long count = 0;
    for (long b = 0; b < s->nbuckets; b++) {
        long prev = -1;
        for (const struct node *n = s->buckets[b]; n; n = n->next) {
            if (n->key <= prev || n->key < 0 || (uint64_t)n->key >= s->range ||
                n->key % s->nbuckets != b)
                return -1;
            prev = n->key;
            count++;
        }
    }
    return count;
}

static void hash_free(struct shared *s) {
    for (long b = 0; b < s->nbuckets; b++) {
        struct node *n = s->buckets[b];
        while (n) {
            struct node *next = n->next;
            free(n);
            n = next;
        }
    }
    free(s->buckets);
}

/* ------------------------------------------------------------ operation */

/* The critical section's body. Return: the change in the set's size. */
static inline long body(struct shared *s, int op, long key) {
    switch (s->workload) {
    case W_HASH:
        if (op == OP_INSERT)
            return hash_insert(s, key);
        if (op == OP_DELETE)
            return -hash_delete(s, key);
        (void)hash_contains(s, key);
        return 0;
    case W_COUNTER:
        s->counter = s->counter + 1;
        return 0;
    default:
        __asm__ volatile("" ::: "memory");
        return 0;
    }
}

/* One write(2) of one byte to /dev/null. Return: 1 if it failed. */
static inline int do_io(struct shared *s) {
    static const char byte = 'x';
    return write(s->devnull, &byte, 1) != 1;
}

static void worker(struct bench_thread *t) {
    struct shared *s = t->ctx;
    struct mode_count *mc = &g_modes[t->id];
    uint64_t ops = 0, bad = 0;
    long delta = 0;
    while (!bench_stopped()) {
        for (int i = 0; i < 64; i++) {
            int op = OP_LOOKUP;
            long key = 0;
            if (s->workload == W_HASH) {
                uint64_t r = rng_below(&t->rng, 100);
                if (r < (uint64_t)s->update_pct)
                    op = (r & 1) ? OP_INSERT : OP_DELETE;
                key = (long)rng_below(&t->rng, s->range);
            }
            int io = s->io_pct > 0 && rng_below(&t->rng, 100) < (uint64_t)s->io_pct;
            if (s->lock == L_MUTEX) {
                pthread_mutex_lock(&s->mutex);
                if (io)
                    bad += (uint64_t)do_io(s);
                delta += body(s, op, key);
                pthread_mutex_unlock(&s->mutex);
            } else {
                /* only the hash set's lookups: the counter's section writes */
                if (s->lock == L_CXSHARED && s->workload == W_HASH && op == OP_LOOKUP && !io)
                    cx_shared(&s->cx);
                else
                    cx_optimistic(&s->cx);
                if (io) {
                    cx_need_exclusive();
                    bad += (uint64_t)do_io(s);
                }
                delta += body(s, op, key);
                /* Read in the section and written after it: an aborted
                 * attempt leaves no trace, so this is the committing one. */
                int mode = i == 0 ? cx_mode() : 0;
                cx_unlock(&s->cx);
                if (mode) {
                    mc->sampled++;
                    mc->optimistic += mode == 1;
                    mc->exclusive += mode == 2;
                }
            }
        }
        ops += 64;
    }
    t->ops = ops;
    t->delta = delta;
    t->bad = bad;
}

/* ------------------------------------------------------------ the runs */

struct cx_opts {
    struct bench_opts b;
    int workloads[W_COUNT], nworkloads;
    int locks[L_COUNT], nlocks;
    int io[MAX_IO], nio;
    long size, buckets;
    int update_pct;
};

struct row_desc {
    int workload, lock, io_pct, threads;
};

struct measure_ctx {
    const struct cx_opts *o;
    const struct row_desc *descs; /* descs[i] describes rows[i] */
    const struct bench_row *rows;
};

/* In the measurement's child. The sample's itm_* fields carry the cx mode
 * sample (bench_sample has no cx fields): itm_attempts = sections sampled,
 * itm_commits[0] = optimistic, itm_commits[1] = exclusive. */
static int measure(void *ctx, const struct bench_row *row, int run, struct bench_sample *out) {
    const struct measure_ctx *c = ctx;
    const struct cx_opts *o = c->o;
    const struct row_desc *d = &c->descs[row - c->rows];
    uint64_t seed = o->b.seed + (uint64_t)run * 1000003u;

    struct shared *s = aligned_alloc(BENCH_CACHELINE, sizeof *s);
    if (!s)
        bench_die("out of memory");
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mutex, NULL);
    if (cx_init(&s->cx, NULL) != 0)
        bench_die("cx_init failed");
    s->workload = d->workload;
    s->lock = d->lock;
    s->io_pct = d->io_pct;
    s->update_pct = o->update_pct;
    s->nbuckets = o->buckets;
    s->range = 2 * (uint64_t)o->size;
    s->devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (s->devnull < 0)
        bench_die("/dev/null: %s", strerror(errno));
    if (d->workload == W_HASH) {
        s->buckets = calloc((size_t)s->nbuckets, sizeof *s->buckets);
        if (!s->buckets)
            bench_die("out of memory");
        uint64_t rng = rng_seed(seed, 999);
        long n = 0;
        while (n < o->size)
            n += hash_insert(s, (long)rng_below(&rng, s->range));
    }

    struct bench_thread *th = aligned_alloc(BENCH_CACHELINE, sizeof *th * (size_t)d->threads);
    if (!th)
        bench_die("out of memory");
    memset(th, 0, sizeof *th * (size_t)d->threads);
    memset(g_modes, 0, sizeof g_modes);
    for (int i = 0; i < d->threads; i++)
        th[i].ctx = s;
    double secs = bench_run_threads(th, d->threads, worker, o->b.seconds,
                                    seed ^ ((uint64_t)(d->lock * 64 + d->threads) << 32));
    bench_sample_threads(out, th, d->threads, secs);

    long delta = 0;
    uint64_t bad = 0, total = 0;
    for (int i = 0; i < d->threads; i++) {
        delta += th[i].delta;
        bad += th[i].bad;
        total += th[i].ops;
        out->itm_attempts += g_modes[i].sampled;
        out->itm_commits[0] += g_modes[i].optimistic;
        out->itm_commits[1] += g_modes[i].exclusive;
    }
    out->anomalies = bad;
    int failed = bad != 0;
    if (bad)
        fprintf(stderr, "check: %llu writes to /dev/null failed\n", (unsigned long long)bad);
    if (d->workload == W_HASH) {
        long n = hash_check(s);
        if (n != o->size + delta) {
            fprintf(stderr,
                    "check: FAIL: hash set has %ld keys, expected %ld + %ld net inserts%s\n", n,
                    o->size, delta, n < 0 ? " (a chain is corrupt)" : "");
            failed = 1;
        }
        if (!failed)
            hash_free(s);
    } else if (d->workload == W_COUNTER && s->counter != total) {
        fprintf(stderr, "check: FAIL: counter is %llu after %llu increments\n",
                (unsigned long long)s->counter, (unsigned long long)total);
        failed = 1;
    }
    if (failed)
        fprintf(stderr, "check: in %s, %d threads, io %d%%, run %d\n", workload_names[d->workload],
                d->threads, d->io_pct, run + 1);
    close(s->devnull);
    free(th);
    free(s);
    return failed;
}

/* ------------------------------------------------------ mutex labelling */

static char g_mutex_label[48];
static char g_mutex_where[PATH_MAX + 64];
static int g_preload;

/* Which object pthread_mutex_lock binds to in this process: the preload
 * library, glibc, or something else. */
static void detect_mutex(void) {
    void *p = dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
    Dl_info info;
    const char *file = "?";
    if (p && dladdr(p, &info) && info.dli_fname)
        file = info.dli_fname;
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    g_preload = strstr(base, "txkit-preload") != NULL;
    int other =
        !g_preload && strncmp(base, "libc.so", 7) != 0 && strncmp(base, "libpthread", 10) != 0;
    snprintf(g_mutex_label, sizeof g_mutex_label, "mutex%s%s%s", g_preload ? "+preload" : "",
             other ? "+interposed" : "", bench_elision_requested() ? "+elision" : "");
    char real[PATH_MAX];
    if (!realpath(file, real))
        snprintf(real, sizeof real, "%s", file);
    snprintf(g_mutex_where, sizeof g_mutex_where, "%s", real);
}

static const char *lock_label(int lock) {
    return lock == L_CX ? "cx" : lock == L_CXSHARED ? "cx+shared" : g_mutex_label;
}

/* --------------------------------------------------------------- report */

static double median_mops(const struct bench_row *r, double *min, double *max) {
    double v[BENCH_MAX_RUNS];
    for (int i = 0; i < r->nsamples; i++)
        v[i] = r->s[i].mops;
    return bench_median(v, r->nsamples, min, max);
}

static void print_header(const struct cx_opts *o, const struct txkit_rtm_info *ri) {
    char io[64] = "", wl[64] = "", locks[128] = "";
    for (int i = 0; i < o->nio; i++)
        snprintf(io + strlen(io), sizeof io - strlen(io), "%s%d", i ? "," : "", o->io[i]);
    for (int i = 0; i < o->nworkloads; i++)
        snprintf(wl + strlen(wl), sizeof wl - strlen(wl), "%s%s", i ? "," : "",
                 workload_names[o->workloads[i]]);
    for (int i = 0; i < o->nlocks; i++)
        snprintf(locks + strlen(locks), sizeof locks - strlen(locks), "%s%s", i ? "," : "",
                 lock_label(o->locks[i]));

    double load1 = bench_print_machine(stdout, "txkit-bench-cx: cx locks vs pthread_mutex");
    printf("locks     %s\n", locks);
    printf("mutex     pthread_mutex_lock from %s%s\n", g_mutex_where,
           g_preload ? (ri->usable ? " (txkit elides default mutexes like cx_optimistic)"
                                   : " (no RTM: every call goes on to glibc)")
                     : "");
    if (bench_elision_requested())
        printf("elision   glibc elision requested (GLIBC_TUNABLES), %s\n",
               bench_elision_active() ? "active"
                                      : "NOT active (glibc elides only where RTM is usable)");
    printf("workloads %s; hash: %ld buckets, %ld keys initially, key range %ld, %d%% updates\n", wl,
           o->buckets, o->size, 2 * o->size, o->update_pct);
    printf("io        %s%% of operations write 1 byte to /dev/null inside the section "
           "(cx: after cx_need_exclusive())\n",
           io);
    bench_print_run(stdout, o->b.threads, o->b.nthreads, o->b.seconds, o->b.runs, o->b.nofork);
    bench_print_load_warning(stdout, load1);
    if (!ri->usable)
        printf("NOTE      no usable RTM: every cx section runs exclusive (a ticket lock) and "
               "elision does nothing; the cx targets need RTM\n");
    fflush(stdout);
}

static int report(const struct cx_opts *o, const struct row_desc *descs,
                  const struct bench_row *rows, int nrows, const struct txkit_rtm_info *ri) {
    FILE *csv = NULL;
    if (o->b.csv)
        csv = bench_csv_open(o->b.csv, "bench,host,rtm,workload,lock,threads,io_pct,mops,ns_per_op,"
                                       "vs_mutex_same_process,cx_optimistic_pct,runs,status,"
                                       "mops_min,mops_max,oversubscribed");

    char vs[64];
    snprintf(vs, sizeof vs, "vs %s", g_mutex_label);
    printf("\n%-11s %4s %-22s %7s %10s %6s %10s %13s %8s  %s\n", "workload", "io%", "lock",
           "threads", "Mops/s", "spread", "ns/op", vs, "cx opt%", "check");
    for (int i = 0; i < nrows; i++) {
        const struct row_desc *d = &descs[i];
        const struct bench_row *r = &rows[i];
        double mn, mx, mops = median_mops(r, &mn, &mx);
        char spread[16];
        bench_fmt_spread(spread, sizeof spread, mops, mn, mx, r->nsamples);
        /* pthread_mutex at the same thread count, workload and io share */
        double base = 0;
        for (int j = 0; j < nrows; j++)
            if (descs[j].lock == L_MUTEX && descs[j].workload == d->workload &&
                descs[j].io_pct == d->io_pct && descs[j].threads == d->threads &&
                rows[j].state == ROW_OK && rows[j].nsamples > 0)
                base = median_mops(&rows[j], NULL, NULL);
        uint64_t sampled = 0, opt = 0;
        for (int k = 0; k < r->nsamples; k++) {
            sampled += r->s[k].itm_attempts;
            opt += r->s[k].itm_commits[0];
        }
        const char *status = r->state == ROW_CRASH     ? "crash"
                             : r->state == ROW_TIMEOUT ? "timeout"
                             : r->check_failed         ? "fail"
                                                       : "ok";
        char ratio[16] = "-", optpct[16] = "-", ns[24] = "-", mo[24] = "-";
        if (r->nsamples > 0 && mops > 0) {
            snprintf(mo, sizeof mo, "%.3f", mops);
            snprintf(ns, sizeof ns, "%.1f", 1e3 / mops * d->threads);
        }
        char ratio_csv[16] = "";
        if (base > 0 && mops > 0) {
            snprintf(ratio, sizeof ratio, "%.2fx", mops / base);
            snprintf(ratio_csv, sizeof ratio_csv, "%.3f", mops / base);
        }
        if (d->lock != L_MUTEX && sampled > 0)
            snprintf(optpct, sizeof optpct, "%.1f", 100.0 * (double)opt / (double)sampled);
        int over = bench_oversubscribed(d->threads);
        printf("%-11s %4d %-22s %7d %10s %6s %10s %13s %8s  %s%s%s%s\n",
               workload_names[d->workload], d->io_pct, lock_label(d->lock), d->threads, mo, spread,
               ns, ratio, optpct, status, r->note[0] ? ": " : "", r->note,
               over ? " (oversubscribed)" : "");
        if (csv)
            fprintf(csv, "cx,%s,%s,%s,%s,%d,%d,%s,%s,%s,%s,%d,%s,%.6f,%.6f,%d\n", bench_host(),
                    ri->usable ? "usable" : "none", workload_names[d->workload],
                    lock_label(d->lock), d->threads, d->io_pct, r->nsamples && mops > 0 ? mo : "",
                    r->nsamples && mops > 0 ? ns : "", base > 0 && mops > 0 ? ratio_csv : "",
                    d->lock != L_MUTEX && sampled ? optpct : "", r->nsamples, status, mn, mx, over);
    }
    printf("(ns/op: wall time per operation per thread, i.e. threads / throughput; for "
           "'uncontended' the cost of one lock + unlock with an empty section, loop included.\n"
           " cx opt%%: share of cx sections that committed optimistically, sampled 1 in 64.)\n");
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "%s: %s\n", o->b.csv, strerror(errno));
        return -1;
    }
    return 0;
}

/* ----------------------------------------------------------------- main */

static void usage(FILE *f) {
    fputs(
        "usage: txkit-bench-cx [options]\n"
        "  -w, --workload W[,W...] hash, counter, uncontended, or all (default all)\n"
        "  -l, --lock L[,L...]     mutex, cx, cx+shared, or all (default all). mutex is labelled\n"
        "                          mutex+elision under GLIBC_TUNABLES=glibc.elision.enable=1\n"
        "                          and mutex+preload under LD_PRELOAD=libtxkit-preload.so\n"
        "      --io P[,P...]       %% of operations doing a write(2) to /dev/null inside the\n"
        "                          section (default 0,1,10,50)\n"
        "      --size N            initial keys of the hash set (default 4096; range 2N)\n"
        "      --buckets N         hash buckets (default 1024)\n"
        "      --update P          %% insert-or-delete in the hash set (default 10)\n",
        f);
    fputs("  -t, --threads N[,N...]  thread counts (default 1,2,4,8)\n"
          "  -s, --seconds S         duration of one measurement (default 0.5)\n"
          "  -r, --runs R            runs per measurement, median and spread (default 3)\n"
          "      --csv FILE          append the rows to FILE\n"
          "      --seed N, --quiet, --timeout S, --no-fork: as the other benchmarks\n",
          f);
}

int main(int argc, char **argv) {
    static const char *const lock_names[L_COUNT] = {"mutex", "cx", "cx+shared"};
    struct cx_opts o;
    memset(&o, 0, sizeof o);
    bench_opts_init(&o.b);
    o.b.seconds = 0.5;
    o.size = 4096;
    o.buckets = 1024;
    o.update_pct = 10;
    o.nio = -1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (bench_opt(argc, argv, &i, "--workload", &v) || bench_opt(argc, argv, &i, "-w", &v)) {
            o.nworkloads = bench_parse_names("--workload", v, workload_names, W_COUNT, o.workloads);
        } else if (bench_opt(argc, argv, &i, "--lock", &v) || bench_opt(argc, argv, &i, "-l", &v) ||
                   bench_opt(argc, argv, &i, "--method", &v) ||
                   bench_opt(argc, argv, &i, "-m", &v)) {
            o.nlocks = bench_parse_names("--lock", v, lock_names, L_COUNT, o.locks);
        } else if (bench_opt(argc, argv, &i, "--io", &v)) {
            o.nio = bench_parse_ints("--io", v, o.io, MAX_IO, 0, 100);
        } else if (bench_opt(argc, argv, &i, "--size", &v)) {
            o.size = bench_parse_long("--size", v, 1, 1L << 26);
        } else if (bench_opt(argc, argv, &i, "--buckets", &v)) {
            o.buckets = bench_parse_long("--buckets", v, 1, 1L << 24);
        } else if (bench_opt(argc, argv, &i, "--update", &v)) {
            o.update_pct = (int)bench_parse_long("--update", v, 0, 100);
        } else if (!bench_parse_common(&o.b, argc, argv, &i)) {
            return bench_opt_last(argc, argv, &i, usage);
        }
    }
    if (o.nworkloads == 0)
        o.nworkloads = bench_parse_names("--workload", "all", workload_names, W_COUNT, o.workloads);
    if (o.nlocks == 0)
        o.nlocks = bench_parse_names("--lock", "all", lock_names, L_COUNT, o.locks);
    if (o.nio < 0) {
        static const int def_io[] = {0, 1, 10, 50};
        o.nio = 4;
        memcpy(o.io, def_io, sizeof def_io);
    }
    if (o.b.nthreads == 0) {
        static const int def_thr[] = {1, 2, 4, 8};
        o.b.nthreads = 4;
        memcpy(o.b.threads, def_thr, sizeof def_thr);
    }

    detect_mutex();
    struct txkit_rtm_info ri;
    memset(&ri, 0, sizeof ri);
    txkit_rtm_info(&ri);
    print_header(&o, &ri);

    /* rows: workload x io x lock x threads; uncontended: 1 thread, no io */
    int cap = W_COUNT * MAX_IO * L_COUNT * BENCH_MAX_TCOUNTS;
    struct row_desc *descs = calloc((size_t)cap, sizeof *descs);
    struct bench_row *rows = calloc((size_t)cap, sizeof *rows);
    if (!descs || !rows)
        bench_die("out of memory");
    int nrows = 0;
    for (int w = 0; w < o.nworkloads; w++) {
        int wl = o.workloads[w];
        int nio = wl == W_UNCONTENDED ? 1 : o.nio;
        for (int k = 0; k < nio; k++)
            for (int l = 0; l < o.nlocks; l++)
                for (int t = 0; t < (wl == W_UNCONTENDED ? 1 : o.b.nthreads); t++) {
                    struct row_desc *d = &descs[nrows];
                    d->workload = wl;
                    d->io_pct = wl == W_UNCONTENDED ? 0 : o.io[k];
                    d->lock = o.locks[l];
                    d->threads = wl == W_UNCONTENDED ? 1 : o.b.threads[t];
                    rows[nrows].method =
                        BM_MUTEX; /* only names the row in bench_measure's messages */
                    rows[nrows].threads = d->threads;
                    nrows++;
                }
    }

    struct measure_ctx ctx = {&o, descs, rows};
    int failed = bench_run_rows(&o.b, rows, nrows, measure, &ctx, (size_t)o.size * 64);

    if (report(&o, descs, rows, nrows, &ri) != 0)
        failed = 1;
    free(descs);
    free(rows);
    if (failed)
        fprintf(stderr, "txkit-bench-cx: a measurement failed its check or crashed\n");
    return failed;
}
