/* SPDX-License-Identifier: MIT */
/* test_fork.c - fork() while other threads are inside transactions: the
 * child, which has only the forking thread, must find every token of the
 * runtime free and run writing transactions on every method (issue 11,
 * defect 6).
 *
 *   test_fork irrevocable   another thread is irrevocable (the token)
 *   test_fork serial        another thread runs a serial transaction (holds
 *                           the clock) while the forking thread is inside a
 *                           software transaction
 *   test_fork visible       another thread is a visible reader (timestamp
 *                           manager, older: it wins) of what the child writes
 *
 * Each child works, then exits 0; the parent gives it 20 s, then kills it
 * and fails. The child's memory is checked too: a transaction of a thread
 * that does not exist in the child is there whole or not at all.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <txkit.h>
#include <txkit/cm.h>
#include <txkit/cx.h>
#include <unistd.h>

#include "test_util.h"

static long x1, x2, y, z; /* shared */
static atomic_int inside; /* the other thread is where the scenario wants it */
static atomic_int forked; /* the parent has forked */
static cx_lock_t lk = CX_LOCK_INITIALIZER;

/* Until flag is set, or at most seconds (a scenario where fork must wait
 * for this thread does not deadlock the test). */
static void wait_flag(atomic_int *flag, double seconds) {
    double end = tk_now() + seconds;
    while (!atomic_load(flag) && tk_now() < end)
        usleep(1000);
}

/* ------------------------------------------------------------ the child */

static long child_count;

static void *child_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 500; i++)
        TX_ATOMIC {
            TX_STORE(&child_count, TX_LOAD(&child_count) + 1);
        }
    return NULL;
}

static void tx_write_free(void) {
    TX_ATOMIC {
        TX_STORE(&y, TX_LOAD(&y) + 1);
        long *p = tx_malloc(sizeof *p);
        if (p)
            tx_free(p);
    }
}

static void tx_irrevocable_write(void) {
    TX_ATOMIC {
        tx_irrevocable();
        TX_STORE(&y, TX_LOAD(&y) + 1);
    }
}

static void tx_cx_write(void) {
    TX_ATOMIC {
        cx_optimistic(&lk);
        TX_STORE(&y, TX_LOAD(&y) + 1);
        cx_unlock(&lk);
    }
}

/* Writing transactions on every method, irrevocable ones, cx sections in
 * and out of transactions, transactional frees, a second thread. */
static int child_work(void) {
    static const int methods[] = {TXKIT_AUTO, TXKIT_STM, TXKIT_SERIAL, TXKIT_HTM};
    long want = 0;
    for (unsigned k = 0; k < sizeof methods / sizeof methods[0]; k++) {
        if (txkit_set_thread_method(methods[k]) != 0) /* htm where there is no RTM */
            continue;
        for (int i = 0; i < 200; i++)
            tx_write_free();
        tx_irrevocable_write();
        tx_cx_write();
        cx_exclusive(&lk);
        y++;
        cx_unlock(&lk);
        want += 203;
    }
    txkit_set_thread_method(-1);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, child_worker, NULL) == 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ(y, want);
    CHECK_EQ(child_count, 1000);
    CHECK_EQ(x1, x2); /* the other thread's transaction: whole or not at all */
    return 0;
}

/* A thread that fork may have waited for (it held the clock) stays alive
 * until the fork is over: exiting, it frees its descriptor, and GCC 12's
 * AddressSanitizer takes its allocator's locks without fork handlers, so a
 * child forked meanwhile found one held and hung in its first free (the
 * sanitizer lane, fork.irrevocable.serial: 5 runs in 60). glibc's malloc, the
 * runtime's own locks and the clock are fork-safe; this is for the lane. */
static void outlive_fork(void) { wait_flag(&forked, 30); }

/* Wait for the child (at most 20 s); 0 if it exited 0. */
static int reap(pid_t pid, const char *what) {
    CHECK(pid > 0);
    double end = tk_now() + 20;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        CHECK(r >= 0);
        if (r == pid)
            break;
        if (tk_now() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fprintf(stderr, "%s: the child is stuck (no exit within 20 s)\n", what);
            return 1;
        }
        usleep(2000);
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s: the child failed (status %#x)\n", what, st);
        return 1;
    }
    printf("%s: the child ran its transactions and exited 0\n", what);
    return 0;
}

