/* SPDX-License-Identifier: MIT */
/* test_cm_unit.c - contention managers (txkit/cm.h): deterministic decisions
 * on constructed conflicts (_txkit_cm_decide), the order properties the
 * managers promise, and the API (txkit_set_cm, TXKIT_CM, tx_set_priority,
 * tx_get_priority from the scheduling policy, txkit_set_sched).
 *
 *   test_cm_unit [--no-fork] [FILTER]     the unit tests
 *   test_cm_unit env CM SCHED             TXKIT_CM / TXKIT_SCHED were set by
 *       CTest: txkit_get_cm() must say CM, and the scheduling setting must
 *       be SCHED (on, off, or - for not checked)
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <txkit/cm.h>

#include "test_util.h"

typedef struct _txkit_cm_party party_t;

static const char *const ordered[] = {"timestamp", "size", "prio"};
#define NORDERED (sizeof ordered / sizeof ordered[0])

static party_t mk(int prio, unsigned size, uint64_t start, unsigned id) {
    party_t p = {prio, size, start, id};
    return p;
}

static int decide(const char *cm, party_t self, party_t other) {
    int r = _txkit_cm_decide(cm, &self, &other);
    CHECK_MSG(r == 0 || r == 1, "_txkit_cm_decide(%s) returned %d", cm, r);
    return r;
}

/* ------------------------------------------------------ decisions */

static void test_decide_backoff(void) {
    uint64_t s = tk_seed(1);
    /* whatever the parties, the one that found the conflict aborts itself */
    for (int i = 0; i < 1000; i++) {
        party_t a = mk((int)(tk_rand(&s) % 41), (unsigned)(tk_rand(&s) % 100), tk_rand(&s) % 1000,
                       (unsigned)i);
        party_t b = mk((int)(tk_rand(&s) % 41), (unsigned)(tk_rand(&s) % 100), tk_rand(&s) % 1000,
                       (unsigned)i + 5000);
        CHECK_EQ(decide("backoff", a, b), 0);
        CHECK_EQ(decide("backoff", b, a), 0);
    }
    party_t big = mk(1000, 1u << 20, 0, 1), small = mk(-1000, 0, 999999, 2);
    CHECK_EQ(decide("backoff", big, small), 0);
}

static void test_decide_timestamp(void) {
    /* older (smaller start) wins, whatever priority and size say */
    party_t old = mk(1, 1, 100, 1), young = mk(40, 500, 200, 2);
    CHECK_EQ(decide("timestamp", old, young), 1);
    CHECK_EQ(decide("timestamp", young, old), 0);
    party_t older = mk(40, 0, 5, 9);
    CHECK_EQ(decide("timestamp", older, old), 1);
    CHECK_EQ(decide("timestamp", old, older), 0);
}

static void test_decide_size(void) {
    /* larger read + write set wins, then older; priority plays no part */
    party_t large = mk(1, 50, 900, 1), small = mk(40, 10, 100, 2);
    CHECK_EQ(decide("size", large, small), 1);
    CHECK_EQ(decide("size", small, large), 0);
    party_t eq_old = mk(1, 50, 100, 3), eq_young = mk(40, 50, 200, 4);
    CHECK_EQ(decide("size", eq_old, eq_young), 1);
    CHECK_EQ(decide("size", eq_young, eq_old), 0);
}

static void test_decide_prio(void) {
    /* higher priority wins even when smaller and younger */
    party_t hi = mk(30, 1, 900, 1), lo = mk(10, 500, 1, 2);
    CHECK_EQ(decide("prio", hi, lo), 1);
    CHECK_EQ(decide("prio", lo, hi), 0);
    /* equal priority: larger wins even when younger */
    party_t large = mk(20, 80, 900, 3), small = mk(20, 10, 1, 4);
    CHECK_EQ(decide("prio", large, small), 1);
    CHECK_EQ(decide("prio", small, large), 0);
    /* equal priority and size: older wins */
    party_t old = mk(20, 10, 5, 5), young = mk(20, 10, 6, 6);
    CHECK_EQ(decide("prio", old, young), 1);
    CHECK_EQ(decide("prio", young, old), 0);
    /* everything equal but the id: exactly one wins */
    party_t x = mk(20, 10, 5, 7), y = mk(20, 10, 5, 8);
    CHECK(decide("prio", x, y) != decide("prio", y, x));
    /* the full range of priorities, and negative ones */
    CHECK_EQ(decide("prio", mk(1000, 0, 9, 1), mk(999, 9, 0, 2)), 1);
    CHECK_EQ(decide("prio", mk(-1000, 9, 0, 1), mk(-999, 0, 9, 2)), 0);
    CHECK_EQ(decide("prio", mk(0, 0, 0, 1), mk(-1, 100, 0, 2)), 1);
}

