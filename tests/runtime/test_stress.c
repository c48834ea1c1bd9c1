/* SPDX-License-Identifier: MIT */
/* test_stress.c - multi-threaded torture test with oracles.
 *
 *   test_stress --workload bank|opacity|list|hashset [--threads N]
 *               [--seconds S | --ops N] [--mixed] [--fault P]
 *               [--expect-injected] [--seed N]
 *
 * The method comes from TXKIT_METHOD (the htm run skips with exit code 77
 * without usable RTM). --mixed gives thread i its own method with
 * txkit_set_thread_method(): stm, serial, auto (and htm where usable) in turn.
 * --fault P injects aborts with probability P into every method
 * (txkit_set_fault) and then requires that some were injected;
 * --expect-injected requires it too, for TXKIT_FAULT set in the environment.
 *
 * Workloads and their oracles:
 *  bank     transfers between accounts; the total never changes, no balance
 *           goes negative, and read-only transactions that sum every account
 *           always see the total (inside the body and after commit); the
 *           per-account change counters add up to what the threads counted,
 *           and the part of a transfer after tx_irrevocable() runs once.
 *  opacity  x + y == 0 and eight slots that are always equal. Writers update
 *           them with delays in between; readers check the invariants on every
 *           read inside the body, so an inconsistent snapshot seen by an
 *           attempt that later aborts is counted too. Each thread's readings of
 *           x never go backwards, and the final values equal the commits.
 *  list     sorted linked list with insert/delete/lookup, nodes from
 *           tx_malloc and released with tx_free; afterwards sorted, without
 *           duplicates, of the size implied by the successful operations.
 *  hashset  1024 buckets of sorted chains with per-bucket counts, the same
 *           operations plus atomic moves across buckets and audits that
 *           compare chains to counts inside transactions.
 * TXKIT_STRESS_SECONDS (tests/runtime/stress_env.h) replaces --seconds and
 * --ops with a timed run of that length; the seed is --seed, else
 * TXKIT_STRESS_SEED, else a fresh one, and is printed for a replay.
 * Every thread keeps a count of inconsistencies seen; all must be 0. Each
 * thread completes at least one operation, even in timed runs. The process
 * statistics must show exactly one commit per completed operation.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <txkit.h>

#include "test_util.h"

enum workload { W_BANK, W_OPACITY, W_LIST, W_HASHSET };
static const char *const workload_names[] = {"bank", "opacity", "list", "hashset"};

static struct {
    int workload;
    int threads;
    double seconds;
    long ops; /* per thread; 0: timed run */
    int mixed;
    double fault;
    int expect_injected;
    uint64_t seed;
    int have_seed;
} opt = {W_BANK, 4, 1.0, 0, 0, 0.0, 0, 1, 0};

/* One per thread, on its own cache lines. Fields written inside transaction
 * bodies (violations, res) are plain writes to thread-private memory: they are
 * not rolled back by software aborts, which is what the inconsistency counters
 * want, and `res` is rewritten by every attempt, so the committed one wins. */
struct worker {
    _Alignas(64) int id;
    pthread_t th;
    uint64_t rng;
    int method; /* -1: the process method */
    int hw;     /* hardware attempts possible for this thread */
    long ops;
    long violations;      /* inconsistent reads inside transaction bodies */
    long post_violations; /* committed results that break an invariant */
    long res;             /* result of the last transaction */
    long restart_pending; /* bank: restart the next transfer once */
    /* bank */
    long touches;
    long irrevocable_runs; /* bodies that got past tx_irrevocable() */
    long irrevocable_txs;  /* irrevocable transactions completed */
    /* opacity */
    long writes, last_x;
    /* list, hashset */
    long inserted, deleted, moved;
    char pad[64];
};

static struct worker *workers;
static pthread_barrier_t start_barrier;
static atomic_int stop_flag;

static void spin(unsigned n) {
    for (volatile unsigned i = 0; i < n; i++) {
    }
}

/* ================================================================== bank */

