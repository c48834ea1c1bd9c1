/* SPDX-License-Identifier: MIT */
/* test_config.c - the settings of src/runtime/config.c (include/txkit/tx.h):
 * method names and parsing, the process's and a thread's method, fault
 * injection (txkit_set_fault, and the serial fallback getting every
 * transaction through), the version and the RTM report. See api_util.h for
 * how these programs run. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "api_util.h"

/* ============================================================== methods */

static void test_method_names(void) {
    static const char *const names[] = {"auto", "htm", "stm", "serial"};
    CHECK_EQ(TXKIT_AUTO, 0);
    CHECK_EQ(TXKIT_NMETHODS, 4);
    for (int i = 0; i < TXKIT_NMETHODS; i++) {
        txkit_method_t m = (txkit_method_t)-1;
        CHECK(strcmp(txkit_method_name(i), names[i]) == 0);
        CHECK_EQ(txkit_method_parse(names[i], &m), 0);
        CHECK_EQ(m, i);
        CHECK_EQ(txkit_method_parse(txkit_method_name(i), &m), 0);
        CHECK_EQ(m, i);
    }
    CHECK(strcmp(txkit_method_name(TXKIT_NMETHODS), "?") == 0);
    CHECK(strcmp(txkit_method_name(-1), "?") == 0);
    CHECK(strcmp(txkit_method_name(1000), "?") == 0);
    static const char *const bad[] = {"",     "bogus", "STM", "Serial",  "stm ",
                                      " stm", "autox", "4",   "hardware"};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        txkit_method_t m = TXKIT_SERIAL;
        CHECK_MSG(txkit_method_parse(bad[i], &m) == -EINVAL, "parse(\"%s\")", bad[i]);
    }
}

static long g_mx;

/* Runs one transaction and says which method committed it. */
static int committing_method(void) {
    tx_stats_t s0 = tk_stats();
    TX_ATOMIC {
        TX_STORE(&g_mx, TX_LOAD(&g_mx) + 1);
    }
    tx_stats_t s1 = tk_stats();
    int found = -1;
    for (int m = 0; m < TXKIT_NMETHODS; m++) {
        uint64_t d = s1.commits[m] - s0.commits[m];
        CHECK(d <= 1);
        if (d == 1) {
            CHECK_EQ(found, -1);
            found = m;
        }
    }
    CHECK(found > TXKIT_AUTO); /* the auto slot is always 0 */
    return found;
}

struct thread_method_arg {
    txkit_method_t seen;
    int committed_by;
};

static void *thread_method_probe(void *p) {
    struct thread_method_arg *arg = p;
    arg->seen = txkit_get_method();
    arg->committed_by = committing_method();
    return NULL;
}

