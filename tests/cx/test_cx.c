/* SPDX-License-Identifier: MIT */
/* test_cx.c - cooperative transactional locks: mutual exclusion under mixed
 * holders, with an oracle.
 *
 *   test_cx torture THREADS IO_PCT SECONDS
 *       Threads update two counters under one cx lock with non-atomic
 *       read-modify-write sequences that break without exclusion (a, then
 *       b = a's old value + 1, checked inside every section). Entries mix
 *       cx_optimistic, cx_exclusive, cx_trylock and TX_ATOMIC blocks that
 *       subscribe with cx_optimistic; IO_PCT% of the sections do I/O after
 *       cx_need_exclusive(). At the end a == b == the number of sections.
 *   test_cx nested SECONDS     two locks, sections nested both ways (A then B
 *       inside, B alone), invariants per lock.
 *   test_cx starvation         an exclusive waiter gets the lock within a
 *       bound while three threads flood it with optimistic entries.
 *   test_cx api                init/destroy/trylock/mode, errors.
 *   test_cx release            a lock a transaction entered stays its own
 *       until the attempt commits or has rolled back, not until cx_unlock():
 *       another thread tries the lock after the section ended but before
 *       the transaction ends (restarted, irrevocable, irrevocable after the
 *       section), deterministically; and sections that reenter one lock or
 *       use many locks in one transaction.
 *   test_cx shared THREADS TX SECONDS  cx_shared readers check a pair that
 *       exclusive, optimistic and trylock writers (TX 1: and subscribing
 *       transactions) update; nested shared sections, a second lock inside.
 *   test_cx shared-fork        fork while another thread holds a lock shared.
 *   test_cx shared-subscribe   a transaction subscribes to a lock another
 *       thread holds shared (without RTM): the reader's view stays whole.
 *   test_cx shared-commit      the holder of a shared section commits a
 *       transaction while an older one subscribes to the lock: both finish.
 *   test_cx needexcl SECONDS   transactions inside exclusive sections of a
 *       lock against transactions that enter it and call
 *       cx_need_exclusive(): both go on (they used to stop each other).
 *   test_cx irrwindow SECONDS  a transaction that read under a lock becomes
 *       irrevocable while another thread enters the lock exclusively: its
 *       earlier reads must hold (no TK_ASSERT, no torn pair, no lost update).
 * TXKIT_STRESS_SECONDS (tests/runtime/stress_env.h) replaces the SECONDS of
 * torture and nested; torture's choices come from a printed seed
 * (TXKIT_STRESS_SEED replays it).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <txkit.h>
#include <unistd.h>

#include "../runtime/test_util.h"

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* ------------------------------------------------------------ torture */

static cx_lock_t lk = CX_LOCK_INITIALIZER;
static volatile long ca, cb; /* under lk: ca == cb between sections */
static int io_pct;
static atomic_int stop;
static atomic_long sections, io_done, bad;
static int devnull = -1;

static void body_plain(unsigned *seed) {
    long x = ca;
    if (cb != x)
        atomic_fetch_add(&bad, 1);
    if ((int)(rnd(seed) % 100) < io_pct) {
        cx_need_exclusive();
        CHECK(cx_mode() == 2);
        CHECK(write(devnull, "x", 1) == 1); /* I/O: needs the lock for real */
        atomic_fetch_add(&io_done, 1);
    }
    ca = x + 1;
    for (volatile int k = 0; k < 20; k++) /* widen the window */
        ;
    cb = x + 1;
}

static void one_transaction(void) {
    TX_ATOMIC {
        cx_optimistic(&lk);
        long x = TX_LOAD(&ca), y = TX_LOAD(&cb);
        if (x != y)
            atomic_fetch_add(&bad, 1); /* opacity: never seen, even in a doomed attempt */
        TX_STORE(&ca, x + 1);
        TX_STORE(&cb, x + 1);
        cx_unlock(&lk);
    }
}

static uint64_t torture_seed; /* tk_stress_seed() */

/* Run fn on nthreads threads (argument 1..nthreads) for seconds, then set
 * stop and join them. */
static void run_threads(int nthreads, void *(*fn)(void *), double seconds) {
    pthread_t th[64];
    CHECK(nthreads > 0 && nthreads <= 64);
    for (int i = 0; i < nthreads; i++)
        CHECK(pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)(i + 1)) == 0);
    double end = tk_now() + seconds;
    while (tk_now() < end)
        usleep(10000);
    atomic_store(&stop, 1);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
}

