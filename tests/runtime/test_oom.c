/* SPDX-License-Identifier: MIT */
/* test_oom.c - out of memory in the middle of a transaction: the library
 * never stops the process for it when the transaction can go on another way
 * (an adversarial test of the API: tx_malloc, and a big write set or read log
 * under software TM, ended in TK_FATAL "out of memory ...").
 *
 * This program stands in for malloc, calloc and realloc (libtxkit's calls
 * bind to them: the executable comes first), forwarding to glibc's, and fails
 * one request of BIG bytes or more when armed ("one-shot"): the first such
 * request made after arming, whoever makes it.
 *  - tx_malloc: N small blocks in one transaction, armed: the runtime's record
 *    of the attempt's allocations grows past BIG on the way. Every non-NULL
 *    block is usable, at most one is NULL (a software attempt's; serial
 *    attempts can do without the record), the transaction commits.
 *  - writes: one transaction writes WORDS words, armed: a software attempt's
 *    write set (or its index) grows past BIG and cannot; the transaction
 *    starts again serially and commits every word.
 *  - reads: one read-only transaction sums WORDS words, armed: a logging
 *    software attempt's read log cannot grow; the same, the right sum.
 * Run per method (auto, stm, serial): with stm every case meets the failure
 * in a software attempt (which then goes serial; "reads" may run unlogged and
 * refuse nothing); with auto (alone: serially) and serial, "tx_malloc" keeps
 * every block (a serial attempt needs no record) and "writes" meets it in the
 * serial undo log, which makes the attempt irrevocable.
 * Not in the sanitizer lane: ASan's allocator is the process's there.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"

#define BIG ((size_t)1 << 20)
#define WORDS (1 << 18) /* 2 MiB of words: the logs' entries are larger */
#define BLOCKS 100000

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static atomic_int armed;
static atomic_int failed; /* requests refused */

static int refuse(size_t n) {
    int one = 1;
    if (n >= BIG && atomic_load_explicit(&armed, memory_order_relaxed) &&
        atomic_compare_exchange_strong(&armed, &one, 0)) {
        atomic_fetch_add(&failed, 1);
        return 1;
    }
    return 0;
}

void *malloc(size_t n) { return refuse(n) ? NULL : __libc_malloc(n); }
void *calloc(size_t a, size_t b) {
    return (b && a > SIZE_MAX / b) || refuse(a * b) ? NULL : __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) { return refuse(n) ? NULL : __libc_realloc(p, n); }

static long words[WORDS];
static void *blocks[BLOCKS];
static int commits;

static void count_commit(void *arg) {
    (void)arg;
    commits++;
}

/* The transactions, each in a function of its own (no local of the checks
 * lives across the block: -Wclobbered). */
static int nulls;
static long sum;

static __attribute__((noinline)) void tx_malloc_many(void) {
    TX_ATOMIC {
        nulls = 0; /* (from the start again after an abort) */
        for (int i = 0; i < BLOCKS; i++) {
            blocks[i] = tx_malloc(16);
            if (!blocks[i])
                nulls++;
            else
                *(long *)blocks[i] = i; /* its own: written in place */
        }
        tx_on_commit(count_commit, NULL);
    }
}

static __attribute__((noinline)) void write_all(void) {
    TX_ATOMIC {
        for (int i = 0; i < WORDS; i++)
            TX_STORE(&words[i], (long)i * 3 + 1);
        tx_on_commit(count_commit, NULL);
    }
}

static __attribute__((noinline)) void sum_all(void) {
    TX_ATOMIC {
        sum = 0;
        for (int i = 0; i < WORDS; i++)
            sum += TX_LOAD(&words[i]);
        tx_on_commit(count_commit, NULL);
    }
}

/* Run fn with one big request to refuse; how many were refused (0 or 1). */
static int refusing_one(void (*fn)(void)) {
    commits = 0;
    atomic_store(&failed, 0);
    atomic_store(&armed, 1);
    fn();
    atomic_store(&armed, 0);
    return atomic_load(&failed);
}

static void t_tx_malloc(void) {
    int refused = refusing_one(tx_malloc_many);
    long bad = 0;
    for (int i = 0; i < BLOCKS; i++) {
        if (blocks[i] && *(long *)blocks[i] != i)
            bad++;
        free(blocks[i]);
    }
    printf("tx_malloc: %d requests refused, %d NULL blocks of %d, %ld wrong, %d commit\n", refused,
           nulls, BLOCKS, bad, commits);
    CHECK(refused == 1); /* it did grow past BIG */
    CHECK(nulls <= 1);
    if (tk_env_method() != TXKIT_STM)
        CHECK_EQ(nulls, 0); /* serial attempts */
    CHECK_EQ(bad, 0);
    CHECK_EQ(commits, 1);
}

static void t_writes(void) {
    int refused = refusing_one(write_all);
    long bad = 0;
    for (int i = 0; i < WORDS; i++)
        bad += words[i] != (long)i * 3 + 1;
    printf("writes: %d requests refused, %ld words wrong of %d, %d commit\n", refused, bad, WORDS,
           commits);
    CHECK(refused == 1);
    CHECK_EQ(bad, 0);
    CHECK_EQ(commits, 1);
}

static void t_reads(void) {
    long want = 0;
    for (int i = 0; i < WORDS; i++) {
        words[i] = i & 1023;
        want += i & 1023;
    }
    int refused = refusing_one(sum_all);
    printf("reads: %d requests refused, sum %ld (expected %ld), %d commit\n", refused, sum, want,
           commits);
    /* (a serial or unlogged attempt keeps no read log: nothing to refuse) */
    CHECK(refused <= 1);
    CHECK_EQ(sum, want);
    CHECK_EQ(commits, 1);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    t_tx_malloc();
    t_writes();
    t_reads();
    printf("PASS\n");
    return 0;
}
