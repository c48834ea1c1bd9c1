/* SPDX-License-Identifier: MIT */
/* stat_helper - a txkit process with known statistics, for the txkit stat tests.
 *
 *   stat_helper [--tx N] [--threads T] [--name NAME] [--pace-us U] [--no-fault]
 *               [--itm N] [--itm-pair N] [--tx-pair N] [--counter N] [--wait-seconds S] [--cx N]
 *               [--cx-static N]
 *
 * Runs N transactions at one TX_ATOMIC site. With fault injection (the
 * default: txkit_set_fault(TXKIT_STM, 1.0)) every software attempt aborts at
 * commit, so with TXKIT_METHOD=stm and TXKIT_STM_RETRIES=R each transaction
 * aborts exactly R times (cause "injected") and then commits serially.
 * --threads T: T threads run the N transactions one after the other (no
 * concurrency, so the arithmetic stays exact) and stay alive; default: the
 * main thread runs them. --name sets the process name (comm) before the
 * first transaction, which is when the statistics segment is created.
 * --itm N (stat_helper_itm only): N gcc -fgnu-tm transactions as well.
 * --itm-pair N (stat_helper_itm only): N rounds of two more gcc blocks in
 * turns (2N transactions, N at each site; counted in "itm").
 * --tx-pair N: N rounds of two more TX_ATOMIC sites in turns (pair_left_tx,
 * pair_right_tx: 2N transactions, N at each site; counted in "tx").
 * --cx N: N critical sections of a cx lock (cx_optimistic), first taken in
 * stat_cx_work (exported: the runtime names the lock by its first caller).
 * They are not transactions: tx_stats_get() leaves them out.
 * --cx-static N: the same with another lock, first taken in a static
 * function (no dynamic symbol: txkit stat names it from the ELF .symtab).
 *
 * It checks the arithmetic against tx_stats_get() (exit 1 if wrong; not with
 * --no-self-check, which leaves the process's clock uncalibrated: it is
 * calibrated and published by the first tx_stats_get()), prints
 * one JSON line on stdout with what it did, then waits for SIGTERM, SIGINT or
 * SIGUSR1 (or --wait-seconds, default 60) and exits normally, so that
 * TXKIT_STATS=FILE writes its dump. It also gets SIGTERM when its parent dies.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <txkit.h>
#include <unistd.h>

#ifdef STAT_HELPER_ITM
void stat_itm_run(unsigned n); /* stat_helper_itm.c, compiled with -fgnu-tm */
void stat_itm_pair_run(unsigned n);
#endif

static long counter;
static int tx_line;
static unsigned pace_us;

/* The one TX_ATOMIC site (a function of its own: locals of the caller would
 * live across the block's setjmp-like restart). */
__attribute__((noinline)) static void one_tx(void) {
    tx_line = __LINE__ + 1; /* the line of the TX_ATOMIC below */
    TX_ATOMIC {
        TX_STORE(&counter, TX_LOAD(&counter) + 1);
    }
}

/* Two more sites, run in turns (--tx-pair): each begin follows a commit of
 * the other site, which the express begins (runtime/express.h) must count
 * at the new site. */
__attribute__((noinline)) static void pair_left_tx(void) {
    TX_ATOMIC {
        TX_STORE(&counter, TX_LOAD(&counter) + 1);
    }
}
__attribute__((noinline)) static void pair_right_tx(void) {
    TX_ATOMIC {
        TX_STORE(&counter, TX_LOAD(&counter) + 1);
    }
}

static void run_tx(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        one_tx();
        if (pace_us) {
            struct timespec d = {0, (long)pace_us * 1000L};
            nanosleep(&d, NULL);
        }
    }
}

static cx_lock_t cx = CX_LOCK_INITIALIZER;
static long cx_counter;

void stat_cx_work(unsigned n);
__attribute__((noinline)) void stat_cx_work(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        cx_optimistic(&cx);
        cx_counter++;
        cx_unlock(&cx);
    }
}

/* A lock first taken in a static function: dladdr cannot name it (no
 * dynamic symbol), txkit stat names it from the ELF symbol table. */
static cx_lock_t cx_static = CX_LOCK_INITIALIZER;
__attribute__((noinline)) static void stat_cx_static_work(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        cx_optimistic(&cx_static);
        cx_counter++;
        cx_unlock(&cx_static);
    }
}

