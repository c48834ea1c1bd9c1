/* SPDX-License-Identifier: MIT */
/* bench_util.c - shared machinery of the txkit benchmarks (see bench_util.h). */
#include "bench_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

atomic_int bench_stop_flag;
atomic_ulong bench_itm_attempts;
atomic_ulong bench_itm_commits[3];

/* ------------------------------------------------------------------ methods */

static const char *const bm_names[BM_COUNT] = {
    [BM_SEQ] = "seq",
    [BM_MUTEX] = "mutex",
    [BM_RWLOCK] = "rwlock",
    [BM_AUTO] = "auto",
    [BM_HTM] = "htm",
    [BM_STM] = "stm",
    [BM_SERIAL] = "serial",
    [BM_ITM_DEFAULT] = "itm@libitm:default",
    [BM_ITM_SERIAL] = "itm@libitm:serial",
    [BM_ITM_SERIALIRR] = "itm@libitm:serialirr",
    [BM_ITM_SERIALIRR_ONWRITE] = "itm@libitm:serialirr_onwrite",
    [BM_ITM_ML_WT] = "itm@libitm:ml_wt",
    [BM_ITM_GL_WT] = "itm@libitm:gl_wt",
    [BM_ITM_HTM] = "itm@libitm:htm",
    [BM_ITMTK_AUTO] = "itm@txkit:auto",
    [BM_ITMTK_HTM] = "itm@txkit:htm",
    [BM_ITMTK_STM] = "itm@txkit:stm",
    [BM_ITMTK_SERIAL] = "itm@txkit:serial",
};

#define LIBITM_PREFIX "itm@libitm:"

const char *bm_name(int m) {
    if (bench_elision_requested()) {
        if (m == BM_MUTEX)
            return "mutex+elision";
        if (m == BM_RWLOCK)
            return "rwlock+elision";
    }
    if (m >= 0 && m < BM_COUNT && bm_txkit_stats(m) && bench_stats_off()) {
        /* txkit without its statistics (TXKIT_STATS=off, read at start-up) */
        static char off[BM_COUNT][48];
        if (!off[m][0])
            snprintf(off[m], sizeof off[m], "%s+nostats", bm_names[m]);
        return off[m];
    }
    return (m >= 0 && m < BM_COUNT) ? bm_names[m] : "?";
}

int bench_stats_off(void) {
    const char *v = getenv("TXKIT_STATS");
    return v && strcmp(v, "off") == 0;
}

int bm_parse(const char *name) {
    for (int m = 0; m < BM_COUNT; m++)
        if (strcmp(name, bm_names[m]) == 0)
            return m;
    /* the older spelling of the libitm methods: itm:ml_wt */
    if (strncmp(name, "itm:", 4) == 0)
        for (int m = BM_ITM_DEFAULT; m <= BM_ITM_HTM; m++)
            if (strcmp(name + 4, bm_names[m] + sizeof LIBITM_PREFIX - 1) == 0)
                return m;
    return -1;
}

const char *bm_itm_env(int m) {
    if (!bm_is_itm_libitm(m) || m == BM_ITM_DEFAULT)
        return NULL;
    return bm_names[m] + sizeof LIBITM_PREFIX - 1;
}

/* ----------------------------------------------------- glibc lock elision */

int bench_elision_requested(void) {
    static int requested = -1;
    if (requested >= 0)
        return requested;
    requested = 0;
    const char *t = getenv("GLIBC_TUNABLES");
    /* colon-separated name=value pairs; the last setting wins, as in glibc */
    for (const char *p = t; p && *p;) {
        size_t n = strcspn(p, ":");
        static const char key[] = "glibc.elision.enable=";
        if (n >= sizeof key - 1 && strncmp(p, key, sizeof key - 1) == 0)
            requested = n == sizeof key && p[sizeof key - 1] == '1';
        p += n;
        if (*p == ':')
            p++;
    }
    return requested;
}

int bench_elision_active(void) {
#ifdef __GLIBC__
    /* glibc marks a default mutex for elision at its first lock when elision is
     * on (FORCE_ELISION: PTHREAD_MUTEX_ELISION_NP, 256, in __kind). */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m);
    int kind = m.__data.__kind;
    pthread_mutex_unlock(&m);
    return (kind & 256) != 0;
#else
    return 0;
#endif
}

static txkit_method_t bm_to_txkit(int m) {
    switch (m) {
    case BM_HTM:
    case BM_ITMTK_HTM:
        return TXKIT_HTM;
    case BM_STM:
    case BM_ITMTK_STM:
        return TXKIT_STM;
    case BM_SERIAL:
    case BM_ITMTK_SERIAL:
        return TXKIT_SERIAL;
    default:
        return TXKIT_AUTO;
    }
}

static int txkit_to_itmtk(txkit_method_t t) {
    switch (t) {
    case TXKIT_HTM:
        return BM_ITMTK_HTM;
    case TXKIT_STM:
        return BM_ITMTK_STM;
    case TXKIT_SERIAL:
        return BM_ITMTK_SERIAL;
    default:
        return BM_ITMTK_AUTO;
    }
}

int bench_itm_runtime(char *buf, size_t len) {
    static char where[2 * PATH_MAX + 64];
    static int rt = -1;
#ifdef BENCH_NO_ITM
    if (rt < 0) {
        rt = ITM_RT_NONE;
        snprintf(where, sizeof where, "built without gcc -fgnu-tm and libitm");
    }
#endif
    if (rt < 0) {
        /* The first definition in the global scope is what the binary's own
         * references bind to. */
        void *sym = dlvsym(RTLD_DEFAULT, "_ITM_beginTransaction", "LIBITM_1.0");
        Dl_info di, tk;
        rt = ITM_RT_NONE;
        if (!sym) {
            snprintf(where, sizeof where, "_ITM_beginTransaction not found");
        } else if (!dladdr(sym, &di) || !di.dli_fname) {
            rt = ITM_RT_OTHER;
            snprintf(where, sizeof where, "_ITM_beginTransaction in an unknown object");
        } else {
            /* The object's real name: txkit's drop-in is a link named
             * libitm.so.1 to libtxkit.so.0. */
            char real[PATH_MAX];
            const char *name = realpath(di.dli_fname, real) ? real : di.dli_fname;
            const char *base = strrchr(name, '/');
            base = base ? base + 1 : name;
            /* The same object as txkit's own API: the loader mapped the
             * drop-in and libtxkit.so.0 once (same file). */
            int is_txkit = dladdr((void *)txkit_version, &tk) && tk.dli_fbase == di.dli_fbase;
            rt = is_txkit                             ? ITM_RT_TXKIT
                 : strncmp(base, "libitm.so", 9) == 0 ? ITM_RT_LIBITM
                                                      : ITM_RT_OTHER;
            if (strcmp(name, di.dli_fname) != 0)
                snprintf(where, sizeof where, "%s -> %s%s", di.dli_fname, name,
                         is_txkit ? " (txkit's libitm ABI)" : "");
            else
                snprintf(where, sizeof where, "%s%s", name,
                         is_txkit ? " (txkit's libitm ABI)" : "");
        }
    }
    if (buf && len)
        snprintf(buf, len, "%s", where);
    return rt;
}

void bench_itm_prepare(int m) {
    const char *v = bm_itm_env(m);
    if (!bm_is_itm_libitm(m))
        return;
    if (v)
        setenv("ITM_DEFAULT_METHOD", v, 1);
    else
        unsetenv("ITM_DEFAULT_METHOD");
}

