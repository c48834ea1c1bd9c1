/* SPDX-License-Identifier: MIT */
/* abi_common.c - runtime identification, checks and the summary line of the
 * libitm-ABI test programs (see abi_common.h). No transactions in here.
 *
 * txkit's own API is reached through dlsym(), never linked: the same binary
 * must also run on the system libitm, where txkit is absent.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "abi_common.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <txkit/stats.h> /* types only: the functions are looked up at run time */

/* XTEST, in a function of its own compiled for RTM (called only where the
 * CPU has it). */
__attribute__((target("rtm"), noinline)) static int xtest_rtm(void) {
    return __builtin_ia32_xtest() != 0;
}

static const char *prog_name = "?";
static char summary[4096];
static size_t summary_len;
static int expect_failures;
static int expect_checks;
static uint64_t attempt_count;

/* Whether the comma-separated list in environment variable var names name. */
static int env_lists(const char *var, const char *name) {
    const char *v = getenv(var);
    size_t n = strlen(name);
    while (v && *v) {
        const char *end = strchr(v, ',');
        size_t len = end ? (size_t)(end - v) : strlen(v);
        if (len == n && strncmp(v, name, n) == 0)
            return 1;
        v = end ? end + 1 : NULL;
    }
    return 0;
}

static int cpu_rtm;    /* the CPU has RTM, as the kernel says (/proc/cpuinfo): abi_init */
static int libitm_htm; /* GCC's libitm would run its HTM method here (CPU, ITM_DEFAULT_METHOD) */

/* ABI_LIBITM_HTM_MAYFAIL: defects of libitm's HTM method, its default on
 * CPUs with RTM: not counted on such a CPU (set only for the runs on libitm
 * and for abi.*.compare, where every runtime must leave out the same). */
int abi_may_fail(const char *name) {
    return env_lists("ABI_MAYFAIL", name) ||
           (libitm_htm && env_lists("ABI_LIBITM_HTM_MAYFAIL", name));
}

void abi_expect_at(const char *file, int line, const char *name, int ok, const char *detail) {
    if (abi_may_fail(name)) {
        printf("INFO %s: check %s %s (ABI_MAYFAIL: not counted)%s%s\n", prog_name, name,
               ok ? "passed" : "FAILED", detail ? ": " : "", detail ? detail : "");
        return;
    }
    expect_checks++;
    if (env_lists("ABI_XFAIL", name)) {
        if (ok) {
            fflush(stdout);
            fprintf(stderr,
                    "%s:%d: XPASS in %s: check %s passed but ABI_XFAIL says this "
                    "runtime fails it; update tests/abi/CMakeLists.txt\n",
                    file, line, prog_name, name);
            expect_failures++;
        } else {
            printf("XFAIL %s: check %s failed as expected (known runtime defect)%s%s\n", prog_name,
                   name, detail ? ": " : "", detail ? detail : "");
        }
        return;
    }
    if (!ok) {
        fflush(stdout);
        fprintf(stderr, "%s:%d: CHECK FAILED in %s: %s%s%s\n", file, line, prog_name, name,
                detail ? ": " : "", detail ? detail : "");
        fflush(stderr);
        expect_failures++;
    }
}