static pid_t fork_child_work(void) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(30); /* the parent kills us sooner; never outlive the test */
        _exit(child_work());
    }
    atomic_store(&forked, 1);
    return pid;
}

/* ---------------------------------------------------------- irrevocable */

static void *irrevocable_thread(void *arg) {
    (void)arg;
    TX_ATOMIC {
        long v = TX_LOAD(&x1);
        tx_irrevocable();
        atomic_store(&inside, 1);
        /* "I/O" until the parent has forked (bounded: fork may wait for a
         * serial one, which holds the clock) */
        wait_flag(&forked, 2);
        TX_STORE(&x1, v + 1);
        TX_STORE(&x2, v + 1);
    }
    outlive_fork();
    return NULL;
}

static int irrevocable(void) {
    pthread_t th;
    CHECK(pthread_create(&th, NULL, irrevocable_thread, NULL) == 0);
    wait_flag(&inside, 30);
    CHECK(atomic_load(&inside));
    pid_t pid = fork_child_work();
    pthread_join(th, NULL);
    CHECK_EQ(x1, 1);
    return reap(pid, "irrevocable");
}

/* --------------------------------------------------------------- serial */

static atomic_int main_inside;

static void *serial_thread(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_SERIAL), 0);
    wait_flag(&main_inside, 30);
    TX_ATOMIC {
        TX_STORE(&x1, TX_LOAD(&x1) + 1);
        atomic_store(&inside, 1);
        usleep(300000); /* holds the clock: fork waits for the end */
        TX_STORE(&x2, TX_LOAD(&x2) + 1);
    }
    outlive_fork();
    return NULL;
}

static pid_t serial_pid = -1; /* set once, across restarts of the block */

/* Inside a software transaction, fork while the other thread's serial
 * transaction holds the clock. */
static void fork_inside_transaction(void) {
    TX_ATOMIC {
        long v = TX_LOAD(&z);
        if (serial_pid < 0) {
            atomic_store(&main_inside, 1);
            wait_flag(&inside, 30); /* the serial transaction holds the clock */
            serial_pid = fork();
        }
        TX_STORE(&z, v + 1);
    }
}

static int serial(void) {
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, serial_thread, NULL) == 0);
    fork_inside_transaction();
    CHECK(serial_pid >= 0);
    if (serial_pid == 0) { /* the child: its copy of the transaction committed */
        alarm(30);
        CHECK_EQ(z, 1);
        txkit_set_thread_method(-1);
        _exit(child_work());
    }
    atomic_store(&forked, 1);
    pthread_join(th, NULL);
    CHECK_EQ(z, 1);
    CHECK_EQ(x1, 1);
    CHECK_EQ(x2, 1);
    return reap(serial_pid, "serial");
}

/* -------------------------------------------------------------- visible */

static void *reader_thread(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    TX_ATOMIC {
        long v = TX_LOAD(&y);
        (void)v;
        atomic_store(&inside, 1);
        wait_flag(&forked, 2);
    }
    return NULL;
}

static int visible(void) {
    if (txkit_set_cm("timestamp") != 0) {
        printf("visible: no timestamp manager, skipped\n");
        return TK_SKIP_CODE;
    }
    pthread_t th;
    CHECK(pthread_create(&th, NULL, reader_thread, NULL) == 0);
    wait_flag(&inside, 30);
    CHECK(atomic_load(&inside));
    usleep(1000); /* the reader is older than anything the child begins */
    pid_t pid = fork_child_work();
    pthread_join(th, NULL);
    return reap(pid, "visible");
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "irrevocable") == 0)
        return irrevocable();
    if (argc >= 2 && strcmp(argv[1], "serial") == 0)
        return serial();
    if (argc >= 2 && strcmp(argv[1], "visible") == 0)
        return visible();
    fprintf(stderr, "usage: test_fork irrevocable | serial | visible\n");
    return 2;
}
