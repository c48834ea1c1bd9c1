/* SPDX-License-Identifier: MIT */
/* cache_bench.c - txkit-bench-cache: Zipf request streams against the cache
 * core of mod_cache_tx (cache/core), in-process, by N threads.
 *
 * The request stream of "Transactifying Apache": --pages distinct URLs (man
 * pages, bodies 2-60 KB, log-uniform), requested with Zipf parameter s (rank
 * r with probability ~ 1 / r^s). Each request: txc_lookup; a hit reads a few
 * bytes of the body in place (checked against the page: a wrong byte is an
 * anomaly) and releases the entry; a miss builds the entry (copies the body,
 * as a CGI response would be stored) and inserts it. Every measurement
 * starts from a fresh cache filled with the most popular pages that fit.
 *
 * The same binary measures every sync mode of the cache: lock (pthread
 * mutex), tx (gcc __transaction_atomic, run by the libitm-ABI runtime this
 * process binds: txkit, linked first, or GCC's libitm when it is preloaded;
 * the header says which, found by where _ITM_beginTransaction binds) and cx
 * (txkit cx lock). ratio = ops/s over lock's at the same s and threads.
 */
#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "txcache.h"

#define MAX_SYNCS 4
#define MAX_ZIPFS 8
#define TEMPLATE_SIZE (64 * 1024 + 4096)
#define META_SIZE 160

struct page {
    char key[64];
    size_t klen;
    size_t size;
    size_t off; /* where in the template its body starts */
};

struct cfg {
    txc_sync_t syncs[MAX_SYNCS];
    int nsyncs;
    double zipfs[MAX_ZIPFS];
    int nzipfs;
    int pages;
    uint64_t max_objects, max_bytes;
    int max_objects_set;
    txc_policy_t policy;
};

static struct page *g_pages;
static unsigned char g_template[TEMPLATE_SIZE];
static double *g_cdf;    /* cumulative probability of ranks 0..i */
static int *g_rank_page; /* rank -> page */
static txc_cache *g_cache;
static int g_npages;

struct wstats {
    uint64_t hits, misses, anomalies, insert_fail;
} __attribute__((aligned(BENCH_CACHELINE)));
static struct wstats g_ws[BENCH_MAX_THREADS];

/* -------------------------------------------------------------- workload */

static void make_pages(int n, uint64_t seed) {
    g_pages = calloc((size_t)n, sizeof *g_pages);
    g_rank_page = malloc((size_t)n * sizeof *g_rank_page);
    g_cdf = malloc((size_t)n * sizeof *g_cdf);
    if (!g_pages || !g_rank_page || !g_cdf)
        bench_die("out of memory");
    uint64_t r = rng_seed(seed, 999);
    for (size_t i = 0; i < TEMPLATE_SIZE; i++)
        g_template[i] = (unsigned char)(rng_next(&r) >> 56);
    for (int i = 0; i < n; i++) {
        struct page *p = &g_pages[i];
        p->klen =
            (size_t)snprintf(p->key, sizeof p->key,
                             "http://127.0.0.1/cgi-bin/man/man2html?%d+page%05d", 1 + i % 8, i);
        /* log-uniform in [2 KB, 60 KB]: many short pages, a few long ones */
        double u = (double)(rng_next(&r) >> 11) / 9007199254740992.0;
        p->size = (size_t)(2048.0 * exp(u * log(60.0 / 2.0)));
        p->off = (size_t)rng_below(&r, 4096);
        g_rank_page[i] = i;
    }
    /* popularity is not correlated with the page id or size */
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(&r, (uint64_t)i + 1);
        int t = g_rank_page[i];
        g_rank_page[i] = g_rank_page[j];
        g_rank_page[j] = t;
    }
    g_npages = n;
}

static void make_zipf(double s) {
    double sum = 0;
    for (int i = 0; i < g_npages; i++) {
        sum += 1.0 / pow((double)(i + 1), s);
        g_cdf[i] = sum;
    }
    for (int i = 0; i < g_npages; i++)
        g_cdf[i] /= sum;
    g_cdf[g_npages - 1] = 1.0;
}