/* The file name of the object the itm probe found, for short notes. */
static const char *itm_object_base(void) {
    static char where[2 * PATH_MAX + 64];
    bench_itm_runtime(where, sizeof where);
    char *arrow = strstr(where, " -> ");
    if (arrow)
        *arrow = '\0'; /* the name it was loaded as: .../libitm.so.1 */
    const char *base = strrchr(where, '/');
    return base ? base + 1 : where;
}

int bench_select_method(int m, char *why, size_t whylen) {
    if (bm_is_itm(m)) {
        char where[2 * PATH_MAX + 64];
        int rt = bench_itm_runtime(where, sizeof where);
        int want = bm_is_itm_libitm(m) ? ITM_RT_LIBITM : ITM_RT_TXKIT;
        if (rt == ITM_RT_NONE) {
            snprintf(why, whylen, "n/a (%s)", where);
            return -1;
        }
        if (rt != want) {
            if (rt == ITM_RT_TXKIT)
                snprintf(why, whylen, "n/a (_ITM_* bind to txkit (%s), not GCC's libitm)",
                         itm_object_base());
            else if (rt == ITM_RT_LIBITM)
                snprintf(why, whylen, "n/a (_ITM_* bind to GCC's libitm; run under `txkit run`)");
            else
                snprintf(why, whylen, "n/a (_ITM_* bind to %s, neither libitm nor txkit)",
                         itm_object_base());
            return -1;
        }
        if (m == BM_ITM_HTM) {
            /* libitm uses RTM when CPUID has it, and otherwise runs its htm
             * method as serialirr, silently: that would not be htm. */
            struct txkit_rtm_info ri;
            memset(&ri, 0, sizeof ri);
            txkit_rtm_info(&ri);
            if (!ri.cpuid_rtm) {
                snprintf(why, whylen, "n/a (no RTM: libitm would silently run serialirr)");
                return -1;
            }
        }
        if (bm_is_itm_libitm(m))
            return 0;
        /* itm@txkit: the method like txkit's own rows, below */
    }
    if (!bm_txkit_stats(m))
        return 0;
    if ((m == BM_HTM || m == BM_ITMTK_HTM) && !txkit_htm_usable()) {
        snprintf(why, whylen, "n/a (no RTM)");
        return -1;
    }
    int rc = txkit_set_method(bm_to_txkit(m));
    if (rc == -ENOTSUP) {
        snprintf(why, whylen, "n/a (%s not supported here)", bm_name(m));
        return -1;
    }
    if (rc != 0) {
        snprintf(why, whylen, "n/a (txkit_set_method: %s)", strerror(-rc));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ options */

void bench_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

void bench_opts_init(struct bench_opts *o) {
    memset(o, 0, sizeof *o);
    o->seconds = 1.0;
    o->runs = 3; /* a median and its spread */
    o->seed = 0x7478b17ULL;
}

void bench_opts_init_methods(struct bench_opts *o) {
    bench_opts_init(o);
    o->methods[0] = BM_SEQ;
    o->methods[1] = BM_MUTEX;
    o->methods[2] = BM_AUTO;
    o->nmethods = 3;
    o->threads[0] = 1;
    o->nthreads = 1;
}

void bench_outcome(const struct bench_row *rows, int nrows, struct bench_outcome *out) {
    memset(out, 0, sizeof *out);
    for (int k = 0; k < nrows; k++) {
        out->crashed |= rows[k].state == ROW_CRASH || rows[k].state == ROW_TIMEOUT;
        out->check_failed |= rows[k].check_failed;
        out->runs += rows[k].nsamples;
        for (int j = 0; j < rows[k].nsamples; j++)
            out->anomalies |= rows[k].s[j].anomalies != 0;
    }
    if (out->crashed)
        printf("FAIL: a measurement crashed or timed out (see the table)\n");
}

int bench_opt(int argc, char **argv, int *i, const char *name, const char **val) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '\0') {
        if (!val)
            return 1;
        if (*i + 1 >= argc)
            bench_die("%s needs a value", name);
        *val = argv[++*i];
        return 1;
    }
    if (a[n] == '=' && val) {
        *val = a + n + 1;
        return 1;
    }
    return 0;
}

int bench_opt_last(int argc, char **argv, int *i, void (*usage)(FILE *f)) {
    if (bench_opt(argc, argv, i, "--help", NULL) || bench_opt(argc, argv, i, "-h", NULL)) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "error: unknown option '%s'\n", argv[*i]);
    usage(stderr);
    return 2;
}

long bench_parse_long(const char *opt, const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (errno || end == s || *end || v < lo || v > hi)
        bench_die("%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
    return v;
}

double bench_parse_double(const char *opt, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        bench_die("%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
    return v;
}

int bench_split_list(const char *opt, char *buf, char **tok, int max) {
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == max)
            bench_die("%s: at most %d values", opt, max);
        tok[n++] = t;
    }
    if (n == 0)
        bench_die("%s: empty list", opt);
    return n;
}

int bench_parse_ints(const char *opt, const char *arg, int *out, int max, long lo, long hi) {
    char buf[512], *tok[64];
    if (strlen(arg) >= sizeof buf)
        bench_die("%s: list too long", opt);
    snprintf(buf, sizeof buf, "%s", arg);
    int nt = bench_split_list(opt, buf, tok, max < 64 ? max : 64), n = 0;
    for (int k = 0; k < nt; k++) {
        int v = (int)bench_parse_long(opt, tok[k], lo, hi), dup = 0;
        for (int j = 0; j < n; j++)
            dup |= out[j] == v;
        if (!dup)
            out[n++] = v;
    }
    return n;
}

int bench_parse_names(const char *opt, const char *arg, const char *const *names, int nnames,
                      int *out) {
    char buf[512], *tok[64];
    if (strlen(arg) >= sizeof buf)
        bench_die("%s: list too long", opt);
    snprintf(buf, sizeof buf, "%s", arg);
    int nt = bench_split_list(opt, buf, tok, 64), n = 0;
    for (int t = 0; t < nt; t++) {
        int found = 0;
        for (int k = 0; k < nnames; k++) {
            if (strcmp(tok[t], "all") != 0 && strcmp(tok[t], names[k]) != 0)
                continue;
            int dup = 0;
            for (int j = 0; j < n; j++)
                dup |= out[j] == k;
            if (!dup)
                out[n++] = k;
            found = 1;
        }
        if (!found)
            bench_die("%s: unknown value '%s'", opt, tok[t]);
    }
    return n;
}

static void add_method(struct bench_opts *o, int m) {
    for (int k = 0; k < o->nmethods; k++)
        if (o->methods[k] == m)
            return;
    o->methods[o->nmethods++] = m;
}

/* "itm@libitm": the libitm method of the environment (ITM_DEFAULT_METHOD as
 * inherited, with libitm's syntax: blanks around the name), or
 * itm@libitm:default. */
