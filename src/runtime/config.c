/* SPDX-License-Identifier: MIT */
/* config.c - process start-up, environment variables, method selection API.
 *
 * Environment (each bad value is reported on stderr naming the variable, and
 * ignored; the library never exits the process):
 *   TXKIT_METHOD=auto|htm|stm|serial
 *   ITM_DEFAULT_METHOD=serialirr|serial|ml_wt|gl_wt|htm  GCC libitm's, without TXKIT_METHOD
 *   TXKIT_HTM_RETRIES=N   hardware attempts after conflicts before software (default 8)
 *   TXKIT_HTM_RETRY_US=N  and at most this long in retries that conflicted (default 50)
 *   TXKIT_STM_RETRIES=N   software aborts before the serial fallback (default 16)
 *   TXKIT_STM_NOLOG=auto|on|off  software reads without a log while nothing
 *                         commits (auto, the default), in every attempt that
 *                         may (on), never (off)
 *   TXKIT_PRIVATIZATION=on|off  a writing commit waits for older software
 *                         attempts, so that its thread may free what it
 *                         unlinked with plain code (on, the default); off:
 *                         it does not (for programs that never do that)
 *   TXKIT_FAULT=P | htm=P,stm=P,serial=P   abort-injection probabilities
 *                         (serial: at most TK_FAULT_SERIAL_MAX per transaction)
 *   TXKIT_STATS=1|on|yes|true|stderr  print a summary at exit to stderr;
 *                         a path with a '/': dump there (txkit report FILE);
 *                         0|no|false: the default; private: do not publish
 *                         the segment; off: do not count at all
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "methods/method.h"


static struct txkit_rtm_info rtm;


int txkit_method_parse(const char *name, txkit_method_t *out) {
    if (!name || !out)
        return -EINVAL;
    int i = tk_method_lookup(name);
    if (i < 0 || i >= TXKIT_NMETHODS) /* the public ones only */
        return -EINVAL;
    *out = (txkit_method_t)i;
    return 0;
}

static int check_method(int m) {
    if (m < 0 || m >= TXKIT_NMETHODS)
        return -EINVAL;
    if (m == TXKIT_HTM && !tk_g.hybrid)
        return -ENOTSUP;
    return 0;
}

int txkit_set_method(txkit_method_t m) {
    int r = check_method((int)m);
    if (r == 0) {
        __atomic_store_n(&tk_cfg.method, (int)m, __ATOMIC_RELAXED);
        tk_express_off_set(TK_EXPRESS_OFF_METHOD, m != TXKIT_AUTO);
    }
    return r;
}

int txkit_set_thread_method(int m) {
    if (_txkit_tls.depth)
        return -EBUSY;
    if (m != -1) {
        int r = check_method(m);
        if (r)
            return r;
    }
    tk_thread *t = tk_self();
    t->thread_method = m;
    tk_express_set(t, 0); /* its next begin looks at the method (txn.c) */
    return 0;
}

txkit_method_t txkit_get_method(void) {
    tk_thread *t = tk_cur;
    if (t && t->thread_method >= 0)
        return (txkit_method_t)t->thread_method;
    return (txkit_method_t)__atomic_load_n(&tk_cfg.method, __ATOMIC_RELAXED);
}

int txkit_htm_usable(void) { return tk_g.hybrid; }

void txkit_rtm_info(struct txkit_rtm_info *out) {
    if (out)
        *out = rtm;
}

const char *txkit_version(void) { return TXKIT_VERSION_STRING; }

int txkit_set_fault(txkit_method_t m, double prob) {
    if ((int)m <= TXKIT_AUTO || (int)m >= TXKIT_NMETHODS || !(prob >= 0.0 && prob <= 1.0))
        return -EINVAL;
    tk_cfg.fault[m] = prob;
    int any = 0;
    for (int i = 0; i < TXKIT_NMETHODS; i++)
        any |= tk_cfg.fault[i] > 0.0;
    __atomic_store_n(&tk_cfg.any_fault, any, __ATOMIC_RELAXED);
    tk_express_off_set(TK_EXPRESS_OFF_FAULT, any);
    return 0;
}


/* ---------------------------------------------------------- environment */