static int zipf_rank(uint64_t *rng) {
    double u = (double)(rng_next(rng) >> 11) / 9007199254740992.0;
    int lo = 0, hi = g_npages - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (g_cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int store(const struct page *p) {
    int err = 0;
    txc_entry *e = txc_entry_new(g_cache, p->key, p->klen, (int64_t)p->size, &err);
    if (!e)
        return err;
    char meta[META_SIZE];
    memset(meta, 0, sizeof meta);
    snprintf(meta, sizeof meta,
             "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %zu\r\n", p->size);
    if ((err = txc_entry_set_meta(e, meta, sizeof meta)) != 0 ||
        (err = txc_entry_append(e, g_template + p->off, p->size)) != 0) {
        txc_entry_abandon(e);
        return err;
    }
    return txc_insert(g_cache, e);
}

static void worker(struct bench_thread *t) {
    struct wstats *ws = &g_ws[t->id];
    uint64_t ops = 0;
    while (!bench_stopped()) {
        for (int k = 0; k < 32; k++) {
            const struct page *p = &g_pages[g_rank_page[zipf_rank(&t->rng)]];
            txc_entry *e = txc_lookup(g_cache, p->key, p->klen);
            if (e) {
                size_t len;
                const unsigned char *b = txc_entry_body(e, &len);
                /* read a few bytes in place, as sending would */
                if (len != p->size || b[0] != g_template[p->off] ||
                    b[len / 2] != g_template[p->off + len / 2] ||
                    b[len - 1] != g_template[p->off + len - 1])
                    ws->anomalies++;
                txc_entry_release(e);
                ws->hits++;
            } else {
                ws->misses++;
                if (store(p) != 0)
                    ws->insert_fail++;
            }
        }
        ops += 32;
    }
    t->ops = ops;
}

/* ------------------------------------------------------------ measurement */

struct result {
    double ops_s;
    double hit;
    double aborts_per_tx; /* < 0: not measured */
    uint64_t anomalies, insert_fail;
    int check_failed;
};

static int txkit_runs_tx(void) { return bench_itm_runtime(NULL, 0) == ITM_RT_TXKIT; }

struct point {
    const struct cfg *cf;
    txc_sync_t sync;
    double s;
    int nthreads;
    double secs;
    uint64_t seed;
};

/* One measurement, in its own child process (bench_isolate). */
static int measure(void *arg, void *outp, char *why, size_t whylen) {
    const struct point *pt = arg;
    const struct cfg *cf = pt->cf;
    txc_sync_t sync = pt->sync;
    double s = pt->s, secs = pt->secs;
    int nthreads = pt->nthreads;
    uint64_t seed = pt->seed;
    struct result *out = outp;
    (void)why, (void)whylen;
    struct txc_config c;
    txc_config_default(&c);
    c.sync = sync;
    c.policy = cf->policy;
    c.max_objects = cf->max_objects;
    c.max_bytes = cf->max_bytes;
    c.max_object_size = 64 * 1024;
    char err[200];
    g_cache = txc_create(&c, err, sizeof err);
    if (!g_cache)
        bench_die("cache: %s", err);
    make_zipf(s);
    /* warm: the most popular pages that fit, the hottest stored last */
    int fill = (int)(cf->max_objects && cf->max_objects < (uint64_t)g_npages ? cf->max_objects
                                                                             : (uint64_t)g_npages);
    for (int r = fill - 1; r >= 0; r--)
        if (store(&g_pages[g_rank_page[r]]) != 0)
            bench_die("warm-up insert failed");
    memset(g_ws, 0, sizeof g_ws);
    struct bench_thread *th = aligned_alloc(BENCH_CACHELINE, sizeof *th * (size_t)nthreads);
    if (!th)
        bench_die("out of memory");
    memset(th, 0, sizeof *th * (size_t)nthreads);
    tx_stats_t s0, s1, d;
    tx_stats_get(&s0);
    double el = bench_run_threads(th, nthreads, worker, secs, seed);
    tx_stats_get(&s1);
    uint64_t ops = 0, hits = 0, misses = 0;
    out->anomalies = out->insert_fail = 0;
    for (int i = 0; i < nthreads; i++) {
        ops += th[i].ops;
        hits += g_ws[i].hits;
        misses += g_ws[i].misses;
        out->anomalies += g_ws[i].anomalies;
        out->insert_fail += g_ws[i].insert_fail;
    }
    out->ops_s = el > 0 ? (double)ops / el : 0;
    out->hit = hits + misses ? (double)hits / (double)(hits + misses) : 0;
    out->aborts_per_tx = -1;
    if (sync == TXC_SYNC_TX && txkit_runs_tx()) {
        bench_stats_delta(&s0, &s1, &d);
        uint64_t cm = tx_stats_commits(&d);
        if (cm)
            out->aborts_per_tx = (double)tx_stats_aborts(&d) / (double)cm;
    }
    out->check_failed = txc_check(g_cache, err, sizeof err) != 0;
    if (out->check_failed)
        fprintf(stderr, "error: txc_check after %s s=%g t=%d: %s\n", txc_sync_name(sync), s,
                nthreads, err);
    struct txc_stats st;
    txc_stats_get(g_cache, &st);
    if ((c.max_objects && st.objects > c.max_objects) || (c.max_bytes && st.bytes > c.max_bytes))
        out->check_failed = 1;
    txc_destroy(g_cache);
    g_cache = NULL;
    if (txc_live_entries_all() != 0) {
        fprintf(stderr, "error: %llu entries not freed\n",
                (unsigned long long)txc_live_entries_all());
        out->check_failed = 1;
    }
    free(th);
    return out->check_failed;
}

/* ----------------------------------------------------------------- options */

static void usage(FILE *f) {
    fputs("usage: txkit-bench-cache [options]\n"
          "  --sync M[,M...]        lock, tx, cx, rwlock (default lock,tx,cx)\n"
          "  --zipf S[,S...]        Zipf parameters (default 0.1,1,2)\n"
          "  --threads N[,N...]     thread counts (default 1,2)\n"
          "  --pages N              distinct URLs (default 1000)\n"
          "  --max-objects N        cache object limit (default pages/2; 0: none)\n"
          "  --max-bytes N          cache byte limit (default 0: none)\n"
          "  --policy LRU|GDSF      eviction policy (default GDSF)\n"
          "  --seconds S            per measurement (default 1)\n"
          "  --runs R               repeat, report the median and spread (default 3)\n"
          "  --csv FILE             append rows to FILE (header if new)\n"
          "  --seed N               PRNG seed\n"
          "  -q, --quiet            no progress on stderr\n"
          "  --timeout S, --no-fork as the other benchmarks (each measurement runs in a\n"
          "                         child process)\n"
          "The gcc transactions of --sync tx run on the libitm-ABI runtime the process\n"
          "binds: txkit (linked first; method from TXKIT_METHOD), or GCC's libitm with\n"
          "LD_PRELOAD=<path>/libitm.so.1 (method from ITM_DEFAULT_METHOD).\n",
          f);
}

int main(int argc, char **argv) {
    struct cfg cf;
    memset(&cf, 0, sizeof cf);
    cf.syncs[0] = TXC_SYNC_LOCK;
    cf.syncs[1] = TXC_SYNC_TX;
    cf.syncs[2] = TXC_SYNC_CX;
    cf.nsyncs = 3;
    cf.zipfs[0] = 0.1;
    cf.zipfs[1] = 1;
    cf.zipfs[2] = 2;
    cf.nzipfs = 3;
    cf.pages = 1000;
    cf.policy = TXC_POLICY_GDSF;
    struct bench_opts o;
    bench_opts_init(&o);
    o.no_methods = 1; /* --sync says what runs */
    o.threads[0] = 1, o.threads[1] = 2, o.nthreads = 2;
    o.seed = 42;

    for (int i = 1; i < argc; i++) {
        const char *v;
        char buf[256], *list[16];
        int n;
        if (bench_opt(argc, argv, &i, "--sync", &v)) {
            snprintf(buf, sizeof buf, "%s", v);
            n = bench_split_list("--sync", buf, list, MAX_SYNCS);
            cf.nsyncs = n;
            for (int k = 0; k < n; k++)
                if (txc_sync_parse(list[k], &cf.syncs[k]) != 0)
                    bench_die("--sync: unknown mode '%s' (lock, tx, cx, rwlock)", list[k]);
        } else if (bench_opt(argc, argv, &i, "--zipf", &v)) {
            snprintf(buf, sizeof buf, "%s", v);
            n = bench_split_list("--zipf", buf, list, MAX_ZIPFS);
            cf.nzipfs = n;
            for (int k = 0; k < n; k++)
                cf.zipfs[k] = bench_parse_double("--zipf", list[k], 0.0, 10.0);
        } else if (bench_opt(argc, argv, &i, "--pages", &v)) {
            cf.pages = (int)bench_parse_long("--pages", v, 1, 10000000);
        } else if (bench_opt(argc, argv, &i, "--max-objects", &v)) {
            cf.max_objects = (uint64_t)bench_parse_long("--max-objects", v, 0, 1L << 40);
            cf.max_objects_set = 1;
        } else if (bench_opt(argc, argv, &i, "--max-bytes", &v)) {
            cf.max_bytes = (uint64_t)bench_parse_long("--max-bytes", v, 0, 1L << 50);
        } else if (bench_opt(argc, argv, &i, "--policy", &v)) {
            if (txc_policy_parse(v, &cf.policy) != 0)
                bench_die("--policy: unknown policy '%s' (LRU, GDSF)", v);
        } else if (!bench_parse_common(&o, argc, argv, &i)) {
            return bench_opt_last(argc, argv, &i, usage);
        }
    }
    const int *threads = o.threads, nthreads = o.nthreads, runs = o.runs, quiet = o.quiet;
    const double seconds = o.seconds;
    const uint64_t seed = o.seed;
    if (!cf.max_objects_set)
        cf.max_objects = (uint64_t)(cf.pages / 2 > 0 ? cf.pages / 2 : 1);
    if (cf.max_bytes && cf.max_bytes < 64 * 1024)
        bench_die("--max-bytes: at least 65536 (the largest page must fit)");
    for (int k = 0; k < cf.nsyncs; k++) {
        struct txc_config c;
        char err[200];
        txc_config_default(&c);
        c.sync = cf.syncs[k];
        if (txc_config_check(&c, err, sizeof err) != 0)
            bench_die("--sync %s: %s", txc_sync_name(cf.syncs[k]), err);
    }
    make_pages(cf.pages, seed);

    /* ---- header */
    char cpu[128], rtdesc[600];
    bench_cpu_model(cpu, sizeof cpu);
    bench_csv_field(cpu);
    struct txkit_rtm_info ri;
    txkit_rtm_info(&ri);
    int rt = bench_itm_runtime(rtdesc, sizeof rtdesc);
    const char *rtname = rt == ITM_RT_TXKIT ? "txkit" : rt == ITM_RT_LIBITM ? "libitm" : "other";
    const char *itm_env = getenv("ITM_DEFAULT_METHOD");
    char method[64];
    if (rt == ITM_RT_TXKIT)
        snprintf(method, sizeof method, "%s", txkit_method_name(txkit_get_method()));
    else
        snprintf(method, sizeof method, "%s", itm_env && *itm_env ? itm_env : "default");
    double mean_size = 0;
    for (int i = 0; i < g_npages; i++)
        mean_size += (double)g_pages[i].size / g_npages;
    double load1 = bench_print_machine(stdout, "txkit-bench-cache: mod_cache_tx core, Zipf request "
                                               "streams, in-process");
    printf("tx mode runs on: %s, method %s [%s]\n", rtname, method, rtdesc);
    printf("cx mode: txkit cx lock (%s)\n",
           ri.usable ? "hardware sections, lock fallback"
                     : "no RTM: hits hold it shared, the rest exclusive");
    printf("pages: %d (bodies 2-60 KB, mean %.1f KB), cache: max_objects %llu, max_bytes %llu, "
           "policy %s\n",
           g_npages, mean_size / 1024, (unsigned long long)cf.max_objects,
           (unsigned long long)cf.max_bytes, txc_policy_name(cf.policy));
    bench_print_run(stdout, threads, nthreads, seconds, runs, 0);
    bench_print_load_warning(stdout, load1);
    printf("\n%-18s %5s %4s %9s %6s %7s %9s %8s  %s\n", "sync", "s", "thr", "Mops/s", "spread",
           "hit%", "aborts/tx", "vs lock", "notes");

    FILE *cf_csv = NULL;
    if (o.csv && !(cf_csv = bench_csv_open(
                       o.csv, "bench,sync,label,runtime,method,policy,zipf,threads,pages,"
                              "max_objects,max_bytes,seconds,runs,ops_per_s,hit_ratio,"
                              "aborts_per_tx,vs_lock,status,host,cpu,rtm,mops,mops_min,"
                              "mops_max,oversubscribed")))
        return 2;

    int any_fail = 0;
    for (int zi = 0; zi < cf.nzipfs; zi++) {
        for (int ti = 0; ti < nthreads; ti++) {
            double lock_ops = -1;
            struct result res[MAX_SYNCS];
            /* runs interleaved across sync modes: drifts hit all alike */
            double samples[MAX_SYNCS][BENCH_MAX_RUNS], lo[MAX_SYNCS], hi[MAX_SYNCS];
            int failed[MAX_SYNCS] = {0};
            char why[MAX_SYNCS][160];
            double limit = o.timeout > 0 ? o.timeout : 2 * seconds + 30;
            memset(res, 0, sizeof res);
            for (int run = 0; run < runs; run++)
                for (int k = 0; k < cf.nsyncs; k++) {
                    struct result r;
                    memset(&r, 0, sizeof r);
                    if (failed[k])
                        continue;
                    if (!quiet)
                        fprintf(stderr, "\r%s s=%g t=%d run %d/%d   ", txc_sync_name(cf.syncs[k]),
                                cf.zipfs[zi], threads[ti], run + 1, runs);
                    struct point pt = {&cf,         cf.syncs[k], cf.zipfs[zi],
                                       threads[ti], seconds,     seed + (uint64_t)run * 7919};
                    if (bench_isolate(measure, &pt, &r, sizeof r, limit,
                                      (size_t)cf.pages * 64 * 1024, o.nofork, &failed[k], why[k],
                                      sizeof why[k]) < 0 &&
                        failed[k]) {
                        fprintf(stderr, "%s s=%g t=%d: %s\n", txc_sync_name(cf.syncs[k]),
                                cf.zipfs[zi], threads[ti], why[k]);
                        continue;
                    }
                    samples[k][run] = r.ops_s;
                    res[k].hit += r.hit / runs;
                    if (r.aborts_per_tx >= 0)
                        res[k].aborts_per_tx += r.aborts_per_tx / runs;
                    else
                        res[k].aborts_per_tx = -1;
                    res[k].anomalies += r.anomalies;
                    res[k].insert_fail += r.insert_fail;
                    res[k].check_failed |= r.check_failed;
                }
            if (!quiet)
                fprintf(stderr, "\r%60s\r", "");
            for (int k = 0; k < cf.nsyncs; k++) {
                res[k].ops_s = failed[k] ? 0 : bench_median(samples[k], runs, &lo[k], &hi[k]);
                if (cf.syncs[k] == TXC_SYNC_LOCK && !failed[k])
                    lock_ops = res[k].ops_s;
            }
            for (int k = 0; k < cf.nsyncs; k++) {
                const struct result *r = &res[k];
                char label[112], apt[16] = "-", ratio[16] = "-", notes[96] = "";
                if (cf.syncs[k] == TXC_SYNC_TX)
                    snprintf(label, sizeof label, "tx@%s:%s", rtname, method);
                else
                    snprintf(label, sizeof label, "%s", txc_sync_name(cf.syncs[k]));
                if (r->aborts_per_tx >= 0)
                    snprintf(apt, sizeof apt, "%.4f", r->aborts_per_tx);
                if (lock_ops > 0)
                    snprintf(ratio, sizeof ratio, "%.2f", r->ops_s / lock_ops);
                int fail = failed[k] || r->check_failed || r->anomalies || r->insert_fail;
                int over = bench_oversubscribed(threads[ti]);
                char spread[16];
                bench_fmt_spread(spread, sizeof spread, r->ops_s, lo[k], hi[k], runs);
                any_fail |= fail;
                if (failed[k])
                    snprintf(notes, sizeof notes, "%.80s ", why[k]);
                if (r->check_failed)
                    snprintf(notes, sizeof notes, "CHECK FAILED ");
                if (over)
                    snprintf(notes + strlen(notes), sizeof notes - strlen(notes),
                             "oversubscribed ");
                if (r->anomalies)
                    snprintf(notes + strlen(notes), sizeof notes - strlen(notes), "%llu anomalies ",
                             (unsigned long long)r->anomalies);
                if (r->insert_fail)
                    snprintf(notes + strlen(notes), sizeof notes - strlen(notes),
                             "%llu inserts failed", (unsigned long long)r->insert_fail);
                printf("%-18s %5g %4d %9.3f %6s %6.2f%% %9s %8s  %s\n", label, cf.zipfs[zi],
                       threads[ti], r->ops_s / 1e6, spread, 100 * r->hit, apt, ratio, notes);
                if (cf_csv)
                    fprintf(cf_csv,
                            "cache,%s,%s,%s,%s,%s,%g,%d,%d,%llu,%llu,%g,%d,%.0f,%.6f,%s,%s,%s,"
                            "%s,%s,%s,%.6f,%.6f,%.6f,%d\n",
                            txc_sync_name(cf.syncs[k]), label,
                            cf.syncs[k] == TXC_SYNC_TX ? rtname : "-",
                            cf.syncs[k] == TXC_SYNC_TX ? method : "-", txc_policy_name(cf.policy),
                            cf.zipfs[zi], threads[ti], g_npages, (unsigned long long)cf.max_objects,
                            (unsigned long long)cf.max_bytes, seconds, runs, r->ops_s, r->hit,
                            r->aborts_per_tx >= 0 ? apt : "", lock_ops > 0 ? ratio : "",
                            fail ? "fail" : "ok", bench_host(), cpu, ri.usable ? "yes" : "no",
                            r->ops_s / 1e6, lo[k] / 1e6, hi[k] / 1e6, over);
            }
            fflush(stdout);
        }
    }
    if (cf_csv && fclose(cf_csv) != 0) {
        fprintf(stderr, "error: writing %s: %s\n", o.csv, strerror(errno));
        return 1;
    }
    return any_fail ? 1 : 0;
}
