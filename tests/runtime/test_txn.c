/* SPDX-License-Identifier: MIT */
/* test_txn.c - the transactions of src/runtime/txn.c (include/txkit/tx.h):
 * flat nesting, tx_irrevocable, tx_restart, leaving a block by break,
 * continue, return and goto, and the program errors that stop the process.
 * See api_util.h for how these programs run. */
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_util.h"

/* ================================================================ nesting */

static long g_n1, g_n2, g_n3;

static int nested_helper(void) {
    volatile int depth_inside = 0; /* written in the block, read after it */
    TX_ATOMIC {
        depth_inside = tx_in_transaction();
        TX_STORE(&g_n3, TX_LOAD(&g_n3) + 1);
    }
    return depth_inside;
}

static void test_nesting(void) {
    g_n1 = g_n2 = g_n3 = 0;
    tx_stats_t s0 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    TX_ATOMIC {
        CHECK_EQ(tx_in_transaction(), 1);
        TX_STORE(&g_n1, 1);
        TX_ATOMIC {
            CHECK_EQ(tx_in_transaction(), 2);
            CHECK_EQ(TX_LOAD(&g_n1), 1); /* the outer level's write */
            TX_STORE(&g_n2, 2);
            TX_ATOMIC {
                CHECK_EQ(tx_in_transaction(), 3);
                TX_STORE(&g_n1, 10);
            }
            CHECK_EQ(tx_in_transaction(), 2);
        }
        CHECK_EQ(tx_in_transaction(), 1);
        CHECK_EQ(TX_LOAD(&g_n2), 2);
        CHECK_EQ(TX_LOAD(&g_n1), 10);
        CHECK_EQ(nested_helper(), 2);
        CHECK_EQ(tx_in_transaction(), 1);
        CHECK_EQ(TX_LOAD(&g_n3), 1);
    }
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_n1, 10);
    CHECK_EQ(g_n2, 2);
    CHECK_EQ(g_n3, 1);
    tx_stats_t s1 = tk_stats();
    /* Flat nesting: one transaction, one commit. */
    CHECK_EQ(s1.transactions - s0.transactions, 1);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);
    /* The helper alone is an outermost transaction. */
    CHECK_EQ(nested_helper(), 1);
    CHECK_EQ(g_n3, 2);

    /* A restart in an inner block restarts the outermost one: the outer
     * level's stores of the aborted attempt are gone in the next one. */
    g_n1 = g_n2 = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        CHECK_EQ(TX_LOAD(&g_n1), 0);
        CHECK_EQ(TX_LOAD(&g_n2), 0);
        TX_STORE(&g_n1, 10 + n);
        TX_ATOMIC {
            TX_STORE(&g_n2, 20 + n);
            TX_ATOMIC {
                CHECK_EQ(tx_in_transaction(), 3);
                if (n == 0)
                    tx_restart();
            }
        }
        CHECK_EQ(tx_in_transaction(), 1);
    }
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(tk_explicit_aborts() - a.explicit_base, 1);
    CHECK_EQ(g_n1, 11);
    CHECK_EQ(g_n2, 21);

    /* break out of an inner block leaves that level only. */
    g_n1 = g_n2 = 0;
    TX_ATOMIC {
        TX_ATOMIC {
            TX_STORE(&g_n1, 1);
            if (TX_LOAD(&g_n1) == 1)
                break;
            TX_STORE(&g_n1, 2);
        }
        CHECK_EQ(tx_in_transaction(), 1);
        TX_STORE(&g_n2, 3);
    }
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_n1, 1);
    CHECK_EQ(g_n2, 3);

    /* A block of a single statement. */
    TX_ATOMIC
        TX_STORE(&g_n3, 99);
    CHECK_EQ(g_n3, 99);
}

/* ============================================================ irrevocable */

static volatile int g_irrev_side;
static long g_ix, g_iy;

static void irrevocable_increment(void) {
    TX_ATOMIC {
        TX_STORE(&g_ix, TX_LOAD(&g_ix) + 1);
        tx_irrevocable();
        g_irrev_side = g_irrev_side + 1;
    }
}

