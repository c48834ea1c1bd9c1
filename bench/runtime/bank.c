/* SPDX-License-Identifier: MIT */
/* bank.c - txkit-bench-bank: transfers between random accounts, plus an
 * optional share of read-only transactions that sum all accounts.
 *
 * The oracles: money is only moved, so every consistent sum, and the total at
 * the end of every run, equals accounts * initial balance. The total alone
 * cannot see a transfer that was lost whole (both writes dropped), so each
 * thread also records, privately and after the operation returned, the net
 * amount its transfers moved per account; since transfers commute, every
 * final balance must equal initial + the recorded net of all threads. Any
 * difference prints FAIL and makes the exit status non-zero.
 */
#include "bank.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------- the operations, written once (bank.h) */

BANK_DEFINE(plain, PLAIN_LD, PLAIN_ST)
BANK_DEFINE(tx, TX_LOAD, TX_STORE)

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t g_rwlock = PTHREAD_RWLOCK_INITIALIZER;

static __attribute__((noinline)) void transfer_txop(long *from, long *to, long amount) {
    TX_ATOMIC {
        transfer_tx(from, to, amount);
    }
}

/* --syscall, txkit's API: the system call after tx_irrevocable(), as the
 * gcc version (transfer_sys_itmop()) gets it from the compiler. */
static __attribute__((noinline)) void transfer_sys_txop(long *from, long *to, long amount,
                                                        int sys) {
    TX_ATOMIC {
        transfer_tx(from, to, amount);
        if (sys) {
            tx_irrevocable();
            (void)getppid();
        }
    }
}

static __attribute__((noinline)) long total_txop(const struct bank *bk) {
    volatile long s = 0; /* assigned inside the block: -Wclobbered */
    TX_ATOMIC {
        s = total_tx(bk->acc, bk->n, bk->stride);
    }
    return s;
}

/* TRANSFER_SYS_x(f, t, a, sys): the --syscall transfer, a system call when sys. */
#define TRANSFER_SEQ(f, t, a) transfer_plain(f, t, a)
#define TRANSFER_SYS_SEQ(f, t, a, sys) \
    do {                               \
        transfer_plain(f, t, a);       \
        if (sys)                       \
            (void)getppid();           \
    } while (0)
#define TOTAL_SEQ(bk) total_plain(bk->acc, bk->n, bk->stride)
#define TRANSFER_MUTEX(f, t, a)         \
    do {                                \
        pthread_mutex_lock(&g_mutex);   \
        transfer_plain(f, t, a);        \
        pthread_mutex_unlock(&g_mutex); \
    } while (0)
#define TRANSFER_SYS_MUTEX(f, t, a, sys) \
    do {                                 \
        pthread_mutex_lock(&g_mutex);    \
        TRANSFER_SYS_SEQ(f, t, a, sys);  \
        pthread_mutex_unlock(&g_mutex);  \
    } while (0)
#define TOTAL_MUTEX(bk)                                    \
    __extension__({                                        \
        pthread_mutex_lock(&g_mutex);                      \
        long _s = total_plain(bk->acc, bk->n, bk->stride); \
        pthread_mutex_unlock(&g_mutex);                    \
        _s;                                                \
    })
#define TRANSFER_RWLOCK(f, t, a)          \
    do {                                  \
        pthread_rwlock_wrlock(&g_rwlock); \
        transfer_plain(f, t, a);          \
        pthread_rwlock_unlock(&g_rwlock); \
    } while (0)
#define TRANSFER_SYS_RWLOCK(f, t, a, sys) \
    do {                                  \
        pthread_rwlock_wrlock(&g_rwlock); \
        TRANSFER_SYS_SEQ(f, t, a, sys);   \
        pthread_rwlock_unlock(&g_rwlock); \
    } while (0)
#define TOTAL_RWLOCK(bk)                                   \
    __extension__({                                        \
        pthread_rwlock_rdlock(&g_rwlock);                  \
        long _s = total_plain(bk->acc, bk->n, bk->stride); \
        pthread_rwlock_unlock(&g_rwlock);                  \
        _s;                                                \
    })