static void env_warn(const char *var, const char *val, const char *why) {
    fprintf(stderr, "txkit: %s=%s: %s\n", var, val, why);
}

static void parse_uint(const char *var, unsigned *dst, unsigned lo, unsigned hi) {
    const char *v = getenv(var);
    if (!v)
        return;
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi) {
        char why[96];
        snprintf(why, sizeof why, "expected a whole number from %u to %u; keeping %u", lo, hi,
                 *dst);
        env_warn(var, v, why);
        return;
    }
    *dst = (unsigned)n;
}

static int parse_prob(const char *s, double *out) {
    char *end;
    double p = strtod(s, &end);
    if (end == s || *end || !(p >= 0.0 && p <= 1.0))
        return -1;
    *out = p;
    return 0;
}

static void parse_fault(void) {
    const char *v = getenv("TXKIT_FAULT");
    if (!v || !*v)
        return;
    double p;
    if (parse_prob(v, &p) == 0) { /* a bare number: every abortable method */
        txkit_set_fault(TXKIT_HTM, p);
        txkit_set_fault(TXKIT_STM, p);
        return;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        txkit_method_t m;
        if (!eq) {
            env_warn("TXKIT_FAULT", v,
                     "expected P or METHOD=P[,METHOD=P] (htm, stm, serial); ignored");
            return;
        }
        *eq = '\0';
        if (txkit_method_parse(tok, &m) != 0 || m == TXKIT_AUTO || parse_prob(eq + 1, &p) != 0) {
            env_warn("TXKIT_FAULT", v,
                     "expected METHOD=P with METHOD htm, stm or serial and P in [0,1]; ignored");
            return;
        }
        txkit_set_fault(m, p);
    }
}

/* GCC's libitm reads ITM_DEFAULT_METHOD; programs and scripts written for it
 * set it. Without TXKIT_METHOD, its methods map to ours: the serial ones to
 * serial, the write-through software ones to stm, htm to htm. */
static void parse_itm_default_method(void) {
    const char *v = getenv("ITM_DEFAULT_METHOD");
    if (!v || !*v)
        return;
    static const struct {
        const char *itm;
        txkit_method_t m;
    } map[] = {{"serialirr", TXKIT_SERIAL}, {"serialirr_onwrite", TXKIT_SERIAL},
               {"serial", TXKIT_SERIAL},    {"ml_wt", TXKIT_STM},
               {"gl_wt", TXKIT_STM},        {"htm", TXKIT_HTM}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strcasecmp(v, map[i].itm) != 0)
            continue;
        if (map[i].m == TXKIT_HTM && !tk_g.hybrid) {
            char why[160];
            snprintf(why, sizeof why, "RTM is not usable here (%s); using auto", rtm.reason);
            env_warn("ITM_DEFAULT_METHOD", v, why);
            return;
        }
        tk_cfg.method = map[i].m;
        return;
    }
    env_warn("ITM_DEFAULT_METHOD", v,
             "not a GCC libitm method txkit maps (serialirr, serialirr_onwrite, serial: serial; "
             "ml_wt, gl_wt: stm; htm: htm); using auto");
}

static void parse_method(void) {
    const char *v = getenv("TXKIT_METHOD");
    txkit_method_t m;
    if (!v || !*v) {
        parse_itm_default_method();
        return;
    }
    if (txkit_method_parse(v, &m) != 0) {
        int hidden = tk_method_lookup(v); /* a method selected by name only (tests) */
        if (hidden >= TXKIT_NMETHODS) {
            tk_cfg.method = hidden;
            return;
        }
        env_warn("TXKIT_METHOD", v, "unknown method (auto, htm, stm, serial); using auto");
        return;
    }
    if (m == TXKIT_HTM && !tk_g.hybrid) {
        char why[160];
        snprintf(why, sizeof why, "RTM is not usable here (%s); using auto", rtm.reason);
        env_warn("TXKIT_METHOD", v, why);
        return;
    }
    tk_cfg.method = m;
}

static int word_in(const char *v, const char *const *words) {
    for (; *words; words++)
        if (strcasecmp(v, *words) == 0)
            return 1;
    return 0;
}