static void test_irrevocable(void) {
    g_irrev_side = 0;
    g_ix = 0;
    g_iy = 0;
    tx_stats_t s0 = tk_stats();
    TX_ATOMIC {
        TX_STORE(&g_ix, TX_LOAD(&g_ix) + 1);
        tx_irrevocable();
        CHECK_EQ(tx_in_transaction(), 1);
        g_irrev_side = g_irrev_side + 1; /* a non-undoable effect: exactly once */
        tx_irrevocable();                /* again: nothing changes */
        TX_STORE(&g_iy, TX_LOAD(&g_ix) * 10);
    }
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(g_irrev_side, 1);
    CHECK_EQ(g_ix, 1);
    CHECK_EQ(g_iy, 10);
    CHECK_EQ(s1.irrevocable - s0.irrevocable, 1);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    /* After a restart, and from an inner block. */
    g_irrev_side = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        TX_STORE(&g_ix, 100 + n);
        if (n == 0)
            tx_restart();
        TX_ATOMIC {
            tx_irrevocable();
            g_irrev_side = g_irrev_side + 1;
        }
        TX_STORE(&g_iy, TX_LOAD(&g_ix));
    }
    CHECK_EQ(g_irrev_side, 1);
    CHECK_EQ(g_ix, 101);
    CHECK_EQ(g_iy, 101);

    /* Injection may abort the attempt before tx_irrevocable(), never after. */
    g_irrev_side = 0;
    set_all_faults(1.0);
    for (int i = 0; i < 5; i++)
        irrevocable_increment();
    set_all_faults(0.0);
    CHECK_EQ(g_irrev_side, 5);
    CHECK_EQ(g_ix, 106);

    /* Outside a transaction it does nothing. */
    s0 = tk_stats();
    tx_irrevocable();
    CHECK_EQ(tx_in_transaction(), 0);
    s1 = tk_stats();
    CHECK_EQ(s1.irrevocable, s0.irrevocable);
    CHECK_EQ(s1.transactions, s0.transactions);
}

/* ================================================================ restart */

static long g_rx;

static void restart_from_deep(int depth) {
    if (depth < 0)
        return;
    if (depth > 0) {
        restart_from_deep(depth - 1);
        return;
    }
    tx_restart();
}

/* One transaction that restarts k times; returns the abort-handler runs. */
static int restart_k_times(int k) {
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        CHECK_EQ(TX_LOAD(&g_rx), 0);
        TX_STORE(&g_rx, 1 + n);
        if (n < k) {
            if (n % 2)
                restart_from_deep(5); /* from a few frames down */
            tx_restart();
        }
    }
    return a.handler_runs;
}

static void test_restart(void) {
    for (int k = 0; k <= 9; k++) {
        g_rx = 0;
        tx_stats_t s0 = tk_stats();
        int handler_runs = restart_k_times(k);
        tx_stats_t s1 = tk_stats();
        CHECK_EQ(g_rx, 1 + k);
        CHECK_EQ(
            s1.aborts_by_cause[TXKIT_CAUSE_EXPLICIT] - s0.aborts_by_cause[TXKIT_CAUSE_EXPLICIT], k);
        CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);
        CHECK_EQ(s1.transactions - s0.transactions, 1);
        if (!tk_hw_possible()) {
            CHECK_EQ(handler_runs, k);
            CHECK_EQ(tx_stats_aborts(&s1) - tx_stats_aborts(&s0), k);
        }
    }
}

/* ============================================== leaving the block commits */

static long g_lx, g_ly;
static volatile int g_leave_commits;

static void leave_commit_handler(void *arg) {
    (void)arg;
    g_leave_commits = g_leave_commits + 1;
}

static int leave_by_return(void) {
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(leave_commit_handler, NULL), 0);
        TX_STORE(&g_lx, 5);
        if (TX_LOAD(&g_lx) == 5)
            return 7;
        TX_STORE(&g_ly, 1);
    }
    return 0;
}