/* Worker threads take turns, then stay alive until told to quit. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned turn, nthreads, ntx;
static int quit;

static void *worker(void *arg) {
    unsigned k = (unsigned)(uintptr_t)arg;
    unsigned share = ntx / nthreads + (k < ntx % nthreads);
    pthread_mutex_lock(&mu);
    while (turn != k)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    run_tx(share);
    pthread_mutex_lock(&mu);
    turn++;
    pthread_cond_broadcast(&cv);
    while (!quit)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static unsigned long arg_num(const char *opt, const char *v) {
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || *end || !*v) {
        fprintf(stderr, "stat_helper: %s %s: not a number\n", opt, v);
        exit(2);
    }
    return n;
}

static int check(const char *what, unsigned long long got, unsigned long long want) {
    if (got == want)
        return 0;
    fprintf(stderr, "stat_helper: %s = %llu, expected %llu\n", what, got, want);
    return 1;
}

int main(int argc, char **argv) {
    unsigned long tx = 100, threads = 0, itm = 0, itm_pair = 0, cxn = 0, wait_s = 60, counter = 0,
                  cx_static_n = 0, tx_pair = 0;
    int fault = 1, self_check = 1;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(a, "--tx") == 0)
            tx = arg_num(a, v), i++;
        else if (strcmp(a, "--threads") == 0)
            threads = arg_num(a, v), i++;
        else if (strcmp(a, "--name") == 0)
            name = v, i++;
        else if (strcmp(a, "--pace-us") == 0)
            pace_us = (unsigned)arg_num(a, v), i++;
        else if (strcmp(a, "--cx-static") == 0)
            cx_static_n = arg_num(a, v), i++;
        else if (strcmp(a, "--cx") == 0)
            cxn = arg_num(a, v), i++;
        else if (strcmp(a, "--itm") == 0)
            itm = arg_num(a, v), i++;
        else if (strcmp(a, "--tx-pair") == 0)
            tx_pair = arg_num(a, v), i++;
        else if (strcmp(a, "--itm-pair") == 0)
            itm_pair = arg_num(a, v), i++;
        else if (strcmp(a, "--counter") == 0)
            counter = arg_num(a, v), i++;
        else if (strcmp(a, "--wait-seconds") == 0)
            wait_s = arg_num(a, v), i++;
        else if (strcmp(a, "--no-fault") == 0)
            fault = 0;
        else if (strcmp(a, "--no-self-check") == 0)
            self_check = 0;
        else {
            fprintf(stderr, "stat_helper: unknown argument '%s'\n", a);
            return 2;
        }
    }
#ifndef STAT_HELPER_ITM
    if (itm || itm_pair) {
        fprintf(stderr, "stat_helper: --itm and --itm-pair need stat_helper_itm\n");
        return 2;
    }
#endif
    /* Signals that end the wait: blocked in every thread, taken by sigtimedwait. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (name)
        prctl(PR_SET_NAME, name, 0, 0, 0);

    const char *m = getenv("TXKIT_METHOD");
    const char *r = getenv("TXKIT_STM_RETRIES");
    int exact = fault && m && strcmp(m, "stm") == 0;
    unsigned long retries = r ? strtoul(r, NULL, 10) : 16;
    if (fault && txkit_set_fault(TXKIT_STM, 1.0) != 0) {
        fprintf(stderr, "stat_helper: txkit_set_fault failed\n");
        return 1;
    }

    pthread_t *t = NULL;
    if (threads == 0) {
        run_tx((unsigned)tx);
    } else {
        nthreads = (unsigned)threads;
        ntx = (unsigned)tx;
        t = calloc(threads, sizeof *t);
        if (!t)
            return 1;
        for (unsigned k = 0; k < threads; k++)
            pthread_create(&t[k], NULL, worker, (void *)(uintptr_t)k);
        pthread_mutex_lock(&mu);
        while (turn != threads)
            pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
    }
    for (unsigned long k = 0; k < tx_pair; k++) {
        pair_left_tx();
        pair_right_tx();
    }
    tx += 2 * tx_pair;
#ifdef STAT_HELPER_ITM
    if (itm)
        stat_itm_run((unsigned)itm);
    if (itm_pair)
        stat_itm_pair_run((unsigned)itm_pair);
#endif
    itm += 2 * itm_pair;
    if (cxn)
        stat_cx_work((unsigned)cxn);
    if (cx_static_n)
        stat_cx_static_work((unsigned)cx_static_n);
    if (counter) {
        /* Application counters: N events one by one, and a level of N. */
        txkit_counter_t *ev = txkit_counter("test.events", TXKIT_COUNTER_EVENTS);
        txkit_counter_t *lv = txkit_counter("test.level", TXKIT_COUNTER_LEVEL);
        if (!ev || !lv || txkit_counter("test.events", TXKIT_COUNTER_EVENTS) != ev ||
            txkit_counter("", TXKIT_COUNTER_EVENTS) != NULL) {
            fprintf(stderr, "stat_helper: txkit_counter failed\n");
            return 1;
        }
        for (unsigned long k = 0; k < counter; k++)
            txkit_counter_add(ev, 1);
        txkit_counter_set(lv, (int64_t)counter);
        if (txkit_counter_get(ev) != (int64_t)counter ||
            txkit_counter_get(lv) != (int64_t)counter) {
            fprintf(stderr, "stat_helper: counter values wrong\n");
            return 1;
        }
    }

    if (!self_check) {
        printf("{\"pid\": %ld, \"tx\": %lu, \"itm\": %lu, \"line\": %d, \"self_check\": false}\n",
               (long)getpid(), tx, itm, tx_line);
        fflush(stdout);
        struct timespec limit = {(time_t)wait_s, 0};
        sigtimedwait(&set, NULL, &limit);
        _exit(0); /* not exit(): at exit the runtime may read its statistics */
    }
    tx_stats_t s;
    tx_stats_get(&s);
    unsigned long long all = tx + itm;
    int bad = 0;
    bad |= check("transactions", s.transactions, all);
    bad |= check("commits", tx_stats_commits(&s), all);
    if (exact) {
        /* Each transaction: `retries` injected software aborts, then a serial commit. */
        bad |= check("commits[serial]", s.commits[TXKIT_SERIAL], all);
        bad |= check("aborts", tx_stats_aborts(&s), all * retries);
        bad |= check("aborts[stm]", s.aborts[TXKIT_STM], all * retries);
        bad |= check("aborts_by_cause[injected]", s.aborts_by_cause[TXKIT_CAUSE_INJECTED],
                     all * retries);
        bad |= check("to_serial", s.to_serial, retries ? all : 0);
    } else if (!fault) {
        /* No injected faults: nothing aborts but hardware transactions, which
         * an interrupt may end whenever other threads make auto use them. */
        bad |= check("aborts outside htm", tx_stats_aborts(&s) - s.aborts[TXKIT_HTM], 0);
    }
    if (bad)
        return 1;

    printf(
        "{\"pid\": %ld, \"tx\": %lu, \"itm\": %lu, \"cx\": %lu, \"threads\": %lu, \"line\": %d, "
        "\"file\": \"%s\", "
        "\"transactions\": %llu, \"commits\": %llu, \"commits_htm\": %llu, \"commits_stm\": %llu, "
        "\"commits_serial\": %llu, \"aborts\": %llu, \"aborts_stm\": %llu, \"injected\": %llu, "
        "\"conflict\": %llu, \"to_serial\": %llu}\n",
        (long)getpid(), tx, itm, cxn, threads ? threads : 1, tx_line, __FILE__,
        (unsigned long long)s.transactions, (unsigned long long)tx_stats_commits(&s),
        (unsigned long long)s.commits[TXKIT_HTM], (unsigned long long)s.commits[TXKIT_STM],
        (unsigned long long)s.commits[TXKIT_SERIAL], (unsigned long long)tx_stats_aborts(&s),
        (unsigned long long)s.aborts[TXKIT_STM],
        (unsigned long long)s.aborts_by_cause[TXKIT_CAUSE_INJECTED],
        (unsigned long long)s.aborts_by_cause[TXKIT_CAUSE_CONFLICT],
        (unsigned long long)s.to_serial);
    fflush(stdout);

    struct timespec limit = {(time_t)wait_s, 0};
    sigtimedwait(&set, NULL, &limit);
    if (threads) {
        pthread_mutex_lock(&mu);
        quit = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        for (unsigned k = 0; k < threads; k++)
            pthread_join(t[k], NULL);
        free(t);
    }
    return 0;
}
