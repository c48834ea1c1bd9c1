/* SPDX-License-Identifier: MIT */
/* cm_bench.c - txkit-bench-cm: contention managers and transaction-aware
 * scheduling (txkit/cm.h), after TxLinux's experiments.
 *
 *   txkit-bench-cm inversion  [opts]   threads of different priorities on a
 *       small shared array; each transaction reads --touch random slots and
 *       moves an amount between two of them. Per manager: throughput, the
 *       runtime's cm_decided / cm_inversions, and an independent oracle of
 *       priority inversions (below) that also works for backoff.
 *   txkit-bench-cm pipeline   [opts]   4 x CPUs threads walk through 8 phases;
 *       each phase has its own few words (plus one word all phases share
 *       rarely), so threads conflict with those in the same phase. A fixed
 *       amount of work: execution time, restarts and time lost in aborts,
 *       with transaction-aware scheduling off and on.
 *   txkit-bench-cm hotcounter [opts]   every thread increments one word:
 *       per-thread commits (min/max: starvation) and per-transaction latency
 *       percentiles (bounded waiting), per manager, scheduling off and on.
 *
 * Every measurement runs in a forked child (a crash or hang in the runtime
 * costs one row, not the run) that picks the method (stm unless --method),
 * the manager (txkit_set_cm) and the scheduling (txkit_set_sched) before its
 * first transaction. Correctness checks: the array's sum is conserved
 * (inversion), every phase's words add up to the increments (pipeline), the
 * counter equals the commits (hotcounter); a failed check makes the exit
 * status 1.
 *
 * The inversion oracle, independent of how the runtime decides: threads log,
 * outside the runtime, clock readings inside their transactions. An aborted
 * attempt A logs, for each slot it read, when that read had returned, and
 * the last moment it was provably still running (its latest reading); a
 * committed transaction C logs the slots it wrote, a reading just before
 * its commit and one just after it. After the run, C "won over" A when C's
 * commit began after A had read one of the slots C wrote and had completed
 * while A was still running: C's write then made A's view stale while A
 * held it, and A aborted. Each aborted attempt is classified once: an
 * inversion when some such C has a lower conflict priority than A,
 * priority-respecting when all are higher, a tie when all are equal, and
 * unexplained when there is none (e.g. a loser aborted by an eager decision
 * before the winner committed, or a validation failure against a commit that
 * straddled a reading). Inversions so found are certain (a lower bound: the
 * commit provably overlapped the live read); the share is inversions over
 * cross-priority conflicts (inversions + respected).
 */
#include "bench_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <txkit/cm.h>
#include <unistd.h>

#define MAX_CMS 8
#define INV_MAX_TOUCH 8
#define INV_LEVELS 4

static const char *const all_cms[] = {"backoff", "timestamp", "size", "prio"};

/* ------------------------------------------------------------ options */

struct opts {
    struct bench_opts b; /* threads, seconds, runs, csv, seed (the common options) */
    const char *cms[MAX_CMS];
    int ncms;
    int scheds[2];
    int nscheds;
    const char *method; /* NULL: stm */
    /* inversion */
    int slots, touch, work;
    int api_prio; /* priorities from tx_set_priority instead of nice */
    /* pipeline */
    int phases, words, ops;
};

static char g_cmbuf[256];

static void usage(FILE *f) {
    fputs("usage: txkit-bench-cm inversion|pipeline|hotcounter [options]\n"
          "  --cm LIST         managers: backoff,timestamp,size,prio (default: all)\n"
          "  --threads LIST    thread counts (default: 2,4,8; pipeline: 4 x CPUs)\n"
          "  --sched LIST      off,on (default: inversion off; others off,on)\n"
          "  --seconds S       per timed measurement (inversion, hotcounter; default 0.5)\n"
          "  --runs N          repetitions, the median is reported (default 3)\n"
          "  --method M        TXKIT method (default stm: where the managers act)\n"
          "  --csv FILE        append the rows to FILE (header when it is new)\n"
          "  --seed N\n"
          " inversion:  --slots N (64)  --touch K (4)  --work N (spin per tx, 200)\n"
          "             --prio-source nice|api (per-thread nice, or tx_set_priority)\n"
          " pipeline:   --phases N (8)  --words N (8)  --ops N (per thread and phase, 200)\n"
          "             --work N (spin per tx, 20000: ~10 us)\n",
          f);
}

