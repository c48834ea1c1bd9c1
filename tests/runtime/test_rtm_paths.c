/* SPDX-License-Identifier: MIT */
/* test_rtm_paths.c - the hardware paths' control flow (issue 12), on any CPU.
 *
 * usage: test_rtm_paths CASE
 *   layout          (every build) a cx lock's word has a cache line of its own:
 *                   the adaptive counters, written at every section end, must
 *                   not abort the optimistic holders that read the word
 * The others need a -DTXKIT_SIM_RTM=ON build (else exit 77); each scripts the
 * XBEGIN outcomes itself (src/arch/x86_64/rtm.h) and runs single-threaded:
 *   cx_explicit     an explicit-abort status (lock busy, code 0xe1 in bits
 *                   31:24) must not be taken for "started": the section goes
 *                   on in hardware only after a real start, and nothing runs
 *                   XEND or XABORT outside a transaction
 *   cx_need_excl    a started optimistic section that needs the lock (I/O)
 *                   comes back to its XBEGIN with the right status and runs
 *                   again exclusive
 *   cx_tx_irr       (auto) a transaction whose hardware attempt entered a cx
 *                   lock and called cx_need_exclusive() runs again serially,
 *                   not irrevocable from its start (which waited for the lock
 *                   holding the token its holder needed: a deadlock)
 *   cx_busy         every XBEGIN finds the lock held (explicit 0xe1): the
 *                   entry gives up after a bounded number of tries and takes
 *                   the lock, instead of spinning forever
 *   cx_alone        the optimistic and shared sections of the only thread that
 *                   entered a lock take it without XBEGIN (other threads
 *                   running or not); once another thread entered it, they
 *                   try hardware again, until the lock's one user reclaims
 *                   it (within 1024 of its entries)
 *   mutex_explicit  the same as cx_explicit for an elided mutex
 *   htm_restart     TXKIT_METHOD=htm: tx_restart() in a started hardware
 *                   attempt comes back to XBEGIN; the next attempt commits
 *   status_zero     one abort with status 0 (an interrupt, a page fault) must
 *                   not send the site to software for the next transactions
 *   hw_express      (auto) the hardware express begin does what the general
 *                   path does: its aborts go on as there (a conflict retries
 *                   in hardware, an overflow in software and skips), every
 *                   transaction counted once, method changes honoured
 *   irr_reader      (auto) while another thread is irrevocable and waits for
 *                   us, a hardware attempt that sees it goes on in software
 *                   (readers do not wait for an irrevocable transaction)
 *                   instead of waiting for it: no deadlock
 *   cx_clock        an optimistic cx section does not run in hardware while a
 *                   serial transaction holds the clock (it would see and
 *                   make writes the software side cannot order)
 *   cx_irr          nor while another transaction is irrevocable (its reads
 *                   must stay valid: it cannot abort)
 *   cx_publish      a software transaction subscribed to a cx lock sees the
 *                   commit of an optimistic section that wrote what it read:
 *                   it never returns two different values of one location
 *   hw_readonly     a hardware commit that wrote nothing does not make the
 *                   running software transactions revalidate (it does not
 *                   move hw_commits); one that wrote does. The reader's first
 *                   read is changed by a plain store meanwhile, so a
 *                   revalidation shows as a restart
 *   hw_privatize    privatization safety after a hardware commit: a thread
 *                   that unlinks a block in a hardware transaction and frees
 *                   it with plain free() after the commit must not get past
 *                   its commit while a software attempt that read the pointer
 *                   before it still runs (hardware commits do not move the
 *                   clock the software wait compares); the reader watches
 *                   for 1 s from inside its attempt, then loads through the
 *                   pointer (a block freed early is unmapped: SIGSEGV)
 *   cx_privatize    the same with the unlink in an optimistic cx section
 *   long_reader     (auto) while a long software reader that hardware commits
 *                   made walk its read log runs, other transactions run in
 *                   software (their commits then say what they wrote)
 *   long_reader_huge  the same with a read log beyond the ring's range: the
 *                   ring would not answer for it, the writer stays in hardware
 *   long_hw_skip    (auto) a long site (1024 words read or more in software)
 *                   whose software runs take 20 us or more: when hardware
 *                   fails one of its transactions (a conflict, the retry
 *                   budget of 1 spent: TXKIT_HTM_RETRIES=1), its next ones
 *                   skip hardware as after a capacity abort (1, then 2, ...)
 *   hw_nolog        (TXKIT_STM_NOLOG=on) hybrid software attempts read
 *                   unlogged too (TXKIT_ACC_NOLOG_HW: the inline read also
 *                   checks hw_commits): hw_readonly's reads then abort at a
 *                   hardware commit that wrote, and an attempt that read x
 *                   before a hardware commit of x and w and then only stores
 *                   w = x aborts at its commit, never storing the old x
 *   hw_free         a block freed by a hardware commit waits for the software
 *                   reader that read the pointer to it before that commit
 *                   (hardware commits do not move the clock the limbo tags
 *                   blocks with); the block is large, so an early free()
 *                   unmaps it and the reader's next load faults
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <txkit.h>
#include <unistd.h>
#include <txkit/cx.h>
#include <txkit/stats.h>

#include "test_util.h"

/* In libtxkit, for the tests of a simulated build (rtm_sim.c). */
extern int txkit_sim_rtm_script(const char *script);
extern unsigned long txkit_sim_rtm_violations(void);
/* The entry point the preload library forwards pthread_mutex_lock to (elide.c). */
extern int _txkit_mutex_lock(pthread_mutex_t *m, int (*real)(pthread_mutex_t *), void *caller);
extern int _txkit_mutex_unlock(pthread_mutex_t *m, int (*real)(pthread_mutex_t *), void *caller);

