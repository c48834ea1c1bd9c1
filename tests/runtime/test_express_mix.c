/* SPDX-License-Identifier: MIT */
/* test_express_mix.c - random sequences of every kind of block, from both
 * front ends, on one thread that is mostly alone, against a model of what
 * they must leave behind.
 *
 *   test_express_mix [seconds]        (default 2; TXKIT_STRESS_SECONDS, a seed:
 *                                      TXKIT_STRESS_SEED, see stress_env.h)
 *
 * The express begins and commits (runtime/express.h) carry state from one
 * transaction to the next: the last block's site, its statistics row, the
 * barriers' access bits, the undo log's start, a parked clock. The targeted
 * tests (solo_park, sw_express, abi_express) change one thing at a time;
 * here the main thread draws its next operation at random, usually the same
 * as the last one (runs of one block, so that the express paths are taken),
 * from:
 *   - TX_ATOMIC blocks at several sites: plain read-modify-writes, a nested
 *     block, a restart that must undo its first attempt's stores, commit and
 *     abort handlers, tx_irrevocable, tx_malloc / tx_free of list nodes, a
 *     write set larger than the inline one read back, tx_memcpy, a
 *     read-only sum checked against the model inside the block;
 *   - gcc __transaction_atomic blocks (this file is compiled with -fgnu-tm and
 *     bound to txkit's libitm ABI): read-modify-writes, malloc / free of the
 *     same list's nodes, __transaction_cancel, a __transaction_relaxed block
 *     that becomes irrevocable;
 *   - the thread's own method (txkit_set_thread_method), switched at random;
 *   - a helper thread started or stopped (the main thread is no longer alone
 *     and later parks again), which updates the counter the main thread's
 *     blocks update too, and cells of its own.
 * Meanwhile a third thread switches the process's method now and then.
 *
 * Oracle: every cell of the main thread and of the helpers equals its model,
 * also when read inside a block; the shared counter equals the increments of
 * every committed block; the list holds the model's nodes in order; commit
 * handlers ran once per committed block that registered one, abort handlers
 * at least once per restart (exactly once without RTM or fault injection);
 * the statistics count every outermost block begun, and as committed every
 * one but the cancelled.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <txkit.h>

#include "test_util.h"

#define NCELL 64     /* the main thread's cells (more than the inline write set) */
#define HCELL 8      /* each helper's */
#define MAXLIST 4096 /* nodes the model's list holds at most */

static long cell[NCELL], model[NCELL];
static short small[16],
    small_model[16];                 /* 2-byte stores: the runtime's barrier, not the inline one */
static long shared_ctr;              /* every thread's blocks add to it */
static atomic_long shared_expect;    /* what they added, once committed */
static long helper_cell[2][HCELL];   /* a helper's own (two slots: one runs at a time) */
static atomic_long transactions_run; /* outermost blocks begun, all threads */
static atomic_long cancelled_run;    /* of which cancelled (gcc __transaction_cancel) */

struct node {
    long v;
    struct node *next;
};
static struct node *head;
static long list_model[MAXLIST], list_len;

static long commit_handlers, commit_expect;
static long abort_handlers, restarts;
static volatile long bad_inside; /* a block read something else than the model */
static volatile long io;         /* touched by a call gcc cannot instrument */
int cancel_now = 1;              /* extern: gcc cannot fold the cancel away */

static uint64_t rng; /* the main thread's (tk_rand) */
static unsigned below(unsigned n) { return (unsigned)(tk_rand(&rng) % n); }

static void on_commit(void *arg) { (void)arg, commit_handlers++; }
static void on_abort(void *arg) { (void)arg, abort_handlers++; }
__attribute__((noinline)) static void not_instrumented(void) { io++; }

static void ran(int n) { atomic_fetch_add(&transactions_run, n); }
static void shared_added(long n) { atomic_fetch_add(&shared_expect, n); }

/* ------------------------------------------------------- TX_ATOMIC blocks */