static void *torture_thread(void *arg) {
    unsigned seed = (unsigned)(torture_seed + (uintptr_t)arg * 7919u);
    long n = 0;
    while (!atomic_load(&stop)) {
        unsigned kind = rnd(&seed) % 8;
        if (kind == 0) {
            one_transaction();
        } else if (kind == 1) {
            cx_exclusive(&lk);
            CHECK(cx_mode() == 2);
            body_plain(&seed);
            cx_unlock(&lk);
        } else if (kind == 2) {
            if (cx_trylock(&lk) != 0)
                continue;
            body_plain(&seed);
            cx_unlock(&lk);
        } else {
            cx_optimistic(&lk);
            CHECK(cx_mode() == 1 || cx_mode() == 2);
            body_plain(&seed);
            cx_unlock(&lk);
        }
        CHECK(cx_mode() == 0);
        n++;
    }
    atomic_fetch_add(&sections, n);
    return NULL;
}

static int torture(int nthreads, int pct, double seconds) {
    io_pct = pct;
    devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    CHECK(devnull >= 0);
    run_threads(nthreads, torture_thread, seconds);
    printf("torture: %d threads, %d%% I/O: %ld sections, %ld with I/O, a=%ld b=%ld, %ld "
           "inconsistent\n",
           nthreads, pct, (long)sections, (long)io_done, ca, cb, (long)bad);
    CHECK_EQ(bad, 0);
    CHECK_EQ(ca, cb);
    CHECK_EQ(ca, sections);
    if (pct == 100)
        CHECK(io_done > 0);
    CHECK_EQ(cx_destroy(&lk), 0);
    return 0;
}

/* ------------------------------------------------------------ nested */

static cx_lock_t la = CX_LOCK_INITIALIZER, lb = CX_LOCK_INITIALIZER;
static volatile long a1, a2, b1, b2;

static void *nested_thread(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    while (!atomic_load(&stop)) {
        if (rnd(&seed) & 1) {
            cx_optimistic(&la);
            long x = a1;
            a1 = x + 1;
            cx_optimistic(&lb); /* nested: flattens into the outer section */
            long y = b1;
            b1 = y + 1;
            b2 = y + 1;
            cx_unlock(&lb);
            a2 = x + 1;
            cx_unlock(&la);
        } else {
            cx_exclusive(&lb);
            long y = b1;
            if (b2 != y)
                atomic_fetch_add(&bad, 1);
            b1 = y + 1;
            b2 = y + 1;
            cx_unlock(&lb);
        }
        if (a1 != a2 && cx_mode() == 0) {
            /* a1/a2 may be read outside only under la */
        }
    }
    return NULL;
}

static int nested(double seconds) {
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&th[i], NULL, nested_thread, (void *)(uintptr_t)(i + 5)) == 0);
    for (double end = tk_now() + seconds; tk_now() < end;) /* also past useconds_t's 71 minutes */
        usleep(10000);
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    printf("nested: a=%ld/%ld b=%ld/%ld, %ld inconsistent\n", a1, a2, b1, b2, (long)bad);
    CHECK_EQ(bad, 0);
    CHECK_EQ(a1, a2);
    CHECK_EQ(b1, b2);
    CHECK(b1 >= a1);
    return 0;
}

/* --------------------------------------------------------- starvation */

static cx_lock_t ls = CX_LOCK_INITIALIZER;
static atomic_long flood_entries;

static void *flood_thread(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        cx_optimistic(&ls);
        for (volatile int k = 0; k < 50; k++)
            ;
        cx_unlock(&ls);
        atomic_fetch_add(&flood_entries, 1);
    }
    return NULL;
}

static int starvation(void) {
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&th[i], NULL, flood_thread, NULL) == 0);
    usleep(50000);
    double worst = 0;
    for (int i = 0; i < 200; i++) {
        double t0 = tk_now();
        cx_exclusive(&ls);
        double dt = tk_now() - t0;
        cx_unlock(&ls);
        if (dt > worst)
            worst = dt;
        usleep(200);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    printf("starvation: 200 exclusive entries under %ld optimistic ones, worst wait %.3f ms\n",
           (long)flood_entries, worst * 1e3);
    CHECK(flood_entries > 0);
    /* Starved, the waiter would wait as long as the flood lasts: for ever
     * (the flood stops only after this loop). 2 s leaves room for a waiter
     * descheduled on 2 cores with ctest -j and other load (0.5 s failed there). */
    CHECK_MSG(worst < 2.0, "an exclusive waiter waited %.3f s", worst);
    return 0;
}

/* ------------------------------------------------------------ release */

static cx_lock_t lr = CX_LOCK_INITIALIZER;
static volatile long rx;      /* under lr */
static atomic_int phase;      /* 1: the section ended, 2: the other thread tried */
static atomic_int other_got;  /* the other thread entered lr meanwhile */
static atomic_long other_saw; /* ... and read rx = this */
static atomic_int irr_runs;   /* code after tx_irrevocable() ran this often */
static int scenario;

enum { REL_RESTART, REL_IRREVOCABLE, REL_IRR_AFTER, REL_IN_EXCL };
static cx_lock_t lo = CX_LOCK_INITIALIZER; /* REL_IN_EXCL: held around the transaction */

static void wait_phase(int want) {
    for (long spins = 0; atomic_load(&phase) < want; spins++)
        if (spins > 1000)
            sched_yield();
}

