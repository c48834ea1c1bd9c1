/* SPDX-License-Identifier: MIT */
/* abi_hwpaths.c - the gcc ABI's hardware paths on any CPU, in a build whose
 * RTM instructions go through the simulator (-DTXKIT_SIM_RTM=ON; elsewhere
 * exit 77). Linked with libtxkit. Found on real RTM first (issue 12):
 *
 * usage: abi_hwpaths CASE
 *   cancel_resume   (auto, two threads) a software attempt aborts, the next
 *                   one runs in hardware and is cancelled ([[outer]]): the
 *                   transaction ends there, cancelled. Before the fix the
 *                   engine resumed the code with no transaction at all, and
 *                   its cancel then stopped the program with
 *                   "_ITM_abortTransaction outside a transaction"
 *                   (apps.vacation.auto.t2 on an RTM machine).
 *   undo_cancel     (htm) a transaction that registers an undo action and
 *                   then cancels runs the action once: a hardware attempt
 *                   forgets its registrations at the abort, so registering
 *                   one continues in software (abi.actions.*.htm on RTM)
 *   free_hw         (hybrid, two threads) a hardware attempt of gcc code
 *                   that frees a block a running software transaction has
 *                   read the pointer to: the block waits for that reader.
 *                   gcc's uninstrumented code calls free() at once, so
 *                   while software transactions run, hardware attempts run
 *                   the instrumented code, whose frees go through the
 *                   reclamation (the sanitizer lane found the use after
 *                   free on RTM: abi.malloc.compare, apps.yada.mixed). The
 *                   block is large and the test sets glibc's mmap threshold
 *                   low: an early free unmaps it and the reader faults.
 *
 * Each case scripts the XBEGIN outcomes (src/arch/x86_64/rtm.h); simulated
 * transactions that start run for real, so the bodies cancel before they
 * write anything shared.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <txkit.h>

#include "abi_common.h"

extern int txkit_sim_rtm_script(const char *script);
extern unsigned long txkit_sim_rtm_violations(void);

static void need_sim(const char *script) {
    struct txkit_rtm_info info;
    txkit_rtm_info(&info);
    if (strcmp(info.vendor, "simulated") != 0) {
        printf("SKIP abi_hwpaths: needs a -DTXKIT_SIM_RTM=ON build\n");
        exit(ABI_SKIP_CODE);
    }
    CHECK_EQ(txkit_sim_rtm_script(script), 0);
}

long x;
static long attempts;    /* attempts of the current transaction (not undone) */
long cancel_from = 1000; /* the attempt that cancels (extern: not folded) */

ABI_PURE static long next_attempt(void) { return ++attempts; }

/* One gcc transaction site for every call: its hardware failures are
 * remembered per site. */
__attribute__((noinline)) static void bump_or_cancel(void) {
    __transaction_atomic {
        if (next_attempt() >= cancel_from)
            __transaction_cancel;
        x++;
    }
}

static int partner_phase; /* 1: its transaction is done; 2: it may exit */

/* A second thread that ran a transaction and stays: auto does not run the
 * main thread alone (serially). */
static void *partner(void *arg) {
    (void)arg;
    __transaction_atomic { x++; }
    __atomic_store_n(&partner_phase, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&partner_phase, __ATOMIC_ACQUIRE) != 2)
        usleep(1000);
    return NULL;
}

static void cancel_resume(void) {
    /* XBEGIN 1 (transaction A): capacity - the site skips hardware for a
     * while; every later XBEGIN starts. */
    need_sim("capacity,start");
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, partner, NULL), 0);
    while (__atomic_load_n(&partner_phase, __ATOMIC_ACQUIRE) != 1)
        usleep(1000);
    /* every software commit aborts (injected): A ends serially */
    CHECK_EQ(txkit_set_fault(TXKIT_STM, 1.0), 0);
    attempts = 0;
    bump_or_cancel(); /* A: hardware (capacity), software x16 (injected), serial */
    CHECK_EQ(x, 2);
    /* B: software first (the site skips hardware), injected abort, then
     * hardware (start), which cancels */
    attempts = 0;
    cancel_from = 2;
    bump_or_cancel();
    CHECK_EQ(attempts, 2);
    CHECK_EQ(x, 2);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    __atomic_store_n(&partner_phase, 2, __ATOMIC_RELEASE);
    CHECK_EQ(pthread_join(th, NULL), 0);
    printf("PASS abi_hwpaths cancel_resume: cancelled in hardware after a software abort, "
           "%ld attempts\n",
           attempts);
}