static int itm_from_env(void) {
    const char *e = getenv("ITM_DEFAULT_METHOD");
    if (!e)
        return BM_ITM_DEFAULT;
    while (*e == ' ' || *e == '\t' || *e == '\n')
        e++;
    size_t n = strlen(e);
    while (n && (e[n - 1] == ' ' || e[n - 1] == '\t' || e[n - 1] == '\n'))
        n--;
    for (int m = BM_ITM_SERIAL; m <= BM_ITM_HTM; m++) {
        const char *v = bm_names[m] + sizeof LIBITM_PREFIX - 1;
        if (strlen(v) == n && strncmp(e, v, n) == 0)
            return m;
    }
    bench_die("--method itm: ITM_DEFAULT_METHOD='%s' is not a libitm method "
              "(serial, serialirr, serialirr_onwrite, ml_wt, gl_wt, htm)",
              e);
}

/* "itm" alone and "itm:all": the runtime the probe found (GCC's libitm when
 * there is none: its rows then say why they are n/a). */
static int itm_bound_txkit(void) { return bench_itm_runtime(NULL, 0) == ITM_RT_TXKIT; }

static void parse_methods(struct bench_opts *o, const char *arg) {
    char buf[512];
    if (strlen(arg) >= sizeof buf)
        bench_die("--method: list too long");
    snprintf(buf, sizeof buf, "%s", arg);
    o->nmethods = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int m;
        if (strcmp(tok, "all") == 0) {
            for (m = 0; m <= BM_SERIAL; m++)
                add_method(o, m);
            /* and the default of the runtime that runs gcc transactions */
            add_method(o, itm_bound_txkit() ? BM_ITMTK_AUTO : BM_ITM_DEFAULT);
            continue;
        }
        int all_libitm = strcmp(tok, "itm@libitm:all") == 0;
        int all_txkit = strcmp(tok, "itm@txkit:all") == 0;
        if (strcmp(tok, "itm:all") == 0) {
            all_libitm = !itm_bound_txkit();
            all_txkit = !all_libitm;
        }
        if (all_libitm || all_txkit) {
            int lo = all_libitm ? BM_ITM_DEFAULT : BM_ITMTK_AUTO;
            int hi = all_libitm ? BM_ITM_HTM : BM_ITMTK_SERIAL;
            for (m = lo; m <= hi; m++)
                add_method(o, m);
            continue;
        }
        /* the method in effect: ITM_DEFAULT_METHOD for libitm, txkit's own
         * (TXKIT_METHOD, as txkit read it) for txkit */
        int env_libitm = strcmp(tok, "itm@libitm") == 0;
        int env_txkit = strcmp(tok, "itm@txkit") == 0;
        if (strcmp(tok, "itm") == 0) {
            env_txkit = itm_bound_txkit();
            env_libitm = !env_txkit;
        }
        if (env_libitm || env_txkit) {
            add_method(o, env_libitm ? itm_from_env() : txkit_to_itmtk(txkit_get_method()));
            continue;
        }
        if (strcmp(tok, "mutex+elision") == 0 || strcmp(tok, "rwlock+elision") == 0) {
            /* glibc reads its tunables at start-up: nothing to switch here */
            if (!bench_elision_requested())
                bench_die(
                    "--method %s: start the program with GLIBC_TUNABLES=glibc.elision.enable=1 "
                    "(glibc reads it at start-up); mutex and rwlock are then labelled +elision",
                    tok);
            add_method(o, tok[0] == 'm' ? BM_MUTEX : BM_RWLOCK);
            continue;
        }
        m = bm_parse(tok);
        if (m < 0)
            bench_die(
                "--method: unknown method '%s' (seq, mutex, rwlock, auto, htm, stm, serial, "
                "itm, itm@libitm[:default|serial|serialirr|serialirr_onwrite|ml_wt|gl_wt|htm|all], "
                "itm@txkit[:auto|htm|stm|serial|all], itm:all, all)",
                tok);
        add_method(o, m);
    }
    if (o->nmethods == 0)
        bench_die("--method: empty list");
}

int bench_parse_common(struct bench_opts *o, int argc, char **argv, int *i) {
    const char *v;
    if (!o->no_methods &&
        (bench_opt(argc, argv, i, "--method", &v) || bench_opt(argc, argv, i, "-m", &v))) {
        parse_methods(o, v);
    } else if (bench_opt(argc, argv, i, "--threads", &v) || bench_opt(argc, argv, i, "-t", &v)) {
        o->nthreads =
            bench_parse_ints("--threads", v, o->threads, BENCH_MAX_TCOUNTS, 1, BENCH_MAX_THREADS);
    } else if (bench_opt(argc, argv, i, "--seconds", &v) || bench_opt(argc, argv, i, "-s", &v)) {
        o->seconds = bench_parse_double("--seconds", v, 0.001, 86400.0);
    } else if (bench_opt(argc, argv, i, "--runs", &v) || bench_opt(argc, argv, i, "-r", &v)) {
        o->runs = (int)bench_parse_long("--runs", v, 1, BENCH_MAX_RUNS);
    } else if (bench_opt(argc, argv, i, "--csv", &v)) {
        o->csv = v;
    } else if (bench_opt(argc, argv, i, "--seed", &v)) {
        o->seed = (uint64_t)bench_parse_long("--seed", v, 0, INT64_MAX);
    } else if (bench_opt(argc, argv, i, "--quiet", NULL) || bench_opt(argc, argv, i, "-q", NULL)) {
        o->quiet = 1;
    } else if (bench_opt(argc, argv, i, "--no-fork", NULL)) {
        o->nofork = 1;
    } else if (bench_opt(argc, argv, i, "--timeout", &v)) {
        o->timeout = bench_parse_double("--timeout", v, 0, 864000.0);
    } else {
        return 0;
    }
    return 1;
}

void bench_usage_common(FILE *f) {
    fputs("  -m, --method M[,M...]  seq, mutex, rwlock, auto, htm, stm, serial, itm..., or all\n"
          "                         (seq: plain sequential code, measured at 1 thread only;\n"
          "                         auto..serial: txkit's API; all: seq..serial and the\n"
          "                         default of the runtime that runs gcc transactions)\n"
          "                         itm...: gcc __transaction_atomic, run by the runtime the\n"
          "                         binary's _ITM_* calls bind to (GCC's libitm, or txkit's\n"
          "                         libitm drop-in under `txkit run`); the other runtime's\n"
          "                         rows are n/a.\n"
          "                         itm@libitm:X (or itm:X): GCC's libitm with\n"
          "                         ITM_DEFAULT_METHOD=X, X one of serial, serialirr,\n"
          "                         serialirr_onwrite, ml_wt, gl_wt, htm; itm@libitm:default\n"
          "                         leaves it unset. Each measurement's child sets it before\n"
          "                         its first transaction, so one run can compare them.\n"
          "                         itm@txkit:X: txkit with method X (auto, htm, stm, serial).\n"
          "                         itm: the bound runtime with the method of the environment\n"
          "                         (ITM_DEFAULT_METHOD, or txkit's TXKIT_METHOD); itm:all:\n"
          "                         every method of the bound runtime; itm@libitm:all,\n"
          "                         itm@txkit:all: every method of one runtime.\n"
          "                         With GLIBC_TUNABLES=glibc.elision.enable=1, mutex and rwlock\n"
          "                         are labelled mutex+elision, rwlock+elision\n"
          "  -t, --threads N[,N...] thread counts (default 1)\n"
          "  -s, --seconds S        duration of one measurement (default 1; fractions allowed)\n"
          "  -r, --runs R           repeat each measurement R times (default 3), report the\n"
          "                         median and the spread\n"
          "                         (runs are interleaved across methods)\n"
          "      --csv FILE         append the rows to FILE (header line if FILE is new)\n"
          "      --seed N           PRNG seed (default fixed)\n"
          "  -q, --quiet            no progress line on stderr\n"
          "      --timeout S        kill a measurement after S seconds (default: 2x the\n"
          "                         duration + 30 s); it is reported as TIMEOUT\n"
          "      --no-fork          measure in this process (default: each measurement in\n"
          "                         a child process, so a crash or hang fails one row)\n"
          "  -h, --help             this text\n",
          f);
}

