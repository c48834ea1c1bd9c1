/* SPDX-License-Identifier: MIT */
/* test_txcache_stores.c - in tx mode, stores do not conflict with each other.
 *
 *   test_txcache_stores            (run with TXKIT_METHOD=stm)
 *
 * Two threads insert distinct keys into a full cache at the same time, every
 * insert an eviction. A store plans its eviction work (heap, counts, limits)
 * under the cache's store lock and runs only its chain edits as a
 * transaction (txcache_core.c), so the transactions of two stores never run
 * at once and none aborts: fewer than 1 abort per 100 commits is asserted.
 * With the whole store as one transaction (the design before), every insert
 * read and wrote the object count and the heap's top, and two stores running
 * side by side aborted each other (about one insert in two here). Also checks
 * txc_check's invariants, the counts, and that every entry is freed.
 * Needs 2 CPUs (skipped visibly otherwise, exit 77).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <txkit.h>

#include "check.h"
#include "txcache.h"

#define PER_THREAD 20000
#define MAX_OBJECTS 64

void tk_check_context(void) { fprintf(stderr, "FAIL [stores]:\n"); }

static txc_cache *g_cache;
static pthread_barrier_t g_start;

static void *inserter(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    unsigned char body[256];
    memset(body, (int)id, sizeof body);
    pthread_barrier_wait(&g_start);
    for (unsigned i = 0; i < PER_THREAD; i++) {
        char key[48];
        int n = snprintf(key, sizeof key, "/t%u/page/%u", id, i);
        int err = 0;
        txc_entry *e = txc_entry_new(g_cache, key, (size_t)n, sizeof body, &err);
        CHECK(e != NULL && err == 0);
        CHECK(txc_entry_append(e, body, sizeof body) == 0);
        CHECK(txc_insert(g_cache, e) == 0);
    }
    return NULL;
}

int main(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < 2) {
        printf("skipped: needs 2 CPUs (this process may run on %d)\n", CPU_COUNT(&set));
        return 77;
    }
    struct txc_config cfg;
    txc_config_default(&cfg);
    cfg.max_objects = MAX_OBJECTS;
    cfg.sync = TXC_SYNC_TX;
    char err[160] = "";
    if (txc_config_check(&cfg, err, sizeof err) != 0) {
        printf("skipped: %s\n", err);
        return 77;
    }
    g_cache = txc_create(&cfg, err, sizeof err);
    CHECK(g_cache != NULL);
    /* fill it first: every insert of the threads evicts */
    unsigned char body[256] = {0};
    for (unsigned i = 0; i < MAX_OBJECTS; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "/warm/%u", i);
        int e_err = 0;
        txc_entry *e = txc_entry_new(g_cache, key, (size_t)n, sizeof body, &e_err);
        CHECK(e != NULL && txc_entry_append(e, body, sizeof body) == 0);
        CHECK(txc_insert(g_cache, e) == 0);
    }

    tx_stats_t before, after;
    CHECK(tx_stats_get(&before) == 0);
    pthread_barrier_init(&g_start, NULL, 2);
    pthread_t t[2];
    for (unsigned i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, inserter, (void *)(uintptr_t)i) == 0);
    for (unsigned i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK(tx_stats_get(&after) == 0);
    uint64_t commits = tx_stats_commits(&after) - tx_stats_commits(&before);
    uint64_t aborts = tx_stats_aborts(&after) - tx_stats_aborts(&before);
    printf("%d inserts by 2 threads into a full cache (%d objects): %llu commits, %llu aborts\n",
           2 * PER_THREAD, MAX_OBJECTS, (unsigned long long)commits, (unsigned long long)aborts);
    CHECK(commits >= 2 * PER_THREAD);
    CHECK(aborts * 100 < commits);

    struct txc_stats st;
    txc_stats_get(g_cache, &st);
    CHECK(st.objects == MAX_OBJECTS);
    CHECK(st.inserts == MAX_OBJECTS + 2 * PER_THREAD);
    CHECK(st.evictions == 2 * PER_THREAD);
    CHECK(txc_check(g_cache, err, sizeof err) == 0);
    txc_destroy(g_cache);
    CHECK(txc_live_entries_all() == 0);
    pthread_barrier_destroy(&g_start);
    printf("ok\n");
    return 0;
}