static void parse_opts(struct opts *o, const char *sub, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    bench_opts_init(&o->b);
    o->b.no_methods = 1; /* --method is one txkit method here */
    for (size_t k = 0; k < sizeof all_cms / sizeof all_cms[0]; k++)
        o->cms[o->ncms++] = all_cms[k];
    int pipeline = strcmp(sub, "pipeline") == 0;
    if (pipeline) {
        o->b.threads[o->b.nthreads++] = 4 * bench_ncpus();
    } else {
        o->b.threads[0] = 2, o->b.threads[1] = 4, o->b.threads[2] = 8;
        o->b.nthreads = 3;
    }
    if (strcmp(sub, "inversion") == 0) {
        o->scheds[o->nscheds++] = 0;
    } else {
        o->scheds[o->nscheds++] = 0;
        o->scheds[o->nscheds++] = 1;
    }
    o->b.seconds = 0.5;
    o->b.runs = 3; /* a median and its spread */
    o->b.seed = 0x636d62656e6368ULL;
    o->slots = 64, o->touch = 4, o->work = pipeline ? 20000 : 200;
    o->phases = 8, o->words = 8, o->ops = 200;

    char buf[256];
    char *tok[MAX_CMS];
    int n;
    for (int i = 2; i < argc; i++) {
        const char *v;
        if (bench_opt(argc, argv, &i, "--cm", &v)) {
            snprintf(g_cmbuf, sizeof g_cmbuf, "%s", v);
            n = bench_split_list("--cm", g_cmbuf, tok, MAX_CMS);
            for (int k = 0; k < n; k++) {
                size_t j = 0;
                while (j < sizeof all_cms / sizeof all_cms[0] && strcmp(tok[k], all_cms[j]) != 0)
                    j++;
                if (j == sizeof all_cms / sizeof all_cms[0])
                    bench_die("--cm: unknown manager '%s' (backoff, timestamp, size, prio)",
                              tok[k]);
                o->cms[k] = all_cms[j];
            }
            o->ncms = n;
        } else if (bench_opt(argc, argv, &i, "--sched", &v)) {
            snprintf(buf, sizeof buf, "%s", v);
            n = bench_split_list("--sched", buf, tok, 2);
            for (int k = 0; k < n; k++) {
                if (strcmp(tok[k], "off") == 0 || strcmp(tok[k], "0") == 0)
                    o->scheds[k] = 0;
                else if (strcmp(tok[k], "on") == 0 || strcmp(tok[k], "1") == 0)
                    o->scheds[k] = 1;
                else
                    bench_die("--sched: '%s' is not off or on", tok[k]);
            }
            o->nscheds = n;
        } else if (bench_opt(argc, argv, &i, "--method", &v)) {
            txkit_method_t m;
            if (txkit_method_parse(v, &m) != 0)
                bench_die("--method: unknown method '%s' (auto, htm, stm, serial)", v);
            o->method = v;
        } else if (bench_opt(argc, argv, &i, "--slots", &v)) {
            o->slots = (int)bench_parse_long("--slots", v, 2, 65535);
        } else if (bench_opt(argc, argv, &i, "--touch", &v)) {
            o->touch = (int)bench_parse_long("--touch", v, 2, INV_MAX_TOUCH);
        } else if (bench_opt(argc, argv, &i, "--work", &v)) {
            o->work = (int)bench_parse_long("--work", v, 0, 1000000);
        } else if (bench_opt(argc, argv, &i, "--prio-source", &v)) {
            if (strcmp(v, "nice") == 0)
                o->api_prio = 0;
            else if (strcmp(v, "api") == 0)
                o->api_prio = 1;
            else
                bench_die("--prio-source: '%s' is not nice or api", v);
        } else if (bench_opt(argc, argv, &i, "--phases", &v)) {
            o->phases = (int)bench_parse_long("--phases", v, 1, 64);
        } else if (bench_opt(argc, argv, &i, "--words", &v)) {
            o->words = (int)bench_parse_long("--words", v, 1, 512);
        } else if (bench_opt(argc, argv, &i, "--ops", &v)) {
            o->ops = (int)bench_parse_long("--ops", v, 1, 10000000);
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (!bench_parse_common(&o->b, argc, argv, &i)) {
            usage(stderr);
            bench_die("%s: unknown option '%s'", sub, argv[i]);
        }
    }
    if (o->touch > o->slots)
        bench_die("--touch %d: more than --slots %d", o->touch, o->slots);
}

/* ------------------------------------------------------------ helpers */

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Work inside a transaction that the compiler cannot drop. */
static inline void spin(int n) {
    for (volatile int k = 0; k < n; k++)
        ;
}

static const char *g_sub;
static const char *g_method_name = "stm";

/* In the measuring child, before its first transaction. */
static int setup_runtime(const struct opts *o, const char *cm, int sched, char *why, size_t len) {
    txkit_method_t m = TXKIT_STM;
    if (o->method)
        txkit_method_parse(o->method, &m);
    int rc = txkit_set_method(m);
    if (rc != 0) {
        snprintf(why, len, "txkit_set_method(%s): %s", txkit_method_name(m), strerror(-rc));
        return -1;
    }
    rc = txkit_set_cm(cm);
    if (rc != 0) {
        snprintf(why, len, "txkit_set_cm(%s): %s", cm, strerror(-rc));
        return -1;
    }
    if (strcmp(txkit_get_cm(), cm) != 0) {
        snprintf(why, len, "txkit_get_cm() says %s after txkit_set_cm(%s)", txkit_get_cm(), cm);
        return -1;
    }
    txkit_set_sched(sched);
    return 0;
}

static void stats_now(tx_stats_t *s) {
    memset(s, 0, sizeof *s);
    if (tx_stats_get(s) != 0)
        bench_die("tx_stats_get failed");
}

/* The counters this benchmark reports, as after - before. */
struct txd {
    uint64_t commits, aborts, conflicts, to_serial, ns_aborted;
    uint64_t cm_decided, cm_inversions, sched_waits, sched_queued;
};

static void txd_fill(struct txd *d, const tx_stats_t *b, const tx_stats_t *a) {
    d->commits = tx_stats_commits(a) - tx_stats_commits(b);
    d->aborts = tx_stats_aborts(a) - tx_stats_aborts(b);
    d->conflicts =
        a->aborts_by_cause[TXKIT_CAUSE_CONFLICT] - b->aborts_by_cause[TXKIT_CAUSE_CONFLICT];
    d->to_serial = a->to_serial - b->to_serial;
    d->ns_aborted = a->ns_aborted - b->ns_aborted;
    d->cm_decided = a->cm_decided - b->cm_decided;
    d->cm_inversions = a->cm_inversions - b->cm_inversions;
    d->sched_waits = a->sched_waits - b->sched_waits;
    d->sched_queued = a->sched_queued - b->sched_queued;
}

/**
 * measure_runs() - run one point nruns times, each in a child (bench_isolate),
 * saying on stdout which runs failed.
 * @runs: room for nruns results of size bytes each.
 * @key:  the value the median is taken by (throughput, or time).
 * Return: the index of the median run, or -1 when a run could not be made;
 * *failed is set on any failure.
 */
static int measure_runs(int (*fn)(void *arg, void *out, char *why, size_t len), void *arg,
                        void *runs, size_t size, int nruns, double timeout,
                        double (*key)(const void *result), const char *cm, int sched, int threads,
                        int *failed) {
    char *res = runs;
    double k[99];
    int good = 0;
    char why[200] = "";
    for (int run = 0; run < nruns; run++) {
        /* no address-space limit: the inversion logs are large sparse maps */
        int rc = bench_isolate(fn, arg, res + (size_t)good * size, size, timeout, BENCH_NO_MEMLIMIT,
                               0, NULL, why, sizeof why);
        if (rc > 0) {
            char tmp[sizeof why];
            snprintf(tmp, sizeof tmp, "%s", why);
            snprintf(why, sizeof why, "CHECK FAILED: %.180s", tmp);
        }
        if (rc < 0) {
            printf("%-9s %-5s %3d  n/a: %s\n", cm, sched ? "on" : "off", threads, why);
            *failed = 1;
            return -1;
        }
        if (rc > 0) {
            printf("%-9s %-5s %3d  %s\n", cm, sched ? "on" : "off", threads, why);
            *failed = 1;
        }
        k[good] = key(res + (size_t)good * size);
        good++;
    }
    return bench_median_index(k, good);
}

static void print_header(const struct opts *o, const char *what) {
    char title[64];
    snprintf(title, sizeof title, "txkit-bench-cm %s", g_sub);
    double load1 = bench_print_machine(stdout, title);
    printf("method    %s%s\n", g_method_name,
           o->method ? " (--method)" : " (forced: the software path is where managers act)");
    printf("what      %s\n", what);
    printf("managers ");
    for (int k = 0; k < o->ncms; k++)
        printf(" %s", o->cms[k]);
    printf("\nsched    ");
    for (int k = 0; k < o->nscheds; k++)
        printf(" %s", o->scheds[k] ? "on" : "off");
    printf("\n");
    bench_print_run(stdout, o->b.threads, o->b.nthreads, o->b.seconds, o->b.runs, o->b.nofork);
    bench_print_load_warning(stdout, load1);
}

static FILE *open_csv(const struct opts *o, const char *header) {
    if (!o->b.csv)
        return NULL;
    FILE *f = bench_csv_open(o->b.csv, header);
    if (!f)
        exit(2);
    return f;
}

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

/* ========================================================== inversion */

struct inv_abort {
    uint64_t t_abort; /* the abort handler ran (after the rollback) */
    uint64_t alive;   /* the attempt's latest reading: still running then */
    uint32_t n;       /* slots read */
    uint16_t slot[INV_MAX_TOUCH];
    uint64_t t_read[INV_MAX_TOUCH]; /* the read of slot[k] had returned */
};

/* A committed write: key = slot << 44 | t_end << 8 | thread (sorts by slot,
 * then time), t_end read just before the commit, t_done just after it. */
struct inv_commit {
    uint64_t key, t_done;
};
#define INV_T_MASK ((1ull << 36) - 1) /* 68 s of nanoseconds */

struct inv_thr {
    int level, prio, nice, seen_prio;
    uint64_t commits, aborts;
    /* the attempt running now; written inside the block on purpose (an
     * abort must not roll these back: the handler reads them) */
    uint32_t cur_n;
    uint16_t cur_slot[INV_MAX_TOUCH];
    uint64_t cur_read[INV_MAX_TOUCH];
    uint64_t cur_alive, cur_tend;
    struct inv_commit *clog;
    size_t clen, ccap;
    struct inv_abort *alog;
    size_t alen, acap;
} __attribute__((aligned(BENCH_CACHELINE)));

struct inv_ctx {
    const struct opts *o;
    int64_t *slots;
    struct inv_thr *thr;
    uint64_t t0;
    _Atomic uint64_t log_full_at; /* first time a log ran out of room (0: none) */
    int nthreads;
};

struct inv_result {
    double secs;
    struct txd d;
    uint64_t commits, commits_by_level[INV_LEVELS];
    uint64_t aborts_logged, aborts_judged;
    uint64_t o_inv, o_respected, o_tie, o_none;
    uint64_t o_inv_amb; /* of o_inv: a higher priority also committed over A before A's handler */
    int levels, prio_by_level[INV_LEVELS], seen_by_level[INV_LEVELS];
    double covered; /* share of the run the oracle judged */
    int sum_ok;
    char cm[16];
    int sched, threads;
};

static double inv_key(const void *r) {
    const struct inv_result *x = r;
    return (double)x->commits / x->secs; /* throughput */
}

static struct inv_ctx g_inv;

static void inv_note_full(uint64_t t) {
    uint64_t z = 0;
    atomic_compare_exchange_strong(&g_inv.log_full_at, &z, t);
}

static void inv_on_abort(void *arg) {
    struct inv_thr *me = arg;
    uint64_t t = now_ns() - g_inv.t0;
    me->aborts++;
    if (me->alen == me->acap) {
        inv_note_full(t);
        return;
    }
    struct inv_abort *a = &me->alog[me->alen++];
    a->t_abort = t;
    a->alive = me->cur_alive;
    a->n = me->cur_n;
    memcpy(a->slot, me->cur_slot, sizeof a->slot);
    memcpy(a->t_read, me->cur_read, sizeof a->t_read);
}

static void inv_worker(struct bench_thread *t) {
    struct inv_ctx *c = t->ctx;
    struct inv_thr *me = &c->thr[t->id];
    const int K = c->o->touch, work = c->o->work;
    if (c->o->api_prio) {
        tx_set_priority(me->prio);
    } else if (setpriority(PRIO_PROCESS, (id_t)gettid_(), me->nice) != 0) {
        fprintf(stderr, "setpriority(nice %d): %s\n", me->nice, strerror(errno));
    }
    me->seen_prio = tx_get_priority();
    uint16_t pick[INV_MAX_TOUCH];
    while (!bench_stopped()) {
        /* K distinct slots: an operation on a few random entries */
        for (int k = 0; k < K; k++) {
            uint16_t s;
            int dup;
            do {
                s = (uint16_t)rng_below(&t->rng, (uint64_t)c->o->slots);
                dup = 0;
                for (int j = 0; j < k; j++)
                    dup |= pick[j] == s;
            } while (dup);
            pick[k] = s;
        }
        int64_t amount = (int64_t)rng_below(&t->rng, 100) + 1;
        TX_ATOMIC {
            me->cur_n = 0;
            me->cur_alive = now_ns() - c->t0;
            tx_on_abort(inv_on_abort, me);
            int64_t v0 = 0, v1 = 0, sum = 0;
            for (int k = 0; k < K; k++) {
                me->cur_slot[k] = pick[k];
                int64_t v = TX_LOAD(&c->slots[pick[k]]);
                me->cur_read[k] = me->cur_alive = now_ns() - c->t0;
                me->cur_n = (uint32_t)k + 1;
                if (k == 0)
                    v0 = v;
                else if (k == 1)
                    v1 = v;
                sum += v;
            }
            spin(work);
            me->cur_alive = now_ns() - c->t0;
            /* move from the larger to the smaller: values stay bounded */
            if (v0 < v1 || (sum & 1)) {
                TX_STORE(&c->slots[pick[0]], v0 + amount);
                TX_STORE(&c->slots[pick[1]], v1 - amount);
            } else {
                TX_STORE(&c->slots[pick[0]], v0 - amount);
                TX_STORE(&c->slots[pick[1]], v1 + amount);
            }
            me->cur_alive = me->cur_tend = now_ns() - c->t0;
        }
        uint64_t done = now_ns() - c->t0;
        me->commits++;
        if (me->clen + 2 > me->ccap) {
            inv_note_full(done);
            continue;
        }
        for (int k = 0; k < 2; k++) {
            struct inv_commit *e = &me->clog[me->clen++];
            e->key = (uint64_t)pick[k] << 44 | (me->cur_tend & INV_T_MASK) << 8 | (uint64_t)t->id;
            e->t_done = done;
        }
    }
    t->ops = me->commits;
}

static int cmp_commit(const void *a, const void *b) {
    uint64_t x = ((const struct inv_commit *)a)->key, y = ((const struct inv_commit *)b)->key;
    return x < y ? -1 : x > y;
}

/* The oracle, after the threads are joined (see the top of the file). */
static void inv_judge(struct inv_ctx *c, struct inv_result *r, double secs) {
    size_t total = 0;
    for (int i = 0; i < c->nthreads; i++)
        total += c->thr[i].clen;
    struct inv_commit *all = malloc((total + 1) * sizeof *all);
    if (!all)
        bench_die("out of memory (oracle)");
    size_t n = 0;
    for (int i = 0; i < c->nthreads; i++) {
        memcpy(all + n, c->thr[i].clog, c->thr[i].clen * sizeof *all);
        n += c->thr[i].clen;
    }
    qsort(all, n, sizeof *all, cmp_commit);
    /* where each slot's commits begin */
    int ns = c->o->slots;
    size_t *start = calloc((size_t)ns + 1, sizeof *start);
    if (!start)
        bench_die("out of memory (oracle)");
    for (size_t k = 0, s = 0; s <= (size_t)ns; s++) {
        while (k < n && (all[k].key >> 44) < s)
            k++;
        start[s] = k;
    }
    /* Where a log ran out, the picture is incomplete: judge only before. */
    uint64_t full = atomic_load(&c->log_full_at);
    uint64_t horizon = full ? full : UINT64_MAX;
    r->covered = full ? (double)full / 1e9 / secs : 1.0;
    for (int i = 0; i < c->nthreads; i++) {
        const struct inv_thr *me = &c->thr[i];
        for (size_t a = 0; a < me->alen; a++) {
            const struct inv_abort *ab = &me->alog[a];
            if (ab->t_abort >= horizon)
                continue;
            r->aborts_judged++;
            /* the winner: the first commit (by the reading before it) that
             * made A's view stale while A ran */
            uint64_t first = UINT64_MAX;
            int winner = -1;
            for (uint32_t k = 0; k < ab->n; k++) {
                size_t lo = start[ab->slot[k]], hi = start[ab->slot[k] + 1];
                /* the first commit of this slot that began after the read */
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    if (((all[mid].key >> 8) & INV_T_MASK) <= ab->t_read[k])
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                for (size_t e = lo; e < start[ab->slot[k] + 1]; e++) {
                    uint64_t te = (all[e].key >> 8) & INV_T_MASK;
                    if (te >= ab->alive || te >= first)
                        break;
                    int who = (int)(all[e].key & 0xff);
                    if (all[e].t_done >= ab->alive || who == i)
                        continue; /* not provably over while A ran */
                    first = te;
                    winner = who;
                    break;
                }
            }
            if (winner < 0) {
                r->o_none++;
            } else if (c->thr[winner].prio < me->prio) {
                r->o_inv++;
                /* A manager may have killed A for a higher priority H before
                 * the lower one committed; H's commit then comes later. When
                 * one did come before A's handler ran, say it is ambiguous. */
                int amb = 0;
                for (uint32_t k = 0; k < ab->n && !amb; k++)
                    for (size_t e = start[ab->slot[k]]; e < start[ab->slot[k] + 1]; e++) {
                        uint64_t te = (all[e].key >> 8) & INV_T_MASK;
                        if (te <= ab->t_read[k])
                            continue;
                        if (te >= ab->t_abort)
                            break;
                        if (c->thr[all[e].key & 0xff].prio > me->prio) {
                            amb = 1;
                            break;
                        }
                    }
                r->o_inv_amb += (uint64_t)amb;
            } else if (c->thr[winner].prio > me->prio)
                r->o_respected++;
            else
                r->o_tie++;
        }
    }
    free(start);
    free(all);
}

/* Address space for a log; pages cost memory only once written. */
static void *log_map(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

struct inv_arg {
    const struct opts *o;
    const char *cm;
    int sched, threads;
};

static int inv_measure(void *argp, void *outp, char *why, size_t len) {
    struct inv_arg *a = argp;
    struct inv_result *r = outp;
    const struct opts *o = a->o;
    memset(r, 0, sizeof *r);
    snprintf(r->cm, sizeof r->cm, "%s", a->cm);
    r->sched = a->sched, r->threads = a->threads;
    if (setup_runtime(o, a->cm, a->sched, why, len) != 0)
        return -1;
    int n = a->threads;
    struct inv_ctx *c = &g_inv;
    memset(c, 0, sizeof *c);
    c->o = o;
    c->nthreads = n;
    c->slots = calloc((size_t)o->slots, sizeof *c->slots);
    c->thr = aligned_alloc(BENCH_CACHELINE, sizeof *c->thr * (size_t)n);
    struct bench_thread *th = aligned_alloc(BENCH_CACHELINE, sizeof *th * (size_t)n);
    if (!c->slots || !c->thr || !th)
        bench_die("out of memory");
    for (int s = 0; s < o->slots; s++)
        c->slots[s] = 1000;
    /* Priority levels: thread i at level i % L, level L-1 the highest;
     * nice 0, 5, 10, 15 from the top, so conflict priority 20, 15, 10, 5. */
    int L = n < INV_LEVELS ? n : INV_LEVELS;
    r->levels = L;
    /* Room for 4 M commits and 1 M aborts per second in every thread (one
     * thread may do most of the work), reserved but touched only as used;
     * the oracle stops judging where a log ran out, and says so. */
    size_t ccap = (size_t)(o->b.seconds * 8e6) + 1024, acap = (size_t)(o->b.seconds * 1e6) + 1024;
    memset(c->thr, 0, sizeof *c->thr * (size_t)n);
    for (int i = 0; i < n; i++) {
        struct inv_thr *me = &c->thr[i];
        me->level = i % L;
        me->nice = 5 * (L - 1 - me->level);
        me->prio = 20 - me->nice;
        me->clog = log_map(ccap * sizeof *me->clog);
        me->alog = log_map(acap * sizeof *me->alog);
        if (!me->clog || !me->alog)
            bench_die("out of memory (oracle logs)");
        me->ccap = ccap, me->acap = acap;
        th[i].ctx = c;
        r->prio_by_level[me->level] = me->prio;
    }
    tx_stats_t b, e;
    stats_now(&b);
    c->t0 = now_ns();
    double secs = bench_run_threads(th, n, inv_worker, o->b.seconds, o->b.seed);
    stats_now(&e);
    txd_fill(&r->d, &b, &e);
    r->secs = secs;
    int64_t sum = 0;
    for (int s = 0; s < o->slots; s++)
        sum += c->slots[s];
    r->sum_ok = sum == 1000LL * o->slots;
    for (int i = 0; i < n; i++) {
        r->commits += c->thr[i].commits;
        r->commits_by_level[c->thr[i].level] += c->thr[i].commits;
        r->aborts_logged += c->thr[i].alen;
        r->seen_by_level[c->thr[i].level] = c->thr[i].seen_prio;
    }
    inv_judge(c, r, secs);
    for (int i = 0; i < n; i++) {
        munmap(c->thr[i].clog, c->thr[i].ccap * sizeof *c->thr[i].clog);
        munmap(c->thr[i].alog, c->thr[i].acap * sizeof *c->thr[i].alog);
    }
    if (!r->sum_ok) {
        snprintf(why, len, "the array's sum is %" PRId64 ", not %d", sum, 1000 * o->slots);
        return 1;
    }
    return 0;
}

static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0.0; }

static int cmd_inversion(const struct opts *o) {
    char what[256];
    snprintf(what, sizeof what,
             "inversion: %d slots, %d touched per tx (2 written), work %d; priorities from %s "
             "(thread i at level i%%4: nice 0/5/10/15 -> prio 20/15/10/5), %.2f s, %d run(s)",
             o->slots, o->touch, o->work,
             o->api_prio ? "tx_set_priority (emulated)" : "per-thread nice (setpriority)",
             o->b.seconds, o->b.runs);
    print_header(o, what);
    printf(
        "columns   decided/inverted/inv%%: the runtime's cm_decided / cm_inversions (for backoff\n"
        "          its estimate: validation failures against the last writer's priority);\n"
        "          o.cross/o.inv/o.inv%%: the benchmark's own oracle (see cm_bench.c): aborted\n"
        "          attempts whose first stale-making commit came from another priority, and of\n"
        "          those, from a lower one; top%%: commits by the highest-priority threads\n");
    FILE *csv = open_csv(
        o, "bench,cm,sched,threads,prio_source,method,secs,commits,mtx_per_s,"
           "vs_backoff,aborts,to_serial,cm_decided,cm_inversions,cm_inv_pct,"
           "oracle_aborts,oracle_cross,oracle_inv,oracle_inv_pct,oracle_ties,"
           "oracle_unexplained,oracle_covered,top_level_share,sum_ok,oracle_inv_ambiguous");
    int failed = 0;
    printf("\n%-9s %-5s %3s %8s %7s %9s %8s %9s %7s | %8s %8s %7s %6s\n", "cm", "sched", "thr",
           "Mtx/s", "vs_bo", "aborts", "decided", "inverted", "inv%", "o.cross", "o.inv", "o.inv%",
           "top%");
    for (int ti = 0; ti < o->b.nthreads; ti++) {
        for (int si = 0; si < o->nscheds; si++) {
            double base = 0;
            struct inv_result res[MAX_CMS];
            int ok[MAX_CMS];
            for (int ci = 0; ci < o->ncms; ci++) {
                struct inv_arg a = {o, o->cms[ci], o->scheds[si], o->b.threads[ti]};
                struct inv_result runs[99];
                int med = measure_runs(inv_measure, &a, runs, sizeof runs[0], o->b.runs,
                                       30 + 10 * o->b.seconds, inv_key, a.cm, a.sched, a.threads,
                                       &failed);
                ok[ci] = med >= 0;
                if (!ok[ci])
                    continue;
                res[ci] = runs[med];
                struct inv_result *r = &res[ci];
                double mtx = (double)r->commits / r->secs / 1e6;
                if (strcmp(a.cm, "backoff") == 0)
                    base = mtx;
                uint64_t cross = r->o_inv + r->o_respected;
                char dec[24], inv[24], invp[24], vs[16];
                snprintf(dec, sizeof dec, "%" PRIu64, r->d.cm_decided);
                snprintf(inv, sizeof inv, "%" PRIu64, r->d.cm_inversions);
                snprintf(invp, sizeof invp, "%.2f", pct(r->d.cm_inversions, r->d.cm_decided));
                snprintf(vs, sizeof vs, base > 0 ? "%.3f" : "n/a", base > 0 ? mtx / base : 0);
                double top = pct(r->commits_by_level[r->levels - 1], r->commits);
                printf("%-9s %-5s %3d %8.3f %7s %9" PRIu64 " %8s %9s %7s | %8" PRIu64 " %8" PRIu64
                       " %7.2f %5.1f%s\n",
                       a.cm, a.sched ? "on" : "off", a.threads, mtx, vs, r->d.aborts, dec, inv,
                       r->d.cm_decided ? invp : "n/a", cross, r->o_inv, pct(r->o_inv, cross), top,
                       r->sum_ok ? "" : "  SUM WRONG");
                printf("  ran: inversion cm=%s sched=%s threads=%d method=%s duration=%.3fs "
                       "prio by level(low..high)=",
                       a.cm, a.sched ? "on" : "off", a.threads, g_method_name, r->secs);
                for (int l = 0; l < r->levels; l++)
                    printf("%s%d(seen %d)", l ? "," : "", r->prio_by_level[l], r->seen_by_level[l]);
                printf(" oracle: %" PRIu64 " aborts judged, %" PRIu64 " ties, %" PRIu64
                       " unexplained, %" PRIu64 " of the inversions ambiguous, covered %.0f%%, "
                       "to_serial %" PRIu64 "\n",
                       r->aborts_judged, r->o_tie, r->o_none, r->o_inv_amb, 100 * r->covered,
                       r->d.to_serial);
                for (int l = 0; l < r->levels; l++)
                    if (r->seen_by_level[l] != r->prio_by_level[l])
                        printf("  WARNING: tx_get_priority() said %d for a thread meant to be %d\n",
                               r->seen_by_level[l], r->prio_by_level[l]);
                if (csv)
                    fprintf(csv,
                            "inversion,%s,%s,%d,%s,%s,%.4f,%" PRIu64 ",%.4f,%s,%" PRIu64 ",%" PRIu64
                            ",%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64
                            ",%" PRIu64 ",%.3f,%.2f,%d,%" PRIu64 "\n",
                            a.cm, a.sched ? "on" : "off", a.threads, o->api_prio ? "api" : "nice",
                            g_method_name, r->secs, r->commits, mtx, base > 0 ? vs : "",
                            r->d.aborts, r->d.to_serial, dec, inv, r->d.cm_decided ? invp : "",
                            r->aborts_judged, cross, r->o_inv, pct(r->o_inv, cross), r->o_tie,
                            r->o_none, r->covered, top, r->sum_ok, r->o_inv_amb);
                if (!r->sum_ok)
                    failed = 1;
            }
            /* targets: prio never inverts, and costs at most 5% against backoff */
            for (int ci = 0; ci < o->ncms; ci++) {
                if (!ok[ci] || strcmp(o->cms[ci], "prio") != 0)
                    continue;
                struct inv_result *r = &res[ci];
                double mtx = (double)r->commits / r->secs / 1e6;
                uint64_t cross = r->o_inv + r->o_respected;
                printf("TARGET inversion t=%d sched=%s prio runtime inversions == 0 (of %" PRIu64
                       " decided): %s (%" PRIu64 ")\n",
                       r->threads, r->sched ? "on" : "off", r->d.cm_decided,
                       r->d.cm_inversions == 0 && r->d.cm_decided > 0 ? "PASS" : "MISS",
                       r->d.cm_inversions);
                printf("TARGET inversion t=%d sched=%s prio oracle: no unambiguous inversion: %s "
                       "(%" PRIu64 " inversions of %" PRIu64
                       " cross-priority conflicts, %.2f%%; %" PRIu64
                       " of them ambiguous: a higher priority also committed over the loser)\n",
                       r->threads, r->sched ? "on" : "off",
                       r->o_inv == r->o_inv_amb ? "PASS" : "MISS", r->o_inv, cross,
                       pct(r->o_inv, cross), r->o_inv_amb);
                if (base > 0)
                    printf("TARGET inversion t=%d sched=%s prio throughput >= 0.95 x backoff: %s "
                           "(%.3f vs %.3f Mtx/s, ratio %.3f)\n",
                           r->threads, r->sched ? "on" : "off",
                           mtx >= 0.95 * base ? "PASS" : "MISS", mtx, base, mtx / base);
            }
        }
    }
    if (csv)
        fclose(csv);
    return failed;
}

/* =========================================================== pipeline */

struct pipe_ctx {
    const struct opts *o;
    int64_t *words; /* phases x words, each phase on its own lines */
    int64_t shared_word __attribute__((aligned(BENCH_CACHELINE)));
    int stride; /* int64_t per phase */
    pthread_barrier_t start;
    uint64_t seed;
};

struct pipe_thr {
    pthread_t h;
    struct pipe_ctx *c;
    int id;
    uint64_t rng, shared_incs;
} __attribute__((aligned(BENCH_CACHELINE)));

static void *pipe_worker(void *arg) {
    struct pipe_thr *me = arg;
    struct pipe_ctx *c = me->c;
    const int W = c->o->words, work = c->o->work;
    pthread_barrier_wait(&c->start);
    for (int p = 0; p < c->o->phases; p++) {
        int64_t *ph = c->words + (size_t)p * (size_t)c->stride;
        for (int k = 0; k < c->o->ops; k++) {
            int w = (int)rng_below(&me->rng, (uint64_t)W);
            /* 1 in 64 also touches the word all phases share: mostly disjoint */
            int shared = rng_below(&me->rng, 64) == 0;
            TX_ATOMIC {
                int64_t sum = 0;
                for (int j = 0; j < W; j++)
                    sum += TX_LOAD(&ph[j]);
                spin(work + (int)(sum & 1));
                TX_STORE(&ph[w], TX_LOAD(&ph[w]) + 1);
                if (shared)
                    TX_STORE(&c->shared_word, TX_LOAD(&c->shared_word) + 1);
            }
            me->shared_incs += (uint64_t)shared;
        }
    }
    return NULL;
}

struct pipe_result {
    double secs;
    struct txd d;
    int ok;
};

static double pipe_key(const void *r) { return ((const struct pipe_result *)r)->secs; }

struct pipe_arg {
    const struct opts *o;
    const char *cm;
    int sched, threads;
};

static int pipe_measure(void *argp, void *outp, char *why, size_t len) {
    struct pipe_arg *a = argp;
    struct pipe_result *r = outp;
    const struct opts *o = a->o;
    memset(r, 0, sizeof *r);
    if (setup_runtime(o, a->cm, a->sched, why, len) != 0)
        return -1;
    struct pipe_ctx *c = aligned_alloc(BENCH_CACHELINE, sizeof *c);
    struct pipe_thr *th = aligned_alloc(BENCH_CACHELINE, sizeof *th * (size_t)a->threads);
    if (!c || !th)
        bench_die("out of memory");
    memset(c, 0, sizeof *c);
    c->o = o;
    c->stride = (o->words + 7) / 8 * 8;
    c->words =
        aligned_alloc(BENCH_CACHELINE, sizeof(int64_t) * (size_t)c->stride * (size_t)o->phases);
    if (!c->words)
        bench_die("out of memory");
    memset(c->words, 0, sizeof(int64_t) * (size_t)c->stride * (size_t)o->phases);
    pthread_barrier_init(&c->start, NULL, (unsigned)a->threads + 1);
    for (int i = 0; i < a->threads; i++) {
        memset(&th[i], 0, sizeof th[i]);
        th[i].c = c;
        th[i].id = i;
        th[i].rng = rng_seed(o->b.seed, (uint64_t)i);
        int rc = pthread_create(&th[i].h, NULL, pipe_worker, &th[i]);
        if (rc != 0)
            bench_die("pthread_create: %s", strerror(rc));
    }
    tx_stats_t b, e;
    stats_now(&b);
    pthread_barrier_wait(&c->start);
    double t0 = bench_now();
    for (int i = 0; i < a->threads; i++)
        pthread_join(th[i].h, NULL);
    r->secs = bench_now() - t0;
    stats_now(&e);
    txd_fill(&r->d, &b, &e);
    r->ok = 1;
    uint64_t incs = 0;
    for (int i = 0; i < a->threads; i++)
        incs += th[i].shared_incs;
    for (int p = 0; p < o->phases; p++) {
        int64_t sum = 0;
        for (int j = 0; j < o->words; j++)
            sum += c->words[(size_t)p * (size_t)c->stride + (size_t)j];
        if (sum != (int64_t)a->threads * o->ops) {
            snprintf(why, len, "phase %d: words add up to %" PRId64 ", not %d", p, sum,
                     a->threads * o->ops);
            r->ok = 0;
        }
    }
    if ((uint64_t)c->shared_word != incs) {
        snprintf(why, len, "shared word %" PRId64 ", not %" PRIu64, c->shared_word, incs);
        r->ok = 0;
    }
    return r->ok ? 0 : 1;
}

static int cmd_pipeline(const struct opts *o) {
    char what[256];
    snprintf(what, sizeof what,
             "pipeline: %d phases x %d words, %d tx per thread and phase (read all words, spin %d, "
             "increment one; 1 in 64 also a word shared by all phases), %d run(s), median time",
             o->phases, o->words, o->ops, o->work, o->b.runs);
    print_header(o, what);
    FILE *csv =
        open_csv(o, "bench,cm,sched,threads,method,runs,secs,restarts,ms_aborted,"
                    "sched_waits,sched_queued,to_serial,cm_decided,time_vs_off,restarts_vs_off,ok");
    int failed = 0;
    printf("\n%-9s %-5s %3s %8s %10s %10s %9s %9s %8s %8s\n", "cm", "sched", "thr", "secs",
           "restarts", "ms_aborted", "waits", "queued", "t_vs_off", "r_vs_off");
    for (int ti = 0; ti < o->b.nthreads; ti++) {
        for (int ci = 0; ci < o->ncms; ci++) {
            struct pipe_result off = {0}, on = {0};
            int have_off = 0, have_on = 0;
            for (int si = 0; si < o->nscheds; si++) {
                struct pipe_arg a = {o, o->cms[ci], o->scheds[si], o->b.threads[ti]};
                struct pipe_result runs[99];
                int med = measure_runs(pipe_measure, &a, runs, sizeof runs[0], o->b.runs, 120,
                                       pipe_key, a.cm, a.sched, a.threads, &failed);
                if (med < 0)
                    continue;
                struct pipe_result *r = &runs[med];
                char tv[16] = "", rv[16] = "";
                if (a.sched) {
                    on = *r, have_on = 1;
                    if (have_off) {
                        snprintf(tv, sizeof tv, "%.3f", r->secs / off.secs);
                        snprintf(rv, sizeof rv, "%.3f",
                                 off.d.aborts ? (double)r->d.aborts / (double)off.d.aborts : 0.0);
                    }
                } else {
                    off = *r, have_off = 1;
                }
                printf("%-9s %-5s %3d %8.3f %10" PRIu64 " %10.1f %9" PRIu64 " %9" PRIu64
                       " %8s %8s%s\n",
                       a.cm, a.sched ? "on" : "off", a.threads, r->secs, r->d.aborts,
                       (double)r->d.ns_aborted / 1e6, r->d.sched_waits, r->d.sched_queued, tv, rv,
                       r->ok ? "" : "  CHECK FAILED");
                printf(
                    "  ran: pipeline cm=%s sched=%s threads=%d method=%s duration=%.3fs (median of "
                    "%d; all:",
                    a.cm, a.sched ? "on" : "off", a.threads, g_method_name, r->secs, o->b.runs);
                for (int x = 0; x < o->b.runs; x++)
                    printf(" %.3f", runs[x].secs);
                printf(") to_serial %" PRIu64 " cm_decided %" PRIu64 "\n", r->d.to_serial,
                       r->d.cm_decided);
                if (csv)
                    fprintf(csv,
                            "pipeline,%s,%s,%d,%s,%d,%.4f,%" PRIu64 ",%.2f,%" PRIu64 ",%" PRIu64
                            ",%" PRIu64 ",%" PRIu64 ",%s,%s,%d\n",
                            a.cm, a.sched ? "on" : "off", a.threads, g_method_name, o->b.runs,
                            r->secs, r->d.aborts, (double)r->d.ns_aborted / 1e6, r->d.sched_waits,
                            r->d.sched_queued, r->d.to_serial, r->d.cm_decided, tv, rv, r->ok);
                if (!r->ok)
                    failed = 1;
            }
            if (have_on && have_off) {
                printf("TARGET pipeline cm=%s t=%d sched on: fewer restarts: %s (%" PRIu64
                       " vs %" PRIu64 "), less time: %s (%.3f vs %.3f s, ratio %.3f)\n",
                       o->cms[ci], o->b.threads[ti], on.d.aborts < off.d.aborts ? "PASS" : "MISS",
                       on.d.aborts, off.d.aborts, on.secs < off.secs ? "PASS" : "MISS", on.secs,
                       off.secs, on.secs / off.secs);
            }
        }
    }
    if (csv)
        fclose(csv);
    return failed;
}

/* ========================================================= hot counter */

/* Latency histogram, log-linear: exact below 64 ns, then 32 buckets per
 * power of two (about 3% resolution). */
#define H_SUB 32
#define H_BUCKETS (64 + 40 * H_SUB)

static int h_index(uint64_t v) {
    if (v < 64)
        return (int)v;
    int e = 63 - __builtin_clzll(v); /* >= 6 */
    if (e > 45)
        return H_BUCKETS - 1;
    return 64 + (e - 6) * H_SUB + (int)((v >> (e - 5)) & (H_SUB - 1));
}

static uint64_t h_value(int i) /* the upper end of bucket i */
{
    if (i < 64)
        return (uint64_t)i;
    int e = (i - 64) / H_SUB + 6, sub = (i - 64) % H_SUB;
    return ((uint64_t)(H_SUB + sub + 1) << (e - 5)) - 1;
}

struct hot_thr {
    uint64_t commits, max;
    uint32_t hist[H_BUCKETS];
} __attribute__((aligned(BENCH_CACHELINE)));

struct hot_ctx {
    int64_t counter __attribute__((aligned(BENCH_CACHELINE)));
    struct hot_thr *thr;
};

static void hot_worker(struct bench_thread *t) {
    struct hot_ctx *c = t->ctx;
    struct hot_thr *me = &c->thr[t->id];
    while (!bench_stopped()) {
        uint64_t t0 = now_ns();
        TX_ATOMIC {
            TX_STORE(&c->counter, TX_LOAD(&c->counter) + 1);
        }
        uint64_t dt = now_ns() - t0;
        me->hist[h_index(dt)]++;
        if (dt > me->max)
            me->max = dt;
        me->commits++;
    }
    t->ops = me->commits;
}

struct hot_result {
    double secs;
    struct txd d;
    uint64_t commits, cmin, cmax, p50, p99, p999, max;
    uint64_t over32; /* transactions that committed after more than 32 retries */
    int ok;
};

static double hot_key(const void *r) {
    const struct hot_result *x = r;
    return (double)x->commits / x->secs; /* throughput */
}

struct hot_arg {
    const struct opts *o;
    const char *cm;
    int sched, threads;
};

static int hot_measure(void *argp, void *outp, char *why, size_t len) {
    struct hot_arg *a = argp;
    struct hot_result *r = outp;
    memset(r, 0, sizeof *r);
    if (setup_runtime(a->o, a->cm, a->sched, why, len) != 0)
        return -1;
    int n = a->threads;
    struct hot_ctx *c = aligned_alloc(BENCH_CACHELINE, sizeof *c);
    struct bench_thread *th = aligned_alloc(BENCH_CACHELINE, sizeof *th * (size_t)n);
    if (!c || !th)
        bench_die("out of memory");
    memset(c, 0, sizeof *c);
    c->thr = aligned_alloc(BENCH_CACHELINE, sizeof *c->thr * (size_t)n);
    if (!c->thr)
        bench_die("out of memory");
    memset(c->thr, 0, sizeof *c->thr * (size_t)n);
    for (int i = 0; i < n; i++)
        th[i].ctx = c;
    tx_stats_t b, e;
    stats_now(&b);
    r->secs = bench_run_threads(th, n, hot_worker, a->o->b.seconds, a->o->b.seed);
    stats_now(&e);
    txd_fill(&r->d, &b, &e);
    r->over32 = e.retries_hist[TXKIT_RETRY_BUCKETS - 1] - b.retries_hist[TXKIT_RETRY_BUCKETS - 1];
    static uint64_t hist[H_BUCKETS];
    memset(hist, 0, sizeof hist);
    r->cmin = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        struct hot_thr *me = &c->thr[i];
        r->commits += me->commits;
        if (me->commits < r->cmin)
            r->cmin = me->commits;
        if (me->commits > r->cmax)
            r->cmax = me->commits;
        if (me->max > r->max)
            r->max = me->max;
        for (int k = 0; k < H_BUCKETS; k++)
            hist[k] += me->hist[k];
    }
    uint64_t seen = 0;
    for (int k = 0; k < H_BUCKETS; k++) {
        uint64_t before = seen;
        seen += hist[k];
        if (before < (r->commits + 1) / 2 && seen >= (r->commits + 1) / 2)
            r->p50 = h_value(k);
        if (before < r->commits - r->commits / 100 && seen >= r->commits - r->commits / 100)
            r->p99 = h_value(k);
        if (before < r->commits - r->commits / 1000 && seen >= r->commits - r->commits / 1000)
            r->p999 = h_value(k);
    }
    if (r->p999 > r->max)
        r->p999 = r->max;
    if (r->p99 > r->max)
        r->p99 = r->max;
    if (r->p50 > r->max)
        r->p50 = r->max;
    r->ok = (uint64_t)c->counter == r->commits;
    if (!r->ok) {
        snprintf(why, len, "counter %" PRId64 " != %" PRIu64 " commits", c->counter, r->commits);
        return 1;
    }
    return 0;
}

