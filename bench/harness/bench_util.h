/* SPDX-License-Identifier: MIT */
/* bench_util.h - the measurement library of every txkit benchmark (bench/,
 * cache/bench): the one harness.
 *
 * Method table (seq, mutex, rwlock, the txkit methods and gcc's libitm
 * methods), the option parser (common options, lists), a per-thread
 * xorshift PRNG, the time-bounded thread runner (pinning, start barrier, stop
 * flag), fork-isolated measurements (bench_isolate), medians with their
 * spread, txkit statistics deltas, the header (machine, RTM, txkit, method,
 * threads, duration, runs), the CSV writer, oversubscribed points and
 * PASS/MISS target lines. intset.c and bank.c fill an array of bench_row and
 * hand it to bench_report(); cm, cx and cache use the pieces.
 * Unless said otherwise a function is called by the benchmark's main thread
 * only (the library keeps process-wide state for the run).
 */
#ifndef TXKIT_BENCH_UTIL_H
#define TXKIT_BENCH_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <txkit.h>

#define BENCH_MAX_THREADS 256
#define BENCH_MAX_TCOUNTS 16 /* distinct thread counts on one command line */
#define BENCH_MAX_RUNS 64
#define BENCH_CACHELINE 64

/* ------------------------------------------------------------------ methods */

enum bench_method {
    BM_SEQ = 0, /* uninstrumented sequential code, 1 thread, no synchronization */
    BM_MUTEX,   /* one pthread_mutex around each operation */
    BM_RWLOCK,  /* one pthread_rwlock: read lock for read-only operations */
    BM_AUTO,    /* txkit methods (TX_ATOMIC, TX_LOAD / TX_STORE) */
    BM_HTM,
    BM_STM,
    BM_SERIAL,
    /* gcc transactions (-fgnu-tm: __transaction_atomic around the plain code).
     * Which runtime runs them is decided by the dynamic linker: GCC's libitm
     * (the binaries link it first), or txkit's libitm ABI when txkit's
     * libitm.so.1 drop-in comes first on LD_LIBRARY_PATH (`txkit run`). The
     * binary looks it up at start-up (bench_itm_runtime()); a row for the
     * other runtime is n/a, so every itm label names the runtime that ran.
     * On GCC's libitm, with ITM_DEFAULT_METHOD set to the name after
     * "itm@libitm:"; itm@libitm:default leaves it unset (libitm's choice). */
    BM_ITM_DEFAULT,
    BM_ITM_SERIAL,
    BM_ITM_SERIALIRR,
    BM_ITM_SERIALIRR_ONWRITE,
    BM_ITM_ML_WT,
    BM_ITM_GL_WT,
    BM_ITM_HTM,
    /* On txkit's libitm ABI, with txkit_set_method() as for auto..serial. */
    BM_ITMTK_AUTO,
    BM_ITMTK_HTM,
    BM_ITMTK_STM,
    BM_ITMTK_SERIAL,
    BM_COUNT
};

/* The label of a method in the table and the CSV: "stm", "itm@libitm:ml_wt",
 * "itm@txkit:stm", and "mutex+elision" / "rwlock+elision" when GLIBC_TUNABLES
 * asks for elision. */
const char *bm_name(int m);
/* Return: the method, or -1 for an unknown name. "itm:X" is accepted for
 * "itm@libitm:X". Exits with a message for a name that cannot be honored (see
 * parse_methods() in bench_util.c). */
int bm_parse(const char *name);
static inline int bm_is_tx(int m) { return m >= BM_AUTO && m <= BM_SERIAL; }
static inline int bm_is_itm(int m) { return m >= BM_ITM_DEFAULT && m < BM_COUNT; }
static inline int bm_is_itm_libitm(int m) { return m >= BM_ITM_DEFAULT && m <= BM_ITM_HTM; }
static inline int bm_is_itm_txkit(int m) { return m >= BM_ITMTK_AUTO && m <= BM_ITMTK_SERIAL; }
/* Rows whose transactions txkit runs, so its statistics describe them. */
static inline int bm_txkit_stats(int m) { return bm_is_tx(m) || bm_is_itm_txkit(m); }
/* The value of ITM_DEFAULT_METHOD for a libitm method; NULL for
 * itm@libitm:default and for every other method. */
