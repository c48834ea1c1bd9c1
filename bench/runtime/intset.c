/* SPDX-License-Identifier: MIT */
/* intset.c - txkit-bench-intset: integer-set throughput (sorted list, hash set,
 * red-black tree, skip list) under seq, mutex, rwlock, the txkit methods and
 * gcc's libitm.
 *
 * The data structures are written once (intset_ds.h) and instantiated here
 * twice: with plain accesses (seq, mutex, rwlock) and with TX_LOAD / TX_STORE /
 * tx_malloc / tx_free (each operation one TX_ATOMIC block); intset_itm.c
 * instantiates the plain accesses once more inside gcc transactions (itm). So
 * the methods run identical code and their ratios measure only the
 * synchronization.
 */
#include "intset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const struct_names[S_NKINDS] = {"list", "hash", "tree", "skip"};

/* ------------------------------------------ the two instantiations of the code */
/* (the third, for itm, is in intset_itm.c) */

/* Plain: seq, mutex, rwlock. */
#define DS_NAME(x) x##_plain
#define DS_LD(p) (*(p))
#define DS_ST(p, v) ((void)(*(p) = (v)))
#define DS_ALLOC(n) malloc(n)
#define DS_FREE(p) free(p)
#define DS_BAD() bench_die("intset: corrupt structure (%s:%d)", __FILE__, __LINE__)
#define DS_OOM() bench_die("out of memory")
#include "intset_ds.h" /* bench/workloads; undefines the DS_ macros */

/* Transactional: auto, htm, stm, serial. An impossible shape can only be seen
 * by a transaction that read an inconsistent state: count it and retry (an
 * opaque TM never gets there; the count is reported as a runtime problem). */
static atomic_ulong g_inconsistent;
static void tx_inconsistent(void) {
    atomic_fetch_add_explicit(&g_inconsistent, 1, memory_order_relaxed);
    tx_restart();
}
#define DS_NAME(x) x##_tx
#define DS_LD(p) TX_LOAD(p)
#define DS_ST(p, v) TX_STORE(p, v)
#define DS_ALLOC(n) tx_malloc(n)
#define DS_FREE(p) tx_free(p)
#define DS_BAD() tx_inconsistent()
#define DS_OOM() bench_die("out of memory")
#include "intset_ds.h" /* bench/workloads; undefines the DS_ macros */

/* --------------------------------------------------------- one operation each
 *
 * OP(S, op, s, key) for each method family. The transactional wrappers are
 * separate functions so that the returns_twice begin of TX_ATOMIC does not
 * force the worker loop's locals into memory; the itm ones (S_op_itm) are in
 * intset_itm.c, likewise one call per operation.
 */
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t g_rwlock = PTHREAD_RWLOCK_INITIALIZER;

#define DEFINE_TXOP(S, op)                                                             \
    static __attribute__((noinline)) int S##_##op##_txop(struct intset *s, long key) { \
        volatile int r = 0; /* assigned inside the block: -Wclobbered */               \
        TX_ATOMIC {                                                                    \
            r = S##_##op##_tx(s, key);                                                 \
        }                                                                              \
        return r;                                                                      \
    }
#define DEFINE_TXOPS(S) DEFINE_TXOP(S, contains) DEFINE_TXOP(S, insert) DEFINE_TXOP(S, delete)
DEFINE_TXOPS(list)
DEFINE_TXOPS(hash)
DEFINE_TXOPS(tree)
DEFINE_TXOPS(skip)

#define OP_SEQ(S, op, s, k) S##_##op##_plain(s, k)
#define OP_MUTEX(S, op, s, k)            \
    __extension__({                      \
        pthread_mutex_lock(&g_mutex);    \
        int _r = S##_##op##_plain(s, k); \
        pthread_mutex_unlock(&g_mutex);  \
        _r;                              \
    })
#define RWLOCK_contains pthread_rwlock_rdlock
#define RWLOCK_insert pthread_rwlock_wrlock
#define RWLOCK_delete pthread_rwlock_wrlock
#define OP_RWLOCK(S, op, s, k)            \
    __extension__({                       \
        RWLOCK_##op(&g_rwlock);           \
        int _r = S##_##op##_plain(s, k);  \
        pthread_rwlock_unlock(&g_rwlock); \
        _r;                               \
    })
#define OP_TX(S, op, s, k) S##_##op##_txop(s, k)
#define OP_ITM(S, op, s, k) S##_##op##_itm(s, k)