#define BANK_N 32
#define BANK_INIT 1000L
#define BANK_TOTAL (BANK_N * BANK_INIT)

struct account {
    _Alignas(64) long balance;
    long touches;
};
static struct account accounts[BANK_N];

static void bank_init(void) {
    for (int i = 0; i < BANK_N; i++) {
        accounts[i].balance = BANK_INIT;
        accounts[i].touches = 0;
    }
}

static void bank_transfer(struct worker *w, int a, int b, long amount, int irrevocable) {
    TX_ATOMIC {
        if (irrevocable) {
            tx_irrevocable();
            /* Past this point the body runs exactly once. */
            w->irrevocable_runs++;
        }
        long ba = TX_LOAD(&accounts[a].balance);
        long bb = TX_LOAD(&accounts[b].balance);
        if (ba < 0 || bb < 0)
            w->violations++;
        if (w->restart_pending && !irrevocable) {
            w->restart_pending = 0;
            tx_restart();
        }
        if (ba >= amount) {
            TX_STORE(&accounts[a].balance, ba - amount);
            TX_STORE(&accounts[b].balance, bb + amount);
            TX_STORE(&accounts[a].touches, TX_LOAD(&accounts[a].touches) + 1);
            TX_STORE(&accounts[b].touches, TX_LOAD(&accounts[b].touches) + 1);
            w->res = 2;
        } else {
            w->res = 0;
        }
    }
    w->touches += w->res;
    w->irrevocable_txs += irrevocable;
}

/* Move 1 from each of four sources to one destination (all distinct). */
static void bank_gather(struct worker *w, const int *src, int dst) {
    TX_ATOMIC {
        long got = 0;
        for (int k = 0; k < 4; k++) {
            long v = TX_LOAD(&accounts[src[k]].balance);
            if (v < 0)
                w->violations++;
            if (v >= 1) {
                TX_STORE(&accounts[src[k]].balance, v - 1);
                TX_STORE(&accounts[src[k]].touches, TX_LOAD(&accounts[src[k]].touches) + 1);
                got++;
            }
        }
        if (got) {
            TX_STORE(&accounts[dst].balance, TX_LOAD(&accounts[dst].balance) + got);
            TX_STORE(&accounts[dst].touches, TX_LOAD(&accounts[dst].touches) + 1);
        }
        w->res = got ? got + 1 : 0;
    }
    w->touches += w->res;
}

static void bank_audit(struct worker *w) {
    TX_ATOMIC {
        long sum = 0;
        for (int i = 0; i < BANK_N; i++) {
            long v = TX_LOAD(&accounts[i].balance);
            if (v < 0)
                w->violations++;
            sum += v;
        }
        if (sum != BANK_TOTAL)
            w->violations++; /* an attempt saw an inconsistent snapshot */
        w->res = sum;
    }
    if (w->res != BANK_TOTAL)
        w->post_violations++;
}

static void bank_op(struct worker *w) {
    uint64_t r = tk_rand(&w->rng);
    unsigned kind = (unsigned)(r % 100);
    if (kind < 65) {
        int a = (int)((r >> 8) % BANK_N);
        int b = (int)((r >> 16) % (BANK_N - 1));
        if (b >= a)
            b++;
        long amount = 1 + (long)((r >> 24) % 200);
        int irrevocable = kind == 0;
        /* an explicit restart now and then, where it cannot loop in hardware */
        if (kind == 1 && !w->hw)
            w->restart_pending = 1;
        bank_transfer(w, a, b, amount, irrevocable);
    } else if (kind < 75) {
        int pick[5];
        int n = 0;
        while (n < 5) {
            int c = (int)(tk_rand(&w->rng) % BANK_N);
            int dup = 0;
            for (int i = 0; i < n; i++)
                dup |= pick[i] == c;
            if (!dup)
                pick[n++] = c;
        }
        bank_gather(w, pick, pick[4]);
    } else {
        bank_audit(w);
    }
}