__attribute__((noinline)) static void tx_plain(unsigned i, unsigned j, long v) {
    TX_ATOMIC {
        TX_STORE(&cell[i], TX_LOAD(&cell[i]) + v);
        TX_STORE(&cell[j], TX_LOAD(&cell[j]) - 2 * v);
        TX_STORE(&shared_ctr, TX_LOAD(&shared_ctr) + 1);
    }
    model[i] += v;
    model[j] -= 2 * v;
    shared_added(1);
    ran(1);
}

/* The same, at another site. */
__attribute__((noinline)) static void tx_plain2(unsigned i, long v) {
    TX_ATOMIC {
        TX_STORE(&cell[i], TX_LOAD(&cell[i]) ^ v);
    }
    model[i] ^= v;
    ran(1);
}

__attribute__((noinline)) static void tx_nested(unsigned i, unsigned j, long v) {
    TX_ATOMIC {
        TX_STORE(&cell[i], TX_LOAD(&cell[i]) + v);
        TX_ATOMIC {
            TX_STORE(&cell[j], TX_LOAD(&cell[j]) + v);
            TX_STORE(&shared_ctr, TX_LOAD(&shared_ctr) + 1);
        }
        TX_STORE(&cell[i], TX_LOAD(&cell[i]) + 1);
    }
    model[i] += v + 1;
    model[j] += v;
    shared_added(1);
    ran(1);
}

/* The first attempt stores, then restarts: only the second's stores stay. */
__attribute__((noinline)) static void tx_restart_once(unsigned i, unsigned j, long v,
                                                      int handlers) {
    volatile int tries = 0;
    TX_ATOMIC {
        if (handlers) {
            CHECK(tx_on_commit(on_commit, NULL) == 0);
            CHECK(tx_on_abort(on_abort, NULL) == 0);
        }
        TX_STORE(&cell[i], TX_LOAD(&cell[i]) + v);
        TX_STORE(&cell[j], TX_LOAD(&cell[j]) + 1000000);
        if (tries++ == 0)
            tx_restart();
        TX_STORE(&cell[j], TX_LOAD(&cell[j]) - 1000000);
    }
    model[i] += v;
    restarts += handlers;
    commit_expect += handlers;
    ran(1);
}

__attribute__((noinline)) static void tx_handlers(unsigned i, long v) {
    TX_ATOMIC {
        CHECK(tx_on_commit(on_commit, NULL) == 0);
        TX_STORE(&cell[i], TX_LOAD(&cell[i]) + v);
    }
    model[i] += v;
    commit_expect++;
    ran(1);
}

__attribute__((noinline)) static void tx_irrevocable_rmw(unsigned i, unsigned j, long v) {
    TX_ATOMIC {
        TX_STORE(&cell[i], TX_LOAD(&cell[i]) + v);
        tx_irrevocable();
        TX_STORE(&cell[j], TX_LOAD(&cell[j]) + v);
        TX_STORE(&shared_ctr, TX_LOAD(&shared_ctr) + 1);
    }
    model[i] += v;
    model[j] += v;
    shared_added(1);
    ran(1);
}

/* A pop (by a block of front end who) returned v: the model's top, or -1
 * for an empty list. */
static void popped(long v, const char *who) {
    if (list_len == 0) {
        CHECK_MSG(v == -1, "%s popped %ld from an empty list", who, v);
        return;
    }
    long want = list_model[--list_len];
    CHECK_MSG(v == want, "%s popped %ld, the model's top is %ld", who, v, want);
}

__attribute__((noinline)) static void tx_push(long v) {
    if (list_len == MAXLIST)
        return;
    TX_ATOMIC {
        struct node *n = tx_malloc(sizeof *n);
        CHECK(n != NULL);
        TX_STORE(&n->v, v);
        TX_STORE(&n->next, TX_LOAD(&head));
        TX_STORE(&head, n);
    }
    list_model[list_len++] = v;
    ran(1);
}