/* ------------------------------------------------------------------ workers */

struct intset_ctx {
    struct intset *set;
    uint64_t range;  /* keys are in [0, range) */
    uint64_t upd_bp; /* updates per 10000 operations */
};

/* Operations between looks at the stop flag: few, so that slow operations (a
 * long list under STM) do not run far past the end of the measurement. */
#define BATCH 4

/* Draw an operation: updates are upd_bp in 10000, half inserts, half deletes. */
#define DEFINE_WORKER(S, FAM, OP)                                          \
    static void worker_##S##_##FAM(struct bench_thread *t) {               \
        struct intset_ctx *c = t->ctx;                                     \
        struct intset *s = c->set;                                         \
        uint64_t rng = t->rng, ops = 0, range = c->range, upd = c->upd_bp; \
        long delta = 0;                                                    \
        while (!bench_stopped()) {                                         \
            for (int b = 0; b < BATCH; b++) {                              \
                long key = (long)rng_below(&rng, range);                   \
                uint64_t r = rng_below(&rng, 10000);                       \
                if (r < upd) {                                             \
                    if (r & 1)                                             \
                        delta += OP(S, insert, s, key);                    \
                    else                                                   \
                        delta -= OP(S, delete, s, key);                    \
                } else {                                                   \
                    (void)OP(S, contains, s, key);                         \
                }                                                          \
            }                                                              \
            ops += BATCH;                                                  \
        }                                                                  \
        t->ops = ops;                                                      \
        t->delta = delta;                                                  \
        t->rng = rng;                                                      \
    }
#define DEFINE_WORKERS(S)               \
    DEFINE_WORKER(S, seq, OP_SEQ)       \
    DEFINE_WORKER(S, mutex, OP_MUTEX)   \
    DEFINE_WORKER(S, rwlock, OP_RWLOCK) \
    DEFINE_WORKER(S, tx, OP_TX)         \
    DEFINE_WORKER(S, itm, OP_ITM)
DEFINE_WORKERS(list)
DEFINE_WORKERS(hash)
DEFINE_WORKERS(tree)
DEFINE_WORKERS(skip)

typedef void (*worker_fn)(struct bench_thread *);

static worker_fn pick_worker(int kind, int method) {
    static const worker_fn table[S_NKINDS][5] = {
        {worker_list_seq, worker_list_mutex, worker_list_rwlock, worker_list_tx, worker_list_itm},
        {worker_hash_seq, worker_hash_mutex, worker_hash_rwlock, worker_hash_tx, worker_hash_itm},
        {worker_tree_seq, worker_tree_mutex, worker_tree_rwlock, worker_tree_tx, worker_tree_itm},
        {worker_skip_seq, worker_skip_mutex, worker_skip_rwlock, worker_skip_tx, worker_skip_itm},
    };
    int fam = method == BM_SEQ      ? 0
              : method == BM_MUTEX  ? 1
              : method == BM_RWLOCK ? 2
              : bm_is_itm(method)   ? 4
                                    : 3;
    return table[kind][fam];
}

/* ------------------------------------------------------- build, check, free */

static int set_insert_plain(struct intset *s, long key) {
    switch (s->kind) {
    case S_LIST:
        return list_insert_plain(s, key);
    case S_HASH:
        return hash_insert_plain(s, key);
    case S_SKIP:
        return skip_insert_plain(s, key);
    default:
        return tree_insert_plain(s, key);
    }
}

/* N distinct keys from [0, range), inserted in descending order (so the list
 * and the hash chains are built by prepending). */
static struct intset *set_build(int kind, long nbuckets, long size, long range, uint64_t seed) {
    struct intset *s = aligned_alloc(BENCH_CACHELINE, sizeof *s);
    if (!s)
        bench_die("out of memory");
    memset(s, 0, sizeof *s);
    s->kind = kind;
    if (kind == S_HASH) {
        s->nbuckets = nbuckets;
        s->buckets = calloc((size_t)nbuckets, sizeof *s->buckets);
        if (!s->buckets)
            bench_die("out of memory");
    }
    if (kind == S_SKIP) {
        s->skip = calloc(1, sizeof *s->skip + SKIP_MAXL * sizeof s->skip->next[0]);
        if (!s->skip)
            bench_die("out of memory");
        s->skip->key = -1;
        s->skip->level = SKIP_MAXL;
    }
    long *keys = malloc((size_t)range * sizeof *keys);
    if (!keys)
        bench_die("out of memory");
    for (long k = 0; k < range; k++)
        keys[k] = k;
    uint64_t rng = rng_seed(seed, 0xb111d);
    for (long k = 0; k < size; k++) { /* partial Fisher-Yates */
        long j = k + (long)rng_below(&rng, (uint64_t)(range - k));
        long tmp = keys[k];
        keys[k] = keys[j];
        keys[j] = tmp;
    }
    /* mark the chosen ones, then insert them from the largest down */
    unsigned char *in = calloc((size_t)range, 1);
    if (!in)
        bench_die("out of memory");
    for (long k = 0; k < size; k++)
        in[keys[k]] = 1;
    for (long k = range - 1; k >= 0; k--)
        if (in[k] && !set_insert_plain(s, k))
            bench_die("build: duplicate key %ld", k);
    free(in);
    free(keys);
    return s;
}