/* -------------------------------------------------------------------- PRNG */

uint64_t rng_seed(uint64_t seed, uint64_t stream) {
    /* splitmix64 finalizer over seed and stream */
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 0x1234567ULL;
}

/* ----------------------------------------------------------------- threads */

static int g_cpus[CPU_SETSIZE];
static int g_ncpus = -1;

static void load_cpus(void) {
    if (g_ncpus >= 0)
        return;
    cpu_set_t set;
    g_ncpus = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                g_cpus[g_ncpus++] = c;
    }
    if (g_ncpus == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < n && c < CPU_SETSIZE; c++)
            g_cpus[g_ncpus++] = (int)c;
    }
}

int bench_ncpus(void) {
    load_cpus();
    return g_ncpus;
}

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Run the calling thread on cpu only: 0, or -1 (errno) when it may not. */
static int pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static pthread_barrier_t g_start;

static void *thread_main(void *arg) {
    struct bench_thread *t = arg;
    if (t->cpu >= 0 && pin_self(t->cpu) != 0)
        t->cpu = -1;
    pthread_barrier_wait(&g_start);
    t->fn(t);
    return NULL;
}

double bench_run_threads(struct bench_thread *th, int nthreads, void (*fn)(struct bench_thread *),
                         double seconds, uint64_t seed) {
    load_cpus();
    int pin = nthreads <= g_ncpus;
    atomic_store(&bench_stop_flag, 0);
    atomic_store(&bench_itm_attempts, 0);
    for (int k = 0; k < 3; k++)
        atomic_store(&bench_itm_commits[k], 0);
    if (pthread_barrier_init(&g_start, NULL, (unsigned)nthreads + 1) != 0)
        bench_die("pthread_barrier_init failed");
    for (int i = 0; i < nthreads; i++) {
        th[i].id = i;
        th[i].cpu = pin ? g_cpus[i % g_ncpus] : -1;
        th[i].rng = rng_seed(seed, (uint64_t)i);
        th[i].ops = 0;
        th[i].delta = 0;
        th[i].bad = 0;
        th[i].fn = fn;
        int rc = pthread_create(&th[i].handle, NULL, thread_main, &th[i]);
        if (rc != 0)
            bench_die("pthread_create: %s", strerror(rc));
    }
    pthread_barrier_wait(&g_start);
    double t0 = bench_now();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double end = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + seconds;
    ts.tv_sec = (time_t)end;
    ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
    atomic_store(&bench_stop_flag, 1);
    double t1 = bench_now();
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i].handle, NULL);
    pthread_barrier_destroy(&g_start);
    return t1 - t0;
}

/* ------------------------------------------------------------------- stats */

void bench_stats_delta(const tx_stats_t *b, const tx_stats_t *a, tx_stats_t *d) {
    memset(d, 0, sizeof *d);
    d->threads = a->threads - b->threads;
    d->transactions = a->transactions - b->transactions;
    for (int m = 0; m < TXKIT_NMETHODS; m++) {
        d->commits[m] = a->commits[m] - b->commits[m];
        d->aborts[m] = a->aborts[m] - b->aborts[m];
    }
    for (int c = 0; c < TXKIT_NCAUSES; c++)
        d->aborts_by_cause[c] = a->aborts_by_cause[c] - b->aborts_by_cause[c];
    d->htm_to_stm = a->htm_to_stm - b->htm_to_stm;
    d->to_serial = a->to_serial - b->to_serial;
    d->irrevocable = a->irrevocable - b->irrevocable;
    for (int k = 0; k < TXKIT_RETRY_BUCKETS; k++)
        d->retries_hist[k] = a->retries_hist[k] - b->retries_hist[k];
    d->ns_aborted = a->ns_aborted - b->ns_aborted;
    d->explicit_code = a->explicit_code;
}

void bench_sample_threads(struct bench_sample *s, const struct bench_thread *th, int n,
                          double secs) {
    s->secs = secs;
    s->ops = 0;
    s->ops_min = UINT64_MAX;
    s->ops_max = 0;
    for (int i = 0; i < n; i++) {
        s->ops += th[i].ops;
        if (th[i].ops < s->ops_min)
            s->ops_min = th[i].ops;
        if (th[i].ops > s->ops_max)
            s->ops_max = th[i].ops;
    }
    if (n == 0)
        s->ops_min = 0;
    s->mops = secs > 0 ? (double)s->ops / secs / 1e6 : 0;
    s->itm_attempts = atomic_load(&bench_itm_attempts);
    for (int k = 0; k < 3; k++)
        s->itm_commits[k] = atomic_load(&bench_itm_commits[k]);
}

/* ------------------------------------------------------------ measurements */

struct bench_row *bench_rows_make(const struct bench_opts *o, int *nrows) {
    struct bench_row *rows = calloc((size_t)(o->nmethods * o->nthreads), sizeof *rows);
    int n = 0;
    if (!rows)
        bench_die("out of memory");
    for (int m = 0; m < o->nmethods; m++) {
        int meth = o->methods[m];
        for (int t = 0; t < o->nthreads; t++) {
            struct bench_row *r = &rows[n++];
            r->method = meth;
            r->threads = meth == BM_SEQ ? 1 : o->threads[t];
            if ((bm_is_tx(meth) || bm_is_itm(meth)) &&
                bench_select_method(meth, r->note, sizeof r->note) != 0)
                r->state = ROW_NA;
            if (meth == BM_SEQ)
                break;
        }
    }
    *nrows = n;
    return rows;
}

static int write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

#define BENCH_WHY 160 /* the reason a child sends back */

int bench_isolate(int (*fn)(void *arg, void *out, char *why, size_t whylen), void *arg, void *out,
                  size_t size, double timeout, size_t mem_hint, int nofork, int *state, char *why,
                  size_t whylen) {
    if (why && whylen)
        why[0] = '\0';
    if (nofork)
        return fn(arg, out, why, whylen);

    int fds[2];
    if (pipe(fds) != 0)
        bench_die("pipe: %s", strerror(errno));
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid < 0)
        bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        /* A runaway allocation (e.g. a read log growing in an endless loop)
         * should fail here, not take the machine's memory. */
#ifndef __SANITIZE_ADDRESS__ /* ASan reserves terabytes of address space */
        struct rlimit rl;
        if (mem_hint != BENCH_NO_MEMLIMIT) {
            rlim_t lim = (rlim_t)(2048ull << 20) + (rlim_t)mem_hint;
            if (getrlimit(RLIMIT_AS, &rl) == 0 &&
                (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > lim)) {
                rl.rlim_cur = lim;
                setrlimit(RLIMIT_AS, &rl);
            }
        }
#else
        (void)mem_hint;
