/* SPDX-License-Identifier: MIT */
/* test_handlers.c - what src/runtime/handlers.c keeps until the end of an
 * attempt (include/txkit/tx.h): commit and abort handlers (order, once only,
 * transactions inside them, copies), tx_malloc'ed blocks freed on abort and
 * tx_free'd ones at commit, also under injected aborts. See api_util.h for
 * how these programs run. */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api_util.h"

/* =============================================================== handlers */

#define MAX_EVENTS 4096
static int g_events[MAX_EVENTS];
static volatile int g_nevents;
static long g_hx;

static void reset_events(void) {
    g_nevents = 0;
    memset(g_events, 0, sizeof g_events);
}

static void record_handler(void *arg) {
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK(g_nevents < MAX_EVENTS);
    g_events[g_nevents] = (int)(intptr_t)arg;
    g_nevents = g_nevents + 1;
}

/* Abort handler that also checks that the rollback happened before it ran. */
static void record_abort_handler(void *arg) {
    CHECK_EQ(g_hx, 0);
    record_handler(arg);
}

static void test_on_commit_order_once(void) {
    reset_events();
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        for (int i = 0; i < 5; i++)
            CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)(100 * n + i)), 0);
        CHECK_EQ(g_nevents, 0); /* not before the commit */
        if (n == 0)
            tx_restart(); /* discards the first attempt's registrations */
        TX_ATOMIC {
            CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)(100 * n + 5)), 0);
        }
        CHECK_EQ(g_nevents, 0); /* not at the end of a nested block either */
    }
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    CHECK_EQ(g_nevents, 6);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(g_events[i], 100 + i);
    /* Once only: later transactions do not run them again. */
    TX_ATOMIC {
        TX_STORE(&g_hx, 0);
    }
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)7), 0);
    }
    CHECK_EQ(g_nevents, 7);
    CHECK_EQ(g_events[6], 7);

    /* Many registrations keep their order. */
    reset_events();
    TX_ATOMIC {
        for (int i = 0; i < 3000; i++)
            CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)i), 0);
    }
    CHECK_EQ(g_nevents, 3000);
    for (int i = 0; i < 3000; i++)
        CHECK_EQ(g_events[i], i);

    /* Outside a transaction fn(arg) runs at once. */
    reset_events();
    CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)42), 0);
    CHECK_EQ(g_nevents, 1);
    CHECK_EQ(g_events[0], 42);
}

static void test_on_abort_order(void) {
    reset_events();
    g_hx = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        CHECK_EQ(TX_LOAD(&g_hx), 0);
        TX_STORE(&g_hx, 1); /* record_abort_handler checks this was undone */
        CHECK_EQ(tx_on_abort(record_abort_handler, (void *)(intptr_t)1), 0);
        CHECK_EQ(tx_on_abort(record_abort_handler, (void *)(intptr_t)2), 0);
        TX_ATOMIC {
            CHECK_EQ(tx_on_abort(record_abort_handler, (void *)(intptr_t)3), 0);
        }
        if (n < 2)
            tx_restart();
        TX_STORE(&g_hx, 0);
    }
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 2);
    if (!tk_hw_possible()) {
        /* Two aborted attempts, newest registration first; none at commit. */
        static const int want[] = {3, 2, 1, 3, 2, 1};
        CHECK_EQ(g_nevents, 6);
        for (int i = 0; i < 6; i++)
            CHECK_EQ(g_events[i], want[i]);
        CHECK_EQ(a.handler_runs, 2);
    } else {
        /* Hardware attempts run no abort handlers; software ones in order. */
        CHECK(g_nevents % 3 == 0 && g_nevents <= 6);
        for (int i = 0; i < g_nevents; i++)
            CHECK_EQ(g_events[i], 3 - i % 3);
    }
    CHECK_EQ(g_hx, 0);

    /* Outside a transaction tx_on_abort does nothing, now or later. */
    reset_events();
    CHECK_EQ(tx_on_abort(record_handler, (void *)(intptr_t)9), 0);
    CHECK_EQ(g_nevents, 0);
    tk_attempts_init(&a);
    TX_ATOMIC {
        if (tk_attempt_no(&a) == 0)
            tx_restart();
    }
    for (int i = 0; i < g_nevents; i++)
        CHECK(g_events[i] != 9);
    CHECK_EQ(g_nevents, 0);
}

/* A handler runs outside any transaction, so it may run one of its own. */
static long g_in_handler_tx;

static void handler_inner_commit(void *arg) {
    (void)arg;
    CHECK_EQ(tx_in_transaction(), 0);
    g_in_handler_tx += 100;
}