#define TRANSFER_TX(f, t, a) transfer_txop(f, t, a)
#define TRANSFER_SYS_TX(f, t, a, sys) transfer_sys_txop(f, t, a, sys)
#define TOTAL_TX(bk) total_txop(bk)
#define TRANSFER_ITM(f, t, a) transfer_itmop(f, t, a)
#define TRANSFER_SYS_ITM(f, t, a, sys) transfer_sys_itmop(f, t, a, sys)
#define TOTAL_ITM(bk) total_itmop(bk)

/* Operations between looks at the stop flag: few, so that slow operations (a
 * long list under STM) do not run far past the end of the measurement. */
#define BATCH 4

struct bank_ctx {
    struct bank *bk;
    long *net; /* threads x accounts: net amount each thread's transfers moved */
};

/* With --syscall, every transfer is the _SYS variant, and sys_bp in 10000 of
 * them make the system call (drawn here, outside the transaction); without,
 * the plain variant and no extra draw. */
#define DEFINE_WORKER(FAM, TRANSFER, TRANSFER_SYS, TOTAL)                       \
    static void worker_##FAM(struct bench_thread *t) {                          \
        struct bank_ctx *c = t->ctx;                                            \
        struct bank *bk = c->bk;                                                \
        long *net = c->net + (size_t)t->id * (size_t)bk->n;                     \
        uint64_t rng = t->rng, ops = 0, bad = 0;                                \
        uint64_t n = (uint64_t)bk->n, sum_bp = bk->sum_bp, sys_bp = bk->sys_bp; \
        long stride = bk->stride, expect = bk->expect;                          \
        while (!bench_stopped()) {                                              \
            for (int b = 0; b < BATCH; b++) {                                   \
                if (sum_bp && rng_below(&rng, 10000) < sum_bp) {                \
                    if (TOTAL(bk) != expect)                                    \
                        bad++;                                                  \
                    continue;                                                   \
                }                                                               \
                uint64_t i = rng_below(&rng, n);                                \
                uint64_t j = rng_below(&rng, n - 1);                            \
                j += j >= i;                                                    \
                long amount = 1 + (long)rng_below(&rng, bk->max_amount);        \
                long *from = &bk->acc[(long)i * stride];                        \
                long *to = &bk->acc[(long)j * stride];                          \
                if (sys_bp) {                                                   \
                    int sys = rng_below(&rng, 10000) < sys_bp;                  \
                    TRANSFER_SYS(from, to, amount, sys);                        \
                } else {                                                        \
                    TRANSFER(from, to, amount);                                 \
                }                                                               \
                net[i] -= amount;                                               \
                net[j] += amount;                                               \
            }                                                                   \
            ops += BATCH;                                                       \
        }                                                                       \
        t->ops = ops;                                                           \
        t->bad = bad;                                                           \
        t->rng = rng;                                                           \
    }
DEFINE_WORKER(seq, TRANSFER_SEQ, TRANSFER_SYS_SEQ, TOTAL_SEQ)
DEFINE_WORKER(mutex, TRANSFER_MUTEX, TRANSFER_SYS_MUTEX, TOTAL_MUTEX)
DEFINE_WORKER(rwlock, TRANSFER_RWLOCK, TRANSFER_SYS_RWLOCK, TOTAL_RWLOCK)
DEFINE_WORKER(tx, TRANSFER_TX, TRANSFER_SYS_TX, TOTAL_TX)
DEFINE_WORKER(itm, TRANSFER_ITM, TRANSFER_SYS_ITM, TOTAL_ITM)

static void (*pick_worker(int method))(struct bench_thread *) {
    switch (method) {
    case BM_SEQ:
        return worker_seq;
    case BM_MUTEX:
        return worker_mutex;
    case BM_RWLOCK:
        return worker_rwlock;
    default:
        return bm_is_itm(method) ? worker_itm : worker_tx;
    }
}

/* ------------------------------------------------------------- measurement */

struct bank_run {
    const struct bench_opts *o;
    struct bank *bk;
};