/* The transaction: one section on lr, then it stays open until the other
 * thread has tried lr (first attempt only). */
static void *release_tx(void *arg) {
    (void)arg;
    static int attempt; /* not a local: the restart longjmps back */
    attempt = 0;
    if (scenario == REL_IN_EXCL)
        cx_exclusive(&lo);
    TX_ATOMIC {
        attempt++;
        if (scenario == REL_IRREVOCABLE) {
            tx_irrevocable();
            atomic_fetch_add(&irr_runs, 1);
        }
        cx_optimistic(&lr);
        long v = TX_LOAD(&rx);
        TX_STORE(&rx, v + 1);
        cx_unlock(&lr);
        if (scenario == REL_IRR_AFTER) {
            tx_irrevocable(); /* takes every lock the transaction depends on */
            atomic_fetch_add(&irr_runs, 1);
        }
        if (attempt == 1) {
            atomic_store(&phase, 1);
            wait_phase(2);
            if (scenario == REL_RESTART || scenario == REL_IN_EXCL)
                tx_restart(); /* rolls back x = v + 1 */
        }
    }
    if (scenario == REL_IN_EXCL)
        cx_unlock(&lo);
    return NULL;
}

/* The other thread: if it gets lr, it must see only committed state, and
 * its own update must survive. */
static void *release_other(void *arg) {
    (void)arg;
    wait_phase(1);
    if (cx_trylock(&lr) == 0) {
        long v = rx;
        atomic_store(&other_saw, v);
        for (volatile int k = 0; k < 1000; k++) /* a rollback would land here */
            ;
        rx = rx + 100;
        atomic_store(&other_got, 1);
        cx_unlock(&lr);
    }
    atomic_store(&phase, 2);
    return NULL;
}