const char *bm_itm_env(int m);

/**
 * bench_select_method() - make a txkit method the process-wide method.
 * @m:   a BM_* method; non-txkit methods need nothing here and return 0 (an
 *       itm method is set up in the measurement's child, bench_itm_prepare()).
 * @why: set to a short reason when the method cannot run here.
 * Return: 0, or -1 (the row is then reported as n/a with @why).
 */
int bench_select_method(int m, char *why, size_t whylen);

/**
 * bench_itm_prepare() - set ITM_DEFAULT_METHOD for a libitm method.
 *
 * libitm reads ITM_DEFAULT_METHOD once per process, when the first thread
 * registers, i.e. at the process's first transaction (not at start-up). The
 * runner calls this in each measurement's child process, before any thread
 * runs a transaction; the parent never runs one, so every child starts libitm
 * afresh with the method its row names. Only --no-fork cannot honor more than
 * one libitm method per process (bench_run_rows() reports the others as n/a).
 * Nothing to do for the other methods (itm@txkit rows: txkit_set_method(), in
 * bench_select_method()).
 */
void bench_itm_prepare(int m);

/* The runtime that runs the gcc transactions of this process. */
enum bench_itm_rt {
    ITM_RT_NONE = 0, /* no libitm ABI found, or built without -fgnu-tm */
    ITM_RT_LIBITM,   /* GCC's libitm */
    ITM_RT_TXKIT,    /* txkit's libitm ABI (the drop-in libitm.so.1 is libtxkit) */
    ITM_RT_OTHER,    /* some other object defines _ITM_beginTransaction */
};

/**
 * bench_itm_runtime() - which runtime the binary's _ITM_* references bind to.
 * @buf: a description: the object that defines _ITM_beginTransaction@LIBITM_1.0
 *       first in the global scope, as loaded and its real file (or why there is
 *       none); may be NULL.
 *
 * The probe, not the environment, decides: the object is txkit when it is the
 * very object that defines txkit_version (txkit's libitm.so.1 is a link to
 * libtxkit.so.0, so the loader maps them once), GCC's libitm when its file is
 * libitm.so*. Looked up once.
 * Return: enum bench_itm_rt.
 */
int bench_itm_runtime(char *buf, size_t len);

/* Which libitm mode ran the transactions, sampled by the itm wrappers
 * (itm_probe.h) in one transaction in BENCH_ITM_SAMPLE of each thread; reset
 * by bench_run_threads(), read into the sample by bench_sample_threads().
 * attempts: every attempt of a sampled transaction (restarts included);
 * commits[how]: sampled transactions by what _ITM_inTransaction() said in
 * their committing attempt: 0 the RTM fast path (libitm keeps no software
 * state there), 1 instrumented and retryable (ml_wt, gl_wt, serial with undo
 * log), 2 irrevocable (serialirr). */
#define BENCH_ITM_SAMPLE 64
extern atomic_ulong bench_itm_attempts;
extern atomic_ulong bench_itm_commits[3];

/* Lock elision (glibc): requested when GLIBC_TUNABLES contains
 * glibc.elision.enable=1, active when glibc actually elides (it enables it
 * only where RTM is usable). */
int bench_elision_requested(void);
int bench_elision_active(void);
/* TXKIT_STATS=off: txkit counts nothing; txkit methods are labelled +nostats. */
int bench_stats_off(void);

/* ------------------------------------------------------------------ options */

struct bench_opts {
    int no_methods; /* set before parsing: --method is the benchmark's own */
    int methods[BM_COUNT];
    int nmethods;
    int threads[BENCH_MAX_TCOUNTS];
    int nthreads;
    double seconds;
    int runs;
    const char *csv;
    uint64_t seed;
    int quiet;      /* no progress lines on stderr */
    int nofork;     /* measure in this process (for debuggers) */
    double timeout; /* seconds before a measurement is killed; 0 = automatic */
};

void bench_opts_init(struct bench_opts *o);
/* bench_opts_init() and the defaults of the method benchmarks (intset, bank):
 * methods seq, mutex, auto at 1 thread. */
void bench_opts_init_methods(struct bench_opts *o);