static void test_set_method(void) {
    txkit_method_t orig = txkit_get_method();
    /* Before any txkit_set_method, TXKIT_METHOD decides. */
    CHECK_EQ(orig, tk_env_method());
    if (orig == TXKIT_STM)
        CHECK_EQ(committing_method(), TXKIT_STM);
    if (orig == TXKIT_SERIAL)
        CHECK_EQ(committing_method(), TXKIT_SERIAL);

    if (!txkit_htm_usable()) {
        CHECK_EQ(txkit_set_method(TXKIT_HTM), -ENOTSUP);
        CHECK_EQ(txkit_get_method(), orig);
        CHECK_EQ(txkit_set_thread_method(TXKIT_HTM), -ENOTSUP);
        CHECK_EQ(txkit_get_method(), orig);
    } else {
        CHECK_EQ(txkit_set_method(TXKIT_HTM), 0);
        CHECK_EQ(txkit_get_method(), TXKIT_HTM);
        int by = committing_method();
        CHECK(by == TXKIT_HTM || by == TXKIT_SERIAL);
    }
    CHECK_EQ(txkit_set_method((txkit_method_t)-1), -EINVAL);
    CHECK_EQ(txkit_set_method(TXKIT_NMETHODS), -EINVAL);
    CHECK_EQ(txkit_set_method((txkit_method_t)99), -EINVAL);
    CHECK_EQ(txkit_set_thread_method(-2), -EINVAL);
    CHECK_EQ(txkit_set_thread_method(TXKIT_NMETHODS), -EINVAL);
    CHECK_EQ(txkit_set_thread_method(99), -EINVAL);

    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_STM);
    CHECK_EQ(committing_method(), TXKIT_STM);
    CHECK_EQ(txkit_set_method(TXKIT_SERIAL), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(committing_method(), TXKIT_SERIAL);
    CHECK_EQ(txkit_set_method(TXKIT_AUTO), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_AUTO);
    committing_method();

    /* The thread's own choice wins over the process's, for this thread only. */
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    CHECK_EQ(txkit_set_thread_method(TXKIT_SERIAL), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(committing_method(), TXKIT_SERIAL);
    CHECK_EQ(txkit_set_method(TXKIT_AUTO), 0);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    struct thread_method_arg arg = {TXKIT_AUTO, -1};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, thread_method_probe, &arg), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(arg.seen, TXKIT_STM);
    CHECK_EQ(arg.committed_by, TXKIT_STM);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(txkit_set_thread_method(-1), 0); /* follow the process again */
    CHECK_EQ(txkit_get_method(), TXKIT_STM);
    CHECK_EQ(committing_method(), TXKIT_STM);

    /* Not inside a transaction; the failed call changes nothing. */
    static volatile int busy_rc;
    TX_ATOMIC {
        busy_rc = txkit_set_thread_method(TXKIT_SERIAL);
    }
    CHECK_EQ(busy_rc, -EBUSY);
    CHECK_EQ(txkit_get_method(), TXKIT_STM);

    /* The process method may change inside a transaction: next one uses it. */
    static volatile int set_rc;
    TX_ATOMIC {
        TX_STORE(&g_mx, 0);
        set_rc = txkit_set_method(TXKIT_SERIAL);
    }
    CHECK_EQ(set_rc, 0);
    CHECK_EQ(txkit_get_method(), TXKIT_SERIAL);
    CHECK_EQ(committing_method(), TXKIT_SERIAL);

    CHECK_EQ(txkit_set_method(orig), 0);
    CHECK_EQ(txkit_get_method(), orig);
}

/* ======================================================== fault injection */

/* With every hardware and software attempt failing, the serial fallback
 * must still get the transaction through. */
static long g_progress;

static void test_fault_progress(void) {
    g_progress = 0;
    g_fault_handler_runs = 0;
    size_t base = heap_in_use();
    tx_stats_t s0 = tk_stats();
    CHECK_EQ(txkit_set_fault(TXKIT_STM, 1.0), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_HTM, 1.0), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_SERIAL, 0.0), 0);
    for (int i = 0; i < 3; i++) {
        TX_ATOMIC {
            CHECK_EQ(tx_on_abort(count_fault_abort, NULL), 0);
            void *b = tx_malloc(BLK);
            CHECK(b != NULL);
            tx_free(b);
            TX_STORE(&g_progress, TX_LOAD(&g_progress) + 1);
        }
    }
    set_all_faults(0.0);
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(g_progress, 3);
    CHECK_EQ(tx_stats_commits(&s1) - tx_stats_commits(&s0), 3);
    CHECK_EQ(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL], 3);
    /* (auto on one thread runs alone, serially: nothing to inject into) */
    uint64_t injected =
        s1.aborts_by_cause[TXKIT_CAUSE_INJECTED] - s0.aborts_by_cause[TXKIT_CAUSE_INJECTED];
    if (txkit_get_method() == TXKIT_STM)
        CHECK(injected >= 3);
    if (tk_hw_possible() && txkit_get_method() == TXKIT_HTM && !tk_rtm_simulated()) {
        /* Every hardware attempt failed, injected at its commit or earlier
         * (under the sanitizers the body's malloc never commits in hardware:
         * status 0, before the commit injects). */
        uint64_t hw_aborts = s1.aborts[TXKIT_HTM] - s0.aborts[TXKIT_HTM];
        printf("    htm aborts %llu, injected %llu, unsupported %llu\n",
               (unsigned long long)hw_aborts, (unsigned long long)injected,
               (unsigned long long)(s1.aborts_by_cause[TXKIT_CAUSE_UNSUPPORTED] -
                                    s0.aborts_by_cause[TXKIT_CAUSE_UNSUPPORTED]));
        CHECK(hw_aborts >= 3);
        CHECK(s1.commits[TXKIT_HTM] == s0.commits[TXKIT_HTM]);
    }
    if (txkit_get_method() == TXKIT_STM)
        CHECK_EQ(s1.to_serial - s0.to_serial, 3);
    if (!tk_hw_possible())
        CHECK_EQ(g_fault_handler_runs, tx_stats_aborts(&s1) - tx_stats_aborts(&s0));
    HEAP_CHECK(heap_in_use() <= base + HEAP_SLACK, "heap %zu -> %zu", base, heap_in_use());
}