static void release_scenario(int which, const char *name) {
    scenario = which;
    rx = 0;
    atomic_store(&phase, 0);
    atomic_store(&other_got, 0);
    atomic_store(&other_saw, -1);
    atomic_store(&irr_runs, 0);
    pthread_t a, b;
    CHECK(pthread_create(&b, NULL, release_other, NULL) == 0);
    CHECK(pthread_create(&a, NULL, release_tx, NULL) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    int got = atomic_load(&other_got);
    printf("release/%s: other thread %s the lock (read x=%ld), final x=%ld\n", name,
           got ? "got" : "did not get", (long)other_saw, rx);
    if (got)
        CHECK_EQ(other_saw, 0);  /* the transaction had not committed */
    CHECK_EQ(rx, 1 + 100 * got); /* nobody's update lost */
    if (which == REL_IRREVOCABLE || which == REL_IRR_AFTER)
        CHECK_EQ(irr_runs, 1); /* an irrevocable transaction never re-runs */
    CHECK_EQ(cx_destroy(&lr), 0);
}

static cx_lock_t lmany[20] = {
    CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER,
    CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER,
    CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER,
    CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER,
    CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER, CX_LOCK_INITIALIZER};
static long many[20];

/* A transaction inside an exclusive section restarts inside its own
 * section: the section is left with the attempt (not held twice). */
static void restart_in_exclusive(void) {
    static int attempt;
    attempt = 0;
    rx = 0;
    cx_exclusive(&lo);
    TX_ATOMIC {
        cx_optimistic(&lr);
        cx_optimistic(&lo); /* the outer section's lock: already ours */
        TX_STORE(&rx, TX_LOAD(&rx) + 1);
        if (++attempt == 1)
            tx_restart();
        cx_unlock(&lo);
        cx_unlock(&lr);
    }
    CHECK_EQ(cx_mode(), 2);
    cx_unlock(&lo);
    CHECK_EQ(cx_mode(), 0);
    CHECK_EQ(cx_destroy(&lo), 0);
    CHECK_EQ(cx_destroy(&lr), 0);
    CHECK_EQ(rx, 1);
    printf("release/restart-inside-an-exclusive-section: ok\n");
}

static int release(void) {
    release_scenario(REL_RESTART, "restart");
    release_scenario(REL_IRREVOCABLE, "irrevocable");
    release_scenario(REL_IRR_AFTER, "irrevocable-after-section");
    release_scenario(REL_IN_EXCL, "inside-an-exclusive-section");
    restart_in_exclusive();
    /* One transaction: the same lock entered again (after and inside a
     * section), more locks than one section may nest, a trylock. */
    rx = 0;
    for (int round = 0; round < 3; round++) {
        TX_ATOMIC {
            for (int k = 0; k < 2; k++) {
                cx_optimistic(&lr);
                cx_exclusive(&lr); /* nested on the same lock */
                TX_STORE(&rx, TX_LOAD(&rx) + 1);
                cx_unlock(&lr);
                cx_unlock(&lr);
            }
            for (int i = 0; i < 20; i++)
                cx_optimistic(&lmany[i]);
            for (int i = 0; i < 20; i++)
                TX_STORE(&many[i], TX_LOAD(&many[i]) + 1);
            for (int i = 20; i-- > 0;)
                cx_unlock(&lmany[i]);
            if (cx_trylock(&lr) == 0) {
                TX_STORE(&rx, TX_LOAD(&rx) + 1);
                cx_unlock(&lr);
            }
            if (round == 2)
                tx_irrevocable();
        }
        CHECK_EQ(cx_mode(), 0);
    }
    CHECK_EQ(rx, 3 * 3);
    for (int i = 0; i < 20; i++) {
        CHECK_EQ(many[i], 3);
        CHECK_EQ(cx_destroy(&lmany[i]), 0);
    }
    CHECK_EQ(cx_destroy(&lr), 0);
    printf("release: ok\n");
    return 0;
}

/* ---------------------------------------------------------------- api */

static int api(void) {
    cx_lock_t l;
    cx_policy_t bad_policy = {3, 0, 50, 10};
    CHECK_EQ(cx_init(NULL, NULL), -EINVAL);
    CHECK_EQ(cx_init(&l, &bad_policy), -EINVAL);
    bad_policy.window = 8;
    bad_policy.exclusive_pct = 101;
    CHECK_EQ(cx_init(&l, &bad_policy), -EINVAL);
    CHECK_EQ(cx_init(&l, NULL), 0);
    CHECK_EQ(l.policy.window, cx_policy_default.window);
    CHECK_EQ(cx_mode(), 0);
    cx_need_exclusive(); /* outside a section: nothing */
    CHECK_EQ(cx_trylock(&l), 0);
    CHECK_EQ(cx_mode(), 2);
    CHECK_EQ(cx_destroy(&l), -EBUSY);
    cx_unlock(&l);
    CHECK_EQ(cx_mode(), 0);
    CHECK_EQ(cx_destroy(&l), 0);
    /* trylock fails while another thread holds it */
    cx_exclusive(&l);
    pthread_t th;
    int r = 0;
    CHECK(pthread_create(&th, NULL, (void *(*)(void *))(void *)cx_trylock, &l) == 0);
    void *ret;
    pthread_join(th, &ret);
    r = (int)(intptr_t)ret;
    CHECK_EQ(r, -EBUSY);
    cx_unlock(&l);
    /* No limit of the library's own on locks held at once (was 16: fatal). */
    static cx_lock_t many[40];
    for (int i = 0; i < 40; i++) {
        CHECK_EQ(cx_init(&many[i], NULL), 0);
        cx_exclusive(&many[i]);
    }
    for (int i = 40; i-- > 0;)
        cx_unlock(&many[i]);
    for (int i = 0; i < 40; i++)
        CHECK_EQ(cx_destroy(&many[i]), 0);
    /* Out of order: the outer lock first (the general path), then the inner
     * one, now the last held at depth 1 (cx_unlock's short path): both free,
     * no section left. */
    cx_exclusive(&many[0]);
    cx_exclusive(&many[1]);
    cx_unlock(&many[0]);
    CHECK_EQ(cx_destroy(&many[0]), 0);
    CHECK_EQ(cx_mode(), 2);
    CHECK_EQ(cx_destroy(&many[1]), -EBUSY);
    cx_unlock(&many[1]);
    CHECK_EQ(cx_mode(), 0);
    CHECK_EQ(cx_destroy(&many[1]), 0);
    /* and a section can follow on either */
    CHECK_EQ(cx_trylock(&many[1]), 0);
    cx_unlock(&many[1]);
    CHECK_EQ(cx_destroy(&many[1]), 0);
    /* A section of a lock this thread holds exclusively re-enters it (nested
     * sections flatten), whatever it asks for: was a self-deadlock. */
    cx_exclusive(&l);
    cx_optimistic(&l);
    cx_exclusive(&l);
    CHECK_EQ(cx_mode(), 2);
    cx_unlock(&l);
    cx_unlock(&l);
    CHECK_EQ(cx_destroy(&l), -EBUSY);
    cx_unlock(&l);
    CHECK_EQ(cx_mode(), 0);
    CHECK_EQ(cx_destroy(&l), 0);
    /* cx_shared: without RTM the lock is held shared (CX_MODE_SHARED); a
     * shared section of it nests, trylock of it fails, here and in another
     * thread; with RTM it runs as cx_optimistic. */
    cx_shared(&l);
    if (!txkit_htm_usable()) {
        CHECK_EQ(cx_mode(), 4);
        cx_shared(&l);
        CHECK_EQ(cx_mode(), 4);
        CHECK_EQ(cx_trylock(&l), -EBUSY);
        cx_unlock(&l);
        CHECK_EQ(cx_destroy(&l), -EBUSY);
        CHECK(pthread_create(&th, NULL, (void *(*)(void *))(void *)cx_trylock, &l) == 0);
        pthread_join(th, &ret);
        CHECK_EQ((int)(intptr_t)ret, -EBUSY);
        cx_exclusive(&many[2]); /* another lock inside: exclusive */
        CHECK_EQ(cx_mode(), 4);
        cx_unlock(&many[2]);
        CHECK_EQ(cx_destroy(&many[2]), 0);
    } else {
        CHECK(cx_mode() == 1 || cx_mode() == 2);
    }
    cx_unlock(&l);
    CHECK_EQ(cx_mode(), 0);
    CHECK_EQ(cx_destroy(&l), 0);
    CHECK_EQ(cx_trylock(&l), 0); /* and free for anyone */
    cx_unlock(&l);
    /* cx_optimistic or cx_exclusive of a lock inside a cx_shared section of
     * it ends the program with a message, with RTM (where the shared section
     * may run in hardware and could have nested it) as without */
    for (int want_exclusive = 0; want_exclusive < 2; want_exclusive++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0)
                dup2(fd, 2); /* the message */
            cx_shared(&l);
            if (want_exclusive)
                cx_exclusive(&l);
            else
                cx_optimistic(&l);
            _exit(0); /* not reached */
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
                  "cx_%s inside cx_shared of the same lock: status %#x, expected SIGABRT",
                  want_exclusive ? "exclusive" : "optimistic", st);
    }
    printf("api: ok (rtm %s)\n", txkit_htm_usable() ? "yes" : "no");
    return 0;
}