static int undo_runs;
static void count_undo(void *arg) {
    (void)arg;
    undo_runs++;
}

static void undo_cancel(void) {
    need_sim("start");
    __transaction_atomic {
        _ITM_addUserUndoAction(count_undo, NULL);
        if (cancel_from > 0)
            __transaction_cancel;
        x++;
    }
    CHECK_EQ(undo_runs, 1);
    CHECK_EQ(x, 0);
    cancel_from = 0;
    __transaction_atomic { /* no cancel: committed, no undo */
        _ITM_addUserUndoAction(count_undo, NULL);
        if (cancel_from > 0)
            __transaction_cancel;
        x++;
    }
    CHECK_EQ(undo_runs, 1);
    CHECK_EQ(x, 1);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    printf("PASS abi_hwpaths undo_cancel: the undo action of a cancelled transaction ran once\n");
}

#define BIG_BLOB (256 * 1024) /* above the test's mmap threshold (64 KiB) */
struct blob {
    long val;
    char pad[BIG_BLOB];
};
struct blob *blob_head;
static int free_phase; /* 1: the reader holds the pointer; 2: the freer committed */
static long reader_val, reader_attempts;

ABI_PURE static void set_phase(int v) { __atomic_store_n(&free_phase, v, __ATOMIC_RELEASE); }
ABI_PURE static void wait_phase(int v) {
    while (__atomic_load_n(&free_phase, __ATOMIC_ACQUIRE) < v)
        usleep(1000);
}
ABI_PURE static long reader_attempt(void) { return ++reader_attempts; }
/* The reader, inside its attempt: phase 1, then on once the freer committed.
 * Its commit moves the hardware-commit counter and then waits for us (we
 * read before it: privatization safety), so the counter is what we watch. */
ABI_PURE static void hold_until_freer_committed(void) {
    uint64_t h0 = *_txkit_tls.hw;
    set_phase(1);
    while (__atomic_load_n(&free_phase, __ATOMIC_ACQUIRE) < 2 && *_txkit_tls.hw == h0)
        usleep(1000);
}

static void *blob_reader(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    __transaction_atomic {
        struct blob *p = blob_head;
        if (reader_attempt() == 1)
            hold_until_freer_committed(); /* the freer commits while we hold p */
        reader_val = p ? p->val : -1;
    }
    return NULL;
}

static void free_hw(void) {
    need_sim("start");
    alarm(30);
    blob_head = malloc(sizeof *blob_head);
    CHECK(blob_head != NULL);
    blob_head->val = 7;
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, blob_reader, NULL), 0);
    wait_phase(1);
    CHECK_EQ(txkit_set_thread_method(TXKIT_HTM), 0);
    __transaction_atomic {
        struct blob *p = blob_head;
        blob_head = NULL;
        free(p);
    }
    set_phase(2);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(reader_val, -1); /* it saw the unlink, at its revalidation */
    CHECK(reader_attempts >= 2);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    printf("PASS abi_hwpaths free_hw: the reader kept its block, %ld attempts\n", reader_attempts);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: abi_hwpaths cancel_resume|undo_cancel|free_hw\n");
        return 2;
    }
    if (!strcmp(argv[1], "cancel_resume"))
        cancel_resume();
    else if (!strcmp(argv[1], "undo_cancel"))
        undo_cancel();
    else if (!strcmp(argv[1], "free_hw"))
        free_hw();
    else {
        fprintf(stderr, "abi_hwpaths: unknown case %s\n", argv[1]);
        return 2;
    }
    return 0;
}