/* Reports every broken invariant before failing, so one bug cannot hide
 * another. */
static void bank_verify(void) {
    long sum = 0, touches = 0, counted = 0;
    int problems = 0;
    for (int i = 0; i < BANK_N; i++) {
        if (accounts[i].balance < 0) {
            printf("FAIL: account %d has balance %ld\n", i, accounts[i].balance);
            problems++;
        }
        sum += accounts[i].balance;
        touches += accounts[i].touches;
    }
    for (int t = 0; t < opt.threads; t++) {
        counted += workers[t].touches;
        if (workers[t].irrevocable_runs != workers[t].irrevocable_txs) {
            printf("FAIL: thread %d: %ld irrevocable transactions ran their irrevocable part "
                   "%ld times\n",
                   t, workers[t].irrevocable_txs, workers[t].irrevocable_runs);
            problems++;
        }
    }
    if (sum != BANK_TOTAL) {
        printf("FAIL: bank total %ld, expected %ld\n", sum, BANK_TOTAL);
        problems++;
    }
    if (touches != counted) {
        printf("FAIL: account change counters add up to %ld, the threads committed %ld changes "
               "(lost updates)\n",
               touches, counted);
        problems++;
    }
    CHECK_MSG(problems == 0, "bank: %d broken invariants (see above)", problems);
    printf("bank: total %ld, %ld balance changes\n", sum, touches);
}

/* =============================================================== opacity */

#define OP_SLOTS 8
struct slot {
    _Alignas(64) long v;
};
static struct slot op_x, op_y, op_slots[OP_SLOTS];

static void opacity_init(void) {
    op_x.v = 0;
    op_y.v = 0;
    for (int i = 0; i < OP_SLOTS; i++)
        op_slots[i].v = 0;
}

static void opacity_write(struct worker *w, unsigned delay) {
    TX_ATOMIC {
        long x = TX_LOAD(&op_x.v);
        spin(delay);
        long y = TX_LOAD(&op_y.v);
        if (x + y != 0)
            w->violations++;
        long first = TX_LOAD(&op_slots[0].v);
        for (int k = 1; k < OP_SLOTS; k++) {
            spin(delay / 4);
            if (TX_LOAD(&op_slots[k].v) != first)
                w->violations++;
        }
        if (first != x)
            w->violations++;
        TX_STORE(&op_x.v, x + 1);
        spin(delay);
        TX_STORE(&op_y.v, -(x + 1));
        for (int k = 0; k < OP_SLOTS; k++) {
            TX_STORE(&op_slots[k].v, first + 1);
            spin(delay / 4);
        }
        w->res = x + 1;
    }
    w->writes++;
    if (w->res < w->last_x + 1)
        w->post_violations++;
    w->last_x = w->res;
}

static void opacity_read(struct worker *w, unsigned delay, int reverse) {
    TX_ATOMIC {
        long x, y;
        if (!reverse) {
            x = TX_LOAD(&op_x.v);
            spin(delay);
            y = TX_LOAD(&op_y.v);
        } else {
            y = TX_LOAD(&op_y.v);
            spin(delay);
            x = TX_LOAD(&op_x.v);
        }
        if (x + y != 0)
            w->violations++;
        long first = TX_LOAD(&op_slots[reverse ? OP_SLOTS - 1 : 0].v);
        for (int k = 1; k < OP_SLOTS; k++) {
            spin(delay / 4);
            int idx = reverse ? OP_SLOTS - 1 - k : k;
            if (TX_LOAD(&op_slots[idx].v) != first)
                w->violations++;
        }
        /* Read x again at the end: still the same value in this snapshot. */
        if (TX_LOAD(&op_x.v) != x || first != x)
            w->violations++;
        w->res = x;
    }
    if (w->res < w->last_x)
        w->post_violations++; /* a later transaction saw an older state */
    w->last_x = w->res;
}