/**
 * bench_parse_common() - handle an option that every benchmark shares.
 * @argc, @argv, @i: the command line and the index of the option; on success
 *                   *i is advanced past its argument.
 * Return: 1 if the option was consumed, 0 if it is not a common option; exits
 * with a message on a malformed value.
 */
int bench_parse_common(struct bench_opts *o, int argc, char **argv, int *i);

/**
 * bench_opt() - match argv[*i] against an option name.
 * @name: "--size"; also matches "--size=VALUE".
 * @val:  where the value goes (the next word, or what follows '='); NULL for
 *        an option without a value.
 * Return: 1 if it matched (*i then points at the last word consumed), else 0.
 * Exits with a message when the value is missing.
 */
int bench_opt(int argc, char **argv, int *i, const char *name, const char **val);
/**
 * bench_opt_last() - the last branch of a benchmark's option loop, for an
 * argument none of its options took: --help / -h prints @usage to stdout,
 * anything else is an unknown option (a message and @usage on stderr).
 * Return: the exit status for main, 0 after --help, 2 otherwise.
 */
int bench_opt_last(int argc, char **argv, int *i, void (*usage)(FILE *f));
long bench_parse_long(const char *opt, const char *s, long lo, long hi);
double bench_parse_double(const char *opt, const char *s, double lo, double hi);

/**
 * bench_split_list() - split a comma-separated option value in place.
 * @opt: the option's name, for messages.
 * @buf: a copy of the value (split in place); @tok: room for @max words.
 * Return: the number of words (>= 1); exits with a message on an empty list
 * or more than @max words.
 */
int bench_split_list(const char *opt, char *buf, char **tok, int max);

/**
 * bench_parse_ints() - a comma-separated list of integers in [lo, hi],
 * duplicates dropped (thread counts, I/O shares).
 * Return: how many were stored in @out (at most @max); exits on a bad value.
 */
int bench_parse_ints(const char *opt, const char *arg, int *out, int max, long lo, long hi);

/**
 * bench_parse_names() - a comma-separated list of names from @names ("all":
 * every one), duplicates dropped; @out gets indices into @names.
 * Return: how many were stored; exits on an unknown name.
 */
int bench_parse_names(const char *opt, const char *arg, const char *const *names, int nnames,
                      int *out);

/* Help text for the common options. */
void bench_usage_common(FILE *f);

__attribute__((noreturn, format(printf, 1, 2))) void bench_die(const char *fmt, ...);

/* -------------------------------------------------------------------- PRNG */

/* xorshift64* (Vigna): one 64-bit word of state per thread. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* A value in [0, n): high half of a 64x64 product, no division. */
static inline uint64_t rng_below(uint64_t *s, uint64_t n) {
    return (uint64_t)(((unsigned __int128)rng_next(s) * n) >> 64);
}

/* A non-zero state derived from a seed and a stream number. */
uint64_t rng_seed(uint64_t seed, uint64_t stream);

/* ----------------------------------------------------------------- threads */

/* One worker's slot; each on its own cache lines. */
struct bench_thread {
    pthread_t handle;
    int id;
    int cpu; /* pinned CPU, or -1 */
    uint64_t rng;
    void *ctx;    /* the benchmark's shared state */
    uint64_t ops; /* operations completed (set by the worker) */
    long delta;   /* benchmark-defined (intset: net inserts) */
    uint64_t bad; /* benchmark-defined failure count */
    void (*fn)(struct bench_thread *);
} __attribute__((aligned(BENCH_CACHELINE)));

extern atomic_int bench_stop_flag;

/* Checked by the workers between batches of operations. */
static inline int bench_stopped(void) {
    return atomic_load_explicit(&bench_stop_flag, memory_order_relaxed);
}

/**
 * bench_run_threads() - run fn in nthreads threads for a fixed time.
 * @th:      nthreads slots; id, rng, cpu and fn are filled here, ctx must be set.
 * @seconds: how long the main thread lets them run before raising the stop flag.
 *
 * Threads are pinned round-robin to the CPUs of the process's affinity mask
 * when there are no more threads than CPUs. They start together at a barrier.
 * Return: the elapsed wall time between the start and the stop flag (seconds).
 */
double bench_run_threads(struct bench_thread *th, int nthreads, void (*fn)(struct bench_thread *),
                         double seconds, uint64_t seed);

/* CPUs the process may run on (affinity mask). */
int bench_ncpus(void);
double bench_now(void);

