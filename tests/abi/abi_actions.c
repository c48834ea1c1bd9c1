/* SPDX-License-Identifier: MIT */
/* abi_actions.c - user commit and undo actions (_ITM_addUserCommitAction,
 * _ITM_addUserUndoAction) and transaction ids, called directly as a library
 * written for the libitm ABI would.
 *
 *   - A commit action runs once, after the commit (the transaction's stores
 *     are visible to it and it runs outside the transaction), in the order of
 *     registration; never for a cancelled transaction.
 *   - An undo action runs when the attempt that registered it is rolled back:
 *     by __transaction_cancel (newest first), and by every aborted attempt
 *     (TXKIT_FAULT makes attempts abort at commit). Counted per attempt:
 *     undo runs == attempts - commits.
 *   - Nested: actions registered by a cancelled nested transaction are
 *     dropped (its undo actions run at the cancel); those of a committed
 *     nested transaction wait for the outermost commit.
 *   - _ITM_getTransactionId: not _ITM_noTransactionId inside, the same in
 *     nested transactions, a new one for the next transaction.
 *   - The other entry points no gcc-generated code here calls:
 *     _ITM_versionCompatible, _ITM_changeTransactionMode (from a relaxed
 *     transaction), _ITM_dropReferences and _ITM_error (in child processes:
 *     _ITM_error ends the process, and the system libitm ends it at
 *     _ITM_dropReferences too).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi_common.h"

long shared_value;
long shared_other;
int cancel_now = 1; /* extern linkage: gcc cannot fold the cancels away */

/* ------------------------------------------------------- the action log */

#define LOG_MAX 64
static char action_log[LOG_MAX][16];
static int log_len;
static long seen_value_at_commit;
static int mode_at_commit;

static void log_action(void *arg) {
    if (log_len < LOG_MAX)
        snprintf(action_log[log_len++], sizeof action_log[0], "%s", (const char *)arg);
}

static void commit_action(void *arg) {
    seen_value_at_commit = shared_value;
    mode_at_commit = _ITM_inTransaction();
    log_action(arg);
}

static void clear_log(void) { log_len = 0; }

/* The log as "a,b,c". */
static const char *log_string(void) {
    static char buf[LOG_MAX * 17];
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < log_len; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? "," : "", action_log[i]);
    return buf;
}

/* The last n characters of the log: what the finishing attempt did. */
static const char *log_tail(size_t n) {
    const char *log = log_string();
    size_t len = strlen(log);
    return len > n ? log + len - n : log;
}

/* Checks the log of one transaction that ran `attempts` attempts: first, for
 * each attempt that was rolled back and run again (fault injection, a
 * conflict, or a runtime that restarts to cancel a nested transaction), one
 * of the `aborted` sequences (the undo actions that attempt registered, newest
 * first); then `final`, the actions of the attempt that finished. */
static void expect_log_at(const char *file, int line, const char *name, uint64_t attempts,
                          const char *final, const char *const *aborted) {
    const char *log = log_string();
    char detail[LOG_MAX * 17 + 160];
    size_t n = strlen(log), nf = strlen(final);
    uint64_t groups = 0;
    int ok = n >= nf && strcmp(log + n - nf, final) == 0;
    size_t prefix = ok ? n - nf : 0, at = 0;
    while (ok && at < prefix) {
        int matched = 0;
        for (int i = 0; aborted && aborted[i] && !matched; i++) {
            size_t k = strlen(aborted[i]);
            if (at + k + 1 <= prefix && strncmp(log + at, aborted[i], k) == 0 &&
                log[at + k] == ',') {
                at += k + 1;
                groups++;
                matched = 1;
            }
        }
        ok = matched;
    }
    ok = ok && groups + 1 == attempts;
    snprintf(detail, sizeof detail,
             "actions ran: [%s] in %llu attempt(s); want [%s] after "
             "the undo actions of each rolled-back attempt",
             log, (unsigned long long)attempts, final);
    abi_expect_at(file, line, name, ok, detail);
}
#define EXPECT_LOG(name, attempts, final, ...)                              \
    do {                                                                    \
        static const char *const aborted_[] = {__VA_ARGS__, NULL};          \
        expect_log_at(__FILE__, __LINE__, name, attempts, final, aborted_); \
    } while (0)