static void opacity_op(struct worker *w) {
    uint64_t r = tk_rand(&w->rng);
    unsigned kind = (unsigned)(r % 100);
    unsigned delay = (unsigned)((r >> 8) % 200);
    int write_share = w->id % 2 == 0 ? 70 : 10;
    if ((int)kind < write_share)
        opacity_write(w, delay);
    else
        opacity_read(w, delay, (int)((r >> 20) & 1));
}

static void opacity_verify(void) {
    long writes = 0;
    for (int t = 0; t < opt.threads; t++)
        writes += workers[t].writes;
    CHECK_MSG(op_x.v == writes, "x = %ld after %ld committed writes", op_x.v, writes);
    CHECK_MSG(op_y.v == -writes, "y = %ld after %ld committed writes", op_y.v, writes);
    for (int i = 0; i < OP_SLOTS; i++)
        CHECK_MSG(op_slots[i].v == writes, "slot %d = %ld after %ld committed writes", i,
                  op_slots[i].v, writes);
    printf("opacity: %ld committed writes\n", writes);
}

/* ======================================================== sorted chains */

/* The sorted chain of the benchmarks' list and hash set, written once
 * (bench/workloads/chain_ds.h), instantiated here with txkit's barriers. A
 * walk that sees keys that do not increase, or a chain longer than the key
 * range of the running workload, is an inconsistent view: counted for the
 * thread, and the walk stops there. */
static _Thread_local struct worker *tl_worker; /* set by worker_main */
static long chain_max_len;                     /* set by list_init / hs_init */

static int chain_bad(long last, long key, long steps) {
    if (key > last && steps <= chain_max_len)
        return 0;
    tl_worker->violations++;
    return 1;
}

#define DS_NAME(x) x##_tx
#define DS_LD(p) TX_LOAD(p)
#define DS_ST(p, v) TX_STORE(p, v)
#define DS_ALLOC(n) tx_malloc(n)
#define DS_FREE(p) tx_free(p)
#define DS_OOM() CHECK_MSG(0, "tx_malloc failed")
#define DS_CHAIN_BAD(last, key, steps) chain_bad(last, key, steps)
#include "chain_ds.h"
#undef DS_NAME
#undef DS_LD
#undef DS_ST
#undef DS_ALLOC
#undef DS_FREE
#undef DS_OOM
#undef DS_CHAIN_BAD

/* Outside transactions, after the run: length of a valid chain, whose keys
 * must be strictly increasing, in [0, key_range), and satisfy ok(). */
static long chain_check(struct lnode *n, long key_range, long bucket, long (*where)(long)) {
    long len = 0, last = -1;
    for (; n; n = n->next) {
        CHECK_MSG(n->key > last, "chain not strictly increasing: %ld after %ld", n->key, last);
        CHECK_MSG(n->key >= 0 && n->key < key_range, "key %ld out of range", n->key);
        if (where)
            CHECK_MSG(where(n->key) == bucket, "key %ld in bucket %ld, belongs in %ld", n->key,
                      bucket, where(n->key));
        last = n->key;
        len++;
        CHECK(len <= key_range);
    }
    return len;
}

static void chain_free(struct lnode *n) {
    while (n) {
        struct lnode *next = n->next;
        tx_free(n);
        n = next;
    }
}

/* ================================================================== list */

#define LIST_KEYS 256
static struct lnode *list_head;
static long list_initial;

static void list_init(void) {
    struct lnode **link = &list_head;
    chain_max_len = LIST_KEYS;
    list_head = NULL;
    list_initial = 0;
    for (long k = 0; k < LIST_KEYS; k += 2) {
        struct lnode *n = tx_malloc(sizeof *n);
        CHECK(n != NULL);
        n->key = k;
        n->next = NULL;
        *link = n;
        link = &n->next;
        list_initial++;
    }
}

static void list_insert(struct worker *w, long k) {
    TX_ATOMIC {
        w->res = chain_insert_tx(&list_head, k);
    }
    w->inserted += w->res;
}

static void list_delete(struct worker *w, long k) {
    TX_ATOMIC {
        w->res = chain_delete_tx(&list_head, k);
    }
    w->deleted += w->res;
}

