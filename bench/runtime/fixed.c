/* SPDX-License-Identifier: MIT */
/* fixed.c - txkit-bench-fixed: what a critical section costs when nothing
 * conflicts, the fixed cost of each method (fixed.h: the shapes).
 *
 * Two modes:
 *  - timed (the default), through the one harness: each thread runs the
 *    shape on a cell of its own for --seconds, rows per method and thread
 *    count, Mops/s, median of --runs, CSV;
 *  - --count N: this process runs exactly N operations of one method in
 *    fixed_count() and prints them; bench/run-fixed.sh runs it under
 *    callgrind (--toggle-collect=fixed_count) for instructions per
 *    operation, which this machine's noise does not move.
 * The oracle: after every run each cell's counters equal the operations its
 * thread completed (r2w2), every r4 sum is FIXED_R4_SUM.
 */
#include "fixed.h"

#include <stdlib.h>
#include <string.h>

static const char *const shape_names[SHAPE_COUNT] = {"empty", "r4", "r2w2"};

/* --------------------------------------------------------- the operations */

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The plain code of each shape, over an access macro pair. */
#define SHAPE_EMPTY_BODY(c, LD, ST) ((void)(c), 0L)
#define SHAPE_R4_BODY(c, LD, ST) (LD(&(c)->w[0]) + LD(&(c)->w[1]) + LD(&(c)->w[2]) + LD(&(c)->w[3]))
#define SHAPE_R2W2_BODY(c, LD, ST) \
    (ST(&(c)->w[0], LD(&(c)->w[0]) + 1), ST(&(c)->w[1], LD(&(c)->w[1]) + 1), 0L)
#define PLAIN_LD(p) (*(volatile long *)(p))
#define PLAIN_ST(p, v) (*(volatile long *)(p) = (v))

/* seq and mutex inline; txkit's API one call per operation (as intset.c and
 * bank.c: the returns_twice begin stays out of the worker loop). */
#define DEFINE_SHAPE(name, BODY)                                                                  \
    static inline long name##_seqop(struct fixed_cell *c) { return BODY(c, PLAIN_LD, PLAIN_ST); } \
    static inline long name##_mutexop(struct fixed_cell *c) {                                     \
        pthread_mutex_lock(&g_mutex);                                                             \
        long r = BODY(c, PLAIN_LD, PLAIN_ST);                                                     \
        pthread_mutex_unlock(&g_mutex);                                                           \
        return r;                                                                                 \
    }                                                                                             \
    static __attribute__((noinline)) long name##_txop(struct fixed_cell *c) {                     \
        volatile long r = 0; /* assigned inside the block: -Wclobbered */                         \
        TX_ATOMIC {                                                                               \
            r = BODY(c, TX_LOAD, TX_STORE);                                                       \
        }                                                                                         \
        return r;                                                                                 \
    }
DEFINE_SHAPE(fixed_empty, SHAPE_EMPTY_BODY)
DEFINE_SHAPE(fixed_r4, SHAPE_R4_BODY)
DEFINE_SHAPE(fixed_r2w2, SHAPE_R2W2_BODY)

/* One operation of shape under method family FAM (seq, mutex, tx, itm). */
#define FIXED_OP(FAM, shape, c)                        \
    ((shape) == SHAPE_EMPTY ? fixed_empty_##FAM##op(c) \
     : (shape) == SHAPE_R4  ? fixed_r4_##FAM##op(c)    \
                            : fixed_r2w2_##FAM##op(c))

/* What one operation of shape returns: r4 its sum, the others 0. */
static inline long fixed_expect(int shape) { return shape == SHAPE_R4 ? FIXED_R4_SUM : 0; }

/* Operations between looks at the stop flag. */
#define BATCH 8

struct fixed_ctx {
    struct fixed_cell *cells; /* one per thread */
    int shape;
};

/* A wrong r4 sum is an anomaly (t->bad); r2w2's counters are checked after
 * the run (fixed_check). */
#define DEFINE_WORKER(FAM)                              \
    static void worker_##FAM(struct bench_thread *t) {  \
        struct fixed_ctx *x = t->ctx;                   \
        struct fixed_cell *c = &x->cells[t->id];        \
        int shape = x->shape;                           \
        long want = fixed_expect(shape);                \
        uint64_t ops = 0, bad = 0;                      \
        while (!bench_stopped()) {                      \
            for (int b = 0; b < BATCH; b++)             \
                bad += FIXED_OP(FAM, shape, c) != want; \
            ops += BATCH;                               \
        }                                               \
        t->ops = ops;                                   \
        t->bad = bad;                                   \
    }