static void test_decide_einval(void) {
    party_t a = mk(1, 1, 1, 1), b = mk(2, 2, 2, 2);
    CHECK_EQ(_txkit_cm_decide("nope", &a, &b), -EINVAL);
    CHECK_EQ(_txkit_cm_decide("", &a, &b), -EINVAL);
    CHECK_EQ(_txkit_cm_decide("Prio", &a, &b), -EINVAL);
}

/* Random parties with few distinct values, so that every tie-break is hit. */
static party_t rnd(uint64_t *s, unsigned id) {
    return mk((int)(tk_rand(s) % 3), (unsigned)(tk_rand(s) % 3), tk_rand(s) % 3, id);
}

static void test_antisymmetry(void) {
    uint64_t s = tk_seed(2);
    for (size_t m = 0; m < NORDERED; m++) {
        for (unsigned i = 0; i < 20000; i++) {
            party_t a = rnd(&s, 2 * i + 1), b = rnd(&s, 2 * i + 2);
            int ab = decide(ordered[m], a, b), ba = decide(ordered[m], b, a);
            CHECK_MSG(ab != ba,
                      "%s: decide(a,b) == decide(b,a) == %d for a = {prio %d, size %u, start %llu, "
                      "id %u}, b = {prio %d, size %u, start %llu, id %u}",
                      ordered[m], ab, a.prio, a.size, (unsigned long long)a.start, a.id, b.prio,
                      b.size, (unsigned long long)b.start, b.id);
        }
    }
}

static void test_transitivity(void) {
    uint64_t s = tk_seed(3);
    for (size_t m = 0; m < NORDERED; m++) {
        int checked = 0;
        for (unsigned i = 0; i < 30000; i++) {
            party_t a = rnd(&s, 3 * i + 1), b = rnd(&s, 3 * i + 2), c = rnd(&s, 3 * i + 3);
            if (decide(ordered[m], a, b) && decide(ordered[m], b, c)) {
                checked++;
                CHECK_MSG(decide(ordered[m], a, c) == 1,
                          "%s: a beats b, b beats c, but a does not beat c: a = {%d,%u,%llu,%u} "
                          "b = {%d,%u,%llu,%u} c = {%d,%u,%llu,%u}",
                          ordered[m], a.prio, a.size, (unsigned long long)a.start, a.id, b.prio,
                          b.size, (unsigned long long)b.start, b.id, c.prio, c.size,
                          (unsigned long long)c.start, c.id);
            }
        }
        CHECK(checked > 1000); /* the premise held often enough to mean something */
    }
}

/* ------------------------------------------------------------ API */

static void test_set_cm(void) {
    static const char *const all[] = {"backoff", "timestamp", "size", "prio"};
    for (size_t k = 0; k < 4; k++) {
        CHECK_EQ(txkit_set_cm(all[k]), 0);
        CHECK_MSG(strcmp(txkit_get_cm(), all[k]) == 0, "txkit_get_cm() = %s after txkit_set_cm(%s)",
                  txkit_get_cm(), all[k]);
    }
    CHECK_EQ(txkit_set_cm("timestamp"), 0);
    static const char *const bad[] = {"", "nope", "PRIO", "prio ", "backoff,prio", "ts"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK_MSG(txkit_set_cm(bad[k]) == -EINVAL, "txkit_set_cm(\"%s\") is not -EINVAL", bad[k]);
        CHECK(strcmp(txkit_get_cm(), "timestamp") == 0); /* unchanged */
    }
    /* a manager set at run time governs transactions at once */
    CHECK_EQ(txkit_set_cm("prio"), 0);
    static long x;
    TX_ATOMIC {
        TX_STORE(&x, TX_LOAD(&x) + 1);
    }
    CHECK_EQ(x, 1);
    CHECK_EQ(txkit_set_cm("backoff"), 0);
}

static atomic_int busy_state; /* 1: inside the transaction, 2: may leave */

static long busy_y;