/* TXKIT_STATS: a few words, or a path with a '/' in it (a dump file); any
 * other value is a mistake (TXKIT_STATS=on must not write ./on). */
static void parse_stats(void) {
    static const char *const summary[] = {"1", "on", "yes", "true", "stderr", NULL};
    static const char *const plain[] = {"0", "no", "false", NULL};
    const char *v = getenv("TXKIT_STATS");
    if (!v || !*v || word_in(v, plain))
        return; /* count and publish, say nothing at exit */
    if (strcmp(v, "private") == 0)
        return; /* count, but do not publish (stats/segment.c) */
    if (strcmp(v, "off") == 0) {
        tk_cfg.stats_off = 1; /* no counting at all: to measure what counting costs */
        return;
    }
    if (word_in(v, summary)) {
        tk_cfg.stats_at_exit = 1;
    } else if (strchr(v, '/')) {
        if (strlen(v) >= sizeof tk_cfg.stats_path) {
            env_warn("TXKIT_STATS", v, "path too long; no dump at exit");
            return;
        }
        snprintf(tk_cfg.stats_path, sizeof tk_cfg.stats_path, "%s", v);
        tk_cfg.stats_at_exit = 1;
    } else {
        env_warn("TXKIT_STATS", v,
                 "expected 1|on|yes|true|stderr (summary at exit), 0|no|false, private, off, "
                 "or a dump file path containing '/' (e.g. ./FILE); ignored");
        return;
    }
    /* Where the exit summary and messages go: stderr as it is now, which the
     * program may close in an atexit handler of its own before ours runs. */
    tk_stats_out_init();
}

static void parse_nolog(void) {
    const char *v = getenv("TXKIT_STM_NOLOG");
    if (!v || !*v)
        return;
    if (strcmp(v, "auto") == 0)
        tk_cfg.stm_nolog = TK_NOLOG_AUTO;
    else if (strcmp(v, "on") == 0 || strcmp(v, "1") == 0)
        tk_cfg.stm_nolog = TK_NOLOG_ON;
    else if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0)
        tk_cfg.stm_nolog = TK_NOLOG_OFF;
    else
        env_warn("TXKIT_STM_NOLOG", v, "expected auto, on or off; using auto");
}

static void parse_privatization(void) {
    const char *v = getenv("TXKIT_PRIVATIZATION");
    if (!v || !*v)
        return;
    if (strcmp(v, "on") == 0 || strcmp(v, "1") == 0)
        tk_cfg.no_privatization = 0;
    else if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0)
        tk_cfg.no_privatization = 1;
    else
        env_warn("TXKIT_PRIVATIZATION", v, "expected on or off; using on");
}

static void parse_cm(void) {
    const char *v = getenv("TXKIT_CM");
    if (v && *v && tk_cm_select(v) != 0)
        env_warn("TXKIT_CM", v,
                 "unknown contention manager (backoff, timestamp, size, prio); using backoff");
    v = getenv("TXKIT_SCHED");
    if (!v || !*v)
        return;
    if (strcmp(v, "on") == 0 || strcmp(v, "1") == 0)
        txkit_set_sched(1);
    else if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0)
        txkit_set_sched(0);
    else
        env_warn("TXKIT_SCHED", v, "expected on or off; using off");
}

void tk_config_init(void) {
    tk_cpu_detect(&rtm);
    tk_g.hybrid = rtm.usable;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        tk_cfg.ncpus = (unsigned)CPU_COUNT(&set);
    parse_method();
    tk_express_off_set(TK_EXPRESS_OFF_METHOD, tk_cfg.method != TXKIT_AUTO);
    parse_uint("TXKIT_HTM_RETRIES", &tk_cfg.htm_retries, 0, 1000);
    parse_uint("TXKIT_HTM_RETRY_US", &tk_cfg.htm_retry_us, 0, 1000000);
    parse_uint("TXKIT_STM_RETRIES", &tk_cfg.stm_retries, 0, 100000);
    parse_nolog();
    parse_privatization();
    parse_fault();
    parse_stats();
    parse_cm();
}

TK_CONSTRUCTOR static void txkit_init(void) {
    tk_config_init();
    atexit(tk_stats_at_exit);
}