DEFINE_WORKER(seq)
DEFINE_WORKER(mutex)
DEFINE_WORKER(tx)
DEFINE_WORKER(itm)

static void (*pick_worker(int method))(struct bench_thread *) {
    if (method == BM_SEQ)
        return worker_seq;
    if (method == BM_MUTEX)
        return worker_mutex;
    return bm_is_itm(method) ? worker_itm : worker_tx;
}

static void cells_reset(struct fixed_cell *cells, int n) {
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            cells[i].w[k] = k + 1;
}

/* r2w2: words 0 and 1 went up by the operations done, 2 and 3 never moved;
 * other shapes: nothing written. Return: the cells that are wrong. */
static int fixed_check(const struct fixed_cell *cells, int n, int shape, const uint64_t *ops) {
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        long up = shape == SHAPE_R2W2 ? (long)ops[i] : 0;
        wrong += cells[i].w[0] != 1 + up || cells[i].w[1] != 2 + up || cells[i].w[2] != 3 ||
                 cells[i].w[3] != 4;
    }
    return wrong;
}

/* ------------------------------------------------------------- timed mode */

struct fixed_run {
    const struct bench_opts *o;
    int shape;
};

static int fixed_measure(void *arg, const struct bench_row *r, int run, struct bench_sample *out) {
    const struct fixed_run *fr = arg;
    struct fixed_cell *cells = aligned_alloc(BENCH_CACHELINE, sizeof *cells * (size_t)r->threads);
    struct bench_thread *th = aligned_alloc(BENCH_CACHELINE, sizeof *th * (size_t)r->threads);
    uint64_t *ops = calloc((size_t)r->threads, sizeof *ops);
    if (!cells || !th || !ops)
        bench_die("out of memory");
    cells_reset(cells, r->threads);
    memset(th, 0, sizeof *th * (size_t)r->threads);
    struct fixed_ctx ctx = {.cells = cells, .shape = fr->shape};
    for (int i = 0; i < r->threads; i++)
        th[i].ctx = &ctx;
    uint64_t seed = fr->o->seed + (uint64_t)run * 1000003u;

    tx_stats_t before, after;
    tx_stats_get(&before);
    double secs = bench_run_threads(th, r->threads, pick_worker(r->method), fr->o->seconds, seed);
    tx_stats_get(&after);
    bench_sample_threads(out, th, r->threads, secs);
    bench_stats_delta(&before, &after, &out->tx);
    for (int i = 0; i < r->threads; i++) {
        out->anomalies += th[i].bad;
        ops[i] = th[i].ops;
    }
    int wrong = fixed_check(cells, r->threads, fr->shape, ops);
    if (wrong || out->anomalies) {
        bench_progress_done(fr->o);
        fprintf(stderr, "FAIL: %s, %d threads, run %d: %d cells wrong, %llu wrong sums\n",
                bm_name(r->method), r->threads, run + 1, wrong, (unsigned long long)out->anomalies);
    }
    free(cells);
    free(th);
    free(ops);
    return wrong || out->anomalies;
}

/* ------------------------------------------------------------- count mode */

/* Exactly n operations of shape under method, in this thread: the function
 * bench/run-fixed.sh's callgrind run collects (--toggle-collect=fixed_count).
 * Return: wrong r4 sums. */
static __attribute__((noinline)) uint64_t fixed_count(int method, int shape, struct fixed_cell *c,
                                                      uint64_t n) {
    uint64_t bad = 0;
    long want = fixed_expect(shape);
#define COUNT_LOOP(FAM)              \
    for (uint64_t i = 0; i < n; i++) \
    bad += FIXED_OP(FAM, shape, c) != want
    if (method == BM_SEQ)
        COUNT_LOOP(seq);
    else if (method == BM_MUTEX)
        COUNT_LOOP(mutex);
    else if (bm_is_itm(method))
        COUNT_LOOP(itm);
    else
        COUNT_LOOP(tx);
#undef COUNT_LOOP
    return bad;
}