/* One run of one row. 0, or 1 if the total or a read-only sum was wrong. */
static int bank_measure(void *arg, const struct bench_row *r, int run, struct bench_sample *out) {
    const struct bank_run *br = arg;
    struct bank *bk = br->bk;
    const struct bench_opts *o = br->o;
    for (long i = 0; i < bk->n; i++)
        bk->acc[i * bk->stride] = bk->initial;
    struct bench_thread *th = aligned_alloc(BENCH_CACHELINE, sizeof *th * (size_t)r->threads);
    if (!th)
        bench_die("out of memory");
    memset(th, 0, sizeof *th * (size_t)r->threads);
    struct bank_ctx ctx = {.bk = bk,
                           .net = calloc((size_t)r->threads * (size_t)bk->n, sizeof(long))};
    if (!ctx.net)
        bench_die("out of memory");
    for (int i = 0; i < r->threads; i++)
        th[i].ctx = &ctx;
    uint64_t seed =
        o->seed + (uint64_t)run * 1000003u + ((uint64_t)(r->method * 64 + r->threads) << 32);

    tx_stats_t before, after;
    tx_stats_get(&before);
    double secs = bench_run_threads(th, r->threads, pick_worker(r->method), o->seconds, seed);
    tx_stats_get(&after);
    bench_sample_threads(out, th, r->threads, secs);
    bench_stats_delta(&before, &after, &out->tx);
    for (int i = 0; i < r->threads; i++)
        out->anomalies += th[i].bad;
    free(th);

    long total = total_plain(bk->acc, bk->n, bk->stride), wrong = 0, first = -1;
    for (long a = 0; a < bk->n; a++) {
        long want = bk->initial;
        for (int i = 0; i < r->threads; i++)
            want += ctx.net[(size_t)i * (size_t)bk->n + (size_t)a];
        if (bk->acc[a * bk->stride] != want && wrong++ == 0)
            first = a;
    }
    if (total == bk->expect && out->anomalies == 0 && wrong == 0) {
        free(ctx.net);
        return 0;
    }
    bench_progress_done(o);
    if (wrong) {
        long want = bk->initial;
        for (int i = 0; i < r->threads; i++)
            want += ctx.net[(size_t)i * (size_t)bk->n + (size_t)first];
        fprintf(stderr,
                "FAIL: %s, %d threads, run %d: %ld accounts differ from the transfers that "
                "returned (lost or phantom updates); e.g. account %ld is %ld, expected %ld\n",
                bm_name(r->method), r->threads, run + 1, wrong, first, bk->acc[first * bk->stride],
                want);
    }
    free(ctx.net);
    if (total != bk->expect)
        fprintf(stderr, "FAIL: %s, %d threads, run %d: total %ld, expected %ld\n",
                bm_name(r->method), r->threads, run + 1, total, bk->expect);
    if (out->anomalies)
        fprintf(stderr, "FAIL: %s, %d threads, run %d: %llu read-only sums saw a wrong total\n",
                bm_name(r->method), r->threads, run + 1, (unsigned long long)out->anomalies);
    return 1;
}

/* -------------------------------------------------------------------- main */

static void usage(FILE *f) {
    fputs("usage: txkit-bench-bank [options]\n"
          "Bank: transfers between random pairs of accounts, and read-only transactions\n"
          "that sum all accounts; the total must never change.\n"
          "  -a, --accounts N       number of accounts (default 1024)\n"
          "      --sum PCT          % of operations that sum all accounts (default 0)\n"
          "      --amount N         transfer 1..N (default 100)\n"
          "      --initial N        initial balance of each account (default 1000)\n"
          "      --pad              one account per cache line (default: packed longs)\n"
          "      --syscall PCT      % of transfers that make a system call (getppid()) inside\n"
          "                         their transaction (default 0). Every transfer is then a\n"
          "                         __transaction_relaxed for itm (gcc switches it to serial\n"
          "                         irrevocable mode before the call), and calls\n"
          "                         tx_irrevocable() before the call for txkit's API\n",
          f);
    bench_usage_common(f);
}