#endif
        /* result code, reason, then the result */
        char cwhy[BENCH_WHY] = "";
        int rc = fn(arg, out, cwhy, sizeof cwhy);
        fflush(NULL);
        int bad = write_all(fds[1], &rc, sizeof rc) || write_all(fds[1], cwhy, sizeof cwhy) ||
                  write_all(fds[1], out, size);
        _exit(bad ? 3 : 0);
    }
    close(fds[1]);

    size_t want = sizeof(int) + BENCH_WHY + size, got = 0;
    char *msg = malloc(want);
    if (!msg)
        bench_die("out of memory");
    double deadline = bench_now() + timeout;
    int timed_out = 0;
    while (got < want) {
        double left = deadline - bench_now();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr <= 0)
            continue; /* EINTR or not yet */
        ssize_t n = read(fds[0], msg + got, want - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the child is gone */
        got += (size_t)n;
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got == want && !timed_out) {
        int rc;
        memcpy(&rc, msg, sizeof rc);
        if (why && whylen)
            snprintf(why, whylen, "%.*s", BENCH_WHY - 1, msg + sizeof rc);
        memcpy(out, msg + sizeof rc + BENCH_WHY, size);
        free(msg);
        return rc;
    }
    free(msg);
    if (state)
        *state = timed_out ? ROW_TIMEOUT : ROW_CRASH;
    if (timed_out)
        snprintf(why, whylen, "TIMEOUT: no result after %.0f s (killed)", timeout);
    else if (WIFSIGNALED(status))
        snprintf(why, whylen, "CRASHED: signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(why, whylen, "CRASHED: exit status %d (see stderr)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return -1;
}

struct measure_shim {
    int (*fn)(void *arg, struct bench_sample *out);
    void *arg;
};

static int measure_shim(void *arg, void *out, char *why, size_t whylen) {
    const struct measure_shim *m = arg;
    (void)why, (void)whylen;
    return m->fn(m->arg, out);
}

int bench_measure(const struct bench_opts *o, struct bench_row *row, int run,
                  int (*fn)(void *arg, struct bench_sample *out), void *arg, size_t mem_hint) {
    struct bench_sample *out = &row->s[row->nsamples];
    memset(out, 0, sizeof *out);
    struct measure_shim m = {fn, arg};
    double limit = o->timeout > 0 ? o->timeout : 2 * o->seconds + 30;
    int state = ROW_OK;
    char why[BENCH_WHY];
    int rc = bench_isolate(measure_shim, &m, out, sizeof *out, limit, mem_hint, o->nofork, &state,
                           why, sizeof why);
    if (state == ROW_OK) {
        row->nsamples++;
        return rc;
    }
    bench_progress_done(o);
    row->state = state;
    snprintf(row->note, sizeof row->note, "%.90s in run %d", why, run + 1);
    fprintf(stderr, "%s x%d: %s\n", bm_name(row->method), row->threads, row->note);
    return -1;
}

struct run_shim {
    int (*fn)(void *ctx, const struct bench_row *row, int run, struct bench_sample *out);
    void *ctx;
    const struct bench_row *row;
    int run;
};

/* Runs in the measurement's child (in this process with --no-fork). */
static int shim(void *arg, struct bench_sample *out) {
    struct run_shim *s = arg;
    if (bm_is_itm_libitm(s->row->method))
        bench_itm_prepare(s->row->method);
    return s->fn(s->ctx, s->row, s->run, out);
}

int bench_run_rows(const struct bench_opts *o, struct bench_row *rows, int nrows,
                   int (*fn)(void *ctx, const struct bench_row *row, int run,
                             struct bench_sample *out),
                   void *ctx, size_t mem_hint) {
    int bad = 0;
    int itm_here = -1; /* --no-fork: the itm method libitm was started with here */
    for (int run = 0; run < o->runs; run++) {
        for (int k = 0; k < nrows; k++) {
            struct bench_row *r = &rows[k];
            if (r->state != ROW_OK)
                continue;
            bench_progress(o, run, r);
            if ((bm_is_tx(r->method) || bm_is_itm(r->method)) &&
                bench_select_method(r->method, r->note, sizeof r->note) != 0) {
                r->state = ROW_NA;
                continue;
            }
            if (bm_is_itm_libitm(r->method) && o->nofork) {
                if (itm_here >= 0 && itm_here != r->method) {
                    snprintf(r->note, sizeof r->note,
                             "n/a (--no-fork: libitm already started with %s in this process)",
                             bm_name(itm_here));
                    r->state = ROW_NA;
                    continue;
                }
                itm_here = r->method;
            }
            struct run_shim sh = {fn, ctx, r, run};
            int rc = bench_measure(o, r, run, shim, &sh, mem_hint);
            if (rc != 0) {
                bad = 1;
                if (rc > 0)
                    r->check_failed = 1;
            }
        }
    }
    bench_progress_done(o);
    return bad;
}

/* ------------------------------------------------------------------ header */

static char g_host[256];
static char g_stamp[32];

void bench_cpu_model(char *buf, size_t len) {
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ' || *p == '\t')
                    p++;
                p[strcspn(p, "\n")] = '\0';
                snprintf(buf, len, "%s", p);
            }
            break;
        }
    }
    fclose(f);
}

/* Return: the 1-minute load average, or -1. */
static double load_average(char *buf, size_t len) {
    double a = -1, b, c;
    snprintf(buf, len, "?");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
        snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
    else
        a = -1;
    fclose(f);
    return a;
}

static void join_methods(const struct bench_opts *o, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < o->nmethods && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? "," : "", bm_name(o->methods[k]));
}

void bench_csv_field(char *s) {
    for (; *s; s++)
        if (*s == ',')
            *s = ';';
}

const char *bench_host(void) {
    if (!g_host[0]) {
        if (gethostname(g_host, sizeof g_host) != 0)
            snprintf(g_host, sizeof g_host, "unknown");
        g_host[sizeof g_host - 1] = '\0';
        bench_csv_field(g_host);
    }
    return g_host;
}

const char *bench_stamp(void) {
    if (!g_stamp[0]) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(g_stamp, sizeof g_stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    return g_stamp;
}

int bench_oversubscribed(int threads) { return threads > bench_ncpus(); }

/* ---------------------------------------------------- cross-CPU transfers */

#define RTT_ROUNDS 4000
#define RTT_LIMIT_S 0.2 /* a peer that cannot run (a busy CPU): give up */
struct rtt_pair {
    uint64_t word __attribute__((aligned(BENCH_CACHELINE)));
    int stop __attribute__((aligned(BENCH_CACHELINE)));
    int cpu;
};

static void *rtt_peer(void *arg) {
    struct rtt_pair *p = arg;
    if (pin_self(p->cpu) != 0)
        return NULL;
    for (uint64_t i = 1; !__atomic_load_n(&p->stop, __ATOMIC_RELAXED);) {
        if (__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) == i) {
            __atomic_store_n(&p->word, i + 1, __ATOMIC_RELEASE);
            i += 2;
        } else {
            __builtin_ia32_pause();
        }
    }
    return NULL;
}