/* ------------------------------------------------------------ shared */

/* Readers in cx_shared sections check a pair that writers (cx_exclusive,
 * cx_optimistic, cx_trylock; with TX 1 also TX_ATOMIC blocks that subscribe,
 * which turns the lock's shared mode off for good) update with a window
 * between its halves; some readers nest a cx_shared of the same lock, some
 * take a second lock inside (its own pair, exclusive). Without RTM the
 * readers run side by side (cx_mode() 4 while the lock is not subscribed).
 * Oracle: no reader or writer ever sees a torn pair; the pairs count every
 * writer section; readers ran side by side at least once without RTM. */
static cx_lock_t lsh = CX_LOCK_INITIALIZER, lsh2 = CX_LOCK_INITIALIZER, lsh3 = CX_LOCK_INITIALIZER;
static volatile long sa, sb, s2a, s2b; /* under lsh (sa, sb), lsh2 (s2a, s2b) */
static atomic_long s_writes, s_writes2, s_reads, s_bad, s_inside, s_overlap;
static int s_with_tx;

static void shared_read(unsigned *seed) {
    long n = atomic_fetch_add(&s_inside, 1);
    if (n > 0)
        atomic_fetch_add(&s_overlap, 1);
    long x = sa;
    for (volatile int k = 0; k < 60; k++) /* widen the window */
        ;
    if (sb != x)
        atomic_fetch_add(&s_bad, 1);
    unsigned k = rnd(seed) % 8;
    if (k == 0) { /* the same lock, nested */
        cx_shared(&lsh);
        if (sb != sa)
            atomic_fetch_add(&s_bad, 1);
        cx_unlock(&lsh);
    } else if (k == 1) { /* another lock inside: exclusive */
        cx_shared(&lsh2);
        CHECK(cx_trylock(&lsh) == -EBUSY); /* held shared by this section */
        long y = s2a;
        if (s2b != y)
            atomic_fetch_add(&s_bad, 1);
        s2a = y + 1;
        s2b = y + 1;
        atomic_fetch_add(&s_writes2, 1);
        cx_unlock(&lsh2);
    } else if (k == 2) {
        cx_need_exclusive(); /* a shared holder may do I/O as it is */
    }
    atomic_fetch_sub(&s_inside, 1);
    atomic_fetch_add(&s_reads, 1);
}

static void shared_write(void) {
    long x = sa;
    if (sb != x)
        atomic_fetch_add(&s_bad, 1);
    for (volatile int k = 0; k < 20; k++) /* a reader may come in now */
        ;
    sa = x + 1;
    for (volatile int k = 0; k < 20; k++)
        ;
    sb = x + 1;
    atomic_fetch_add(&s_writes, 1);
}

/* A writer that subscribes: from its first one on, the lock is not held
 * shared any more. */
static void shared_transaction(void) {
    TX_ATOMIC {
        cx_optimistic(&lsh);
        long x = TX_LOAD(&sa), y = TX_LOAD(&sb);
        if (x != y)
            atomic_fetch_add(&s_bad, 1);
        TX_STORE(&sa, x + 1);
        TX_STORE(&sb, x + 1);
        cx_unlock(&lsh);
    }
    atomic_fetch_add(&s_writes, 1);
}