static void need_sim(const char *script) {
    if (!tk_rtm_simulated()) {
        printf("SKIP: needs a -DTXKIT_SIM_RTM=ON build\n");
        exit(TK_SKIP_CODE);
    }
    CHECK_EQ(txkit_sim_rtm_script(script), 0);
}

/* The handshakes between a case's threads (one case a process): each side
 * says which phase it reached and waits for the one it needs. */
static atomic_int phase;

/* Waits until the phase is v. Any thread. */
static void await_phase(int v) {
    while (atomic_load(&phase) != v)
        usleep(1000);
}

/* Says the caller reached phase `reached`, then waits for phase `next`. Any thread. */
static void handshake(int reached, int next) {
    atomic_store(&phase, reached);
    await_phase(next);
}

/* A software attempt's handshake with a hardware writer (phase 1 reached,
 * go on at 2): a writer whose commit moved the hardware-commit counter waits
 * before it returns for every software attempt that read before it
 * (privatization safety), so the attempt goes on once the counter moved,
 * without waiting for phase 2. Inside the attempt. */
static void handshake_hw(int next) {
    uint64_t h0 = *_txkit_tls.hw;
    atomic_store(&phase, 1);
    while (atomic_load(&phase) != next && *_txkit_tls.hw == h0)
        ;
}

/* Starts fn on a thread of its own and waits until it reached phase 1. Main thread. */
static pthread_t start_partner(void *(*fn)(void *)) {
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, fn, NULL), 0);
    await_phase(1);
    return th;
}

/* Another thread enters l once and exits: the caller is not l's only user
 * any more, so its sections try hardware first (the only user's take the
 * lock: cx_alone). The other thread's section, the lock's first, takes it:
 * no XBEGIN. Main thread, before the case's partners start. */
static void *enter_once(void *l) {
    cx_optimistic(l);
    cx_unlock(l);
    return NULL;
}
static void not_only_user(cx_lock_t *l) {
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, enter_once, l), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
}

/* Ran one transaction, stays alive until phase 2 (below). */
static void *one_transaction(void *arg);

/* Lets the partner th go on (phase `next`) and joins it. Main thread. */
static void release_partner(pthread_t th, int next) {
    atomic_store(&phase, next);
    CHECK_EQ(pthread_join(th, NULL), 0);
}

static void layout(void) {
    size_t word = offsetof(cx_lock_t, state);
    CHECK_EQ(_Alignof(cx_lock_t), 64);
    CHECK(offsetof(cx_lock_t, win_entries) / 64 != word / 64);
    CHECK(offsetof(cx_lock_t, win_exclusive) / 64 != word / 64);
    CHECK(offsetof(cx_lock_t, skip) / 64 != word / 64);
    CHECK(offsetof(cx_lock_t, owner) / 64 != word / 64); /* written at claims */
    static cx_lock_t locks[2] = {CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER};
    CHECK_EQ((uintptr_t)&locks[1] % 64, 0);
}

static int body_runs;