static void list_lookup(struct worker *w, long k) {
    TX_ATOMIC {
        w->res = chain_contains_tx(&list_head, k);
    }
}

static void list_op(struct worker *w) {
    uint64_t r = tk_rand(&w->rng);
    unsigned kind = (unsigned)(r % 100);
    long k = (long)((r >> 8) % LIST_KEYS);
    if (kind < 30)
        list_insert(w, k);
    else if (kind < 60)
        list_delete(w, k);
    else
        list_lookup(w, k);
}

static void list_verify(void) {
    long net = 0;
    for (int t = 0; t < opt.threads; t++)
        net += workers[t].inserted - workers[t].deleted;
    long len = chain_check(list_head, LIST_KEYS, 0, NULL);
    CHECK_MSG(len == list_initial + net, "list has %ld nodes, expected %ld + %ld", len,
              list_initial, net);
    printf("list: %ld nodes (%ld initially, net %+ld)\n", len, list_initial, net);
    chain_free(list_head);
    list_head = NULL;
}

/* =============================================================== hashset */

#define HS_BUCKETS 1024
#define HS_KEYS 4096
struct bucket {
    struct lnode *head;
    long count;
};
static struct bucket buckets[HS_BUCKETS];
static long hs_initial;

static long hs_bucket_of(long k) {
    return (long)(((uint64_t)k * 0x9E3779B97F4A7C15ULL) >> 54); /* top 10 bits */
}

static void hs_init(void) {
    memset(buckets, 0, sizeof buckets);
    chain_max_len = HS_KEYS;
    hs_initial = 0;
    /* Insert in decreasing order at the heads: each chain ends up sorted. */
    for (long k = HS_KEYS - 2; k >= 0; k -= 2) {
        struct bucket *b = &buckets[hs_bucket_of(k)];
        struct lnode *n = tx_malloc(sizeof *n);
        CHECK(n != NULL);
        n->key = k;
        n->next = b->head;
        b->head = n;
        b->count++;
        hs_initial++;
    }
}

/* In a transaction: insert or remove k and keep its bucket's count. */
static int hs_insert_in_tx(long k) {
    struct bucket *b = &buckets[hs_bucket_of(k)];
    if (!chain_insert_tx(&b->head, k))
        return 0;
    TX_STORE(&b->count, TX_LOAD(&b->count) + 1);
    return 1;
}

static int hs_remove_in_tx(long k) {
    struct bucket *b = &buckets[hs_bucket_of(k)];
    if (!chain_delete_tx(&b->head, k))
        return 0;
    TX_STORE(&b->count, TX_LOAD(&b->count) - 1);
    return 1;
}

static void hs_insert(struct worker *w, long k) {
    TX_ATOMIC {
        w->res = hs_insert_in_tx(k);
    }
    w->inserted += w->res;
}

static void hs_delete(struct worker *w, long k) {
    TX_ATOMIC {
        w->res = hs_remove_in_tx(k);
    }
    w->deleted += w->res;
}

static void hs_lookup(struct worker *w, long k) {
    TX_ATOMIC {
        w->res = chain_contains_tx(&buckets[hs_bucket_of(k)].head, k);
    }
}

/* Atomically replace a by b when a is present and b is not. */
static void hs_move(struct worker *w, long a, long b) {
    TX_ATOMIC {
        w->res = 0;
        if (chain_contains_tx(&buckets[hs_bucket_of(a)].head, a) &&
            !chain_contains_tx(&buckets[hs_bucket_of(b)].head, b)) {
            if (!hs_remove_in_tx(a))
                w->violations++; /* it was there a moment ago */
            if (!hs_insert_in_tx(b))
                w->violations++;
            w->res = 1;
        }
    }
    w->moved += w->res;
}