static void handler_with_tx(void *arg) {
    CHECK_EQ(tx_in_transaction(), 0);
    TX_ATOMIC {
        CHECK_EQ(tx_in_transaction(), 1);
        TX_STORE(&g_in_handler_tx, TX_LOAD(&g_in_handler_tx) + (long)(intptr_t)arg);
        CHECK_EQ(tx_on_commit(handler_inner_commit, NULL), 0);
    }
    CHECK_EQ(tx_in_transaction(), 0);
}

static void test_commit_handler_runs_transaction(void) {
    g_in_handler_tx = 0;
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(handler_with_tx, (void *)(intptr_t)5), 0);
        CHECK_EQ(tx_on_commit(handler_with_tx, (void *)(intptr_t)7), 0);
    }
    CHECK_EQ(g_in_handler_tx, 5 + 100 + 7 + 100);
}

/* An abort handler runs outside any transaction too, so it may start one;
 * afterwards the aborted transaction must retry and commit normally. */
static void test_abort_handler_runs_transaction(void) {
    g_in_handler_tx = 0;
    g_hx = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        TX_STORE(&g_hx, TX_LOAD(&g_hx) + 1);
        CHECK_EQ(tx_on_abort(handler_with_tx, (void *)(intptr_t)1), 0);
        if (n == 0)
            tx_restart();
    }
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_hx, 1);
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    if (!tk_hw_possible())
        CHECK_EQ(g_in_handler_tx, 1 + 100);
}

/* tx_on_commit_copy: the handler sees the data as it was at registration. */
struct cc_data {
    int a;
    double b;
    char s[40];
};
static struct cc_data g_cc_src;
static struct cc_data g_cc_seen[8];
static volatile int g_cc_n;
static const void *g_cc_ptrs[8];

static void cc_handler(void *p) {
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK((uintptr_t)p % alignof(max_align_t) == 0);
    CHECK(g_cc_n < 8);
    memcpy(&g_cc_seen[g_cc_n], p, sizeof(struct cc_data));
    g_cc_ptrs[g_cc_n] = p;
    g_cc_n = g_cc_n + 1;
}

static unsigned char g_big_copy_src[10000];
static volatile int g_big_copy_ok;

static void big_copy_handler(void *p) {
    CHECK((uintptr_t)p % alignof(max_align_t) == 0);
    const unsigned char *c = p;
    for (size_t i = 0; i < sizeof g_big_copy_src; i++)
        CHECK_EQ(c[i], (unsigned char)(i * 13 + 5));
    g_big_copy_ok = g_big_copy_ok + 1;
}

static volatile int g_odd_copy_ok;

static void odd_copy_handler(void *p) {
    CHECK((uintptr_t)p % alignof(max_align_t) == 0);
    CHECK(memcmp(p, "xyz", 3) == 0);
    g_odd_copy_ok = g_odd_copy_ok + 1;
}

static void test_on_commit_copy(void) {
    g_cc_n = 0;
    memset(&g_cc_src, 0, sizeof g_cc_src);
    g_cc_src.a = 1;
    g_cc_src.b = 2.5;
    strcpy(g_cc_src.s, "first");
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        struct cc_data local = {10 + n, 0.5, "local"};
        CHECK_EQ(tx_on_commit_copy(cc_handler, &local, sizeof local), 0);
        local.a = -1; /* changed after registration: the copy keeps 10 + n */
        strcpy(local.s, "clobbered");
        CHECK_EQ(tx_on_commit_copy(cc_handler, &g_cc_src, sizeof g_cc_src), 0);
        TX_STORE(&g_cc_src.a, 99);
        CHECK_EQ(g_cc_n, 0);
        if (n == 0)
            tx_restart();
    }
    CHECK_EQ(g_cc_n, 2); /* the aborted attempt's two are discarded */
    CHECK_EQ(g_cc_seen[0].a, 11);
    CHECK(g_cc_seen[0].b == 0.5);
    CHECK(strcmp(g_cc_seen[0].s, "local") == 0);
    CHECK_EQ(g_cc_seen[1].a, 1);
    CHECK(strcmp(g_cc_seen[1].s, "first") == 0);
    CHECK(g_cc_ptrs[1] != (const void *)&g_cc_src);
    CHECK_EQ(g_cc_src.a, 99);

    /* Odd and large sizes. */
    for (size_t i = 0; i < sizeof g_big_copy_src; i++)
        g_big_copy_src[i] = (unsigned char)(i * 13 + 5);
    g_big_copy_ok = 0;
    g_odd_copy_ok = 0;
    TX_ATOMIC {
        char odd[3] = {'x', 'y', 'z'};
        CHECK_EQ(tx_on_commit_copy(odd_copy_handler, odd, sizeof odd), 0);
        CHECK_EQ(tx_on_commit_copy(big_copy_handler, g_big_copy_src, sizeof g_big_copy_src), 0);
        odd[0] = 'q';
        g_big_copy_src[0] = 0; /* plain write after registration */
        CHECK_EQ(tx_on_commit_copy(odd_copy_handler, "xyz", 3), 0);
    }
    CHECK_EQ(g_odd_copy_ok, 2);
    CHECK_EQ(g_big_copy_ok, 1);

    /* Mixed with tx_on_commit: one registration order. */
    reset_events();
    g_cc_n = 0;
    TX_ATOMIC {
        struct cc_data d = {5, 5.0, "five"};
        CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)1), 0);
        CHECK_EQ(tx_on_commit_copy(cc_handler, &d, sizeof d), 0);
        CHECK_EQ(tx_on_commit(record_handler, (void *)(intptr_t)2), 0);
    }
    CHECK_EQ(g_nevents, 2);
    CHECK_EQ(g_cc_n, 1);
    CHECK_EQ(g_cc_seen[0].a, 5);

    /* Outside a transaction: at once, still with a copy. */
    g_cc_n = 0;
    struct cc_data out = {7, 7.0, "outside"};
    CHECK_EQ(tx_on_commit_copy(cc_handler, &out, sizeof out), 0);
    CHECK_EQ(g_cc_n, 1);
    CHECK_EQ(g_cc_seen[0].a, 7);
    CHECK(strcmp(g_cc_seen[0].s, "outside") == 0);
}

