/* SPDX-License-Identifier: MIT */
/* app_common.c - the apps' harness: arguments, runtime identification,
 * rounds, threads with a start barrier, per-thread methods, failure reports.
 * txkit's API is reached through dlsym() only, so the same binary runs on
 * GCC's libitm. */
#include "app_common.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *app_name = "app";
static int app_round_now;
static double app_t0;
static int (*set_thread_method)(int);
static int htm_ok;
static int cfg_threads;
static const int mix_methods[] = {0 /* auto */, 2 /* stm */, 3 /* serial */, 1 /* htm */};

int app_on_txkit(void) { return dlsym(RTLD_DEFAULT, "txkit_version") != NULL; }

double app_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void *app_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "FAIL %s: out of memory (%zu bytes)\n", app_name, n);
        exit(1);
    }
    return p;
}

/* The context of a failed check (tests/common/check.h): which app, which
 * round, how many threads. */
void tk_check_context(void) {
    fprintf(stderr, "FAIL %s (round %d, %d threads):\n", app_name, app_round_now, cfg_threads);
}

void app_pass(const char *fmt, ...) {
    va_list ap;
    printf("PASS %s: ", app_name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" (%d rounds, %.2f s)\n", app_round_now + 1, app_now() - app_t0);
    fflush(stdout);
}

static long arg_long(const char *s, const char *what, long min) {
    char *end;
    long v = strtol(s, &end, 0);
    if (*s == '\0' || *end != '\0' || v < min) {
        fprintf(stderr, "%s: bad %s '%s' (expected an integer >= %ld)\n", app_name, what, s, min);
        exit(2);
    }
    return v;
}

void app_init(app_cfg *c, const char *name, int argc, char **argv, long def_size) {
    app_name = name;
    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(c, 0, sizeof *c);
    c->name = name;
    c->threads = argc > 1 ? (int)arg_long(argv[1], "thread count", 1) : 2;
    c->size = argc > 2 ? arg_long(argv[2], "size", 1) : def_size;
    c->seed = argc > 3 ? (uint64_t)arg_long(argv[3], "seed", 0) : 1;
    if (argc > 4) {
        fprintf(stderr, "usage: %s [THREADS [SIZE [SEED]]]\n", name);
        exit(2);
    }
    cfg_threads = c->threads;
    const char *st = getenv("TXKIT_STRESS_SECONDS");
    if (st && *st) {
        char *end;
        c->stress_s = strtod(st, &end);
        if (*end != '\0' || c->stress_s < 0) {
            fprintf(stderr, "%s: bad TXKIT_STRESS_SECONDS '%s'\n", name, st);
            exit(2);
        }
    }
    const char *mix = getenv("APPS_MIX");
    c->mix = mix && *mix && strcmp(mix, "0") != 0;

    int txkit = app_on_txkit();
    int (*usable)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "txkit_htm_usable");
    htm_ok = usable ? usable() : 0;
    const char *method = getenv("TXKIT_METHOD");
    if (txkit && method && strcmp(method, "htm") == 0 && !htm_ok) {
        printf("SKIP %s: TXKIT_METHOD=htm but RTM is not usable here\n", name);
        exit(APP_SKIP_CODE);
    }
    if (c->mix && txkit) {
        set_thread_method = (int (*)(int))dlsym(RTLD_DEFAULT, "txkit_set_thread_method");
        if (!set_thread_method) {
            fprintf(stderr, "%s: APPS_MIX=1 but txkit has no txkit_set_thread_method\n", name);
            exit(2);
        }
    }
    const char *expect = getenv("APPS_EXPECT_RUNTIME");
    if (expect && *expect && strcmp(expect, txkit ? "txkit" : "libitm") != 0) {
        fprintf(stderr, "FAIL %s: APPS_EXPECT_RUNTIME=%s but the runtime is %s\n", name, expect,
                txkit ? "txkit" : "libitm");
        exit(1);
    }
    const char *fault = getenv("TXKIT_FAULT");
    const char *itm = getenv("ITM_DEFAULT_METHOD");
    printf("INFO %s: runtime=%s method=%s%s fault=%s threads=%d size=%ld seed=%llu stress=%gs\n",
           name, txkit ? "txkit" : "libitm",
           txkit ? (method && *method ? method : "auto") : (itm && *itm ? itm : "default"),
           c->mix && txkit ? "+per-thread-mix" : "", txkit && fault && *fault ? fault : "none",
           c->threads, c->size, (unsigned long long)c->seed, c->stress_s);
    app_t0 = app_now();
}

int app_next_round(app_cfg *c) {
    static int started;
    if (!started) {
        started = 1;
        c->round = 0;
        app_round_now = 0;
        return 1;
    }
    if (c->stress_s <= 0 || app_now() - app_t0 >= c->stress_s)
        return 0;
    c->round++;
    app_round_now = c->round;
    return 1;
}

struct worker {
    app_cfg *cfg;
    int tid;
    void (*fn)(int, void *);
    void *arg;
    pthread_barrier_t *bar;
};

static long warm_counter;

static void *worker_main(void *p) {
    struct worker *w = p;
    __transaction_atomic { warm_counter++; }
    if (set_thread_method) {
        int nm = htm_ok ? 4 : 3;
        int m = mix_methods[(w->tid + w->cfg->round) % nm];
        int rc = set_thread_method(m);
        CHECK_MSG(rc == 0, "txkit_set_thread_method(%d) = %d", m, rc);
    }
    pthread_barrier_wait(w->bar);
    w->fn(w->tid, w->arg);
    /* No thread leaves (and unregisters from the runtime) while others still
     * run transactions: GCC's libitm switches its default method when the
     * thread count drops to one, and a cancellable transaction running
     * then can end up irrevocable (abort() at __transaction_cancel). */
    pthread_barrier_wait(w->bar);
    return NULL;
}

void app_parallel(app_cfg *c, void (*fn)(int tid, void *arg), void *arg) {
    int n = c->threads;
    pthread_t *th = app_xmalloc(sizeof *th * (size_t)n);
    struct worker *w = app_xmalloc(sizeof *w * (size_t)n);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        w[i] = (struct worker){c, i, fn, arg, &bar};
        CHECK_EQ(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    free(th);
    free(w);
}

void app_rounds(app_cfg *c, void (*setup)(void), app_phase_fn first, app_phase_fn then,
                void (*check_and_free)(void)) {
    while (app_next_round(c)) {
        setup();
        app_parallel(c, first, NULL);
        if (then)
            app_parallel(c, then, NULL);
        check_and_free();
    }
}