static void set_free(struct intset *s) {
    if (s->kind == S_SKIP) {
        struct snode *n = s->skip;
        while (n) {
            struct snode *next = n->next[0];
            free(n);
            n = next;
        }
    } else if (s->kind == S_TREE) {
        /* iterative: rotate left children up until none is left */
        struct tnode *n = s->root;
        while (n) {
            if (n->left) {
                struct tnode *l = n->left;
                n->left = l->right;
                l->right = n;
                n = l;
            } else {
                struct tnode *r = n->right;
                free(n);
                n = r;
            }
        }
    } else {
        long nb = s->kind == S_HASH ? s->nbuckets : 1;
        for (long b = 0; b < nb; b++) {
            struct lnode *n = s->kind == S_HASH ? s->buckets[b] : s->head;
            while (n) {
                struct lnode *next = n->next;
                free(n);
                n = next;
            }
        }
        free(s->buckets);
    }
    free(s);
}

/* Checks for --verify. Return: number of keys, or -1 (with a message). */
static long chain_check(const struct lnode *n, long range, long bucket, long nbuckets) {
    long count = 0, prev = -1;
    for (; n; n = n->next, count++) {
        if (n->key <= prev) {
            fprintf(stderr, "verify: chain not strictly sorted (%ld after %ld)\n", n->key, prev);
            return -1;
        }
        if (n->key < 0 || n->key >= range) {
            fprintf(stderr, "verify: key %ld out of range\n", n->key);
            return -1;
        }
        if (nbuckets && n->key % nbuckets != bucket) {
            fprintf(stderr, "verify: key %ld in bucket %ld\n", n->key, bucket);
            return -1;
        }
        prev = n->key;
    }
    return count;
}

/* Black height of the subtree, or -1. Keys must lie in (lo, hi). */
static long tree_check(const struct tnode *n, long lo, long hi, int parent_red, long *count,
                       int depth) {
    if (!n)
        return 1;
    if (depth > TREE_MAXH) {
        fprintf(stderr, "verify: tree deeper than %d\n", TREE_MAXH);
        return -1;
    }
    if (n->key <= lo || n->key >= hi) {
        fprintf(stderr, "verify: key %ld outside (%ld, %ld): BST order broken\n", n->key, lo, hi);
        return -1;
    }
    if (n->red != 0 && n->red != 1) {
        fprintf(stderr, "verify: node %ld has color %ld\n", n->key, n->red);
        return -1;
    }
    if (parent_red && n->red) {
        fprintf(stderr, "verify: red node %ld has a red parent\n", n->key);
        return -1;
    }
    (*count)++;
    long bl = tree_check(n->left, lo, n->key, (int)n->red, count, depth + 1);
    long br = tree_check(n->right, n->key, hi, (int)n->red, count, depth + 1);
    if (bl < 0 || br < 0)
        return -1;
    if (bl != br) {
        fprintf(stderr, "verify: black heights %ld and %ld below node %ld\n", bl, br, n->key);
        return -1;
    }
    return bl + !n->red;
}

/* Level 0 holds every key in order, each node at its key's level; level l
 * holds, in order, exactly the nodes of level 0 above l. */