static void *busy_thread(void *arg) {
    long *yp = &busy_y;
    (void)arg;
    TX_ATOMIC {
        TX_STORE(yp, TX_LOAD(yp) + 1);
        atomic_store(&busy_state, 1);
        while (atomic_load(&busy_state) != 2)
            sched_yield();
    }
    return NULL;
}

static void test_set_cm_busy(void) {
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    CHECK_EQ(txkit_set_cm("size"), 0);
    /* inside our own software transaction */
    static long z;
    volatile int rc = 0;
    TX_ATOMIC {
        TX_STORE(&z, 1);
        rc = txkit_set_cm("prio");
    }
    CHECK_EQ(rc, -EBUSY);
    CHECK(strcmp(txkit_get_cm(), "size") == 0);
}

/* cm.h: switching while another thread runs a software transaction is
 * allowed (NOrec stays underneath, so it is safe): 0, and that transaction
 * still commits exactly once. Its own CTest entry (cm.busy_other). */
static void test_set_cm_busy_other(void) {
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    CHECK_EQ(txkit_set_cm("size"), 0);
    atomic_store(&busy_state, 0);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, busy_thread, NULL), 0);
    while (atomic_load(&busy_state) != 1)
        sched_yield();
    CHECK_EQ(txkit_set_cm("prio"), 0);
    CHECK(strcmp(txkit_get_cm(), "prio") == 0);
    atomic_store(&busy_state, 2);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(busy_y, 1);
    CHECK_EQ(txkit_set_cm("backoff"), 0); /* and back, with nothing running */
    CHECK(strcmp(txkit_get_cm(), "backoff") == 0);
}

static void test_set_sched(void) {
    int first = txkit_set_sched(1);
    CHECK(first == 0 || first == 1);
    CHECK_EQ(txkit_set_sched(0), 1);
    CHECK_EQ(txkit_set_sched(0), 0);
    CHECK_EQ(txkit_set_sched(1), 0);
    CHECK_EQ(txkit_set_sched(first), 1);
}

static void test_set_priority(void) {
    CHECK_EQ(tx_set_priority(7), 0);
    CHECK_EQ(tx_get_priority(), 7);
    CHECK_EQ(tx_set_priority(-1000), 0);
    CHECK_EQ(tx_get_priority(), -1000);
    CHECK_EQ(tx_set_priority(1000), 0);
    CHECK_EQ(tx_get_priority(), 1000);
    static const int bad[] = {1001, -1001, INT_MAX, INT_MIN + 1, 5000};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK_MSG(tx_set_priority(bad[k]) == -EINVAL, "tx_set_priority(%d) is not -EINVAL", bad[k]);
        CHECK_EQ(tx_get_priority(), 1000); /* unchanged */
    }
    /* back to the one derived from scheduling: 20 - nice for SCHED_OTHER */
    CHECK_EQ(tx_set_priority(TX_PRIO_AUTO), 0);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    CHECK(errno == 0);
    CHECK_EQ(tx_get_priority(), 20 - nice);
    /* a priority set inside a transaction is taken at the next one: no crash, value kept */
    static long w;
    TX_ATOMIC {
        TX_STORE(&w, 1);
        CHECK_EQ(tx_set_priority(3), 0);
    }
    CHECK_EQ(tx_get_priority(), 3);
    CHECK_EQ(tx_set_priority(TX_PRIO_AUTO), 0);
}

/* The derived priority is read from the kernel at most once per millisecond
 * (cm.h), so a change shows after a while: poll for up to 200 ms, and say
 * how long it took when that was more than a few milliseconds. */
static int prio_after_change(int want) {
    double t0 = tk_now();
    int p;
    while ((p = tx_get_priority()) != want && tk_now() - t0 < 0.2) {
        struct timespec ts = {0, 500 * 1000};
        nanosleep(&ts, NULL);
    }
    double ms = (tk_now() - t0) * 1e3;
    if (p == want && ms > 20)
        printf("  (priority %d showed only after %.1f ms)\n", want, ms);
    return p;
}