double bench_line_rtt_ns(void) {
    load_cpus();
    if (g_ncpus < 2)
        return -1;
    cpu_set_t saved;
    if (sched_getaffinity(0, sizeof saved, &saved) != 0 || pin_self(g_cpus[0]) != 0)
        return -1;
    struct rtt_pair *p = aligned_alloc(BENCH_CACHELINE, sizeof *p);
    double best = -1;
    pthread_t th;
    if (p) {
        memset(p, 0, sizeof *p);
        p->cpu = g_cpus[1];
        if (pthread_create(&th, NULL, rtt_peer, p) == 0) {
            /* 3 passes, the fastest: the first also wakes the peer's CPU */
            double limit = bench_now() + RTT_LIMIT_S;
            uint64_t v = 1;
            for (int pass = 0; pass < 3; pass++) {
                double t0 = bench_now();
                int n = 0;
                for (; n < RTT_ROUNDS; n++, v += 2) {
                    __atomic_store_n(&p->word, v, __ATOMIC_RELEASE);
                    unsigned spins = 0;
                    while (__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) != v + 1)
                        if ((++spins & 0xfff) == 0 && bench_now() > limit)
                            goto out;
                }
                double ns = (bench_now() - t0) * 1e9 / n;
                if (best < 0 || ns < best)
                    best = ns;
            }
        out:
            __atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
            pthread_join(th, NULL);
        }
        free(p);
    }
    (void)sched_setaffinity(0, sizeof saved, &saved);
    return best;
}

double bench_print_machine(FILE *f, const char *title) {
    char cpu[256], load[64];
    struct utsname un;
    struct txkit_rtm_info ri;
    bench_cpu_model(cpu, sizeof cpu);
    double load1 = load_average(load, sizeof load);
    if (uname(&un) != 0)
        memset(&un, 0, sizeof un);
    memset(&ri, 0, sizeof ri);
    txkit_rtm_info(&ri);
    const char *envm = getenv("TXKIT_METHOD");
    fprintf(f, "=== %s ===\n", title);
    fprintf(f, "host      %s, %s %s, %ld CPUs online, %d usable\n", bench_host(), un.sysname,
            un.release, sysconf(_SC_NPROCESSORS_ONLN), bench_ncpus());
    fprintf(f, "cpu       %s\n", cpu);
    fprintf(f, "rtm       %s: %s (vendor %s, cpuid rtm=%d hle=%d, probe %d/%d)\n",
            ri.usable ? "usable" : "NOT usable", ri.reason[0] ? ri.reason : "no reason given",
            ri.vendor[0] ? ri.vendor : "?", ri.cpuid_rtm, ri.cpuid_hle, ri.probe_commits,
            ri.probe_tries);
    fprintf(f, "txkit     %s%s%s\n", txkit_version(), envm ? ", TXKIT_METHOD=" : "",
            envm ? envm : "");
    fprintf(f, "when      %s, load average %s\n", bench_stamp(), load);
    double rtt = bench_line_rtt_ns();
    if (rtt > 0)
        fprintf(f,
                "cpu-cpu   %.0f ns: a cache line's round trip between CPUs %d and %d (what "
                "threads that share lines pay; on a VM it can change severalfold while "
                "the host moves vCPUs)\n",
                rtt, g_cpus[0], g_cpus[1]);
    return load1;
}

void bench_print_run(FILE *f, const int *threads, int nthreads, double seconds, int runs,
                     int nofork) {
    char thr[256] = "";
    int over = 0;
    for (int k = 0; k < nthreads; k++) {
        size_t n = strlen(thr);
        snprintf(thr + n, sizeof thr - n, "%s%d", k ? "," : "", threads[k]);
        over |= bench_oversubscribed(threads[k]);
    }
    fprintf(f, "threads   %s (pinned round-robin when threads <= %d CPUs%s)\n", thr, bench_ncpus(),
            over ? "; more threads than CPUs: marked oversubscribed" : "");
    fprintf(f, "duration  %.3g s per measurement, %d run%s%s, %s\n", seconds, runs,
            runs > 1 ? "s" : "", runs > 1 ? " (median and spread; runs interleaved)" : "",
            nofork ? "all in this process (--no-fork)" : "each in a child process");
}

void bench_print_load_warning(FILE *f, double load1) {
    if (load1 > 0.5 * bench_ncpus())
        fprintf(f, "WARNING   the machine is busy (load %.2f on %d CPUs): expect noisy numbers\n",
                load1, bench_ncpus());
}

FILE *bench_csv_open(const char *path, const char *header) {
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "error: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && st.st_size == 0)
        fprintf(f, "%s\n", header);
    return f;
}

int bench_target(FILE *f, const char *label, double value, const char *cmp, double goal,
                 int valid) {
    int met = cmp[0] == '<' ? value <= goal : value >= goal;
    int pass = valid && met;
    fprintf(f, "TARGET %-44s (target %s %g): %s  %.3f%s\n", label, cmp, goal,
            pass ? "PASS" : "MISS", value, valid ? "" : " [not a valid result: a check failed]");
    return pass;
}

void bench_print_header(FILE *f, const struct bench_desc *d, const struct bench_opts *o) {
    char meth[512], title[128];
    struct txkit_rtm_info ri;
    memset(&ri, 0, sizeof ri);
    txkit_rtm_info(&ri);
    join_methods(o, meth, sizeof meth);
    snprintf(title, sizeof title, "txkit-bench-%s: %s", d->bench, d->structure);
    double load1 = bench_print_machine(f, title);
    fprintf(f, "methods   %s\n", meth);
    bench_print_run(f, o->threads, o->nthreads, o->seconds, o->runs, o->nofork);
    if (d->params)
        fputs(d->params, f);
    int any_libitm = 0, any_txkit = 0, itm_default = 0;
    for (int k = 0; k < o->nmethods; k++) {
        any_libitm |= bm_is_itm_libitm(o->methods[k]);
        any_txkit |= bm_is_itm_txkit(o->methods[k]);
        itm_default |= o->methods[k] == BM_ITM_DEFAULT;
    }
    if (any_libitm || any_txkit) {
        char where[2 * PATH_MAX + 64];
        int rt = bench_itm_runtime(where, sizeof where);
        const char *inh = getenv("ITM_DEFAULT_METHOD");
        if (rt == ITM_RT_NONE)
            fprintf(f, "itm       n/a: %s\n", where);
        else
            fprintf(
                f,
                "itm       gcc -fgnu-tm transactions, run by %s: _ITM_beginTransaction from %s\n",
                rt == ITM_RT_LIBITM  ? "GCC's libitm"
                : rt == ITM_RT_TXKIT ? "txkit (the libitm drop-in)"
                                     : "neither libitm nor txkit (itm rows n/a)",
                where);
        if (rt == ITM_RT_LIBITM && any_txkit)
            fprintf(f, "          itm@txkit rows n/a: run the binary under `txkit run` (txkit's "
                       "libitm.so.1 first on LD_LIBRARY_PATH)\n");
        if (rt == ITM_RT_TXKIT && any_libitm)
            fprintf(f, "          itm@libitm rows n/a: txkit's libitm.so.1 drop-in is loaded in "
                       "place of GCC's\n");
        if (rt == ITM_RT_LIBITM && any_libitm) {
            fprintf(f,
                    "          ITM_DEFAULT_METHOD set per row in each measurement's child, before "
                    "its first transaction%s%s%s\n",
                    inh ? " (the inherited '" : "", inh ? inh : "",
                    inh ? "' only chose what a bare --method itm means)" : "");
            if (itm_default)
                fprintf(f,
                        "          itm@libitm:default: libitm's choice, serialirr while one "
                        "thread is registered, then %s\n",
                        ri.cpuid_rtm ? "htm (CPUID has RTM)" : "ml_wt (no RTM)");
            fprintf(f,
                    "          itm@libitm rows: htm%% stm%% serial%% = libitm mode the committing "
                    "attempt ended in (RTM fast path, instrumented, irrevocable), aborts/c = "
                    "restarts; sampled, 1 transaction in %d\n",
                    BENCH_ITM_SAMPLE);
        }
        if (rt == ITM_RT_TXKIT && any_txkit)
            fprintf(f, "          itm@txkit:M rows: txkit_set_method(M) before each measurement; "
                       "commits, aborts/c and htm%% stm%% serial%% from txkit's statistics\n");
    }
    if (bench_elision_requested())
        fprintf(f, "elision   GLIBC_TUNABLES asks for glibc lock elision: %s\n",
                bench_elision_active() ? "active (mutex and rwlock rows are elided locks)"
                                       : "NOT active (glibc elides only where RTM is usable): "
                                         "+elision rows are plain locks here");
    bench_print_load_warning(f, load1);
    fflush(f);
}