int abi_run_isolated_at(const char *file, int line, const char *name, void (*fn)(void)) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        tk_fail(__FILE__, __LINE__, __func__, "fork");
    if (pid == 0) {
        alarm(30);
        fn();
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            tk_fail(__FILE__, __LINE__, __func__, "waitpid");
    char detail[160];
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (WIFEXITED(status))
        snprintf(detail, sizeof detail, "the child running it exited with status %d",
                 WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(detail, sizeof detail, "the child running it was killed by signal %d (%s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(detail, sizeof detail, "the child running it ended with status %#x", status);
    abi_expect_at(file, line, name, ok, detail);
    return ok;
}

/* ------------------------------------------------------------- runtime */

static void *txkit_sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

int abi_on_txkit(void) { return txkit_sym("txkit_version") != NULL; }

struct loaded_itm {
    int found;
    char path[PATH_MAX];
};

static int find_itm(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct loaded_itm *li = data;
    const char *name = info->dlpi_name;
    if (!name || !*name)
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libitm.so", 9) == 0) {
        li->found = 1;
        if (!realpath(name, li->path))
            snprintf(li->path, sizeof li->path, "%s", name);
        return 1;
    }
    return 0;
}

static int cpuinfo_has_rtm(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    int has = 0;
    if (!f)
        return 0;
    while (!has && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        for (char *tok = strtok(line, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
            if (strcmp(tok, "rtm") == 0)
                has = 1;
        break;
    }
    fclose(f);
    return has;
}

int abi_in_hardware(void) { return cpu_rtm ? xtest_rtm() : 0; }

void abi_init(const char *prog) {
    prog_name = prog;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int txkit = abi_on_txkit();
    struct loaded_itm li = {0, ""};
    dl_iterate_phdr(find_itm, &li);
    const char *method = getenv("TXKIT_METHOD");
    cpu_rtm = cpuinfo_has_rtm(); /* here: abi_in_hardware runs inside transactions */

    /* On the method the test asks for, not a fallback: htm needs RTM. */
    if (method && strcmp(method, "htm") == 0) {
        int (*usable)(void) = (int (*)(void))txkit_sym("txkit_htm_usable");
        int ok = usable ? usable() : cpu_rtm;
        if (!ok) {
            printf("SKIP %s: TXKIT_METHOD=htm but RTM is not usable on this machine\n", prog);
            exit(ABI_SKIP_CODE);
        }
    }

    /* libitm picks its HTM method by itself when ITM_DEFAULT_METHOD is
     * unset (or htm) and the CPU has RTM (cpuinfo: the kernel clears the flag
     * where TSX is off). Not only on libitm: abi.*.compare gives every run
     * the same list, so that all leave out the same checks. */
    const char *itm_m = getenv("ITM_DEFAULT_METHOD");
    libitm_htm = (!itm_m || strcmp(itm_m, "htm") == 0) && cpu_rtm;

    const char *expect = getenv("ABI_EXPECT_RUNTIME");
    if (expect && *expect) {
        if (strcmp(expect, "libitm") == 0) {
            if (txkit || !li.found)
                tk_fail(__FILE__, __LINE__, __func__,
                        "ABI_EXPECT_RUNTIME=libitm: the system libitm.so.1 "
                        "is not the runtime of this process");
        } else if (strcmp(expect, "txkit-dropin") == 0) {
            if (!txkit || !li.found || !strstr(li.path, "libtxkit"))
                tk_fail(__FILE__, __LINE__, __func__,
                        "ABI_EXPECT_RUNTIME=txkit-dropin: libitm.so.1 did "
                        "not resolve to libtxkit (LD_LIBRARY_PATH?)");
        } else if (strcmp(expect, "txkit-linked") == 0) {
            if (!txkit || li.found)
                tk_fail(__FILE__, __LINE__, __func__,
                        "ABI_EXPECT_RUNTIME=txkit-linked: expected libtxkit "
                        "and no libitm.so.1 in the process");
        } else {
            tk_fail(__FILE__, __LINE__, __func__, "ABI_EXPECT_RUNTIME: unknown value");
        }
    }

    /* txkit must run the method the test names, not silently another one. */
    if (txkit && method && *method) {
        int (*parse)(const char *, txkit_method_t *) =
            (int (*)(const char *, txkit_method_t *))txkit_sym("txkit_method_parse");
        txkit_method_t (*get)(void) = (txkit_method_t(*)(void))txkit_sym("txkit_get_method");
        txkit_method_t want;
        if (!parse || !get || parse(method, &want) != 0)
            tk_fail(__FILE__, __LINE__, __func__, "TXKIT_METHOD names no txkit method");
        if (get() != want)
            tk_fail(__FILE__, __LINE__, __func__,
                    "txkit_get_method() is not the TXKIT_METHOD asked for");
    }

    const char *fault = getenv("TXKIT_FAULT");
    const char *itm_method = getenv("ITM_DEFAULT_METHOD");
    printf("INFO %s: runtime=%s (%s)%s%s method=%s fault=%s\n", prog,
           txkit ? (li.found ? "txkit drop-in" : "txkit linked") : "libitm", _ITM_libraryVersion(),
           li.found ? " via " : "", li.found ? li.path : "",
           txkit ? (method && *method ? method : "auto")
                 : (itm_method && *itm_method ? itm_method : "default"),
           txkit && fault && *fault ? fault : "none");
}

void abi_summary(const char *fmt, ...) {
    va_list ap;
    if (summary_len + 2 >= sizeof summary)
        tk_fail(__FILE__, __LINE__, __func__, "summary line too long");
    summary[summary_len++] = ' ';
    va_start(ap, fmt);
    int n = vsnprintf(summary + summary_len, sizeof summary - summary_len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof summary - summary_len)
        tk_fail(__FILE__, __LINE__, __func__, "summary line too long");
    summary_len += (size_t)n;
}

uint64_t abi_injected_aborts(void) {
    int (*get)(tx_stats_t *) = (int (*)(tx_stats_t *))txkit_sym("tx_stats_get");
    tx_stats_t st;
    if (!get || get(&st) != 0)
        return 0;
    return st.aborts_by_cause[TXKIT_CAUSE_INJECTED];
}

int abi_finish(void) {
    int (*get)(tx_stats_t *) = (int (*)(tx_stats_t *))txkit_sym("tx_stats_get");
    if (get) {
        tx_stats_t st;
        CHECK_EQ(get(&st), 0);
        uint64_t commits = 0, aborts = 0;
        for (int m = 0; m < TXKIT_NMETHODS; m++) {
            commits += st.commits[m];
            aborts += st.aborts[m];
        }
        printf("INFO %s: txkit transactions=%llu commits=%llu aborts=%llu injected=%llu "
               "irrevocable=%llu attempts_counted=%llu\n",
               prog_name, (unsigned long long)st.transactions, (unsigned long long)commits,
               (unsigned long long)aborts,
               (unsigned long long)st.aborts_by_cause[TXKIT_CAUSE_INJECTED],
               (unsigned long long)st.irrevocable, (unsigned long long)abi_attempts());
        const char *want = getenv("ABI_EXPECT_INJECTED");
        if (want && *want && strcmp(want, "0") != 0 &&
            st.aborts_by_cause[TXKIT_CAUSE_INJECTED] == 0)
            tk_fail(__FILE__, __LINE__, __func__,
                    "ABI_EXPECT_INJECTED: TXKIT_FAULT injected no abort");
    } else {
        printf("INFO %s: attempts_counted=%llu\n", prog_name, (unsigned long long)abi_attempts());
    }
    summary[summary_len] = '\0';
    printf("SUMMARY %s:%s checks=%d\n", prog_name, summary, expect_checks);
    if (expect_failures) {
        fprintf(stderr, "%s: %d named check(s) failed\n", prog_name, expect_failures);
        return 1;
    }
    return 0;
}

void abi_count_attempt(void) { __atomic_fetch_add(&attempt_count, 1, __ATOMIC_RELAXED); }

uint64_t abi_attempts(void) { return __atomic_load_n(&attempt_count, __ATOMIC_RELAXED); }

static long plain_marks, wrapped_marks;
__attribute__((noinline)) void abi_code_mark(void) {
    __atomic_fetch_add(&plain_marks, 1, __ATOMIC_RELAXED);
}
__attribute__((noinline)) void abi_code_mark_tm(void) {
    __atomic_fetch_add(&wrapped_marks, 1, __ATOMIC_RELAXED);
}
long abi_plain_marks(void) { return __atomic_load_n(&plain_marks, __ATOMIC_RELAXED); }
long abi_wrapped_marks(void) { return __atomic_load_n(&wrapped_marks, __ATOMIC_RELAXED); }

size_t abi_heap_in_use(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

uint64_t abi_hash(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