static void *shared_thread(void *arg) {
    unsigned seed = (unsigned)(torture_seed + (uintptr_t)arg * 104729u);
    while (!atomic_load(&stop)) {
        unsigned kind = rnd(&seed) % 16;
        if (kind < 10) {
            cx_shared(&lsh);
            int m = cx_mode();
            CHECK(m == 1 || m == 2 || m == 4);
            if (m == 4)
                CHECK(!txkit_htm_usable());
            shared_read(&seed);
            cx_unlock(&lsh);
        } else if (kind < 12) {
            cx_exclusive(&lsh);
            shared_write();
            cx_unlock(&lsh);
        } else if (kind < 14) {
            int nested = kind == 13; /* in a section of another lock */
            if (nested)
                cx_optimistic(&lsh3);
            cx_optimistic(&lsh);
            shared_write();
            cx_unlock(&lsh);
            if (nested)
                cx_unlock(&lsh3);
        } else if (kind == 14) {
            if (cx_trylock(&lsh) != 0)
                continue;
            shared_write();
            cx_unlock(&lsh);
        } else if (s_with_tx && rnd(&seed) % 64 == 0) {
            shared_transaction();
        }
        CHECK(cx_mode() == 0);
    }
    return NULL;
}

static int shared(int nthreads, int with_tx, double seconds) {
    s_with_tx = with_tx;
    /* never stop trying hardware sections (with RTM), so that writers of
     * every kind keep running side by side */
    const cx_policy_t always = {3, 64, 100, 1};
    CHECK_EQ(cx_init(&lsh, &always), 0);
    run_threads(nthreads, shared_thread, seconds);
    printf("shared: %d threads%s, rtm %s: %ld reads (%ld began beside another), %ld + %ld "
           "writes, sa=%ld sb=%ld, %ld torn\n",
           nthreads, with_tx ? " and transactions" : "", txkit_htm_usable() ? "yes" : "no",
           (long)s_reads, (long)s_overlap, (long)s_writes, (long)s_writes2, sa, sb, (long)s_bad);
    CHECK_EQ(s_bad, 0);
    CHECK_EQ(sa, sb);
    CHECK_EQ(sa, s_writes);
    CHECK_EQ(s2a, s_writes2);
    CHECK(s_reads > 0);
    if (!txkit_htm_usable() && !with_tx && nthreads > 1)
        CHECK(s_overlap > 0); /* shared holders ran side by side */
    CHECK_EQ(cx_destroy(&lsh), 0);
    CHECK_EQ(cx_destroy(&lsh2), 0);
    CHECK_EQ(cx_destroy(&lsh3), 0);
    return 0;
}

/* A transaction subscribes to a lock that another thread holds shared, in
 * the middle of its section: the reader's pair must stay whole (the first
 * subscription restarts until the shared holders have left; a serial
 * attempt cannot take the lock until they leave). */
static cx_lock_t lsub = CX_LOCK_INITIALIZER;
static volatile long ua, ub; /* under lsub */
static atomic_int su_phase;
static atomic_long su_torn;

static void *shared_subscribe_reader(void *arg) {
    (void)arg;
    cx_shared(&lsub);
    CHECK_EQ(cx_mode(), 4);
    long x = ua;
    atomic_store(&su_phase, 1);
    usleep(100000); /* the transaction runs now, or waits */
    if (ub != x)
        atomic_fetch_add(&su_torn, 1);
    cx_unlock(&lsub);
    return NULL;
}

static int shared_subscribe(void) {
    if (txkit_htm_usable()) {
        printf("shared subscribe: SKIP: needs TXKIT_RTM=off (no shared holders with RTM)\n");
        return 77;
    }
    pthread_t th;
    CHECK(pthread_create(&th, NULL, shared_subscribe_reader, NULL) == 0);
    while (atomic_load(&su_phase) != 1)
        usleep(1000);
    double t0 = tk_now();
    TX_ATOMIC {
        cx_optimistic(&lsub);
        TX_STORE(&ua, TX_LOAD(&ua) + 1);
        TX_STORE(&ub, TX_LOAD(&ub) + 1);
        cx_unlock(&lsub);
    }
    double waited = tk_now() - t0;
    pthread_join(th, NULL);
    printf("shared subscribe: the transaction took %.3f s, the reader saw %ld torn pairs\n", waited,
           (long)su_torn);
    CHECK_EQ(su_torn, 0);
    CHECK_EQ(ua, 1);
    CHECK_EQ(ub, 1);
    /* A software transaction subscribed: from now on the lock's shared
     * sections are exclusive. (A serial one took the lock for real instead,
     * and auto may have run it so.) */
    const char *m = getenv("TXKIT_METHOD");
    cx_shared(&lsub);
    if (m && strcmp(m, "stm") == 0)
        CHECK_EQ(cx_mode(), 2);
    else
        CHECK(cx_mode() == 2 || cx_mode() == 4);
    cx_unlock(&lsub);
    return 0;
}

/* A fork while another thread holds a lock shared: the child has no such
 * thread, so it takes the lock exclusively at once. */
static atomic_int sf_phase;
static void *shared_fork_holder(void *arg) {
    (void)arg;
    cx_shared(&lsh);
    atomic_store(&sf_phase, 1);
    while (atomic_load(&sf_phase) != 2)
        usleep(1000);
    cx_unlock(&lsh);
    return NULL;
}