void bench_progress(const struct bench_opts *o, int run, const struct bench_row *r) {
    if (o->quiet || !isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\r  run %d/%d: %-6s x%-3d ...   ", run + 1, o->runs, bm_name(r->method),
            r->threads);
    fflush(stderr);
}

void bench_progress_done(const struct bench_opts *o) {
    if (o->quiet || !isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\r%40s\r", "");
    fflush(stderr);
}

/* ------------------------------------------------------------------ report */

struct row_summary {
    double mops, mops_min, mops_max;
    const struct bench_sample *med; /* the run whose throughput is the (lower) median */
};

static int cmp_sample(const void *a, const void *b) {
    const struct bench_sample *x = *(const struct bench_sample *const *)a;
    const struct bench_sample *y = *(const struct bench_sample *const *)b;
    return (x->mops > y->mops) - (x->mops < y->mops);
}

static void summarize(const struct bench_row *r, struct row_summary *out) {
    const struct bench_sample *v[BENCH_MAX_RUNS];
    memset(out, 0, sizeof *out);
    if (r->state != ROW_OK || r->nsamples == 0)
        return;
    for (int k = 0; k < r->nsamples; k++)
        v[k] = &r->s[k];
    qsort(v, (size_t)r->nsamples, sizeof v[0], cmp_sample);
    int n = r->nsamples;
    out->med = v[(n - 1) / 2];
    out->mops = (n % 2) ? v[n / 2]->mops : 0.5 * (v[n / 2 - 1]->mops + v[n / 2]->mops);
    out->mops_min = v[0]->mops;
    out->mops_max = v[n - 1]->mops;
}

double bench_median(const double *v, int n, double *min, double *max) {
    double w[BENCH_MAX_RUNS > 99 ? BENCH_MAX_RUNS : 99];
    if (n <= 0 || n > (int)(sizeof w / sizeof w[0])) {
        if (min)
            *min = 0;
        if (max)
            *max = 0;
        return 0;
    }
    memcpy(w, v, sizeof w[0] * (size_t)n);
    for (int i = 1; i < n; i++) /* insertion sort: a handful of runs */
        for (int j = i; j > 0 && w[j - 1] > w[j]; j--) {
            double t = w[j];
            w[j] = w[j - 1];
            w[j - 1] = t;
        }
    if (min)
        *min = w[0];
    if (max)
        *max = w[n - 1];
    return n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
}

int bench_median_index(const double *v, int n) {
    for (int x = 0; x < n; x++) {
        int below = 0, equal_before = 0;
        for (int y = 0; y < n; y++) {
            below += v[y] < v[x];
            equal_before += y < x && v[y] == v[x];
        }
        /* the element whose rank (ties broken by position) is (n - 1) / 2 */
        if (below + equal_before == (n - 1) / 2)
            return x;
    }
    return n > 0 ? 0 : -1;
}

void bench_fmt_spread(char *buf, size_t len, double median, double min, double max, int runs) {
    if (runs > 1 && median > 0)
        snprintf(buf, len, "%.0f%%", 100.0 * (max - min) / median);
    else
        snprintf(buf, len, "-");
}

static int find_row(const struct bench_row *rows, int nrows, int method, int threads) {
    for (int k = 0; k < nrows; k++)
        if (rows[k].method == method && rows[k].threads == threads && rows[k].state == ROW_OK &&
            rows[k].nsamples > 0)
            return k;
    return -1;
}

/* The two largest abort causes, as "conflict 93%, locked 7%". */
static void abort_causes(const tx_stats_t *s, char *buf, size_t len) {
    uint64_t total = 0;
    int first = -1, second = -1;
    buf[0] = '\0';
    for (int c = 0; c < TXKIT_NCAUSES; c++) {
        uint64_t v = s->aborts_by_cause[c];
        total += v;
        if (!v)
            continue;
        if (first < 0 || v > s->aborts_by_cause[first]) {
            second = first;
            first = c;
        } else if (second < 0 || v > s->aborts_by_cause[second]) {
            second = c;
        }
    }
    if (!total)
        return;
    size_t n = (size_t)snprintf(buf, len, "%s %.0f%%", txkit_cause_name(first),
                                100.0 * (double)s->aborts_by_cause[first] / (double)total);
    if (second >= 0 && n < len)
        snprintf(buf + n, len - n, ", %s %.0f%%", txkit_cause_name(second),
                 100.0 * (double)s->aborts_by_cause[second] / (double)total);
}

static void fmt_ratio(char *buf, size_t len, double num, double den) {
    if (den > 0 && num >= 0)
        snprintf(buf, len, "%.2fx", num / den);
    else
        snprintf(buf, len, "-");
}

static void csv_ratio(char *buf, size_t len, double num, double den) {
    if (den > 0 && num >= 0)
        snprintf(buf, len, "%.4f", num / den);
    else
        buf[0] = '\0';
}

/* The aborts-per-commit and commit-share columns, for the table and the CSV. */
struct share_fields {
    char apc[16], p[3][8];      /* table: aborts/c, htm% stm% serial% */
    char c_apc[24], c_p[3][16]; /* CSV */
};

/* @apc < 0: no data ("-" in the table, empty in the CSV). @by: commits by
 * htm, stm (instrumented), serial, of @total. */
static void fmt_shares(struct share_fields *f, double apc, const uint64_t *by, uint64_t total) {
    if (apc < 0 || !total) {
        snprintf(f->apc, sizeof f->apc, "-");
        f->c_apc[0] = '\0';
        for (int k = 0; k < 3; k++) {
            snprintf(f->p[k], sizeof f->p[k], "-");
            f->c_p[k][0] = '\0';
        }
        return;
    }
    snprintf(f->apc, sizeof f->apc, apc > 0 && apc < 0.001 ? "%.1e" : "%.4f", apc);
    snprintf(f->c_apc, sizeof f->c_apc, "%.6f", apc);
    for (int k = 0; k < 3; k++) {
        double pct = 100.0 * (double)by[k] / (double)total;
        snprintf(f->p[k], sizeof f->p[k], "%.1f", pct);
        snprintf(f->c_p[k], sizeof f->c_p[k], "%.2f", pct);
    }
}

static const char csv_header[] =
    "bench,struct,size,update_pct,method,threads,seconds,runs,mops,mops_min,mops_max,"
    "vs_mutex,vs_seq1,commits,aborts_per_commit,pct_htm,pct_stm,pct_serial,status,note,"
    "host,timestamp,oversubscribed";

int bench_report(const struct bench_desc *d, const struct bench_opts *o,
                 const struct bench_row *rows, int nrows) {
    struct row_summary sum[nrows > 0 ? nrows : 1];
    for (int k = 0; k < nrows; k++)
        summarize(&rows[k], &sum[k]);
    int seq1 = find_row(rows, nrows, BM_SEQ, 1);

    FILE *csv = NULL;
    int rc = 0;
    if (o->csv && !(csv = bench_csv_open(o->csv, csv_header)))
        rc = -1;

    int w = 7;
    for (int k = 0; k < nrows; k++)
        if ((int)strlen(bm_name(rows[k].method)) > w)
            w = (int)strlen(bm_name(rows[k].method));
    printf("\n%-*s %3s %9s %7s %8s %8s %11s %9s %6s %6s %7s  %s\n", w, "method", "thr", "Mops/s",
           "spread", "vs mutex", "vs seq@1", "commits", "aborts/c", "htm%", "stm%", "serial%",
           "notes");
    for (int k = 0; k < nrows; k++) {
        const struct bench_row *r = &rows[k];
        const struct row_summary *s = &sum[k];
        if (r->state != ROW_OK) {
            static const char *const st[] = {"ok", "na", "crash", "timeout"};
            printf("%-*s %3d %s\n", w, bm_name(r->method), r->threads, r->note);
            if (csv) {
                char note[sizeof r->note];
                snprintf(note, sizeof note, "%s", r->note);
                bench_csv_field(note);
                fprintf(csv, "%s,%s,%ld,%g,%s,%d,%g,%d,,,,,,,,,,,%s,%s,%s,%s,%d\n", d->bench,
                        d->structure, d->size, d->update_pct, bm_name(r->method), r->threads,
                        o->seconds, o->runs, st[r->state], note, bench_host(), bench_stamp(),
                        bench_oversubscribed(r->threads));
            }
            continue;
        }
        int mu = find_row(rows, nrows, BM_MUTEX, r->threads);
        double mu_mops = mu >= 0 ? sum[mu].mops : -1;
        double seq_mops = seq1 >= 0 ? sum[seq1].mops : -1;
        char vs_mu[16], vs_seq[16], spread[16], commits[24];
        char notes[256], causes[96];
        char c_mu[16], c_seq[16], c_commits[24];
        struct share_fields f;
        char *apc = f.apc, *ph = f.p[0], *ps = f.p[1], *pz = f.p[2];
        char *c_apc = f.c_apc, *c_ph = f.c_p[0], *c_ps = f.c_p[1], *c_pz = f.c_p[2];
        fmt_ratio(vs_mu, sizeof vs_mu, s->mops, mu_mops);
        fmt_ratio(vs_seq, sizeof vs_seq, s->mops, seq_mops);
        csv_ratio(c_mu, sizeof c_mu, s->mops, mu_mops);
        csv_ratio(c_seq, sizeof c_seq, s->mops, seq_mops);
        bench_fmt_spread(spread, sizeof spread, s->mops, s->mops_min, s->mops_max, r->nsamples);
        notes[0] = '\0';
        if (r->check_failed)
            snprintf(notes, sizeof notes, "CHECK FAILED");
        if (bench_oversubscribed(r->threads)) {
            size_t n = strlen(notes);
            snprintf(notes + n, sizeof notes - n, "%soversubscribed (%d CPUs)", n ? "; " : "",
                     bench_ncpus());
        }
        snprintf(commits, sizeof commits, "-");
        c_commits[0] = '\0';
        fmt_shares(&f, -1, NULL, 0);
        if (bm_txkit_stats(r->method) && s->med && !bench_stats_off()) {
            const tx_stats_t *t = &s->med->tx;
            uint64_t cm = tx_stats_commits(t), ab = tx_stats_aborts(t);
            snprintf(commits, sizeof commits, "%llu", (unsigned long long)cm);
            snprintf(c_commits, sizeof c_commits, "%llu", (unsigned long long)cm);
            if (cm) {
                const uint64_t by[3] = {t->commits[TXKIT_HTM], t->commits[TXKIT_STM],
                                        t->commits[TXKIT_SERIAL]};
                fmt_shares(&f, (double)ab / (double)cm, by, cm);
            }
            abort_causes(t, causes, sizeof causes);
            if (causes[0]) {
                size_t n = strlen(notes);
                snprintf(notes + n, sizeof notes - n, "%saborts: %s", n ? "; " : "", causes);
            }
            if (cm != s->med->ops) {
                size_t n = strlen(notes);
                snprintf(notes + n, sizeof notes - n, "%sSTATS: %llu commits for %llu ops",
                         n ? "; " : "", (unsigned long long)cm, (unsigned long long)s->med->ops);
            }
        }
        if (bm_is_itm_libitm(r->method) && s->med) {
            /* sampled: no commit count (every operation is one transaction) */
            const struct bench_sample *m = s->med;
            uint64_t cm = m->itm_commits[0] + m->itm_commits[1] + m->itm_commits[2];
            if (cm) {
                double ab = m->itm_attempts > cm ? (double)(m->itm_attempts - cm) : 0;
                fmt_shares(&f, ab / (double)cm, m->itm_commits, cm);
            }
        }
        if ((r->method == BM_MUTEX || r->method == BM_RWLOCK) && bench_elision_requested() &&
            !bench_elision_active()) {
            size_t n = strlen(notes);
            snprintf(notes + n, sizeof notes - n, "%selision inactive (no RTM): a plain lock",
                     n ? "; " : "");
        }
        if (s->med && s->med->anomalies) {
            size_t n = strlen(notes);
            snprintf(notes + n, sizeof notes - n, "%s%llu anomalies", n ? "; " : "",
                     (unsigned long long)s->med->anomalies);
        }
        if (s->med && r->threads > 1 && s->med->ops_max > 0 &&
            (double)s->med->ops_min < 0.5 * (double)s->med->ops_max) {
            size_t n = strlen(notes);
            snprintf(notes + n, sizeof notes - n, "%sunfair: slowest thread %.0f%% of fastest",
                     n ? "; " : "", 100.0 * (double)s->med->ops_min / (double)s->med->ops_max);
        }
        printf("%-*s %3d %9.3f %7s %8s %8s %11s %9s %6s %6s %7s%s%s\n", w, bm_name(r->method),
               r->threads, s->mops, spread, vs_mu, vs_seq, commits, apc, ph, ps, pz,
               notes[0] ? "  " : "", notes);
        if (csv) {
            bench_csv_field(notes);
            fprintf(csv,
                    "%s,%s,%ld,%g,%s,%d,%g,%d,%.6f,%.6f,%.6f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d\n",
                    d->bench, d->structure, d->size, d->update_pct, bm_name(r->method), r->threads,
                    o->seconds, o->runs, s->mops, s->mops_min, s->mops_max, c_mu, c_seq, c_commits,
                    c_apc, c_ph, c_ps, c_pz, r->check_failed ? "fail" : "ok", notes, bench_host(),
                    bench_stamp(), bench_oversubscribed(r->threads));
        }
    }
    fflush(stdout);
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "error: writing %s: %s\n", o->csv, strerror(errno));
        rc = -1;
    }
    return rc;
}