/* ========================================================= tx_malloc/free */

static void *g_slot;

static void malloc_with_3_restarts(void) {
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        unsigned char *b = tx_malloc(BLK);
        CHECK(b != NULL);
        memset(b, n, BLK); /* new private memory: plain writes */
        TX_STORE(&g_slot, (void *)b);
        if (n < 3)
            tx_restart();
    }
    unsigned char *b = g_slot;
    CHECK_EQ(b[0], 3);
    CHECK_EQ(b[BLK - 1], 3);
    tx_free(b);
}

static void test_tx_malloc_basic(void) {
    /* Outside a transaction: malloc and free. */
    void *p = tx_malloc(100);
    CHECK(p != NULL);
    memset(p, 1, 100);
    tx_free(p);
    tx_free(NULL);

    /* Committed blocks stay; blocks of aborted attempts are freed. Warm the
     * runtime's logs first, then measure. */
    for (int round = 0; round < 2; round++) {
        size_t before = heap_in_use();
        const int iters = round == 0 ? 20 : 200;
        for (int it = 0; it < iters; it++)
            malloc_with_3_restarts();
        size_t after = heap_in_use();
        if (round == 1)
            HEAP_CHECK(after <= before + HEAP_SLACK,
                       "heap grew by %zu bytes over %d transactions that each aborted 3 "
                       "attempts holding a %d-byte tx_malloc block",
                       after - before, iters, BLK);
    }
}

/* tx_free is deferred to the commit, and undone by an abort. Returns the
 * heap in use before the block was allocated. */
static size_t free_deferred_once(void) {
    size_t base = heap_in_use();
    unsigned char *p = malloc(BLK);
    CHECK(p != NULL);
    memset(p, 0xAB, BLK);
    g_slot = p;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        unsigned char *q = TX_LOAD(&g_slot);
        CHECK(q != NULL);
        tx_free(q);
        /* Still allocated: free() would have overwritten the first bytes. */
        for (int i = 0; i < 64; i++)
            CHECK_EQ(q[i], 0xAB);
        TX_STORE(&g_slot, NULL);
        if (n < 2)
            tx_restart(); /* a free done by an aborted attempt would double-free */
    }
    CHECK(g_slot == NULL);
    return base;
}

static void test_tx_free_deferred(void) {
    free_deferred_once(); /* the first transactions of a thread allocate its logs */
    size_t base = free_deferred_once();
    HEAP_CHECK(heap_in_use() <= base + BLK / 2, "block not freed at commit (%zu -> %zu)", base,
               heap_in_use());
}

static void malloc_free_restart_once(void) {
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        unsigned char *b = tx_malloc(BLK);
        CHECK(b != NULL);
        memset(b, 0x5A, BLK);
        tx_free(b);
        CHECK_EQ(b[BLK / 2], 0x5A);
        if (n == 0)
            tx_restart();
    }
}