__attribute__((noinline)) static void tx_pop(void) {
    volatile long v = -1; /* assigned inside the block: -Wclobbered */
    TX_ATOMIC {
        struct node *n = TX_LOAD(&head);
        v = -1;
        if (n) {
            v = TX_LOAD(&n->v);
            TX_STORE(&head, TX_LOAD(&n->next));
            tx_free(n);
        }
    }
    ran(1);
    popped(v, "TX_ATOMIC");
}

/* Every cell, read back after the block wrote it: more entries than the
 * inline write set holds (the indexed one). */
__attribute__((noinline)) static void tx_big(void) {
    volatile int bad = 0;
    TX_ATOMIC {
        bad = 0;
        for (unsigned k = 0; k < NCELL; k++)
            TX_STORE(&cell[k], TX_LOAD(&cell[k]) + (long)k);
        int b = 0;
        for (unsigned k = 0; k < NCELL; k++)
            b |= TX_LOAD(&cell[k]) != model[k] + (long)k;
        bad = b;
    }
    for (unsigned k = 0; k < NCELL; k++)
        model[k] += (long)k;
    if (bad)
        bad_inside++;
    ran(1);
}

__attribute__((noinline)) static void tx_copy(unsigned i) {
    const unsigned n = NCELL / 4, from = i % (NCELL / 2 - n), to = NCELL / 2 + i % (NCELL / 2 - n);
    TX_ATOMIC {
        tx_memcpy(&cell[to], &cell[from], n * sizeof cell[0]);
    }
    memcpy(&model[to], &model[from], n * sizeof model[0]);
    ran(1);
}

/* Stores that the runtime takes (2 bytes, tx_memcpy), then a restart once:
 * the undo log must hold this attempt's records only, whichever way they
 * were written. */
__attribute__((noinline)) static void tx_small_restart(unsigned i, unsigned j, long v) {
    volatile int tries = 0;
    unsigned k = i % 16, from = j % (NCELL / 2);
    TX_ATOMIC {
        TX_STORE(&small[k], (short)(TX_LOAD(&small[k]) + 1));
        TX_STORE(&cell[i], TX_LOAD(&cell[i]) + v);
        tx_memcpy(&cell[NCELL / 2 + from], &cell[from], sizeof cell[0]);
        if (tries++ == 0) {
            TX_STORE(&small[(k + 1) % 16], (short)-1);
            tx_restart();
        }
    }
    small_model[k] = (short)(small_model[k] + 1);
    model[i] += v;
    model[NCELL / 2 + from] = model[from];
    ran(1);
}

__attribute__((noinline)) static void tx_sum(void) {
    long want = 0;
    for (unsigned k = 0; k < NCELL; k++)
        want += model[k];
    volatile long s = 0;
    TX_ATOMIC {
        long sum = 0;
        for (unsigned k = 0; k < NCELL; k++)
            sum += TX_LOAD(&cell[k]);
        s = sum;
    }
    if (s != want)
        bad_inside++;
    ran(1);
}

/* ------------------------------------------------------------- gcc blocks */

__attribute__((noinline)) static void gcc_plain(unsigned i, unsigned j, long v) {
    __transaction_atomic {
        cell[i] += v;
        cell[j] += 3 * v;
        shared_ctr++;
    }
    model[i] += v;
    model[j] += 3 * v;
    shared_added(1);
    ran(1);
}

__attribute__((noinline)) static void gcc_push(long v) {
    if (list_len == MAXLIST)
        return;
    int ok = 1;
    __transaction_atomic {
        struct node *n = malloc(sizeof *n);
        if (n) {
            n->v = v;
            n->next = head;
            head = n;
        } else {
            ok = 0;
        }
    }
    CHECK(ok);
    list_model[list_len++] = v;
    ran(1);
}

__attribute__((noinline)) static void gcc_pop(void) {
    long v = -1;
    __transaction_atomic {
        struct node *n = head;
        if (n) {
            v = n->v;
            head = n->next;
            free(n);
        }
    }
    ran(1);
    popped(v, "gcc");
}

