/* SPDX-License-Identifier: MIT */
/* abi_express.c - a lone thread's gcc transactions back to back, each kind of
 * block after the others: what txkit's express begin and commit (a lone
 * thread's next run of the same block on its parked clock, runtime/txn.c)
 * must hand over to the general path, and take back, without losing a write
 * or undoing one twice.
 *
 * One thread, rounds of: many plain increments (the same block: after a few,
 * every one is express), now and then a cancelled run of that block, then
 * one block of each other kind, picked by the
 * round: __transaction_cancel of the outermost block; a nested block that is
 * cancelled (its part undone, the outer one commits, with a checkpoint in
 * between); malloc and free inside (committed: the free takes effect); a
 * commit action (_ITM_addUserCommitAction, run once); an undo action that a
 * cancel runs; a relaxed block that becomes irrevocable (a call gcc cannot
 * instrument); another block at another place (with the same properties as
 * the plain one: txkit begins it express too, and must count it there). Then a second thread runs transactions, the first waits for
 * it and goes on alone. Every count is checked at the end; the results are
 * the same on every runtime (SUMMARY for abi.express.compare).
 *
 * usage: abi_express [rounds]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "abi_common.h"

static long counter, other, nested_kept, cancelled, relaxed_n;
/* Written (never read) only by blocks that are cancelled: must stay 0. At
 * -O2 gcc's read-modify-write barriers (_ITM_RfW, _ITM_WaW) are not undone
 * by the system libitm on a cancel (abi_cancel's cancel_rmw): plain stores
 * keep the checks about the runtime under test. */
static long junk_outer, junk_nested, junk_undo, junk_plain;
static long commit_actions, undo_actions;
static long *slot;       /* a block malloc'ed inside a transaction */
static long slot_frees;  /* blocks freed inside committed transactions */
int cancel_now = 1;      /* extern linkage: gcc cannot fold the cancels away */
static volatile long io; /* touched by a function gcc cannot instrument */

static void on_commit(void *arg) { (void)arg, commit_actions++; }
static void on_undo(void *arg) { (void)arg, undo_actions++; }

__attribute__((noinline)) static void not_instrumented(void) { io++; }

/* The block most runs take; cancel: this run is cancelled (its undo log
 * must hold its own stores only, not those of the runs before it). */
__attribute__((noinline)) static void plain(int cancel) {
    __transaction_atomic {
        if (cancel) {
            junk_plain = 1000;
            __transaction_cancel;
        }
        counter++;
    }
}

__attribute__((noinline)) static void other_place(void) {
    __transaction_atomic {
        other++;
        counter++;
    }
}

__attribute__((noinline)) static void cancel_outer(void) {
    __transaction_atomic {
        junk_outer = 1000;
        if (cancel_now)
            __transaction_cancel;
        cancelled++;
    }
}

__attribute__((noinline)) static void cancel_nested(void) {
    __transaction_atomic {
        counter++;
        nested_kept++;
        __transaction_atomic {
            junk_nested = 1000;
            if (cancel_now)
                __transaction_cancel;
        }
    }
}

__attribute__((noinline)) static void swap_slot(void) {
    __transaction_atomic {
        long *p = malloc(sizeof *p * 4);
        if (p) {
            p[0] = counter;
            if (slot) {
                free(slot);
                slot_frees++;
            }
            slot = p;
        }
        counter++;
    }
}

__attribute__((noinline)) static void with_commit_action(void) {
    __transaction_atomic {
        _ITM_addUserCommitAction(on_commit, ABI_NO_TRANSACTION_ID, NULL);
        counter++;
    }
}

__attribute__((noinline)) static void with_undo_action(void) {
    __transaction_atomic {
        _ITM_addUserUndoAction(on_undo, NULL);
        junk_undo = 1000;
        if (cancel_now)
            __transaction_cancel;
    }
}

__attribute__((noinline)) static void relaxed_io(void) {
    __transaction_relaxed {
        counter++;
        relaxed_n++;
        not_instrumented();
    }
}

static void *second(void *arg) {
    long n = (long)(intptr_t)arg;
    for (long i = 0; i < n; i++)
        other_place();
    return NULL;
}

int main(int argc, char **argv) {
    abi_init("abi_express");
    long rounds = argc > 1 ? atol(argv[1]) : 700;
    CHECK(rounds > 0);
    long want = 0, want_other = 0, want_frees = 0;
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < 50; i++)
            plain(0);
        want += 50;
        if (r % 5 == 4)
            plain(1); /* after 50 express runs: cancelled */
        switch (r % 7) {
        case 0:
            cancel_outer();
            break;
        case 1:
            cancel_nested();
            want++;
            break;
        case 2:
            want_frees += slot != NULL;
            swap_slot();
            want++;
            break;
        case 3:
            with_commit_action();
            want++;
            break;
        case 4:
            with_undo_action();
            break;
        case 5:
            relaxed_io();
            want++;
            break;
        default:
            other_place();
            want_other++;
            want++;
            break;
        }
        if (r == rounds / 2) {
            pthread_t th;
            CHECK_EQ(pthread_create(&th, NULL, second, (void *)(intptr_t)2000), 0);
            CHECK_EQ(pthread_join(th, NULL), 0);
            want += 2000;
            want_other += 2000;
        }
    }
    long per[7] = {0};
    for (long r = 0; r < rounds; r++)
        per[r % 7]++;
    ABI_EXPECT("express.counter", counter == want, "increments lost or undone twice");
    ABI_EXPECT("express.plain_cancel", junk_plain == 0, "a cancelled run's store stayed");
    ABI_EXPECT("express.other", other == want_other, "the other block's count");
    ABI_EXPECT("express.cancel", cancelled == 0 && junk_outer == 0,
               "a cancelled block went on, or its store stayed");
    ABI_EXPECT("express.nested", nested_kept == per[1] && junk_nested == 0,
               "a cancelled nested block's part kept, or its outer part undone");
    ABI_EXPECT("express.free", slot_frees == want_frees && slot && slot[0] >= 0,
               "frees of committed transactions");
    ABI_EXPECT("express.commit_action", commit_actions == per[3], "commit actions run");
    ABI_EXPECT("express.undo_action", undo_actions == per[4] && junk_undo == 0, "undo actions run");
    ABI_EXPECT("express.relaxed", relaxed_n == per[5] && io == per[5], "relaxed blocks");
    free(slot);
    abi_summary("counter=%ld other=%ld nested=%ld frees=%ld commit=%ld undo=%ld relaxed=%ld "
                "junk=%ld",
                counter, other, nested_kept, slot_frees, commit_actions, undo_actions, relaxed_n,
                junk_outer + junk_nested + junk_undo + junk_plain);
    return abi_finish();
}