static void cx_explicit(void) {
    need_sim("explicit:0xe1,explicit:0xe1,start");
    static cx_lock_t l = CX_LOCK_INITIALIZER;
    not_only_user(&l);
    cx_optimistic(&l);
    body_runs++;
    int mode = cx_mode();
    cx_unlock(&l);
    CHECK_EQ(body_runs, 1);
    CHECK_EQ(mode, 1); /* optimistic, after the real start */
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

static void cx_need_excl(void) {
    need_sim("start");
    static cx_lock_t l = CX_LOCK_INITIALIZER;
    not_only_user(&l);
    static int modes[4];
    body_runs = 0;
    cx_optimistic(&l);
    modes[body_runs++ & 3] = cx_mode();
    cx_need_exclusive(); /* aborts the hardware section: back in cx_optimistic */
    cx_unlock(&l);
    CHECK_EQ(body_runs, 2);
    CHECK_EQ(modes[0], 1);
    CHECK_EQ(modes[1], 2);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

static void cx_busy(void) {
    need_sim("explicit:0xe1");
    alarm(10); /* an endless retry loop: killed, a failure */
    static cx_lock_t l = CX_LOCK_INITIALIZER;
    not_only_user(&l);
    cx_optimistic(&l);
    int mode = cx_mode();
    cx_unlock(&l);
    CHECK_EQ(mode, 2); /* exclusive */
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

/* The only thread that has entered a lock takes it from the start (nobody
 * contends, and two atomic operations cost less than XBEGIN and XEND: the
 * cache at 1 thread ran at 0.70x its legacy lock in hardware), whatever
 * other threads run; once another thread has entered it, sections try
 * hardware again. */
static void cx_alone(void) {
    /* an XBEGIN would find the lock busy once, then start: hardware */
    need_sim("explicit:0xe1,start");
    static cx_lock_t l = CX_LOCK_INITIALIZER;
    /* another thread runs (it ran its transaction alone: no XBEGIN) */
    pthread_t th = start_partner(one_transaction);
    cx_optimistic(&l);
    int alone = cx_mode();
    cx_unlock(&l);
    cx_shared(&l);
    int alone_shared = cx_mode();
    cx_unlock(&l);
    release_partner(th, 2);
    CHECK_EQ(txkit_sim_rtm_script("start"), 0);
    not_only_user(&l);
    cx_optimistic(&l);
    int two = cx_mode();
    cx_unlock(&l);
    /* The other user gone: within 1024 entries (cx.c, CX_RECLAIM_EVERY) the
     * lock is this thread's alone again. */
    int hw = 0, later = 0;
    for (int i = 0; i < 1100; i++) {
        cx_optimistic(&l);
        later = cx_mode();
        hw += later == 1;
        cx_unlock(&l);
    }
    CHECK_EQ(alone, 2);        /* exclusive: the lock held */
    CHECK_EQ(alone_shared, 2); /* (a shared one too) */
    CHECK_EQ(two, 1);          /* optimistic: in (simulated) hardware */
    CHECK(hw >= 1 && hw <= 1024);
    CHECK_EQ(later, 2);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

static void mutex_explicit(void) {
    need_sim("explicit:0xe1,start");
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    CHECK_EQ(_txkit_mutex_lock(&m, pthread_mutex_lock, (void *)mutex_explicit), 0);
    body_runs++;
    CHECK_EQ(_txkit_mutex_unlock(&m, pthread_mutex_unlock, (void *)mutex_explicit), 0);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    CHECK_EQ(pthread_mutex_trylock(&m), 0); /* not left locked */
    pthread_mutex_unlock(&m);
}

static long g_value;

static void htm_restart(void) {
    need_sim("start");
    CHECK_EQ(txkit_set_method(TXKIT_HTM), 0);
    static int runs;
    TX_ATOMIC {
        if (runs++ == 0)
            tx_restart(); /* before any write: the simulator can come back */
        TX_STORE(&g_value, TX_LOAD(&g_value) + 1);
    }
    CHECK_EQ(runs, 2);
    CHECK_EQ(g_value, 1);
    tx_stats_t s = tk_stats();
    CHECK_EQ(s.commits[TXKIT_HTM], 1);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

/* Auto runs a lone thread serially: another thread, alive until the end,
 * ran a transaction first, so that this one shares (no solo mode). */
/* phase 1: the other ran its transaction, 2: it may exit */

static void *one_transaction(void *arg) {
    (void)arg;
    TX_ATOMIC {
        TX_STORE(&g_value, TX_LOAD(&g_value) + 1);
    }
    handshake(1, 2);
    return NULL;
}

/* One transaction of one site, adding 1 to g_value (a function of its own:
 * a loop counter live across its begin would trip -Wclobbered). */
static __attribute__((noinline)) void increment(void) {
    TX_ATOMIC {
        TX_STORE(&g_value, TX_LOAD(&g_value) + 1);
    }
}

static void increments(int n) {
    for (int i = 0; i < n; i++)
        increment();
}

/* A transaction whose hardware attempt entered a cx lock and then asked for
 * it exclusively (I/O): the next attempt runs serially, which takes the lock
 * or starts again. Before, it ran irrevocable from its start holding the
 * token and waited for the lock there, while the lock's holder, committing a
 * transaction inside its section, waited for the token (cx.needexcl.auto
 * hung on every run on an RTM machine). */
static cx_lock_t txirr_lock = CX_LOCK_INITIALIZER;
static long g_txirr;

static __attribute__((noinline)) void txirr_once(void) {
    TX_ATOMIC {
        body_runs++;
        cx_optimistic(&txirr_lock);
        cx_need_exclusive(); /* in hardware: tx_irrevocable aborts the attempt */
        TX_STORE(&g_txirr, TX_LOAD(&g_txirr) + 1);
        cx_unlock(&txirr_lock);
    }
}

static void cx_tx_irr(void) {
    need_sim("start");
    pthread_t th = start_partner(one_transaction); /* not alone: no solo mode */
    body_runs = 0;
    tx_stats_t s0 = tk_stats();
    txirr_once();
    tx_stats_t s1 = tk_stats();
    printf("    attempts %d; fell back to serial %llu, to software %llu\n", body_runs,
           (unsigned long long)(s1.to_serial - s0.to_serial),
           (unsigned long long)(s1.htm_to_stm - s0.htm_to_stm));
    CHECK_EQ(body_runs, 2);
    CHECK_EQ(g_txirr, 1);
    CHECK_EQ(s1.aborts_by_cause[TXKIT_CAUSE_IRREVOCABLE] -
                 s0.aborts_by_cause[TXKIT_CAUSE_IRREVOCABLE],
             1);
    /* serial (whose tx_irrevocable then goes on in software under the token:
     * serial.c), not straight to software irrevocable from the start */
    CHECK_EQ(s1.to_serial - s0.to_serial, 1);
    CHECK_EQ(s1.htm_to_stm, s0.htm_to_stm);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    release_partner(th, 2);
}

static void status_zero(void) {
    need_sim("start");
    pthread_t th = start_partner(one_transaction);
    CHECK_EQ(txkit_sim_rtm_script("zero,start"), 0);
    tx_stats_t s0 = tk_stats();
    increments(8);
    tx_stats_t s1 = tk_stats();
    printf("    hardware commits %llu of 8, software %llu, serial %llu\n",
           (unsigned long long)(s1.commits[TXKIT_HTM] - s0.commits[TXKIT_HTM]),
           (unsigned long long)(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM]),
           (unsigned long long)(s1.commits[TXKIT_SERIAL] - s0.commits[TXKIT_SERIAL]));
    CHECK(s1.commits[TXKIT_HTM] - s0.commits[TXKIT_HTM] >= 7);
    CHECK_EQ(g_value, 9);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    release_partner(th, 2);
}

/* Which method committed the one transaction between statistics s0 and s1:
 * H hardware, S software, L serial, X none. */
static char committed_by(const tx_stats_t *s0, const tx_stats_t *s1) {
    return s1->commits[TXKIT_HTM] != s0->commits[TXKIT_HTM]         ? 'H'
           : s1->commits[TXKIT_STM] != s0->commits[TXKIT_STM]       ? 'S'
           : s1->commits[TXKIT_SERIAL] != s0->commits[TXKIT_SERIAL] ? 'L'
                                                                    : 'X';
}

/* One transaction of one site; which method committed it (the statistics). */
static __attribute__((noinline)) char one_site_tx(void) {
    tx_stats_t s0 = tk_stats();
    increment();
    tx_stats_t s1 = tk_stats();
    return committed_by(&s0, &s1);
}

/* long_hw_skip: one site that reads LH_WORDS words and takes LH_SPIN_S. */
#define LH_WORDS 2048
#define LH_SPIN_S 60e-6
static long g_lh_words[LH_WORDS];

static __attribute__((noinline)) char long_site_tx(void) {
    tx_stats_t s0 = tk_stats();
    TX_ATOMIC {
        long sum = 0;
        for (int i = 0; i < LH_WORDS; i++)
            sum += TX_LOAD(&g_lh_words[i]);
        double end = tk_now() + LH_SPIN_S;
        while (tk_now() < end)
            ;
        TX_STORE(&g_value, TX_LOAD(&g_value) + 1 + sum);
    }
    tx_stats_t s1 = tk_stats();
    return committed_by(&s0, &s1);
}

static void long_hw_skip(void) {
    need_sim("start");
    pthread_t th = start_partner(one_transaction);
    char got[16] = {0};
    /* 1: capacity, software (marks the site long); 2: skips hardware (the
     * capacity skip); 3: a conflict ends hardware (1 retry), software or
     * serial, and the site skips hardware twice (the skip doubled); 6:
     * hardware. Before: the 4th ran in hardware. */
    CHECK_EQ(txkit_sim_rtm_script("capacity,conflict,start"), 0);
    for (int i = 0; i < 7; i++)
        got[i] = long_site_tx();
    printf("    methods: %s (H hardware, S software, L serial)\n", got);
    for (int i = 0; i < 7; i++)
        CHECK_MSG((got[i] == 'H') == (i >= 5), "methods %s: hardware at the 6th and 7th only", got);
    CHECK_EQ(g_value, 8); /* the partner's and these */
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    release_partner(th, 2);
}

/* A capacity abort makes its site skip hardware for its next transaction;
 * each further one before a hardware commit of the site doubles that; a
 * hardware commit starts over (policy.c: site_skip_htm). Before, one capacity
 * abort made the next 64 skip, so a site that overflows now and then (a maze
 * router's larger routes) ran mostly in software. */
static void capacity_skip(void) {
    need_sim("start");
    pthread_t th = start_partner(one_transaction);
    char got[16] = {0};
    int n = 0;
    CHECK_EQ(txkit_sim_rtm_script("capacity,start"), 0);
    for (int i = 0; i < 4; i++)
        got[n++] = one_site_tx();
    CHECK_EQ(txkit_sim_rtm_script("capacity,capacity,start"), 0);
    for (int i = 0; i < 6; i++)
        got[n++] = one_site_tx();
    printf("    methods: %s (H hardware, S software)\n", got);
    /* capacity, skipped, hardware x2; capacity, skipped, capacity, skipped x2, hardware */
    CHECK_MSG(strcmp(got, "SSHHSSSSSH") == 0, "methods %s, expected SSHHSSSSSH", got);
    CHECK_EQ(g_value, 11);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    release_partner(th, 2);
}

/* The hardware express begin (runtime/express.h): once a transaction of the
 * thread committed at its first hardware attempt, the next begins in hardware
 * without the general path. It must do what the general path does: an
 * express attempt that conflicts retries in hardware; one that overflows
 * goes on in software and its site skips hardware once; every transaction is
 * counted once, with its commit and its retries, the sampled ones (1 in 64,
 * which take the general path) too; a change of the thread's or the
 * process's method takes effect at the next transaction. */
static void hw_express(void) {
    need_sim("start");
    pthread_t th = start_partner(one_transaction);
    char got[16] = {0};
    int n = 0;
    tx_stats_t s0 = tk_stats();
    /* general H (arms the express), express H, express conflict then H, H,
     * express capacity then S, skipped S, H, H */
    CHECK_EQ(txkit_sim_rtm_script("start,start,conflict,start,start,capacity,start"), 0);
    for (int i = 0; i < 8; i++)
        got[n++] = one_site_tx();
    tx_stats_t s1 = tk_stats();
    printf("    methods: %s (H hardware, S software)\n", got);
    CHECK_MSG(strcmp(got, "HHHHSSHH") == 0, "methods %s, expected HHHHSSHH", got);
    CHECK_EQ(s1.transactions - s0.transactions, 8);
    CHECK_EQ(s1.commits[TXKIT_HTM] - s0.commits[TXKIT_HTM], 6);
    CHECK_EQ(s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM], 2);
    CHECK_EQ(s1.aborts[TXKIT_HTM] - s0.aborts[TXKIT_HTM], 2);
    CHECK_EQ(s1.aborts_by_cause[TXKIT_CAUSE_CONFLICT] - s0.aborts_by_cause[TXKIT_CAUSE_CONFLICT],
             1);
    CHECK_EQ(s1.aborts_by_cause[TXKIT_CAUSE_CAPACITY] - s0.aborts_by_cause[TXKIT_CAUSE_CAPACITY],
             1);
    CHECK_EQ(s1.retries_hist[0] - s0.retries_hist[0], 6);
    CHECK_EQ(s1.retries_hist[1] - s0.retries_hist[1], 2);
    /* many in a row: each counted once (a sampled one every 64) */
    increments(300);
    tx_stats_t s2 = tk_stats();
    CHECK_EQ(s2.transactions - s1.transactions, 300);
    CHECK_EQ(s2.commits[TXKIT_HTM] - s1.commits[TXKIT_HTM], 300);
    CHECK_EQ(s2.retries_hist[0] - s1.retries_hist[0], 300);
    CHECK_EQ(s2.aborts[TXKIT_HTM] - s1.aborts[TXKIT_HTM], 0);
    /* a method change leaves the express at the next transaction */
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    got[0] = one_site_tx();
    CHECK_EQ(txkit_set_thread_method(-1), 0);
    got[1] = one_site_tx();
    got[2] = one_site_tx();
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    got[3] = one_site_tx();
    CHECK_EQ(txkit_set_method(TXKIT_AUTO), 0);
    got[4] = one_site_tx();
    got[5] = 0;
    printf("    after method changes: %s\n", got);
    CHECK_MSG(strcmp(got, "SHHSH") == 0, "methods %s, expected SHHSH", got);
    CHECK_EQ(g_value, 1 + 8 + 300 + 5);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    release_partner(th, 2);
}

/* TXKIT_HTM_RETRY_US=0 (CMake sets it for this case): a transaction stops
 * retrying hardware after the first timed attempt that conflicted, whatever
 * TXKIT_HTM_RETRIES allows (8); retries are timed, a first attempt only when
 * sampled, so at most 2 hardware attempts each (policy.c: htm_budget_spent).
 * Without the time budget: 8 each. */
static void retry_budget(void) {
    need_sim("start");
    pthread_t th = start_partner(one_transaction);
    CHECK_EQ(txkit_sim_rtm_script("conflict"), 0);
    tx_stats_t s0 = tk_stats();
    increments(4);
    tx_stats_t s1 = tk_stats();
    unsigned long long hw = s1.aborts[TXKIT_HTM] - s0.aborts[TXKIT_HTM];
    unsigned long long sw = s1.commits[TXKIT_STM] - s0.commits[TXKIT_STM];
    printf("    hardware aborts %llu for 4 transactions, software commits %llu\n", hw, sw);
    CHECK_MSG(hw >= 4 && hw <= 8, "%llu hardware attempts for 4 transactions, expected 4 to 8", hw);
    CHECK_EQ(sw, 4ull);
    CHECK_EQ(g_value, 5);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    release_partner(th, 2);
}

static long g_irr_seen, g_read;

static void *irrevocable_waiter(void *arg) {
    (void)arg;
    TX_ATOMIC {
        tx_irrevocable();
        TX_STORE(&g_irr_seen, 1);
        handshake(1, 2); /* irrevocable now, until the reader is done */
    }
    return NULL;
}

static void irr_reader(void) {
    need_sim("start");
    alarm(20); /* a deadlock: killed, a failure */
    g_value = 41;
    pthread_t th = start_partner(irrevocable_waiter);
    TX_ATOMIC {
        g_read = TX_LOAD(&g_value);
    }
    CHECK_EQ(g_read, 41);
    release_partner(th, 2);
    CHECK_EQ(g_irr_seen, 1);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

/* A serial transaction on another thread, holding the clock until told. */
/* phase 1: serial and holding the clock, 2: may end */
static long g_ser;

static void *serial_holder(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_SERIAL), 0);
    TX_ATOMIC {
        TX_STORE(&g_ser, TX_LOAD(&g_ser) + 1);
        handshake(1, 2);
    }
    return NULL;
}

/* The mode (cx_mode()) one optimistic section of a fresh lock runs in
 * while partner, started first, holds what it holds (until phase 2). */
static int cx_mode_beside(void *(*partner)(void *)) {
    need_sim("start");
    alarm(20);
    pthread_t th = start_partner(partner);
    static cx_lock_t l = CX_LOCK_INITIALIZER;
    cx_optimistic(&l);
    int mode = cx_mode();
    cx_unlock(&l);
    release_partner(th, 2);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
    return mode;
}

static void cx_clock(void) {
    CHECK(cx_mode_beside(serial_holder) != 1); /* not a hardware section under an odd clock */
    CHECK_EQ(g_ser, 1);
}

/* While another transaction is irrevocable (holding the token, in
 * software), an optimistic section must not commit writes in hardware: the
 * irrevocable one cannot abort when they invalidate what it read. */
static void cx_irr(void) {
    CHECK(cx_mode_beside(irrevocable_waiter) != 1);
    CHECK_EQ(g_irr_seen, 1);
}

static cx_lock_t pub_lock = CX_LOCK_INITIALIZER;
static long g_x = 1;
/* phase 1: the reader read x once, 2: the section committed */
static long g_first, g_second, g_pub_attempts;

static void *pub_reader(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    TX_ATOMIC {
        g_pub_attempts++;
        cx_optimistic(&pub_lock); /* subscribes the transaction */
        g_first = TX_LOAD(&g_x);
        if (atomic_load(&phase) == 0)
            handshake_hw(2);
        g_second = TX_LOAD(&g_x);
        cx_unlock(&pub_lock);
    }
    return NULL;
}

static void cx_publish(void) {
    need_sim("start");
    alarm(20);
    not_only_user(&pub_lock);
    pthread_t th = start_partner(pub_reader);
    cx_optimistic(&pub_lock); /* a simulated hardware section */
    int mode = cx_mode();
    g_x = 2;
    cx_unlock(&pub_lock);
    release_partner(th, 2);
    CHECK_EQ(mode, 1);
    CHECK_EQ(g_first, g_second); /* one snapshot: 2 and 2, after a restart */
    CHECK_EQ(g_second, 2);
    CHECK(g_pub_attempts >= 2);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

static long g_ro_y = 7, g_ro_z = 1;
/* phase 1: the reader read z, 2: the hardware transaction committed */
static long g_ro_attempts;
static unsigned g_ro_access; /* the reader's first attempt's access bits */

/* A thread's first transaction, which is timed (statistics) and so logs its
 * reads: the next ones may read unlogged. */
static void warm_up(void) {
    TX_ATOMIC {
        (void)TX_LOAD(&g_ro_y);
    }
}

static void *ro_reader(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    warm_up();
    TX_ATOMIC {
        if (g_ro_attempts++ == 0)
            g_ro_access = _txkit_tls.access;
        (void)TX_LOAD(&g_ro_z);
        if (atomic_load(&phase) == 0)
            handshake_hw(2);
        (void)TX_LOAD(&g_ro_y);
    }
    return NULL;
}

/* The reader's attempts while this thread commits one hardware transaction
 * that reads y and, if `write`, stores it back unchanged. */
static long hw_beside_reader(int write) {
    g_ro_attempts = 0;
    atomic_store(&phase, 0);
    pthread_t th = start_partner(ro_reader);
    g_ro_z++; /* not transactional: only a revalidation notices it */
    uint64_t hw0 = tk_stats().commits[TXKIT_HTM];
    TX_ATOMIC {
        long v = TX_LOAD(&g_ro_y);
        if (write)
            TX_STORE(&g_ro_y, v);
    }
    CHECK_EQ(tk_stats().commits[TXKIT_HTM], hw0 + 1); /* it ran in (simulated) hardware */
    release_partner(th, 2);
    return g_ro_attempts;
}

static void hw_readonly(void) {
    need_sim("start");
    alarm(20);
    CHECK_EQ(txkit_set_method(TXKIT_HTM), 0);
    CHECK_EQ(hw_beside_reader(0), 1); /* read-only: no revalidation, no restart */
    CHECK_EQ(hw_beside_reader(1), 2); /* wrote: revalidation finds z changed */
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

static long g_nl_x, g_nl_w;
static long g_nl_attempts;

/* Reads x unlogged, lets a hardware transaction commit x = w = 1, then only
 * stores w = what it read: its commit alone can see the hardware commit. */
static void *nl_reader(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    warm_up();
    TX_ATOMIC {
        if (g_nl_attempts++ == 0)
            CHECK(_txkit_tls.access & TXKIT_ACC_NOLOG_HW);
        long a = TX_LOAD(&g_nl_x);
        if (atomic_load(&phase) == 0)
            handshake_hw(2);
        TX_STORE(&g_nl_w, a);
    }
    return NULL;
}

static void hw_nolog(void) {
    need_sim("start");
    alarm(20);
    CHECK_EQ(txkit_set_method(TXKIT_HTM), 0);
    /* the reads: hw_readonly's, unlogged (TXKIT_STM_NOLOG=on): a read-only
     * hardware commit leaves the attempt alone, one that wrote aborts it (an
     * unlogged attempt cannot revalidate) */
    CHECK_EQ(hw_beside_reader(0), 1);
    CHECK(g_ro_access & TXKIT_ACC_NOLOG_HW);
    CHECK(!(g_ro_access & (TXKIT_ACC_NOLOG | TXKIT_ACC_FASTREAD | TXKIT_ACC_FASTREAD_HW)));
    CHECK_EQ(hw_beside_reader(1), 2);
    CHECK(g_ro_access & TXKIT_ACC_NOLOG_HW);
    /* the commit: the reader must not store the x it read before the
     * hardware commit (w would end 0); it runs again and stores 1 */
    atomic_store(&phase, 0);
    pthread_t th = start_partner(nl_reader);
    uint64_t hw0 = tk_stats().commits[TXKIT_HTM];
    TX_ATOMIC {
        TX_STORE(&g_nl_x, 1L);
        TX_STORE(&g_nl_w, 1L);
    }
    CHECK_EQ(tk_stats().commits[TXKIT_HTM], hw0 + 1);
    release_partner(th, 2);
    CHECK_EQ(g_nl_w, 1);
    CHECK_EQ(g_nl_attempts, 2);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

struct big {
    long val;
    char pad[1 << 20]; /* above malloc's mmap threshold: free() unmaps it */
};
static struct big *g_head;
/* phase 1: the reader holds the pointer, 2: freed, 3: read on */
static long g_reader_val;

static void *hw_reader(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    TX_ATOMIC {
        struct big *p = TX_LOAD(&g_head);
        if (p && atomic_load(&phase) == 0)
            handshake(1, 3);
        g_reader_val = p ? TX_LOAD(&p->val) : -1;
    }
    return NULL;
}

static void *hw_freer(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_HTM), 0);
    TX_ATOMIC {
        struct big *p = TX_LOAD(&g_head);
        TX_STORE(&g_head, (struct big *)NULL);
        tx_free(p);
    }
    atomic_store(&phase, 2);
    return NULL; /* thread exit: its limbo is reclaimed, waiting for readers */
}

static void hw_free(void) {
    need_sim("start");
    alarm(30);
    g_head = malloc(sizeof *g_head);
    CHECK(g_head != NULL);
    g_head->val = 7;
    pthread_t r = start_partner(hw_reader), f;
    CHECK_EQ(pthread_create(&f, NULL, hw_freer, NULL), 0);
    /* A freer whose exit frees the block at once is gone in a moment; one
     * that waits for the reader is still there after a second. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    int joined = pthread_timedjoin_np(f, NULL, &until) == 0;
    release_partner(r, 3); /* the reader loads through its pointer now */
    if (!joined)
        CHECK_EQ(pthread_join(f, NULL), 0);
    CHECK_EQ(g_reader_val, -1); /* it saw the unlink, at its revalidation */
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

static struct big *g_priv;
static atomic_int g_unlinked; /* the unlinker's commit returned */
static int g_priv_seen = -1;  /* whether the reader's first attempt saw it return */
static long g_priv_val;
static struct big *g_taken;

static void *priv_reader(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    volatile int tries = 0;
    TX_ATOMIC {
        struct big *p = TX_LOAD(&g_priv);
        if (++tries == 1) {
            atomic_store(&phase, 1); /* the unlinker goes */
            double end = tk_now() + 1.0;
            while (!atomic_load(&g_unlinked) && tk_now() < end)
                ;
            g_priv_seen = atomic_load(&g_unlinked);
        }
        g_priv_val = p ? TX_LOAD(&p->val) : -1;
    }
    return NULL;
}

static void privatize(int cx) {
    static cx_lock_t lk = CX_LOCK_INITIALIZER;
    need_sim("start");
    alarm(30);
    g_priv = malloc(sizeof *g_priv);
    CHECK(g_priv != NULL);
    g_priv->val = 7;
    CHECK_EQ(txkit_set_thread_method(TXKIT_HTM), 0);
    uint64_t hw0 = tk_stats().commits[TXKIT_HTM];
    if (cx)
        not_only_user(&lk); /* so that the section runs in (simulated) hardware */
    pthread_t r = start_partner(priv_reader);
    struct big *p = NULL;
    if (cx) {
        cx_optimistic(&lk);
        p = g_priv;
        g_priv = NULL;
        cx_unlock(&lk);
    } else {
        TX_ATOMIC {
            struct big *q = TX_LOAD(&g_priv);
            TX_STORE(&g_priv, (struct big *)NULL);
            g_taken = q; /* the same value at every attempt */
        }
        p = g_taken;
        CHECK_EQ(tk_stats().commits[TXKIT_HTM], hw0 + 1); /* it ran in (simulated) hardware */
    }
    atomic_store(&g_unlinked, 1);
    free(p); /* plain code: the block is private now */
    CHECK_EQ(pthread_join(r, NULL), 0);
    CHECK_EQ(g_priv_seen, 0);
    CHECK_EQ(g_priv_val, -1); /* it saw the unlink, at its revalidation */
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

static void hw_privatize(void) { privatize(0); }
static void cx_privatize(void) { privatize(1); }

/* A long software reader that hardware commits made walk its read log by
 * value (the commit ring speaks only for software commits): while it runs,
 * auto runs other transactions in software, whose commits the ring then
 * covers (bayes at 2 threads with RTM lost 2x to its own software path). */
/* phase 1: the reader read its cells, 3: it walked; it ends once a writer's
 * transaction ran (g_lr_in: that writer's commit, in software, waits for
 * older readers) */
#define LR_CELLS 2048
/* a log longer than the ring's index takes (stm_norec.c: RSET_MAX entries):
 * it walks whatever commits, so the writers stay in hardware */
#define LR_CELLS_HUGE ((1 << 20) + 64)
static long g_lr_cells[LR_CELLS_HUGE + 1];
static long g_lr_sum = -1, g_lr_x;
static atomic_int g_lr_in;
static int g_lr_n; /* the reader's cells: LR_CELLS or LR_CELLS_HUGE */

static void *long_reader(void *arg) {
    (void)arg;
    CHECK_EQ(txkit_set_thread_method(TXKIT_STM), 0);
    volatile int tries = 0;
    TX_ATOMIC {
        long sum = 0;
        for (int i = 0; i < g_lr_n; i++)
            sum += TX_LOAD(&g_lr_cells[i]);
        if (++tries == 1)
            handshake_hw(2);                 /* the writer commits in hardware */
        sum += TX_LOAD(&g_lr_cells[g_lr_n]); /* moves the snapshot: a walk */
        if (tries == 1) {
            atomic_store(&phase, 3);
            double end = tk_now() + 5.0;
            while (!atomic_load(&g_lr_in) && tk_now() < end)
                usleep(1000);
        }
        g_lr_sum = sum;
    }
    return NULL;
}

static __attribute__((noinline)) void lr_write(int say) {
    TX_ATOMIC {
        TX_STORE(&g_lr_x, TX_LOAD(&g_lr_x) + 1);
        if (say)
            atomic_store(&g_lr_in, 1);
    }
}

/* huge: the reader's log is beyond the ring's range; the writer that runs
 * while it waits then stays in hardware. */
static void long_reader_case(int huge) {
    need_sim("start");
    alarm(30);
    g_lr_n = huge ? LR_CELLS_HUGE : LR_CELLS;
    for (int i = 0; i <= g_lr_n; i++)
        g_lr_cells[i] = 1;
    /* auto shares (no solo mode): another thread ran alone first */
    release_partner(start_partner(one_transaction), 2);
    lr_write(0);
    atomic_store(&phase, 0);
    CHECK_EQ(txkit_set_thread_method(TXKIT_HTM), 0);
    pthread_t r = start_partner(long_reader);
    tx_stats_t s0 = tk_stats();
    lr_write(0); /* in (simulated) hardware, under the reader's snapshot */
    tx_stats_t s1 = tk_stats();
    CHECK_EQ(s1.commits[TXKIT_HTM] - s0.commits[TXKIT_HTM], 1);
    await_phase(3);
    CHECK_EQ(txkit_set_thread_method(TXKIT_AUTO), 0);
    lr_write(1); /* auto, while the long reader runs: software */
    tx_stats_t s2 = tk_stats();
    printf("    while the long reader ran: hardware %llu, software %llu, serial %llu\n",
           (unsigned long long)(s2.commits[TXKIT_HTM] - s1.commits[TXKIT_HTM]),
           (unsigned long long)(s2.commits[TXKIT_STM] - s1.commits[TXKIT_STM]),
           (unsigned long long)(s2.commits[TXKIT_SERIAL] - s1.commits[TXKIT_SERIAL]));
    /* this one's and the reader's, which ended before this one's commit
     * returned (software); or (huge) this one in hardware, and the reader's,
     * which it ended, maybe after this count */
    if (!huge) {
        CHECK_EQ(s2.commits[TXKIT_HTM] - s1.commits[TXKIT_HTM], 0);
        CHECK_EQ(s2.commits[TXKIT_STM] - s1.commits[TXKIT_STM], 2);
    } else {
        CHECK_EQ(s2.commits[TXKIT_HTM] - s1.commits[TXKIT_HTM], 1);
    }
    CHECK_EQ(pthread_join(r, NULL), 0);
    CHECK_EQ(g_lr_sum, g_lr_n + 1);
    CHECK_EQ(g_lr_x, 3);
    CHECK_EQ(txkit_sim_rtm_violations(), 0);
}

static void long_reader_sw(void) { long_reader_case(0); }
static void long_reader_huge(void) { long_reader_case(1); }

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {{"layout", layout},
                 {"cx_explicit", cx_explicit},
                 {"cx_need_excl", cx_need_excl},
                 {"long_reader", long_reader_sw},
                 {"long_reader_huge", long_reader_huge},
                 {"cx_tx_irr", cx_tx_irr},
                 {"cx_busy", cx_busy},
                 {"cx_alone", cx_alone},
                 {"mutex_explicit", mutex_explicit},
                 {"htm_restart", htm_restart},
                 {"status_zero", status_zero},
                 {"capacity_skip", capacity_skip},
                 {"long_hw_skip", long_hw_skip},
                 {"hw_express", hw_express},
                 {"retry_budget", retry_budget},
                 {"irr_reader", irr_reader},
                 {"cx_clock", cx_clock},
                 {"cx_irr", cx_irr},
                 {"cx_publish", cx_publish},
                 {"hw_readonly", hw_readonly},
                 {"hw_nolog", hw_nolog},
                 {"hw_free", hw_free},
                 {"hw_privatize", hw_privatize},
                 {"cx_privatize", cx_privatize}};
    if (argc != 2) {
        fprintf(stderr, "usage: test_rtm_paths CASE\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(argv[1], cases[i].name)) {
            cases[i].fn();
            printf("ok: %s\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "test_rtm_paths: unknown case %s\n", argv[1]);
    return 2;
}