/* Chains must match their counts in every snapshot. */
static void hs_audit(struct worker *w, long first) {
    TX_ATOMIC {
        for (long j = 0; j < 8; j++) {
            long bi = (first + j * 131) % HS_BUCKETS;
            long count = TX_LOAD(&buckets[bi].count);
            long len = 0, last = -1;
            for (struct lnode *n = TX_LOAD(&buckets[bi].head); n; n = TX_LOAD(&n->next)) {
                long key = TX_LOAD(&n->key);
                if (key <= last || hs_bucket_of(key) != bi || ++len > HS_KEYS) {
                    w->violations++;
                    break;
                }
                last = key;
            }
            if (len != count)
                w->violations++;
        }
    }
}

static void hs_op(struct worker *w) {
    uint64_t r = tk_rand(&w->rng);
    unsigned kind = (unsigned)(r % 100);
    long k = (long)((r >> 8) % HS_KEYS);
    if (kind < 25)
        hs_insert(w, k);
    else if (kind < 50)
        hs_delete(w, k);
    else if (kind < 80)
        hs_lookup(w, k);
    else if (kind < 90)
        hs_move(w, k, (long)((r >> 24) % HS_KEYS));
    else
        hs_audit(w, (long)((r >> 24) % HS_BUCKETS));
}

static void hs_verify(void) {
    long net = 0, moved = 0, total = 0;
    for (int t = 0; t < opt.threads; t++) {
        net += workers[t].inserted - workers[t].deleted;
        moved += workers[t].moved;
    }
    for (long i = 0; i < HS_BUCKETS; i++) {
        long len = chain_check(buckets[i].head, HS_KEYS, i, hs_bucket_of);
        CHECK_MSG(len == buckets[i].count, "bucket %ld: %ld nodes, count says %ld", i, len,
                  buckets[i].count);
        total += len;
    }
    CHECK_MSG(total == hs_initial + net, "hash set has %ld keys, expected %ld + %ld", total,
              hs_initial, net);
    printf("hashset: %ld keys (%ld initially, net %+ld, %ld moves)\n", total, hs_initial, net,
           moved);
    for (long i = 0; i < HS_BUCKETS; i++) {
        chain_free(buckets[i].head);
        buckets[i].head = NULL;
    }
}

/* ================================================================ driver */

static void (*const op_fns[])(struct worker *) = {bank_op, opacity_op, list_op, hs_op};

static void *worker_main(void *p) {
    struct worker *w = p;
    tl_worker = w;
    if (w->method >= 0) {
        CHECK_EQ(txkit_set_thread_method(w->method), 0);
        CHECK_EQ(txkit_get_method(), w->method);
    }
    w->hw = tk_hw_possible();
    void (*op)(struct worker *) = op_fns[opt.workload];
    int rc = pthread_barrier_wait(&start_barrier);
    CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
    if (opt.ops > 0) {
        while (w->ops < opt.ops) {
            op(w);
            w->ops++;
        }
    } else {
        /* Until told to stop, and at least one operation in any case. */
        while (w->ops == 0 || !atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
            op(w);
            w->ops++;
        }
    }
    CHECK_EQ(tx_in_transaction(), 0);
    return NULL;
}

static void watchdog(int sig) {
    (void)sig;
    static const char msg[] =
        "test_stress: WATCHDOG: the run did not finish in time (deadlock or livelock?)\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    abort();
}

static void usage(const char *prog) {
    fprintf(stderr,
            "usage: %s --workload bank|opacity|list|hashset [--threads N] "
            "[--seconds S | --ops N] [--mixed] [--fault P] [--expect-injected] [--seed N]\n",
            prog);
    exit(2);
}