static int shared_fork(void) {
    pthread_t th;
    CHECK(pthread_create(&th, NULL, shared_fork_holder, NULL) == 0);
    while (atomic_load(&sf_phase) != 1)
        usleep(1000);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(20); /* a child that waits for the parent's reader dies */
        cx_exclusive(&lsh);
        sa++;
        cx_unlock(&lsh);
        _exit(0);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    atomic_store(&sf_phase, 2);
    pthread_join(th, NULL);
    /* and here: exclusive after the reader left */
    cx_exclusive(&lsh);
    CHECK_EQ(cx_mode(), 2);
    cx_unlock(&lsh);
    printf("shared fork: ok (rtm %s)\n", txkit_htm_usable() ? "yes" : "no");
    return 0;
}

/* ------------------------------------------------------ irrwindow */

/* A software transaction subscribed to a lock becomes irrevocable
 * (stm_make_irrevocable: token, extend, then hold the subscribed locks)
 * while another thread enters that lock exclusively over and over. An
 * exclusive holder does not look at the token, so it can write between the
 * extension and the hold: the reads before tx_irrevocable() must still be
 * valid after it (found by tests/cx/tm_model.pml, MAKE_IRR_REVALIDATES=0).
 * Before the fix: TK_ASSERT at the next read, or x != y. */
static cx_lock_t lw = CX_LOCK_INITIALIZER;
static volatile long wa, wb; /* under lw: wa == wb between sections */
static atomic_long wexcl;

static void *irrwindow_excl(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        cx_exclusive(&lw);
        long v = wa;
        wa = v + 1;
        wb = v + 1;
        cx_unlock(&lw);
        atomic_fetch_add(&wexcl, 1);
    }
    return NULL;
}

static long wtorn;

static void irrwindow_tx(void) {
    TX_ATOMIC {
        cx_optimistic(&lw);
        long x = TX_LOAD(&wa);
        cx_unlock(&lw);
        tx_irrevocable();
        long y = TX_LOAD(&wb);
        if (x != y)
            wtorn++; /* irrevocable: runs once, so counted once */
        TX_STORE(&wa, y + 1);
        TX_STORE(&wb, y + 1);
    }
}

static int irrwindow(double seconds) {
    pthread_t th;
    atomic_store(&stop, 0);
    CHECK(pthread_create(&th, NULL, irrwindow_excl, NULL) == 0);
    long txs = 0;
    for (double end = tk_now() + seconds; tk_now() < end;)
        for (int k = 0; k < 1000; k++, txs++)
            irrwindow_tx();
    atomic_store(&stop, 1);
    CHECK(pthread_join(th, NULL) == 0);
    long want = txs + atomic_load(&wexcl);
    printf("irrwindow: %ld transactions, %ld exclusive sections, %ld torn, a=%ld b=%ld\n", txs,
           (long)atomic_load(&wexcl), wtorn, wa, wb);
    CHECK_EQ(wtorn, 0);
    CHECK_EQ(wa, want);
    CHECK_EQ(wb, want);
    return 0;
}

/* ------------------------------------------------------ needexcl */

/* One thread runs a transaction inside an exclusive section; the other, in
 * a transaction, enters the lock and asks for it exclusively (the documented
 * call before I/O: cx_need_exclusive). The second one's tx_irrevocable could
 * not hold the lock (the first held it) and kept the irrevocability token
 * for its next attempt, which then waited for the lock holding the token,
 * while the first one's commit waited for the token: both stopped (4 runs in
 * 5 under auto, every run under stm, found by a helper's adversarial testing).
 * With RTM the same wait came from the hardware path (the attempt after a
 * hardware tx_irrevocable held the token from its start): every run hung on
 * an RTM machine, and now and then in CI's simulated-RTM lanes. */
static cx_lock_t ln = CX_LOCK_INITIALIZER;
static long nx, ny;
static atomic_long nsections;

static __attribute__((noinline)) void needexcl_section_once(void) {
    cx_exclusive(&ln);
    TX_ATOMIC {
        TX_STORE(&nx, TX_LOAD(&nx) + 1);
    }
    cx_unlock(&ln);
}

static void *needexcl_section(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        needexcl_section_once();
        atomic_fetch_add(&nsections, 1);
    }
    return NULL;
}

static __attribute__((noinline)) void needexcl_tx(void) {
    TX_ATOMIC {
        cx_optimistic(&ln);
        cx_need_exclusive();
        TX_STORE(&ny, TX_LOAD(&ny) + 1);
        cx_unlock(&ln);
    }
}