/* ------------------------------------------------------------------ results */

struct bench_sample {
    double mops;
    double secs;
    uint64_t ops;
    uint64_t ops_min; /* fewest / most operations done by one thread */
    uint64_t ops_max;
    uint64_t anomalies;      /* benchmark-defined (intset: inconsistent views; bank: wrong sums) */
    tx_stats_t tx;           /* txkit statistics delta over the run */
    uint64_t itm_attempts;   /* itm methods: see bench_itm_attempts */
    uint64_t itm_commits[3]; /* itm methods: see bench_itm_commits */
};

/* Fill ops, ops_min, ops_max, secs and mops from the threads of one run. */
void bench_sample_threads(struct bench_sample *s, const struct bench_thread *th, int n,
                          double secs);

enum bench_row_state {
    ROW_OK = 0,
    ROW_NA,      /* cannot run here (e.g. htm without RTM) */
    ROW_CRASH,   /* a measurement died (signal or exit status) */
    ROW_TIMEOUT, /* a measurement did not finish in time and was killed */
};

struct bench_row {
    int method;
    int threads;
    int state;        /* enum bench_row_state; note says why */
    int check_failed; /* a run failed its correctness check (numbers still shown) */
    char note[112];
    int nsamples;
    struct bench_sample s[BENCH_MAX_RUNS];
};

/* Allocate the rows for o: seq once at 1 thread, every other method at every
 * thread count; methods that cannot run here are marked ROW_NA. */
struct bench_row *bench_rows_make(const struct bench_opts *o, int *nrows);

/**
 * bench_measure() - run one measurement, isolated in a child process.
 * @fn:  does the measurement and fills the sample; returns 0, or 1 when a
 *       correctness check failed (the sample is still valid).
 *
 * Unless o->nofork, fn runs in a forked child with a memory limit and a time
 * limit, so that a crash, a hang or a runaway allocation inside the runtime
 * becomes one failed row instead of the end of the benchmark.
 * Return: 0 ok, 1 check failed, or -1: the row is marked ROW_CRASH or
 * ROW_TIMEOUT with a note.
 */
int bench_measure(const struct bench_opts *o, struct bench_row *row, int run,
                  int (*fn)(void *arg, struct bench_sample *out), void *arg, size_t mem_hint);

/* No address-space limit for bench_isolate()'s child (mem_hint). */
#define BENCH_NO_MEMLIMIT ((size_t)-1)

/**
 * bench_isolate() - run fn(arg, out, why, whylen) in a forked child and copy
 * its result (@size bytes at @out) back: the one fork-isolated measurement
 * loop of the benchmarks.
 * @timeout:  seconds before the child is killed.
 * @mem_hint: bytes the measurement may need beyond 2 GiB of address space
 *            (RLIMIT_AS in the child), or BENCH_NO_MEMLIMIT.
 * @nofork:   call fn here instead (for debuggers).
 * @state:    if not NULL, set to ROW_CRASH or ROW_TIMEOUT when the child
 *            died or hung, else left alone.
 * @why:      fn's reason (a failed check, a set-up failure), or what
 *            happened to the child.
 * Return: fn's value (0 ok, > 0 a check failed, < 0 fn could not measure),
 * or -1 when the child crashed or timed out.
 */
int bench_isolate(int (*fn)(void *arg, void *out, char *why, size_t whylen), void *arg, void *out,
                  size_t size, double timeout, size_t mem_hint, int nofork, int *state, char *why,
                  size_t whylen);

/**
 * bench_median() - the median of @n values (the mean of the middle two when
 * @n is even) and, when not NULL, their minimum and maximum.
 * Return: the median, 0 when @n is 0.
 */
double bench_median(const double *v, int n, double *min, double *max);

/* The index of the (lower) median of @n values, -1 when @n is 0. */
int bench_median_index(const double *v, int n);

/* The spread of a point, (max - min) / median in percent, as "12%" ("-" for
 * one run). */
void bench_fmt_spread(char *buf, size_t len, double median, double min, double max, int runs);

/* Difference after - before, counter by counter. */
void bench_stats_delta(const tx_stats_t *before, const tx_stats_t *after, tx_stats_t *out);