static void parse_args(int argc, char **argv) {
    int have_workload = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "--workload") == 0 && v) {
            int found = -1;
            for (int k = 0; k < 4; k++)
                if (strcmp(v, workload_names[k]) == 0)
                    found = k;
            if (found < 0)
                usage(argv[0]);
            opt.workload = found;
            have_workload = 1;
            i++;
        } else if (strcmp(a, "--threads") == 0 && v) {
            opt.threads = (int)strtol(v, &end, 10);
            if (*end || opt.threads < 1 || opt.threads > 256)
                usage(argv[0]);
            i++;
        } else if (strcmp(a, "--seconds") == 0 && v) {
            opt.seconds = strtod(v, &end);
            if (*end || !(opt.seconds > 0 && opt.seconds <= 30))
                usage(argv[0]);
            opt.ops = 0;
            i++;
        } else if (strcmp(a, "--ops") == 0 && v) {
            opt.ops = strtol(v, &end, 10);
            if (*end || opt.ops < 1)
                usage(argv[0]);
            i++;
        } else if (strcmp(a, "--fault") == 0 && v) {
            opt.fault = strtod(v, &end);
            if (*end || !(opt.fault >= 0 && opt.fault <= 1))
                usage(argv[0]);
            i++;
        } else if (strcmp(a, "--seed") == 0 && v) {
            opt.seed = strtoull(v, &end, 10);
            if (*end)
                usage(argv[0]);
            opt.have_seed = 1;
            i++;
        } else if (strcmp(a, "--mixed") == 0) {
            opt.mixed = 1;
        } else if (strcmp(a, "--expect-injected") == 0) {
            opt.expect_injected = 1;
        } else {
            usage(argv[0]);
        }
    }
    if (!have_workload)
        usage(argv[0]);
    if (tk_stress_soak()) {
        opt.seconds = tk_stress_seconds(opt.seconds);
        opt.ops = 0;
    }
    if (opt.have_seed)
        printf("test_stress: seed %llu (--seed)\n", (unsigned long long)opt.seed);
    else
        opt.seed = tk_stress_seed("test_stress");
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    parse_args(argc, argv);
    tk_skip_unless_method_usable("test_stress");

    signal(SIGALRM, watchdog);
    alarm(opt.ops > 0 ? 50 : (unsigned)opt.seconds + 40);

    if (opt.fault > 0) {
        CHECK_EQ(txkit_set_fault(TXKIT_STM, opt.fault), 0);
        CHECK_EQ(txkit_set_fault(TXKIT_SERIAL, opt.fault), 0);
        CHECK_EQ(txkit_set_fault(TXKIT_HTM, opt.fault), 0);
    }

    int mixed_methods[TXKIT_NMETHODS];
    int nmixed = 0;
    mixed_methods[nmixed++] = TXKIT_STM;
    mixed_methods[nmixed++] = TXKIT_SERIAL;
    mixed_methods[nmixed++] = TXKIT_AUTO;
    if (txkit_htm_usable())
        mixed_methods[nmixed++] = TXKIT_HTM;

    workers = aligned_alloc(64, sizeof(struct worker) * (size_t)opt.threads);
    CHECK(workers != NULL);
    memset(workers, 0, sizeof(struct worker) * (size_t)opt.threads);

    switch (opt.workload) {
    case W_BANK:
        bank_init();
        break;
    case W_OPACITY:
        opacity_init();
        break;
    case W_LIST:
        list_init();
        break;
    case W_HASHSET:
        hs_init();
        break;
    }

    printf("workload %s, %d threads, %s %g, method %s%s, fault %g\n", workload_names[opt.workload],
           opt.threads, opt.ops ? "ops/thread" : "seconds", opt.ops ? (double)opt.ops : opt.seconds,
           txkit_method_name(txkit_get_method()), opt.mixed ? " (mixed per thread)" : "",
           opt.fault);

    tx_stats_t s0 = tk_stats();
    CHECK_EQ(pthread_barrier_init(&start_barrier, NULL, (unsigned)opt.threads + 1), 0);
    atomic_store(&stop_flag, 0);
    for (int t = 0; t < opt.threads; t++) {
        struct worker *w = &workers[t];
        w->id = t;
        w->rng = tk_seed(opt.seed * 1000003u + (uint64_t)t);
        w->method = opt.mixed ? mixed_methods[t % nmixed] : -1;
        w->last_x = LONG_MIN / 2;
        CHECK_EQ(pthread_create(&w->th, NULL, worker_main, w), 0);
    }
    int rc = pthread_barrier_wait(&start_barrier);
    CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
    double t0 = tk_now();
    if (opt.ops == 0) {
        struct timespec ts;
        ts.tv_sec = (time_t)opt.seconds;
        ts.tv_nsec = (long)((opt.seconds - (double)ts.tv_sec) * 1e9);
        while (nanosleep(&ts, &ts) != 0) {
        }
        atomic_store(&stop_flag, 1);
    }
    for (int t = 0; t < opt.threads; t++)
        CHECK_EQ(pthread_join(workers[t].th, NULL), 0);
    double elapsed = tk_now() - t0;
    tx_stats_t s1 = tk_stats();
    alarm(0);

    long ops = 0, violations = 0, post = 0;
    for (int t = 0; t < opt.threads; t++) {
        struct worker *w = &workers[t];
        printf("  thread %d (%s): %ld ops, %ld inconsistent reads, %ld bad results\n", t,
               w->method >= 0 ? txkit_method_name(w->method) : "process", w->ops, w->violations,
               w->post_violations);
        CHECK(w->ops > 0);
        ops += w->ops;
        violations += w->violations;
        post += w->post_violations;
    }

    uint64_t commits = tx_stats_commits(&s1) - tx_stats_commits(&s0);
    uint64_t aborts = tx_stats_aborts(&s1) - tx_stats_aborts(&s0);
    printf("%ld ops in %.2f s (%.0f/s); commits: htm %llu, stm %llu, serial %llu; %llu aborts:",
           ops, elapsed, (double)ops / elapsed,
           (unsigned long long)(s1.commits[TXKIT_HTM] - s0.commits[TXKIT_HTM]),
           (unsigned long long)(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM]),
           (unsigned long long)(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL]),
           (unsigned long long)aborts);
    for (int c = 0; c < TXKIT_NCAUSES; c++) {
        uint64_t d = s1.aborts_by_cause[c] - s0.aborts_by_cause[c];
        if (d)
            printf(" %s %llu", txkit_cause_name(c), (unsigned long long)d);
    }
    printf("\n");

    /* The data structure itself. */
    switch (opt.workload) {
    case W_BANK:
        bank_verify();
        break;
    case W_OPACITY:
        opacity_verify();
        break;
    case W_LIST:
        list_verify();
        break;
    case W_HASHSET:
        hs_verify();
        break;
    }
    CHECK_MSG(violations == 0, "%ld inconsistent reads inside transactions (opacity violated)",
              violations);
    CHECK_MSG(post == 0, "%ld committed transactions returned results that break the invariant",
              post);

    /* The statistics agree with what the threads did. */
    CHECK_MSG(commits == (uint64_t)ops, "stats: %llu commits for %ld completed transactions",
              (unsigned long long)commits, ops);
    CHECK_EQ(s1.transactions - s0.transactions, ops);
    CHECK_EQ(s1.threads - s0.threads, opt.threads);
    CHECK_EQ(s1.commits[TXKIT_AUTO], 0);
    CHECK_EQ(s1.aborts[TXKIT_AUTO], 0);
    if (opt.fault > 0 || opt.expect_injected) {
        uint64_t injected =
            s1.aborts_by_cause[TXKIT_CAUSE_INJECTED] - s0.aborts_by_cause[TXKIT_CAUSE_INJECTED];
        CHECK_MSG(injected > 0, "fault injection requested, but no injected aborts in %ld ops",
                  ops);
    }
    if (opt.mixed && opt.threads >= 2)
        CHECK(s1.commits[TXKIT_SERIAL] > s0.commits[TXKIT_SERIAL]); /* thread 1 is serial */
    if (tk_env_method() == TXKIT_SERIAL && !opt.mixed)
        CHECK_EQ(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL], ops);

    pthread_barrier_destroy(&start_barrier);
    free(workers);
    printf("PASS\n");
    return 0;
}