/* --------------------------------------------------------------- cases */

static void commit_runs_after(void) {
    clear_log();
    shared_value = 0;
    mode_at_commit = -1;
    uint64_t before = abi_attempts();
    __transaction_atomic {
        abi_count_attempt();
        shared_value = 42;
        _ITM_addUserCommitAction(commit_action, ABI_NO_TRANSACTION_ID, "c1");
        _ITM_addUserUndoAction(log_action, "u1");
        _ITM_addUserCommitAction(log_action, ABI_NO_TRANSACTION_ID, "c2");
        _ITM_addUserCommitAction(log_action, ABI_NO_TRANSACTION_ID, "c3");
    }
    EXPECT_LOG("commit_order", abi_attempts() - before, "c1,c2,c3", "u1");
    ABI_EXPECT("commit_sees_stores", seen_value_at_commit == 42, "shared_value not 42 in action");
    ABI_EXPECT("commit_outside", mode_at_commit == ABI_OUTSIDE,
               "the commit action ran inside a transaction");
    abi_summary("commit=[%s]", log_tail(strlen("c1,c2,c3")));
}

static void cancel_runs_undo(void) {
    clear_log();
    shared_value = 1;
    uint64_t before = abi_attempts();
    __transaction_atomic {
        abi_count_attempt();
        shared_value = 2;
        _ITM_addUserUndoAction(log_action, "u1");
        _ITM_addUserCommitAction(log_action, ABI_NO_TRANSACTION_ID, "c1");
        _ITM_addUserUndoAction(log_action, "u2");
        _ITM_addUserUndoAction(log_action, "u3");
        if (cancel_now)
            __transaction_cancel;
    }
    EXPECT_LOG("undo_on_cancel", abi_attempts() - before, "u3,u2,u1", "u3,u2,u1");
    ABI_EXPECT("undo_cancel_restores", shared_value == 1, "shared_value not restored");
    abi_summary("cancel=[%s]", log_tail(strlen("u3,u2,u1")));
}

/* Every transaction here stores to shared data: gcc -O2 removes a
 * transaction whose body makes no transactional access (calls to
 * transaction_pure functions do not count), and the actions would then be
 * registered outside any transaction. */
static void nested_actions(void) {
    clear_log();
    shared_value = 0;
    shared_other = 0;
    uint64_t before = abi_attempts();
    __transaction_atomic {
        abi_count_attempt();
        shared_value = 1;
        _ITM_addUserCommitAction(log_action, ABI_NO_TRANSACTION_ID, "outer_c");
        _ITM_addUserUndoAction(log_action, "outer_u");
        __transaction_atomic {
            _ITM_addUserCommitAction(log_action, ABI_NO_TRANSACTION_ID, "cancelled_c");
            _ITM_addUserUndoAction(log_action, "cancelled_u");
            shared_other = 5;
            if (cancel_now)
                __transaction_cancel;
        }
        __transaction_atomic {
            shared_value = shared_value + 1;
            _ITM_addUserCommitAction(log_action, ABI_NO_TRANSACTION_ID, "nested_c");
            _ITM_addUserUndoAction(log_action, "nested_u");
        }
        _ITM_addUserCommitAction(log_action, ABI_NO_TRANSACTION_ID, "last_c");
    }
    /* The cancelled nested transaction's undo action ran at its cancel. An
     * attempt rolled back as a whole ran its undo actions, newest first:
     * libitm's ml_wt and gl_wt do that at the nested cancel (they restart the
     * transaction with a method that can undo just the nested part), fault
     * injection at the commit. */
    EXPECT_LOG("nested_actions", abi_attempts() - before, "cancelled_u,outer_c,nested_c,last_c",
               "cancelled_u,outer_u", "cancelled_u,nested_u,outer_u");
    ABI_EXPECT("nested_actions_stores", shared_value == 2 && shared_other == 0,
               "the committed stores are not shared_value=2 shared_other=0");
    abi_summary("nested=[%s]", log_tail(strlen("cancelled_u,outer_c,nested_c,last_c")));
}