static int needexcl(double seconds) {
    pthread_t th;
    atomic_store(&stop, 0);
    CHECK(pthread_create(&th, NULL, needexcl_section, NULL) == 0);
    while (atomic_load(&nsections) == 0) /* it runs */
        sched_yield();
    long txs = 0;
    for (double end = tk_now() + seconds; tk_now() < end;)
        for (int k = 0; k < 100; k++, txs++) /* each may wait ms for the lock: look often */
            needexcl_tx();
    atomic_store(&stop, 1);
    CHECK(pthread_join(th, NULL) == 0);
    printf("needexcl: %ld sections (x=%ld), %ld transactions (y=%ld)\n",
           (long)atomic_load(&nsections), nx, txs, ny);
    CHECK_EQ(nx, (long)atomic_load(&nsections));
    CHECK_EQ(ny, txs);
    return 0;
}

/* A thread that holds a lock shared commits a transaction inside its
 * section while another thread's transaction, begun before that commit,
 * subscribes to the lock for the first time. The commit waits for that older
 * attempt to end (privatization safety); the first subscription used to
 * wait, inside the attempt, for the shared holder to leave: each waited for
 * the other. Now the subscriber restarts and waits outside. Software TM only
 * (a serial attempt would hold the clock the section's commit needs), and
 * without RTM (no shared holders with it). */
static cx_lock_t ldrain = CX_LOCK_INITIALIZER;
static long dx, dy, dz;
static atomic_int dr_phase;

static void *shared_commit_holder(void *arg) {
    (void)arg;
    cx_shared(&ldrain);
    atomic_store(&dr_phase, 1);
    while (atomic_load(&dr_phase) != 2)
        usleep(100);
    TX_ATOMIC {
        TX_STORE(&dx, TX_LOAD(&dx) + 1);
    }
    cx_unlock(&ldrain);
    return NULL;
}

static int shared_commit(void) {
    if (txkit_htm_usable()) {
        printf("shared commit: SKIP: needs TXKIT_RTM=off (no shared holders with RTM)\n");
        return 77;
    }
    CHECK_EQ(txkit_set_method(TXKIT_STM), 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, shared_commit_holder, NULL) == 0);
    while (atomic_load(&dr_phase) != 1)
        usleep(100);
    volatile int tries = 0, moved = 0;
    TX_ATOMIC {
        long v = TX_LOAD(&dy);
        if (++tries == 1) {
            /* let the holder commit; its commit moves the clock, then waits
             * for this attempt */
            uint64_t snap = _txkit_tls.snap;
            atomic_store(&dr_phase, 2);
            double end = tk_now() + 2.0;
            while (__atomic_load_n(_txkit_tls.clock, __ATOMIC_ACQUIRE) == snap && tk_now() < end)
                ;
            moved = __atomic_load_n(_txkit_tls.clock, __ATOMIC_ACQUIRE) != snap;
        }
        cx_optimistic(&ldrain); /* the lock's first subscription */
        TX_STORE(&dz, v + 1);
        cx_unlock(&ldrain);
    }
    CHECK(pthread_join(th, NULL) == 0);
    printf("shared commit: %d attempts, the holder's commit seen: %d\n", (int)tries, (int)moved);
    CHECK_EQ(moved, 1);
    CHECK(tries >= 2); /* the first attempt gave way */
    CHECK_EQ(dx, 1);
    CHECK_EQ(dz, 1);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "shared-commit") == 0)
        return shared_commit();
    if (argc >= 3 && strcmp(argv[1], "needexcl") == 0)
        return needexcl(tk_stress_seconds(atof(argv[2])));
    if (argc >= 5 && strcmp(argv[1], "torture") == 0) {
        torture_seed = tk_stress_seed("test_cx torture");
        return torture(atoi(argv[2]), atoi(argv[3]), tk_stress_seconds(atof(argv[4])));
    }
    if (argc >= 3 && strcmp(argv[1], "nested") == 0)
        return nested(tk_stress_seconds(atof(argv[2])));
    if (argc >= 2 && strcmp(argv[1], "starvation") == 0)
        return starvation();
    if (argc >= 2 && strcmp(argv[1], "api") == 0)
        return api();
    if (argc >= 2 && strcmp(argv[1], "release") == 0)
        return release();
    if (argc >= 3 && strcmp(argv[1], "irrwindow") == 0)
        return irrwindow(tk_stress_seconds(atof(argv[2])));
    if (argc >= 5 && strcmp(argv[1], "shared") == 0) {
        torture_seed = tk_stress_seed("test_cx shared");
        return shared(atoi(argv[2]), atoi(argv[3]), tk_stress_seconds(atof(argv[4])));
    }
    if (argc >= 2 && strcmp(argv[1], "shared-fork") == 0)
        return shared_fork();
    if (argc >= 2 && strcmp(argv[1], "shared-subscribe") == 0)
        return shared_subscribe();
    fprintf(stderr,
            "usage: test_cx torture THREADS IO_PCT SECONDS | nested SECONDS | starvation | "
            "api | release | irrwindow SECONDS | shared THREADS TX SECONDS | needexcl SECONDS | "
            "shared-fork | shared-subscribe | shared-commit\n");
    return 2;
}