/* What the report needs to describe the run. */
struct bench_desc {
    const char *bench;     /* "intset", "bank" */
    const char *structure; /* "hash", "list", "tree", "bank" */
    long size;             /* keys / accounts */
    double update_pct;     /* intset: updates; bank: transfers */
    const char *params;    /* extra header lines, each ending in '\n' */
};

/* Header: host, CPU, RTM, txkit version, what runs. */
void bench_print_header(FILE *f, const struct bench_desc *d, const struct bench_opts *o);

/**
 * bench_print_machine() - the first lines of every benchmark's header:
 * "=== title ===", host, cpu, rtm, txkit (and TXKIT_METHOD), when and load,
 * and cpu-cpu (bench_line_rtt_ns, when there are 2 CPUs).
 * Also takes the host name and time stamp bench_host() and bench_stamp() give.
 * Return: the 1-minute load average (-1 if unknown).
 */
double bench_print_machine(FILE *f, const char *title);

/**
 * bench_print_run() - the header lines of what is measured: threads (with
 * the counts above the usable CPUs marked oversubscribed), duration, runs and
 * whether each measurement runs in a child (nofork: in this process).
 */
void bench_print_run(FILE *f, const int *threads, int nthreads, double seconds, int runs,
                     int nofork);

/* The time a cache line takes to go from one usable CPU to another and back
 * (two threads pinned on the first two, the fastest of 3 passes of ping-pong,
 * a few milliseconds), ns; -1 with fewer than 2 CPUs or when the peer thread
 * does not get to run. The caller's CPU affinity is restored. */
double bench_line_rtt_ns(void);

/* A warning line when the load average says the machine is busy. */
void bench_print_load_warning(FILE *f, double load1);

/* The host name (commas replaced) and UTC time stamp of the header. */
const char *bench_host(void);
const char *bench_stamp(void);

/* More threads than usable CPUs: the point measures time sharing too. */
int bench_oversubscribed(int threads);

/**
 * bench_csv_open() - open @path for appending rows, writing @header (one
 * line, no newline) first when the file is new or empty.
 * Return: the stream, or NULL after a message on stderr.
 */
FILE *bench_csv_open(const char *path, const char *header);

/* Make @s a CSV field: commas become ';' (the CSV files have no quoting). */
void bench_csv_field(char *s);

/**
 * bench_target() - one target line: "TARGET <label> (target <cmp> <goal>):
 * PASS|MISS  <value>", the form every runner counts.
 * @cmp: ">=" or "<="; @valid: 0 when the value is not a valid result (a
 * failed check): MISS then.
 * Return: 1 PASS, 0 MISS.
 */
int bench_target(FILE *f, const char *label, double value, const char *cmp, double goal, int valid);

/* The progress line on stderr (only when stderr is a terminal and !quiet). */
void bench_progress(const struct bench_opts *o, int run, const struct bench_row *r);
void bench_progress_done(const struct bench_opts *o);

/**
 * bench_run_rows() - every run of every row, runs interleaved across rows.
 * @fn: as for bench_measure(); called with (ctx, row, run) through a shim.
 * Return: 1 if any row crashed, timed out or failed its check, else 0.
 */
int bench_run_rows(const struct bench_opts *o, struct bench_row *rows, int nrows,
                   int (*fn)(void *ctx, const struct bench_row *row, int run,
                             struct bench_sample *out),
                   void *ctx, size_t mem_hint);

/**
 * bench_report() - print the table to stdout and append to the CSV file.
 * Return: 0, or -1 if the CSV file could not be written.
 */
int bench_report(const struct bench_desc *d, const struct bench_opts *o,
                 const struct bench_row *rows, int nrows);

/* What the rows of a finished run say, for the closing lines. */
struct bench_outcome {
    int crashed;      /* a measurement crashed or timed out */
    int check_failed; /* a run failed its correctness check */
    int anomalies;    /* a run counted anomalies */
    int runs;         /* samples taken */
};

/* Fill @out from the rows; print the FAIL line when a measurement crashed. */
void bench_outcome(const struct bench_row *rows, int nrows, struct bench_outcome *out);

/* bench_cpu_model() - the CPU's model name from /proc/cpuinfo ("unknown"). */
void bench_cpu_model(char *buf, size_t len);

#endif /* TXKIT_BENCH_UTIL_H */