static long skip_check(const struct intset *s, long range) {
    long above[SKIP_MAXL] = {0}, count = 0, prev = -1;
    for (const struct snode *n = s->skip->next[0]; n; n = n->next[0], count++) {
        if (n->key <= prev || n->key >= range) {
            fprintf(stderr, "verify: skip list level 0: key %ld after %ld (range %ld)\n", n->key,
                    prev, range);
            return -1;
        }
        if (n->level != skip_level(n->key)) {
            fprintf(stderr, "verify: skip list node %ld on %ld levels, not %d\n", n->key, n->level,
                    skip_level(n->key));
            return -1;
        }
        for (long l = 1; l < n->level; l++)
            above[l]++;
        prev = n->key;
    }
    for (int l = 1; l < SKIP_MAXL; l++) {
        long c = 0;
        prev = -1;
        for (const struct snode *n = s->skip->next[l]; n; n = n->next[l], c++) {
            if (n->key <= prev || n->level <= l) {
                fprintf(stderr, "verify: skip list level %d: node %ld (%ld levels) after %ld\n", l,
                        n->key, n->level, prev);
                return -1;
            }
            prev = n->key;
        }
        if (c != above[l]) {
            fprintf(stderr,
                    "verify: skip list level %d holds %ld nodes, level 0 has %ld above it\n", l, c,
                    above[l]);
            return -1;
        }
    }
    return count;
}

static long set_check(const struct intset *s, long range) {
    if (s->kind == S_SKIP)
        return skip_check(s, range);
    if (s->kind == S_LIST)
        return chain_check(s->head, range, 0, 0);
    if (s->kind == S_HASH) {
        long total = 0;
        for (long b = 0; b < s->nbuckets; b++) {
            long c = chain_check(s->buckets[b], range, b, s->nbuckets);
            if (c < 0)
                return -1;
            total += c;
        }
        return total;
    }
    if (s->root && s->root->red) {
        fprintf(stderr, "verify: the root is red\n");
        return -1;
    }
    long count = 0;
    if (tree_check(s->root, -1, range, 0, &count, 0) < 0)
        return -1;
    return count;
}

/* ------------------------------------------------------------- measurement */

struct intset_run {
    const struct bench_opts *o;
    int kind, verify;
    long size, range, nbuckets;
    uint64_t update_bp;
};

/* One run of one row: build, run the threads, check. 0, or 1 if the check failed. */
static int intset_measure(void *arg, const struct bench_row *r, int run, struct bench_sample *out) {
    const struct intset_run *ir = arg;
    const struct bench_opts *o = ir->o;
    uint64_t seed = o->seed + (uint64_t)run * 1000003u;
    struct intset_ctx ctx = {
        .set = set_build(ir->kind, ir->nbuckets, ir->size, ir->range, seed),
        .range = (uint64_t)ir->range,
        .upd_bp = ir->update_bp,
    };
    struct bench_thread *th = aligned_alloc(BENCH_CACHELINE, sizeof *th * (size_t)r->threads);
    if (!th)
        bench_die("out of memory");
    memset(th, 0, sizeof *th * (size_t)r->threads);
    for (int i = 0; i < r->threads; i++)
        th[i].ctx = &ctx;
    atomic_store(&g_inconsistent, 0);

    tx_stats_t before, after;
    tx_stats_get(&before);
    double secs = bench_run_threads(th, r->threads, pick_worker(ir->kind, r->method), o->seconds,
                                    seed ^ ((uint64_t)(r->method * 64 + r->threads) << 32));
    tx_stats_get(&after);
    bench_sample_threads(out, th, r->threads, secs);
    bench_stats_delta(&before, &after, &out->tx);
    out->anomalies = atomic_load(&g_inconsistent);
    long delta = 0;
    for (int i = 0; i < r->threads; i++)
        delta += th[i].delta;
    free(th);

    int failed = 0;
    if (ir->verify) {
        long n = set_check(ctx.set, ir->range);
        if (n < 0 || n != ir->size + delta) {
            bench_progress_done(o);
            if (n >= 0)
                fprintf(stderr, "verify: %ld keys, expected %ld + %ld net inserts\n", n, ir->size,
                        delta);
            fprintf(stderr, "verify: FAIL: %s, %s, %d threads, run %d\n", struct_names[ir->kind],
                    bm_name(r->method), r->threads, run + 1);
            failed = 1;
        }
    }
    /* A broken structure may not even be freeable; a child process just exits. */
    if (o->nofork && !failed)
        set_free(ctx.set);
    return failed;
}

/* -------------------------------------------------------------------- main */