static void *nice_thread(void *arg) {
    int *failures = arg;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    static const int nices[] = {7, 0, 19, 3};
    for (size_t k = 0; k < sizeof nices / sizeof nices[0]; k++) {
        CHECK_EQ(setpriority(PRIO_PROCESS, (id_t)tid, nices[k]), 0);
        int p = prio_after_change(20 - nices[k]);
        if (p != 20 - nices[k]) {
            fprintf(stderr, "nice %d: tx_get_priority() = %d, expected %d\n", nices[k], p,
                    20 - nices[k]);
            (*failures)++;
        }
    }
    /* a negative nice needs privilege (we are usually root here) */
    if (setpriority(PRIO_PROCESS, (id_t)tid, -5) == 0) {
        if (prio_after_change(25) != 25) {
            fprintf(stderr, "nice -5: tx_get_priority() = %d, expected 25\n", tx_get_priority());
            (*failures)++;
        }
    } else {
        printf("  (nice -5 not permitted: %s; not checked)\n", strerror(errno));
    }
    /* an explicit priority wins over nice, TX_PRIO_AUTO follows nice again */
    CHECK_EQ(tx_set_priority(33), 0);
    CHECK_EQ(setpriority(PRIO_PROCESS, (id_t)tid, 11), 0);
    CHECK_EQ(prio_after_change(-1), 33); /* polls the whole 200 ms: stays 33 */
    CHECK_EQ(tx_set_priority(TX_PRIO_AUTO), 0);
    CHECK_EQ(prio_after_change(9), 9);
    /* SCHED_IDLE: 0; SCHED_FIFO: 100 + rt priority (briefly: this thread
     * does nothing but ask, then goes back to SCHED_OTHER) */
    struct sched_param sp = {0};
    if (sched_setscheduler(0, SCHED_IDLE, &sp) == 0) {
        if (prio_after_change(0) != 0) {
            fprintf(stderr, "SCHED_IDLE: tx_get_priority() = %d, expected 0\n", tx_get_priority());
            (*failures)++;
        }
        CHECK_EQ(sched_setscheduler(0, SCHED_OTHER, &sp), 0);
    }
    sp.sched_priority = 1;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0) {
        int p = prio_after_change(101);
        struct sched_param back = {0};
        CHECK_EQ(pthread_setschedparam(pthread_self(), SCHED_OTHER, &back), 0);
        if (p != 101) {
            fprintf(stderr, "SCHED_FIFO 1: tx_get_priority() = %d, expected 101\n", p);
            (*failures)++;
        }
    } else {
        printf("  (SCHED_FIFO not permitted; not checked)\n");
    }
    return NULL;
}

static void test_priority_from_scheduling(void) {
    /* in a thread of its own: nice is per thread on Linux */
    int failures = 0;
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, nice_thread, &failures), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(failures, 0);
}

/* ------------------------------------------------------------ env mode */

static int env_mode(const char *cm, const char *sched) {
    printf("TXKIT_CM=%s TXKIT_SCHED=%s: txkit_get_cm() = %s\n",
           getenv("TXKIT_CM") ? getenv("TXKIT_CM") : "(unset)",
           getenv("TXKIT_SCHED") ? getenv("TXKIT_SCHED") : "(unset)", txkit_get_cm());
    CHECK_MSG(strcmp(txkit_get_cm(), cm) == 0, "txkit_get_cm() = %s, expected %s", txkit_get_cm(),
              cm);
    /* and transactions run under it */
    static long v;
    TX_ATOMIC {
        TX_STORE(&v, TX_LOAD(&v) + 1);
    }
    CHECK_EQ(v, 1);
    CHECK(strcmp(txkit_get_cm(), cm) == 0);
    if (strcmp(sched, "-") != 0) {
        int want = strcmp(sched, "on") == 0;
        int was = txkit_set_sched(want);
        CHECK_MSG(was == want, "TXKIT_SCHED: the setting was %d, expected %d", was, want);
    }
    printf("ok\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "env") == 0)
        return env_mode(argv[2], argv[3]);
    if (argc == 2 && strcmp(argv[1], "busy_other") == 0) {
        test_set_cm_busy_other();
        printf("ok\n");
        return 0;
    }
    static const struct tk_test tests[] = {
        {"decide_backoff", test_decide_backoff},
        {"decide_timestamp", test_decide_timestamp},
        {"decide_size", test_decide_size},
        {"decide_prio", test_decide_prio},
        {"decide_einval", test_decide_einval},
        {"antisymmetry", test_antisymmetry},
        {"transitivity", test_transitivity},
        {"set_cm", test_set_cm},
        {"set_cm_busy", test_set_cm_busy},
        {"set_sched", test_set_sched},
        {"set_priority", test_set_priority},
        {"priority_from_scheduling", test_priority_from_scheduling},
    };
    return tk_run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