int main(int argc, char **argv) {
    struct bench_opts o;
    long accounts = 1024, initial = 1000, amount = 100;
    double sum_pct = 0, sys_pct = 0;
    int pad = 0;

    bench_opts_init_methods(&o);

    for (int i = 1; i < argc; i++) {
        const char *v;
        if (bench_parse_common(&o, argc, argv, &i))
            continue;
        if (bench_opt(argc, argv, &i, "--accounts", &v) || bench_opt(argc, argv, &i, "-a", &v)) {
            accounts = bench_parse_long("--accounts", v, 2, 1L << 28);
        } else if (bench_opt(argc, argv, &i, "--sum", &v)) {
            sum_pct = bench_parse_double("--sum", v, 0, 100);
        } else if (bench_opt(argc, argv, &i, "--amount", &v)) {
            amount = bench_parse_long("--amount", v, 1, 1L << 30);
        } else if (bench_opt(argc, argv, &i, "--initial", &v)) {
            initial = bench_parse_long("--initial", v, 0, 1L << 32);
        } else if (bench_opt(argc, argv, &i, "--syscall", &v)) {
            sys_pct = bench_parse_double("--syscall", v, 0, 100);
        } else if (bench_opt(argc, argv, &i, "--pad", NULL)) {
            pad = 1;
        } else {
            return bench_opt_last(argc, argv, &i, usage);
        }
    }

    struct bank bk = {
        .n = accounts,
        .stride = pad ? (long)(BENCH_CACHELINE / sizeof(long)) : 1,
        .initial = initial,
        .expect = accounts * initial,
        .sum_bp = (uint64_t)(sum_pct * 100.0 + 0.5),
        .max_amount = (uint64_t)amount,
        .sys_bp = (uint64_t)(sys_pct * 100.0 + 0.5),
    };
    size_t bytes = (size_t)(bk.n * bk.stride) * sizeof(long);
    bytes = (bytes + BENCH_CACHELINE - 1) / BENCH_CACHELINE * BENCH_CACHELINE;
    bk.acc = aligned_alloc(BENCH_CACHELINE, bytes);
    if (!bk.acc)
        bench_die("out of memory");

    char params[1024];
    snprintf(params, sizeof params,
             "accounts  %ld (%s), initial balance %ld, total %ld\n"
             "ops       %.4g%% transfers of 1..%ld between random pairs, %.4g%% read-only sums of "
             "all accounts\n",
             accounts, pad ? "one per cache line" : "packed longs", initial, bk.expect,
             100.0 - sum_pct, amount, sum_pct);
    if (bk.sys_bp) {
        size_t len = strlen(params);
        snprintf(params + len, sizeof params - len,
                 "syscall   %.4g%% of transfers call getppid() inside the transaction: itm, each "
                 "transfer a\n"
                 "          __transaction_relaxed (serial irrevocable from the call on); txkit's "
                 "API, tx_irrevocable()\n"
                 "          before the call; locks, in the critical section\n",
                 (double)bk.sys_bp / 100.0);
    }
    struct bench_desc desc = {
        .bench = "bank",
        .structure = bk.sys_bp ? "bank-syscall" : "bank",
        .size = accounts,
        .update_pct = 100.0 - sum_pct,
        .params = params,
    };
    bench_print_header(stdout, &desc, &o);

    int nrows;
    struct bench_row *rows = bench_rows_make(&o, &nrows);
    struct bank_run br = {.o = &o, .bk = &bk};
    int failed = bench_run_rows(&o, rows, nrows, bank_measure, &br, bytes);

    int rc = bench_report(&desc, &o, rows, nrows);
    struct bench_outcome oc;
    bench_outcome(rows, nrows, &oc);
    if (oc.check_failed)
        printf(
            "check: FAIL (a balance, the total or a read-only sum was wrong; details on stderr)\n");
    else
        printf("check: ok (after each of %d runs: total %ld unchanged, every balance equal to "
               "initial + the transfers that returned%s)\n",
               oc.runs, bk.expect, bk.sum_bp ? ", every read-only sum equal to the total" : "");
    free(rows);
    free(bk.acc);
    return failed ? 1 : rc ? 2 : 0;
}