static void usage(FILE *f) {
    fputs("usage: txkit-bench-intset [options]\n"
          "Integer set: each thread runs lookups and updates on random keys for a fixed time.\n"
          "  -S, --struct list|hash|tree|skip  sorted linked list, chained hash set,\n"
          "                         red-black tree, skip list (default hash)\n"
          "  -n, --size N           initial keys (default 4096); keys are drawn from [0, 2N)\n"
          "  -u, --update PCT       % of operations that update, half inserts, half deletes\n"
          "                         (default 10)\n"
          "  -b, --buckets N        hash buckets (default 1024)\n"
          "  -V, --verify           after each run check the structure's invariants and that\n"
          "                         its size equals the initial size plus the net inserts\n",
          f);
    bench_usage_common(f);
    fputs("Environment: TXKIT_METHOD is overridden by --method for the txkit rows (and\n"
          "the itm@txkit rows), ITM_DEFAULT_METHOD for the itm@libitm rows.\n",
          f);
}

int main(int argc, char **argv) {
    struct bench_opts o;
    int kind = S_HASH, verify = 0;
    long size = 4096, nbuckets = 1024;
    double update = 10.0;

    bench_opts_init_methods(&o);

    for (int i = 1; i < argc; i++) {
        const char *v;
        if (bench_parse_common(&o, argc, argv, &i))
            continue;
        if (bench_opt(argc, argv, &i, "--struct", &v) || bench_opt(argc, argv, &i, "-S", &v)) {
            for (kind = 0; kind < S_NKINDS && strcmp(v, struct_names[kind]) != 0; kind++)
                ;
            if (kind == S_NKINDS)
                bench_die("--struct: '%s' is not list, hash, tree or skip", v);
        } else if (bench_opt(argc, argv, &i, "--size", &v) || bench_opt(argc, argv, &i, "-n", &v)) {
            size = bench_parse_long("--size", v, 1, 1L << 30);
        } else if (bench_opt(argc, argv, &i, "--update", &v) ||
                   bench_opt(argc, argv, &i, "-u", &v)) {
            update = bench_parse_double("--update", v, 0, 100);
        } else if (bench_opt(argc, argv, &i, "--buckets", &v) ||
                   bench_opt(argc, argv, &i, "-b", &v)) {
            nbuckets = bench_parse_long("--buckets", v, 1, 1L << 30);
        } else if (bench_opt(argc, argv, &i, "--verify", NULL) ||
                   bench_opt(argc, argv, &i, "-V", NULL)) {
            verify = 1;
        } else {
            return bench_opt_last(argc, argv, &i, usage);
        }
    }

    long range = 2 * size;

    char params[512];
    const char *sname = struct_names[kind];
    snprintf(params, sizeof params,
             "struct    %s\n"
             "size      %ld initial keys, key range [0, %ld)\n"
             "update    %.4g%% (half inserts, half deletes; lookups otherwise)\n"
             "verify    %s\n",
             kind == S_LIST   ? "sorted linked list"
             : kind == S_HASH ? "chained hash set, sorted chains"
             : kind == S_SKIP ? "skip list (levels from the key's hash, up to 16)"
                              : "red-black tree (no parent pointers)",
             size, range, update, verify ? "yes (after every run)" : "no");
    if (kind == S_HASH) {
        size_t n = strlen(params);
        snprintf(params + n, sizeof params - n, "buckets   %ld (%.1f keys per bucket)\n", nbuckets,
                 (double)size / (double)nbuckets);
    }
    struct bench_desc desc = {
        .bench = "intset",
        .structure = sname,
        .size = size,
        .update_pct = update,
        .params = params,
    };
    bench_print_header(stdout, &desc, &o);

    struct intset_run ir = {
        .o = &o,
        .kind = kind,
        .verify = verify,
        .size = size,
        .range = range,
        .nbuckets = nbuckets,
        .update_bp = (uint64_t)(update * 100.0 + 0.5),
    };
    int nrows;
    struct bench_row *rows = bench_rows_make(&o, &nrows);
    size_t mem_hint = (size_t)range * 80 + (size_t)nbuckets * 8;
    int failed = bench_run_rows(&o, rows, nrows, intset_measure, &ir, mem_hint);

    int rc = bench_report(&desc, &o, rows, nrows);
    struct bench_outcome oc;
    bench_outcome(rows, nrows, &oc);
    if (oc.anomalies)
        printf("WARNING: transactions saw an impossible structure shape (see 'anomalies'): "
               "the TM let a transaction read an inconsistent state\n");
    if (verify)
        printf("verify: %s\n", oc.check_failed ? "FAIL (details above on stderr)"
                               : oc.crashed
                                   ? "incomplete (a measurement crashed or timed out, see above)"
                                   : "ok (structure invariants and size after every run)");
    free(rows);
    return failed ? 1 : rc ? 2 : 0;
}