static void store_progress(long v) {
    TX_ATOMIC {
        TX_STORE(&g_progress, v);
    }
}

static void test_set_fault_errors(void) {
    CHECK_EQ(txkit_set_fault(TXKIT_STM, -0.1), -EINVAL);
    CHECK_EQ(txkit_set_fault(TXKIT_STM, 1.5), -EINVAL);
    CHECK_EQ(txkit_set_fault(TXKIT_STM, NAN), -EINVAL);
    CHECK_EQ(txkit_set_fault((txkit_method_t)17, 0.5), -EINVAL);
    CHECK_EQ(txkit_set_fault(TXKIT_AUTO, 0.5), -EINVAL); /* only methods that execute */
    CHECK_EQ(txkit_set_fault((txkit_method_t)-1, 0.5), -EINVAL);
    CHECK_EQ(txkit_set_fault(TXKIT_STM, 0.0), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_HTM, 0.0), 0);
    CHECK_EQ(txkit_set_fault(TXKIT_SERIAL, 0.0), 0);
    /* A rejected call changed nothing: transactions commit without aborts. */
    tx_stats_t s0 = tk_stats();
    for (int i = 0; i < 50; i++)
        store_progress(i);
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(s1.aborts_by_cause[TXKIT_CAUSE_INJECTED], s0.aborts_by_cause[TXKIT_CAUSE_INJECTED]);
}

/* ======================================================= version and RTM */

static void test_version_and_rtm_info(void) {
    CHECK(strcmp(txkit_version(), TXKIT_VERSION_STRING) == 0);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", TXKIT_VERSION_MAJOR, TXKIT_VERSION_MINOR,
             TXKIT_VERSION_PATCH);
    CHECK(strcmp(txkit_version(), want) == 0);

    struct txkit_rtm_info info;
    memset(&info, 0x7f, sizeof info);
    txkit_rtm_info(&info);
    CHECK(memchr(info.reason, '\0', sizeof info.reason) != NULL);
    CHECK(memchr(info.vendor, '\0', sizeof info.vendor) != NULL);
    CHECK(info.reason[0] != '\0');
    CHECK_EQ(info.usable, txkit_htm_usable());
    CHECK(info.usable == 0 || info.usable == 1);
    if (!info.cpuid_rtm || info.rtm_always_abort)
        CHECK_EQ(info.usable, 0);
    CHECK(info.probe_tries >= 0);
    CHECK(info.probe_commits >= 0 && info.probe_commits <= info.probe_tries);
    printf("    RTM: vendor '%s', cpuid_rtm=%d, usable=%d (%s)\n", info.vendor, info.cpuid_rtm,
           info.usable, info.reason);
}

/* ================================================ ITM_DEFAULT_METHOD
 * Registered as api.config.itm_default.<itm method> with ITM_DEFAULT_METHOD
 * and ITM_EXPECT (the txkit method it must map to) set, TXKIT_METHOD empty. */
static void test_itm_default_method(void) {
    const char *want = getenv("ITM_EXPECT");
    if (!want) {
        printf("    (only with ITM_EXPECT set: api.config.itm_default.*)\n");
        return;
    }
    txkit_method_t m;
    CHECK_EQ(txkit_method_parse(want, &m), 0);
    CHECK_MSG(txkit_get_method() == m, "ITM_DEFAULT_METHOD=%s: method %s, expected %s",
              getenv("ITM_DEFAULT_METHOD"), txkit_method_name(txkit_get_method()), want);
}

/* ================================================================== main */

static const struct tk_test tests[] = {
    {"method_names", test_method_names},
    {"set_method", test_set_method},
    {"fault_progress", test_fault_progress},
    {"set_fault_errors", test_set_fault_errors},
    {"version_and_rtm_info", test_version_and_rtm_info},
    {"itm_default_method", test_itm_default_method},
};

int main(int argc, char **argv) {
    return api_main("test_config", tests, ARRAY_LEN(tests), argc, argv);
}