/* The id of a transaction and of a transaction nested in it (one transaction
 * per function: values live across a transaction's start trip -Wclobbered). */
__attribute__((noinline)) static uint64_t ids_of_transaction(uint64_t *nested) {
    uint64_t id;
    __transaction_atomic {
        id = _ITM_getTransactionId();
        __transaction_atomic {
            *nested = _ITM_getTransactionId();
            shared_other++;
        }
    }
    return id;
}

static void transaction_ids(void) {
    uint64_t id1_nested = 0, id2_nested = 0;
    CHECK_EQ(_ITM_getTransactionId(), ABI_NO_TRANSACTION_ID);
    uint64_t id1 = ids_of_transaction(&id1_nested);
    uint64_t id2 = ids_of_transaction(&id2_nested);
    ABI_EXPECT("id_inside", id1 != ABI_NO_TRANSACTION_ID && id1 != 0, "no id inside");
    ABI_EXPECT("id_nested_same", id1_nested == id1 && id2_nested == id2,
               "nested transaction has another id");
    ABI_EXPECT("id_next_differs", id2 != id1 && id2 != ABI_NO_TRANSACTION_ID,
               "the next transaction has the same id");
    CHECK_EQ(_ITM_getTransactionId(), ABI_NO_TRANSACTION_ID);
}

/* ---------------------------------------- per attempt, with many threads */

#define NTHREADS 2
static long per_thread_ops = 4000;
static unsigned long undo_runs, commit_runs, wrong_thread;
static long counter;

static void count_undo(void *arg) {
    (void)arg;
    __atomic_fetch_add(&undo_runs, 1, __ATOMIC_RELAXED);
}

static void count_commit(void *arg) {
    /* runs in the thread that committed, after its commit */
    if ((pthread_t)(uintptr_t)arg != pthread_self())
        __atomic_fetch_add(&wrong_thread, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&commit_runs, 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) static void counted_increment(void *self) {
    __transaction_atomic {
        abi_count_attempt();
        _ITM_addUserUndoAction(count_undo, NULL);
        counter = counter + 1;
        _ITM_addUserCommitAction(count_commit, ABI_NO_TRANSACTION_ID, self);
    }
}

static void *action_thread(void *arg) {
    (void)arg;
    void *self = (void *)(uintptr_t)pthread_self();
    for (long i = 0; i < per_thread_ops; i++)
        counted_increment(self);
    return NULL;
}

static void actions_per_attempt(void) {
    uint64_t attempts_before = abi_attempts();
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, action_thread, NULL), 0);
    for (int t = 0; t < NTHREADS; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);
    uint64_t attempts = abi_attempts() - attempts_before;
    long n = NTHREADS * per_thread_ops;
    char detail[200];
    snprintf(detail, sizeof detail,
             "commits=%lu (want %ld), undo runs=%lu, attempts=%llu: want "
             "undo runs == attempts - commits",
             commit_runs, n, undo_runs, (unsigned long long)attempts);
    ABI_EXPECT("commit_once_per_transaction", commit_runs == (unsigned long)n, detail);
    ABI_EXPECT("undo_once_per_aborted_attempt", (uint64_t)undo_runs + (uint64_t)n == attempts,
               detail);
    ABI_EXPECT("commit_in_committing_thread", wrong_thread == 0, "commit action in another thread");
    CHECK_EQ(counter, n);
    printf("INFO abi_actions: %lu undo actions ran for aborted attempts\n", undo_runs);
    if (getenv("ABI_EXPECT_INJECTED"))
        ABI_EXPECT("undo_ran_for_injected_aborts", undo_runs > 0, "no undo action ran");
    if (abi_may_fail("commit_once_per_transaction"))
        abi_summary("counter=%ld", counter);
    else
        abi_summary("counter=%ld commit_actions=%lu", counter, commit_runs);
}

/* ------------------------------------- the ABI's remaining entry points */