static void test_leave_block(void) {
    tx_stats_t s0, s1;

    g_lx = g_ly = 0;
    g_leave_commits = 0;
    s0 = tk_stats();
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(leave_commit_handler, NULL), 0);
        TX_STORE(&g_lx, 1);
        if (TX_LOAD(&g_lx) == 1)
            break;
        TX_STORE(&g_ly, 1);
    }
    s1 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_lx, 1);
    CHECK_EQ(g_ly, 0);
    CHECK_EQ(g_leave_commits, 1);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    g_lx = g_ly = 0;
    s0 = tk_stats();
    CHECK_EQ(leave_by_return(), 7);
    s1 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_lx, 5);
    CHECK_EQ(g_ly, 0);
    CHECK_EQ(g_leave_commits, 2);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    g_lx = g_ly = 0;
    s0 = tk_stats();
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(leave_commit_handler, NULL), 0);
        TX_STORE(&g_lx, 2);
        if (TX_LOAD(&g_lx) == 2)
            continue; /* ends the block, like break */
        TX_STORE(&g_ly, 1);
    }
    s1 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_lx, 2);
    CHECK_EQ(g_ly, 0);
    CHECK_EQ(g_leave_commits, 3);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    g_lx = g_ly = 0;
    s0 = tk_stats();
    TX_ATOMIC {
        CHECK_EQ(tx_on_commit(leave_commit_handler, NULL), 0);
        TX_STORE(&g_lx, 3);
        if (TX_LOAD(&g_lx) == 3)
            goto out;
        TX_STORE(&g_ly, 1);
    }
out:
    s1 = tk_stats();
    CHECK_EQ(tx_in_transaction(), 0);
    CHECK_EQ(g_lx, 3);
    CHECK_EQ(g_ly, 0);
    CHECK_EQ(g_leave_commits, 4);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 1);

    /* Leaving after a restart: the committed attempt is the second one. */
    g_lx = 0;
    struct tk_attempts a;
    tk_attempts_init(&a);
    TX_ATOMIC {
        int n = tk_attempt_no(&a);
        TX_STORE(&g_lx, 10 + n);
        if (n == 0)
            tx_restart();
        break;
    }
    CHECK_EQ(g_lx, 11);
    CHECK_EQ(tx_in_transaction(), 0);
}

/* ============================================== program errors (fork) */

static void die_restart_outside(void) { tx_restart(); }

static void die_restart_after_irrevocable(void) {
    TX_ATOMIC {
        tx_irrevocable();
        tx_restart();
    }
}

/* fn must kill the process with a message on stderr. */
static void expect_death(const char *what, void (*fn)(void)) {
    int pfd[2];
    CHECK_EQ(pipe(pfd), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        close(pfd[0]);
        dup2(pfd[1], 2);
        fn();
        _exit(0); /* survived: the parent reports it */
    }
    close(pfd[1]);
    char msg[1024];
    size_t len = 0;
    for (;;) {
        ssize_t r = read(pfd[0], msg + len, sizeof msg - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == sizeof msg - 1)
            break;
    }
    msg[len] = '\0';
    close(pfd[0]);
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK_MSG(!(WIFEXITED(st) && WEXITSTATUS(st) == 0), "%s: the process survived", what);
    CHECK_MSG(len > 0, "%s: the process died without a message", what);
    printf("    %s: died as it must (%s %d), said: %s", what, WIFSIGNALED(st) ? "signal" : "exit",
           WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), msg);
    if (len && msg[len - 1] != '\n')
        putchar('\n');
}

static void test_program_errors(void) {
    expect_death("tx_restart() outside a transaction", die_restart_outside);
    expect_death("tx_restart() after tx_irrevocable()", die_restart_after_irrevocable);
}

/* ================================================================== main */

static const struct tk_test tests[] = {
    {"nesting", test_nesting},
    {"irrevocable", test_irrevocable},
    {"restart", test_restart},
    {"leave_block", test_leave_block},
    {"program_errors", test_program_errors},
};

int main(int argc, char **argv) {
    return api_main("test_txn", tests, ARRAY_LEN(tests), argc, argv);
}