__attribute__((noinline)) static void gcc_cancel(unsigned i, long v) {
    __transaction_atomic {
        cell[i] = v; /* a plain store: undone by the cancel */
        if (cancel_now)
            __transaction_cancel;
        cell[i] = -v;
    }
    ran(1);
    atomic_fetch_add(&cancelled_run, 1);
}

__attribute__((noinline)) static void gcc_relaxed(unsigned i, long v) {
    __transaction_relaxed {
        cell[i] += v;
        not_instrumented();
        shared_ctr++;
    }
    model[i] += v;
    shared_added(1);
    ran(1);
}

/* ------------------------------------------------------------ other threads */

static atomic_int helper_stop, chaos_stop;

struct helper {
    pthread_t tid;
    int running, slot;
    uint64_t rng; /* its tk_rand state (never 0) */
};

static void *helper_main(void *arg) {
    struct helper *h = arg;
    long *mine = helper_cell[h->slot];
    long want[HCELL];
    memcpy(want, mine, sizeof want);
    volatile long added = 0, blocks = 0; /* live across the blocks: -Wclobbered */
    while (!atomic_load(&helper_stop)) {
        uint64_t x = tk_rand(&h->rng);
        unsigned k = (unsigned)(x % HCELL);
        if (x & 0x100) {
            TX_ATOMIC {
                TX_STORE(&mine[k], TX_LOAD(&mine[k]) + 1);
                TX_STORE(&shared_ctr, TX_LOAD(&shared_ctr) + 1);
            }
        } else {
            __transaction_atomic {
                mine[k]++;
                shared_ctr++;
            }
        }
        want[k]++;
        added++;
        blocks++;
    }
    shared_added(added);
    ran((int)blocks);
    for (unsigned k = 0; k < HCELL; k++)
        CHECK_MSG(mine[k] == want[k], "helper cell %u: %ld, want %ld", k, mine[k], want[k]);
    return NULL;
}

static void helper_start(struct helper *h) {
    if (h->running)
        return;
    atomic_store(&helper_stop, 0);
    h->slot ^= 1;
    h->rng = tk_rand(&rng) | 1;
    CHECK(pthread_create(&h->tid, NULL, helper_main, h) == 0);
    h->running = 1;
}

static void helper_join(struct helper *h) {
    if (!h->running)
        return;
    atomic_store(&helper_stop, 1);
    CHECK(pthread_join(h->tid, NULL) == 0);
    h->running = 0;
}

static txkit_method_t methods[4];
static int nmethods;

