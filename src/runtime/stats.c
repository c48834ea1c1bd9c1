/* SPDX-License-Identifier: MIT */
/* stats.c - process totals of the per-thread counters, and their printing. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/internal.h"


/* Publish the calibration for readers (txkit stat) as soon as it can be had
 * without waiting: 10 ms after start-up. Called now and then by transactions. */
void tk_calibrate_maybe(void) {
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_RELAXED) || tk_uptime_ns() < 10000000)
        return;
    tk_seg_set_ns_per_tick(tk_ns_per_tick());
    __atomic_store_n(&done, 1, __ATOMIC_RELAXED);
}

static const char *const cause_names[TXKIT_NCAUSES] = {
    "conflict", "capacity",    "explicit", "nested", "unsupported",
    "locked",   "irrevocable", "injected", "other",
};

const char *txkit_cause_name(int cause) {
    return cause >= 0 && cause < TXKIT_NCAUSES ? cause_names[cause] : "?";
}

int tx_stats_get(tx_stats_t *out) {
    if (!out)
        return -EINVAL;
    struct tks_counters c;
    unsigned threads;
    tk_seg_sum(&c, &threads);
    memset(out, 0, sizeof *out);
    out->threads = threads;
    out->transactions = c.transactions;
    for (int m = 0; m < TXKIT_NMETHODS; m++) {
        out->commits[m] = c.commits[m];
        out->aborts[m] = c.aborts[m];
    }
    for (int k = 0; k < TXKIT_NCAUSES; k++)
        out->aborts_by_cause[k] = c.aborts_by_cause[k];
    out->htm_to_stm = c.htm_to_stm;
    out->to_serial = c.to_serial;
    out->irrevocable = c.irrevocable;
    for (int b = 0; b < TXKIT_RETRY_BUCKETS; b++)
        out->retries_hist[b] = c.retries_hist[b];
    double npt = tk_ns_per_tick();
    tk_seg_set_ns_per_tick(npt);
    out->ns_aborted = (uint64_t)((double)c.ticks_aborted * npt);
    out->explicit_code = c.explicit_code;
    out->cm_decided = c.cm_decided;
    out->cm_inversions = c.cm_inversions;
    out->sched_waits = c.sched_waits;
    out->sched_queued = c.sched_queued;
    out->cm_undecided = c.cm_undecided;
    return 0;
}

uint64_t tx_stats_commits(const tx_stats_t *s) {
    uint64_t n = 0;
    for (int i = 0; i < TXKIT_NMETHODS; i++)
        n += s->commits[i];
    return n;
}

uint64_t tx_stats_aborts(const tx_stats_t *s) {
    uint64_t n = 0;
    for (int i = 0; i < TXKIT_NMETHODS; i++)
        n += s->aborts[i];
    return n;
}

void tx_stats_print(const tx_stats_t *s, FILE *f) {
    static const char *const buckets[TXKIT_RETRY_BUCKETS] = {"0",   "1",    "2",     "3-4",
                                                             "5-8", "9-16", "17-32", ">32"};
    uint64_t commits = tx_stats_commits(s), aborts = tx_stats_aborts(s);
    fprintf(f, "txkit %s statistics: %llu threads, %llu transactions\n", TXKIT_VERSION_STRING,
            (unsigned long long)s->threads, (unsigned long long)s->transactions);
    fprintf(f, "  commits  %12llu", (unsigned long long)commits);
    for (int m = 1; m < TXKIT_NMETHODS; m++)
        fprintf(f, "  %s %llu", txkit_method_name(m), (unsigned long long)s->commits[m]);
    fprintf(f, "\n  aborts   %12llu", (unsigned long long)aborts);
    for (int m = 1; m < TXKIT_NMETHODS; m++)
        fprintf(f, "  %s %llu", txkit_method_name(m), (unsigned long long)s->aborts[m]);
    fprintf(f, "\n  by cause:");
    for (int c = 0; c < TXKIT_NCAUSES; c++)
        if (s->aborts_by_cause[c])
            fprintf(f, " %s %llu", txkit_cause_name(c), (unsigned long long)s->aborts_by_cause[c]);
    fprintf(f, "\n  fallbacks: htm->stm %llu, ->serial %llu; irrevocable %llu\n",
            (unsigned long long)s->htm_to_stm, (unsigned long long)s->to_serial,
            (unsigned long long)s->irrevocable);
    fprintf(f, "  retries per commit:");
    for (int b = 0; b < TXKIT_RETRY_BUCKETS; b++)
        fprintf(f, " [%s] %llu", buckets[b], (unsigned long long)s->retries_hist[b]);
    fprintf(f, "\n  time in aborted attempts: %.3f thread-ms (%.1f ns per abort)\n",
            (double)s->ns_aborted / 1e6, aborts ? (double)s->ns_aborted / (double)aborts : 0.0);
    if (s->cm_decided || s->sched_waits || s->sched_queued)
        fprintf(f,
                "  contention manager %s: %llu conflicts decided, %llu priority inversions, %llu "
                "undecided; "
                "scheduling: %llu waits, %llu queued\n",
                txkit_get_cm(), (unsigned long long)s->cm_decided,
                (unsigned long long)s->cm_inversions, (unsigned long long)s->cm_undecided,
                (unsigned long long)s->sched_waits, (unsigned long long)s->sched_queued);
}

/* The exit summary's stream: a duplicate of stderr made at start-up, so that
 * a program closing stderr in an atexit handler of its own (which runs before
 * ours) does not lose it. Using stderr itself after an fclose(stderr) would
 * be undefined. */
static int out_fd = -1;
static FILE *out_file;

void tk_stats_out_init(void) {
    if (out_fd < 0)
        out_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
}

FILE *tk_stats_out(void) {
    if (!out_file && out_fd >= 0 && (out_file = fdopen(out_fd, "w")) != NULL)
        setvbuf(out_file, NULL, _IOLBF, 0); /* every line out at once, like stderr */
    return out_file;
}

/* At exit: TXKIT_STATS=1 prints a summary, TXKIT_STATS=FILE writes a dump
 * for `txkit report FILE`; the published segment goes away either way. */
void tk_stats_at_exit(void) {
    if (tk_cfg.stats_at_exit) {
        tx_stats_t s;
        tx_stats_get(&s); /* also calibrates ns_per_tick for the dump */
        FILE *f = tk_stats_out();
        unsigned shared = tk_seg_shared_threads();
        if (tk_cfg.stats_path[0]) {
            char why[320];
            if (tk_seg_dump(tk_cfg.stats_path, why, sizeof why) != 0 && f)
                fprintf(f, "txkit: TXKIT_STATS=%s: %s\n", tk_cfg.stats_path, why);
        } else if (f) {
            tx_stats_print(&s, f);
            tk_seg_print_locks(f);
            if (shared)
                fprintf(f,
                        "  %u threads counted together in the shared statistics slot (more than %u "
                        "at once)\n",
                        shared, TKS_SHARED_SLOT - 1);
        }
        if (f)
            fflush(f);
    }
    tk_seg_unpublish();
}