/* tx_malloc and tx_free in the same transaction: freed at commit, once. */
static void test_tx_malloc_free_same(void) {
    malloc_free_restart_once();
    size_t base = heap_in_use();
    for (int it = 0; it < 100; it++)
        malloc_free_restart_once();
    HEAP_CHECK(heap_in_use() <= base + HEAP_SLACK, "heap grew %zu -> %zu", base, heap_in_use());
}

/* tx_malloc/tx_free while injected aborts hit attempts at random. */
#define FAULT_BLOCKS 300
static void *g_blocks[FAULT_BLOCKS];

static void fault_alloc_block(int i) {
    TX_ATOMIC {
        CHECK_EQ(tx_on_abort(count_fault_abort, NULL), 0);
        unsigned char *b = tx_malloc(BLK);
        CHECK(b != NULL);
        memset(b, i & 0xff, BLK);
        TX_STORE(&g_blocks[i], (void *)b);
    }
}

static void fault_free_block(int i) {
    TX_ATOMIC {
        void *b = TX_LOAD(&g_blocks[i]);
        tx_free(b);
        TX_STORE(&g_blocks[i], NULL);
    }
}

static void test_tx_malloc_fault_injection(void) {
    memset(g_blocks, 0, sizeof g_blocks);
    g_fault_handler_runs = 0;
    /* warm-up of the logs at this size */
    TX_ATOMIC {
        tx_free(tx_malloc(BLK));
    }
    size_t base = heap_in_use();
    tx_stats_t s0 = tk_stats();
    set_all_faults(0.5);
    for (int i = 0; i < FAULT_BLOCKS; i++)
        fault_alloc_block(i);
    set_all_faults(0.0);
    tx_stats_t s1 = tk_stats();
    uint64_t injected =
        s1.aborts_by_cause[TXKIT_CAUSE_INJECTED] - s0.aborts_by_cause[TXKIT_CAUSE_INJECTED];
    uint64_t aborts = tx_stats_aborts(&s1) - tx_stats_aborts(&s0);
    printf("    %d transactions, %llu injected aborts, %ld abort-handler runs\n", FAULT_BLOCKS,
           (unsigned long long)injected, (long)g_fault_handler_runs);
    CHECK_MSG(injected > 0, "txkit_set_fault(m, 0.5) injected nothing in %d transactions",
              FAULT_BLOCKS);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), FAULT_BLOCKS);
    if (!tk_hw_possible())
        CHECK_EQ(g_fault_handler_runs, aborts);
    for (int i = 0; i < FAULT_BLOCKS; i++) {
        unsigned char *b = g_blocks[i];
        CHECK(b != NULL);
        CHECK_EQ(b[0], i & 0xff);
        CHECK_EQ(b[BLK - 1], i & 0xff);
        for (int j = 0; j < i; j += 37)
            CHECK(g_blocks[j] != g_blocks[i]);
    }
    /* Exactly the committed blocks are live: the aborted attempts' are freed. */
    size_t live = heap_in_use() - base;
    HEAP_CHECK(live >= (size_t)FAULT_BLOCKS * BLK &&
                   live <= (size_t)FAULT_BLOCKS * BLK + HEAP_SLACK,
               "live heap %zu bytes, expected %d blocks of %d bytes (%llu injected aborts)", live,
               FAULT_BLOCKS, BLK, (unsigned long long)injected);

    /* Free them under injection: a free by an aborted attempt would be a
     * double free (glibc aborts) or leave the heap wrong. */
    set_all_faults(0.5);
    for (int i = 0; i < FAULT_BLOCKS; i++)
        fault_free_block(i);
    set_all_faults(0.0);
    for (int i = 0; i < FAULT_BLOCKS; i++)
        CHECK(g_blocks[i] == NULL);
    HEAP_CHECK(heap_in_use() <= base + HEAP_SLACK, "heap %zu -> %zu after freeing everything", base,
               heap_in_use());
}

/* ================================================================== main */

static const struct tk_test tests[] = {
    {"on_commit_order_once", test_on_commit_order_once},
    {"on_abort_order", test_on_abort_order},
    {"commit_handler_runs_transaction", test_commit_handler_runs_transaction},
    {"abort_handler_runs_transaction", test_abort_handler_runs_transaction},
    {"on_commit_copy", test_on_commit_copy},
    {"tx_malloc_basic", test_tx_malloc_basic},
    {"tx_free_deferred", test_tx_free_deferred},
    {"tx_malloc_free_same", test_tx_malloc_free_same},
    {"tx_malloc_fault_injection", test_tx_malloc_fault_injection},
};

int main(int argc, char **argv) {
    return api_main("test_handlers", tests, ARRAY_LEN(tests), argc, argv);
}