static int count_mode(const struct bench_opts *o, int shape, uint64_t n) {
    if (o->nmethods != 1) {
        fprintf(stderr, "error: --count runs one method (--method M), got %d\n", o->nmethods);
        return 2;
    }
    int m = o->methods[0];
    char why[128] = "";
    if (m == BM_RWLOCK || bench_select_method(m, why, sizeof why) != 0) {
        printf("count: %s %s\n", bm_name(m), m == BM_RWLOCK ? "n/a (no rwlock version)" : why);
        return 0;
    }
    if (bm_is_itm(m)) {
        char rt[256];
        int have = bench_itm_runtime(rt, sizeof rt);
        if ((bm_is_itm_libitm(m) && have != ITM_RT_LIBITM) ||
            (bm_is_itm_txkit(m) && have != ITM_RT_TXKIT)) {
            printf("count: %s n/a (gcc transactions run by %s)\n", bm_name(m), rt);
            return 0;
        }
        bench_itm_prepare(m);
    }
    struct fixed_cell *c = aligned_alloc(BENCH_CACHELINE, sizeof *c);
    if (!c)
        bench_die("out of memory");
    cells_reset(c, 1);
    /* a few first, outside the measurement: the runtime's first transaction
     * sets the thread up */
    uint64_t warm = 64, bad = fixed_count(m, shape, c, warm);
    double t0 = bench_now();
    bad += fixed_count(m, shape, c, n);
    double secs = bench_now() - t0;
    uint64_t done = warm + n;
    int wrong = fixed_check(c, 1, shape, &done);
    printf("count: %llu operations of %s under %s in %.3f s (%.2f ns each)%s\n",
           (unsigned long long)n, shape_names[shape], bm_name(m), secs, secs * 1e9 / (double)n,
           wrong || bad ? "; FAIL: the cell or a sum was wrong" : "");
    free(c);
    return wrong || bad ? 1 : 0;
}

/* -------------------------------------------------------------------- main */

static void usage(FILE *f) {
    fputs("usage: txkit-bench-fixed [options]\n"
          "What a critical section costs when nothing conflicts: each thread runs one\n"
          "shape on a cell of its own.\n"
          "      --shape S          empty (nothing inside), r4 (four loads), r2w2 (two\n"
          "                         words loaded and incremented) (default empty)\n"
          "      --count N          run exactly N operations of one method (--method M) in\n"
          "                         this process and print them, no table (for callgrind:\n"
          "                         bench/run-fixed.sh)\n",
          f);
    bench_usage_common(f);
}

int main(int argc, char **argv) {
    struct bench_opts o;
    int shape = SHAPE_EMPTY;
    long count = 0;
    bench_opts_init_methods(&o);
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (bench_parse_common(&o, argc, argv, &i))
            continue;
        if (bench_opt(argc, argv, &i, "--shape", &v)) {
            int s[SHAPE_COUNT];
            if (bench_parse_names("--shape", v, shape_names, SHAPE_COUNT, s) != 1) {
                fprintf(stderr, "error: --shape takes one shape\n");
                return 2;
            }
            shape = s[0];
        } else if (bench_opt(argc, argv, &i, "--count", &v)) {
            count = bench_parse_long("--count", v, 1, 1L << 40);
        } else {
            return bench_opt_last(argc, argv, &i, usage);
        }
    }
    if (count)
        return count_mode(&o, shape, (uint64_t)count);

    char params[256];
    snprintf(params, sizeof params,
             "shape     %s, on a cell of each thread's own (no conflicts): the fixed cost\n",
             shape_names[shape]);
    struct bench_desc desc = {
        .bench = "fixed",
        .structure = shape_names[shape],
        .size = 1,
        .update_pct = shape == SHAPE_R2W2 ? 100.0 : 0.0,
        .params = params,
    };
    bench_print_header(stdout, &desc, &o);
    int nrows;
    struct bench_row *rows = bench_rows_make(&o, &nrows);
    for (int i = 0; i < nrows; i++)
        if (rows[i].method == BM_RWLOCK && rows[i].state == ROW_OK) {
            rows[i].state = ROW_NA;
            snprintf(rows[i].note, sizeof rows[i].note, "no rwlock version");
        }
    struct fixed_run fr = {.o = &o, .shape = shape};
    int failed = bench_run_rows(&o, rows, nrows, fixed_measure, &fr, BENCH_NO_MEMLIMIT);
    int rc = bench_report(&desc, &o, rows, nrows);
    struct bench_outcome oc;
    bench_outcome(rows, nrows, &oc);
    if (oc.check_failed)
        printf("check: FAIL (a cell or a sum was wrong; details on stderr)\n");
    else
        printf("check: ok (after each of %d runs: every cell as its thread's operations left "
               "it)\n",
               oc.runs);
    free(rows);
    return failed ? 1 : rc ? 2 : 0;
}