/* Switches the process's method now and then. */
static void *chaos_main(void *arg) {
    uint64_t r = (uintptr_t)arg | 1;
    while (!atomic_load(&chaos_stop)) {
        struct timespec ts = {0, 300000 + (long)(r % 1000000)};
        nanosleep(&ts, NULL);
        CHECK(txkit_set_method(methods[tk_rand(&r) % (unsigned)nmethods]) == 0);
    }
    return NULL;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    double secs = tk_stress_seconds(argc > 1 ? atof(argv[1]) : 2.0);
    rng = tk_stress_seed("test_express_mix");
    txkit_method_t env = tk_env_method();
    tk_skip_unless_method_usable("test_express_mix");
    methods[nmethods++] = TXKIT_AUTO;
    methods[nmethods++] = TXKIT_STM;
    methods[nmethods++] = TXKIT_SERIAL;
    if (txkit_htm_usable())
        methods[nmethods++] = TXKIT_HTM;

    tx_stats_t s0, s1;
    CHECK(tx_stats_get(&s0) == 0);
    pthread_t chaos;
    CHECK(pthread_create(&chaos, NULL, chaos_main, (void *)(uintptr_t)tk_rand(&rng)) == 0);
    struct helper h;
    memset(&h, 0, sizeof h);

    double end = tk_now() + secs;
    long ops = 0, switches = 0;
    unsigned op = 0;
    while (tk_now() < end) {
        for (int burst = 0; burst < 64; burst++) {
            if (below(8) == 0) /* mostly the same block again: its express path */
                op = below(21);
            unsigned i = below(NCELL), j = below(NCELL);
            long v = (long)below(1000) + 1;
            switch (op) {
            case 0:
            case 1:
            case 2:
                tx_plain(i, j, v);
                break;
            case 3:
                tx_plain2(i, v);
                break;
            case 4:
                tx_nested(i, j, v);
                break;
            case 5:
                tx_restart_once(i, j, v, below(2));
                break;
            case 6:
                tx_handlers(i, v);
                break;
            case 7:
                tx_irrevocable_rmw(i, j, v);
                break;
            case 8:
                tx_push(v);
                break;
            case 9:
                tx_pop();
                break;
            case 10:
                tx_big();
                break;
            case 11:
                tx_copy(i);
                break;
            case 12:
                tx_sum();
                break;
            case 13:
            case 14:
                gcc_plain(i, j, v);
                break;
            case 15:
                below(2) ? gcc_push(v) : gcc_pop();
                break;
            case 16:
                gcc_cancel(i, v);
                break;
            case 17:
                gcc_relaxed(i, v);
                break;
            case 18:
                tx_small_restart(i, j, v);
                break;
            case 19: /* the thread's own method, or the process's again */
                CHECK(txkit_set_thread_method(below(3) ? (int)methods[below((unsigned)nmethods)]
                                                       : -1) == 0);
                switches++;
                op = below(19);
                break;
            default: /* another thread comes, or goes */
                if (h.running)
                    helper_join(&h);
                else
                    helper_start(&h);
                op = below(19);
                break;
            }
            ops++;
        }
    }
    helper_join(&h);
    atomic_store(&chaos_stop, 1);
    CHECK(pthread_join(chaos, NULL) == 0);
    CHECK(txkit_set_thread_method(-1) == 0);
    CHECK(txkit_set_method(env) == 0);
    CHECK(tx_stats_get(&s1) == 0);

    for (unsigned k = 0; k < NCELL; k++)
        CHECK_MSG(cell[k] == model[k], "cell %u: %ld, the model %ld", k, cell[k], model[k]);
    for (unsigned k = 0; k < 16; k++)
        CHECK_MSG(small[k] == small_model[k], "small cell %u: %d, the model %d", k, small[k],
                  small_model[k]);
    CHECK_MSG(bad_inside == 0, "%ld blocks read other values than the model's", bad_inside);
    CHECK_EQ(shared_ctr, atomic_load(&shared_expect));
    long n = 0;
    for (struct node *p = head; p; p = p->next, n++)
        CHECK_MSG(n < list_len && p->v == list_model[list_len - 1 - n],
                  "list node %ld: %ld, the model %ld", n, p->v,
                  n < list_len ? list_model[list_len - 1 - n] : -1);
    CHECK_EQ(n, list_len);
    CHECK_EQ(commit_handlers, commit_expect);
    long begun = atomic_load(&transactions_run), cancels = atomic_load(&cancelled_run);
    /* abort handlers: once per restart, and once per other abort of those
     * attempts (a conflict, a revoked parked clock, an injected abort) */
    long aborts = tk_check_block_stats("test_express_mix", &s0, &s1, begun, begun - cancels,
                                       abort_handlers, restarts);
    printf("test_express_mix: %ld operations, %ld blocks (%ld cancelled), %ld own-method "
           "switches, %ld restarts with handlers, %ld aborts; serial %llu, stm %llu, htm %llu "
           "commits\n",
           ops, begun, cancels, switches, restarts, aborts,
           (unsigned long long)(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL]),
           (unsigned long long)(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM]),
           (unsigned long long)(s1.commits[TXKIT_HTM] - s0.commits[TXKIT_HTM]));
    while (head) {
        struct node *p = head;
        head = p->next;
        free(p);
    }
    return 0;
}