/* Thresholds of the hot counter's targets (ours: the issue names none).
 * The maximum wall latency is printed but not judged: with more threads than
 * CPUs it is a few time slices of preemption, whatever the manager does. */
#define HOT_MIN_FAIRNESS 0.25
#define HOT_MAX_P999_US 100.0

static int cmd_hotcounter(const struct opts *o) {
    char what[256];
    snprintf(what, sizeof what,
             "hotcounter: one word incremented by every thread, %.2f s, %d run(s); latency = "
             "the whole TX_ATOMIC incl. retries (and preemption)",
             o->b.seconds, o->b.runs);
    print_header(o, what);
    FILE *csv = open_csv(o, "bench,cm,sched,threads,method,secs,commits,mtx_per_s,vs_backoff_off,"
                            "min_commits,max_commits,min_max_ratio,p50_ns,p99_ns,p999_ns,max_ns,"
                            "aborts,sched_waits,sched_queued,cm_decided,over32_retries,ok");
    int failed = 0;
    printf("\n%-9s %-5s %3s %8s %7s %9s %9s %6s %8s %8s %9s %10s %9s\n", "cm", "sched", "thr",
           "Mtx/s", "vs_bo", "min", "max", "min/max", "p50ns", "p99ns", "p999ns", "max_ns",
           "aborts");
    for (int ti = 0; ti < o->b.nthreads; ti++) {
        double base = 0;
        for (int ci = 0; ci < o->ncms; ci++) {
            for (int si = 0; si < o->nscheds; si++) {
                struct hot_arg a = {o, o->cms[ci], o->scheds[si], o->b.threads[ti]};
                struct hot_result runs[99];
                int med = measure_runs(hot_measure, &a, runs, sizeof runs[0], o->b.runs,
                                       30 + 10 * o->b.seconds, hot_key, a.cm, a.sched, a.threads,
                                       &failed);
                if (med < 0)
                    continue;
                struct hot_result *r = &runs[med];
                double mtx = (double)r->commits / r->secs / 1e6;
                if (strcmp(a.cm, "backoff") == 0 && !a.sched)
                    base = mtx;
                double fair = r->cmax ? (double)r->cmin / (double)r->cmax : 0;
                char vs[16];
                snprintf(vs, sizeof vs, base > 0 ? "%.3f" : "n/a", base > 0 ? mtx / base : 0);
                printf("%-9s %-5s %3d %8.3f %7s %9" PRIu64 " %9" PRIu64 " %6.3f %8" PRIu64
                       " %8" PRIu64 " %9" PRIu64 " %10" PRIu64 " %9" PRIu64 "%s\n",
                       a.cm, a.sched ? "on" : "off", a.threads, mtx, vs, r->cmin, r->cmax, fair,
                       r->p50, r->p99, r->p999, r->max, r->d.aborts,
                       r->ok ? "" : "  COUNTER WRONG");
                printf("  ran: hotcounter cm=%s sched=%s threads=%d method=%s duration=%.3fs "
                       "sched_waits %" PRIu64 " sched_queued %" PRIu64 " to_serial %" PRIu64 "\n",
                       a.cm, a.sched ? "on" : "off", a.threads, g_method_name, r->secs,
                       r->d.sched_waits, r->d.sched_queued, r->d.to_serial);
                int pass = fair >= HOT_MIN_FAIRNESS && (double)r->p999 / 1e3 <= HOT_MAX_P999_US &&
                           r->over32 == 0;
                printf("TARGET hotcounter cm=%s sched=%s t=%d no starvation (min/max >= %.2f), "
                       "bounded "
                       "latency (p99.9 <= %.0f us, no tx over 32 retries): %s (min/max %.3f, p99.9 "
                       "%.1f us, %" PRIu64 " over 32 retries; max %.2f ms incl. preemption)\n",
                       a.cm, a.sched ? "on" : "off", a.threads, HOT_MIN_FAIRNESS, HOT_MAX_P999_US,
                       pass ? "PASS" : "MISS", fair, (double)r->p999 / 1e3, r->over32,
                       (double)r->max / 1e6);
                if (csv)
                    fprintf(csv,
                            "hotcounter,%s,%s,%d,%s,%.4f,%" PRIu64 ",%.4f,%s,%" PRIu64 ",%" PRIu64
                            ",%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                            ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%d\n",
                            a.cm, a.sched ? "on" : "off", a.threads, g_method_name, r->secs,
                            r->commits, mtx, base > 0 ? vs : "", r->cmin, r->cmax, fair, r->p50,
                            r->p99, r->p999, r->max, r->d.aborts, r->d.sched_waits,
                            r->d.sched_queued, r->d.cm_decided, r->over32, r->ok);
                if (!r->ok)
                    failed = 1;
            }
        }
    }
    if (csv)
        fclose(csv);
    return failed;
}

/* ================================================================ main */

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    g_sub = argv[1];
    if (strcmp(g_sub, "inversion") != 0 && strcmp(g_sub, "pipeline") != 0 &&
        strcmp(g_sub, "hotcounter") != 0) {
        usage(stderr);
        bench_die("unknown subcommand '%s' (inversion, pipeline, hotcounter)", g_sub);
    }
    struct opts o;
    parse_opts(&o, g_sub, argc, argv);
    if (o.method)
        g_method_name = o.method;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(g_sub, "inversion") == 0)
        return cmd_inversion(&o);
    if (strcmp(g_sub, "pipeline") == 0)
        return cmd_pipeline(&o);
    return cmd_hotcounter(&o);
}
