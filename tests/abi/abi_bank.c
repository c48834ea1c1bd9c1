/* SPDX-License-Identifier: MIT */
/* abi_bank.c - bank transfers between threads, read-only audits, and an
 * opacity oracle, all as gcc __transaction_atomic blocks.
 *
 *   - NXFER threads move money between NACC accounts. A transfer never checks
 *     the balance (accounts may go negative), so the final balances do not
 *     depend on the interleaving: they and their hash are part of the summary.
 *   - An auditor sums every account in a read-only transaction: the sum must
 *     always be the initial total, seen from inside the transaction (counted
 *     through a transaction_pure function, so an attempt that aborts still
 *     counts) and from outside after the commit.
 *   - Opacity oracle: ox and oy always satisfy oy == 2 * ox + 1. Writers
 *     update both in one transaction; readers load ox, wait a little, load oy
 *     and check the invariant on every read, inside the transaction. An
 *     opaque runtime never lets even a doomed attempt see a broken invariant:
 *     violations must be 0.
 *
 * usage: abi_bank [ops-per-thread]
 *
 * TXKIT_STRESS_SECONDS (tests/runtime/stress_env.h): rounds of the same run,
 * each checked, until that time has passed, from a fresh seed (printed;
 * TXKIT_STRESS_SEED replays it). Otherwise the seed is fixed: the balances
 * hash is part of the summary that abi.bank.compare compares across runtimes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../runtime/stress_env.h"
#include "abi_common.h"
#include "bank_ds.h" /* bench/workloads: the benchmarks' bank operations */

#define NACC 64
#define NXFER 2
#define INITIAL 1000

static long accounts[NACC];
BANK_DEFINE(plain, PLAIN_LD, PLAIN_ST)
static long ox, oy = 1; /* invariant: oy == 2 * ox + 1 */
static long oracle_sum; /* what the readers saw, summed (shared, transactional) */

static long ops = 20000;               /* transfers per transfer thread */
static unsigned long violations;       /* opacity: broken invariant seen in a transaction */
static unsigned long audit_violations; /* audit: a sum other than the total, seen inside */

ABI_PURE static void note_violation(unsigned long *counter) {
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* Widens the window between two reads of one transaction. */
ABI_PURE static void pause_a_little(unsigned n) {
    for (volatile unsigned i = 0; i < n; i++) {
    }
}

/* One transaction per function: a loop counter live across the start of a
 * transaction (returns_twice) would trip -Wclobbered. */
__attribute__((noinline)) static void transfer(int from, int to, long amount) {
    __transaction_atomic {
        abi_count_attempt();
        transfer_plain(&accounts[from], &accounts[to], amount);
    }
}

/* The oracle's writer side: both variables in one transaction. */
__attribute__((noinline)) static void oracle_write(void) {
    __transaction_atomic {
        long x = ox + 1;
        ox = x;
        oy = 2 * x + 1;
    }
}

/* The oracle's reader side. */
__attribute__((noinline)) static void oracle_read(void) {
    __transaction_atomic {
        long x = ox;
        pause_a_little(50);
        long y = oy;
        if (y != 2 * x + 1)
            note_violation(&violations);
        oracle_sum += y - 2 * x; /* 1 per read when consistent */
    }
}

/* A read-only transaction over every account. */
__attribute__((noinline)) static long audit(void) {
    const long total = (long)NACC * INITIAL;
    long sum;
    __transaction_atomic {
        sum = total_plain(accounts, NACC, 1);
        if (sum != total)
            note_violation(&audit_violations);
    }
    return sum;
}

static uint64_t base_seed = 0x9e3779b97f4a7c15ull;

static void *transfer_thread(void *arg) {
    uint64_t seed = base_seed * (uintptr_t)(1 + (uintptr_t)arg);
    if (!seed)
        seed = 1;
    for (long i = 0; i < ops; i++) {
        uint64_t r = abi_rand(&seed);
        int from = (int)(r % NACC);
        int to = (int)((from + 1 + (r >> 16) % (NACC - 1)) % NACC);
        transfer(from, to, (long)((r >> 40) % 100) + 1);
        if (i % 4 == 0)
            oracle_write();
    }
    return NULL;
}

static long audits_done;

static void *audit_thread(void *arg) {
    long n = *(long *)arg;
    for (long i = 0; i < n; i++) {
        CHECK_EQ(audit(), (long)NACC * INITIAL);
        audits_done++;
        oracle_read(); /* twice per audit */
        oracle_read();
    }
    return NULL;
}

/* One run from the initial state, checked; returns the balances' hash. */
static uint64_t run_round(long naudits) {
    for (int a = 0; a < NACC; a++)
        accounts[a] = INITIAL;
    ox = 0;
    oy = 1;
    oracle_sum = 0;
    audits_done = 0;
    uint64_t attempts0 = abi_attempts();

    pthread_t th[NXFER + 1];
    for (long t = 0; t < NXFER; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, transfer_thread, (void *)t), 0);
    CHECK_EQ(pthread_create(&th[NXFER], NULL, audit_thread, &naudits), 0);
    for (int t = 0; t <= NXFER; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);

    long total = 0;
    uint64_t h = ABI_HASH_INIT;
    for (int a = 0; a < NACC; a++) {
        total += accounts[a];
        h = abi_hash(h, &accounts[a], sizeof accounts[a]);
    }
    long writes = NXFER * ((ops + 3) / 4);
    CHECK_EQ(total, (long)NACC * INITIAL);
    CHECK_EQ(audits_done, naudits);
    CHECK_EQ(ox, writes);
    CHECK_EQ(oy, 2 * writes + 1);
    CHECK_EQ(oracle_sum, 2 * naudits);
    CHECK_EQ(violations, 0);
    CHECK_EQ(audit_violations, 0);
    /* every transfer committed exactly once: at least one attempt each */
    CHECK(abi_attempts() - attempts0 >= (uint64_t)(NXFER * ops));
    return h;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    abi_init("abi_bank");
    if (argc > 1)
        ops = atol(argv[1]);
    CHECK(ops > 0);
    int soak = tk_stress_soak();
    const char *replay = getenv("TXKIT_STRESS_SEED");
    if (soak || (replay && *replay))
        base_seed = tk_stress_seed("abi_bank");

    long naudits = ops / 20;
    double end = soak ? now() + tk_stress_seconds(0) : 0;
    long rounds = 0;
    uint64_t h;
    do {
        h = run_round(naudits);
        rounds++;
    } while (soak && now() < end);
    if (soak)
        printf("INFO abi_bank: %ld rounds of %ld transfers per thread\n", rounds, ops);

    abi_summary("accounts=%d total=%ld transfers=%ld audits=%ld oracle_writes=%ld "
                "oracle_reads=%ld violations=%lu audit_violations=%lu balances_hash=%016llx",
                NACC, (long)NACC * INITIAL, NXFER * ops, audits_done, ox, oracle_sum, violations,
                audit_violations, (unsigned long long)h);
    return abi_finish();
}