struct abi_src_location { /* _ITM_srcLocation */
    uint32_t reserved_1, flags, reserved_2, reserved_3;
    const char *psource;
};
int _ITM_versionCompatible(int) ABI_PURE;
void _ITM_dropReferences(void *, size_t) ABI_PURE;
void _ITM_changeTransactionMode(int) ABI_PURE; /* 0: modeSerialIrrevocable */
void _ITM_error(const struct abi_src_location *, int) ABI_PURE __attribute__((noreturn));

/* Runs fn in a child with a short alarm; returns its wait status. */
static int in_child(void (*fn)(void)) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(3); /* a runtime that hangs on its way out: killed, counted as a failure */
        fn();
        _exit(0);
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    return status;
}

static void drop_references(void) {
    __transaction_atomic {
        shared_other = shared_other + 1;
        _ITM_dropReferences(&shared_other, sizeof shared_other); /* a hint: no effect */
        shared_other = shared_other + 1;
    }
    CHECK_EQ(shared_other, 2);
}

/* GCC's dropref-2: the dropped range keeps what the transaction wrote there
 * even when the transaction is cancelled; the rest is undone. */
static unsigned char dropped[16];

/* Byte by byte through a call: gcc 12 -O2 turns the plain loop into one
 * vector store that it emits uninstrumented, before the code paths split. */
__attribute__((transaction_safe, noinline)) static void set_byte(unsigned char *p, int v) {
    *p = (unsigned char)v;
}

static void drop_references_cancel(void) {
    for (int i = 0; i < 16; i++)
        dropped[i] = 0x22;
    __transaction_atomic {
        for (int i = 0; i < 16; i++)
            set_byte(&dropped[i], 0x99);
        _ITM_dropReferences(dropped + 3, 10);
        if (cancel_now)
            __transaction_cancel;
    }
    for (int i = 0; i < 16; i++)
        CHECK_EQ(dropped[i], i >= 3 && i < 13 ? 0x99 : 0x22);
}

static void call_itm_error(void) {
    static const struct abi_src_location loc = {0, 0, 0, 0, "abi_actions.c:_ITM_error"};
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0)
        dup2(devnull, 2); /* its message is expected */
    _ITM_error(&loc, 1);
}

static void misc_entry_points(void) {
    ABI_EXPECT("version_compatible", _ITM_versionCompatible(90) && !_ITM_versionCompatible(89),
               "_ITM_versionCompatible: want true for 90 (the ABI's 0.90), false for 89");

    int mode_before = -1, mode_after = -1;
    shared_other = 0;
    __transaction_relaxed {
        shared_other = shared_other + 1;
        mode_before = _ITM_inTransaction();
        _ITM_changeTransactionMode(0);
        mode_after = _ITM_inTransaction();
        shared_other = shared_other + 1;
    }
    ABI_EXPECT("change_transaction_mode",
               (mode_before == ABI_RETRYABLE || mode_before == ABI_IRREVOCABLE) &&
                   mode_after == ABI_IRREVOCABLE && shared_other == 2,
               "_ITM_changeTransactionMode(modeSerialIrrevocable) did not make it irrevocable");

    shared_other = 0;
    int st = in_child(drop_references);
    ABI_EXPECT("drop_references", WIFEXITED(st) && WEXITSTATUS(st) == 0,
               "a transaction calling _ITM_dropReferences did not complete");

    st = in_child(drop_references_cancel);
    ABI_EXPECT("drop_references_cancel", WIFEXITED(st) && WEXITSTATUS(st) == 0,
               "a cancel undid a range given to _ITM_dropReferences (or did not undo the rest)");

    st = in_child(call_itm_error); /* _ITM_error ends the process */
    ABI_EXPECT("itm_error_ends_process", !(WIFEXITED(st) && WEXITSTATUS(st) == 0),
               "the process went on after _ITM_error");
}

int main(int argc, char **argv) {
    abi_init("abi_actions");
    if (argc > 1)
        per_thread_ops = atol(argv[1]);
    commit_runs_after();
    cancel_runs_undo();
    nested_actions();
    transaction_ids();
    misc_entry_points(); /* forks: before any other thread exists */
    actions_per_attempt();
    return abi_finish();
}
