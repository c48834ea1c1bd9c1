/* SPDX-License-Identifier: MIT */
/* test_long_reader.c - a long read-mostly transaction must finish while
 * another thread commits small transactions that free memory (issue 11,
 * defect 2: a Bayesian-network learner hung at 2 threads).
 *
 *   test_long_reader [--nodes N] [--commits K] [--deadline S] [--work W] [--step S]
 *                    [--moves M] [--measure]
 *
 * The shared state:
 *  - a large structure: N slots, each pointing to a node (tx_malloc) that
 *    holds a value; the values always add up to TOTAL;
 *  - a small stack of nodes the writer pushes and pops (tx_malloc / tx_free),
 *    with a count kept beside it.
 * The reader runs K transactions that each walk every slot, load each node and
 * add the values (the sum must be TOTAL, inside the body and after commit).
 * Every S nodes a software attempt waits (at most 2 ms) for the writer's next
 * commit: that is how the two threads interleave on two parallel cores, and
 * it keeps the test's meaning on a loaded machine where they take turns.
 * The writer, until the reader is done, commits small transactions: mostly a
 * push or a pop on the stack (a pop frees the node: a reclaimable free for
 * every two transactions); with --moves M, one in M replaces two slots' nodes
 * with new ones moving value between them (freeing both), so that the
 * reader's read set is really written now and then. Without it (the test)
 * every revalidation of the reader succeeds: nothing but a bound on
 * revalidation itself can end the reader's wait (aborts never escalate it).
 *
 * Oracle: the reader commits K times before the deadline (S seconds, well
 * under the CTest timeout, so a livelock fails with a message and not a
 * timeout), every sum it saw was TOTAL, the writer committed transactions
 * too, and at the end the slots still add up to TOTAL and the stack's nodes
 * number its count. Before the fix the reader revalidated its read log after
 * every writer commit, without bound, and the writer paid a membarrier and a
 * scan of its whole limbo list for every free: no commit in minutes.
 *
 * --measure also prints the writer's frees per second and the reader's time
 * per commit (for the report, not checked). --reclaim-cost (TXKIT_METHOD=stm)
 * prints the cost of a free against the backlog of frees held back by a
 * running reader, and does nothing else.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <txkit.h>

#include "test_util.h"

#define TOTAL_PER_NODE 100

struct node {
    long value;
    struct node *next;
};

static long nnodes = 200000;
static long want_commits = 2;
static double deadline_s = 40.0;
static int measure;
static int work = 4;
static long step = 8; /* reads between the reader's waits for a writer commit */
static long moves;    /* one writer transaction in `moves` writes the large structure; 0: none */
static volatile uint64_t sink;

static struct node **slots;
static struct node *stack_top;
static long stack_count;

static atomic_int reader_done;
static atomic_long writer_progress; /* the reader starts once the writer runs */
static long reader_commits, reader_bad_sums, reader_attempts;
static long writer_commits, writer_frees;
static double reader_secs;
static double attempt_start[64], attempt_end[64]; /* --measure: the reader's attempts */
static int attempt_sw[64];
static long handshake_yields;

/* Inside a software attempt, wait (bounded) until the writer commits again,
 * so that writer commits fall between the reader's reads as they do on two
 * truly parallel cores, even on a loaded machine where the two threads would
 * otherwise mostly take turns. Serial attempts do not wait: the writer cannot
 * commit while one runs. */
static void let_writer_commit(void) {
    if (!(_txkit_tls.access & TXKIT_ACC_LOAD))
        return; /* not running software TM */
    long seen = atomic_load_explicit(&writer_progress, memory_order_relaxed);
    double t0 = 0;
    for (unsigned spins = 0; atomic_load_explicit(&writer_progress, memory_order_relaxed) == seen;
         spins++) {
        if (spins < 64)
            continue;
        double t = tk_now();
        if (t0 == 0)
            t0 = t;
        else if (t - t0 > 0.002)
            return;
        if (t - t0 > 0.00005) { /* the writer is not running: give it our CPU */
            handshake_yields++;
            sched_yield();
        }
    }
}

/* One pass over the large structure: the sum of every node's value. */
static __attribute__((noinline)) long read_all(void) {
    volatile long sum = 0; /* set by the committed attempt */
    TX_ATOMIC {
        if (measure && reader_attempts < 64) {
            attempt_start[reader_attempts] = tk_now();
            attempt_sw[reader_attempts] = (_txkit_tls.access & TXKIT_ACC_LOAD) != 0;
        }
        reader_attempts++;
        long s = 0;
        uint64_t h = 1;
        for (long i = 0; i < nnodes; i++) {
            struct node *n = TX_LOAD(&slots[i]);
            long v = TX_LOAD(&n->value);
            s += v;
            for (int j = 0; j < work; j++) /* the learner scores what it reads */
                h = h * 6364136223846793005ull + (uint64_t)v;
            if (i % step == step - 1)
                let_writer_commit();
        }
        sink = h;
        sum = s;
    }
    if (measure && reader_attempts <= 64)
        attempt_end[reader_attempts - 1] = tk_now();
    return sum;
}

static void *reader(void *arg) {
    (void)arg;
    while (atomic_load(&writer_progress) < 1000)
        sched_yield();
    double t0 = tk_now();
    for (long k = 0; k < want_commits; k++) {
        if (read_all() != nnodes * TOTAL_PER_NODE)
            reader_bad_sums++;
        reader_commits++;
        if (tk_now() - t0 > deadline_s)
            break;
    }
    reader_secs = tk_now() - t0;
    atomic_store(&reader_done, 1);
    return NULL;
}

/* Move one unit of value from slot a to slot b, replacing both nodes. */
static __attribute__((noinline)) int replace_two(long a, long b) {
    TX_ATOMIC {
        struct node *na = TX_LOAD(&slots[a]), *nb = TX_LOAD(&slots[b]);
        long va = TX_LOAD(&na->value), vb = TX_LOAD(&nb->value);
        struct node *ma = tx_malloc(sizeof *ma), *mb = tx_malloc(sizeof *mb);
        CHECK(ma && mb);
        long move = va > 0 ? 1 : 0;
        ma->value = va - move; /* ours until commit: plain writes */
        ma->next = NULL;
        mb->value = vb + move;
        mb->next = NULL;
        TX_STORE(&slots[a], ma);
        TX_STORE(&slots[b], mb);
        tx_free(na);
        tx_free(nb);
    }
    return 2;
}

static __attribute__((noinline)) int push(void) {
    TX_ATOMIC {
        struct node *n = tx_malloc(sizeof *n);
        CHECK(n);
        n->value = 0;
        n->next = TX_LOAD(&stack_top);
        TX_STORE(&stack_top, n);
        TX_STORE(&stack_count, TX_LOAD(&stack_count) + 1);
    }
    return 0;
}

/* Returns the number of nodes freed (0 or 1). */
static __attribute__((noinline)) int pop(void) {
    volatile int freed = 0;
    TX_ATOMIC {
        struct node *n = TX_LOAD(&stack_top);
        freed = 0;
        if (n) {
            TX_STORE(&stack_top, TX_LOAD(&n->next));
            TX_STORE(&stack_count, TX_LOAD(&stack_count) - 1);
            tx_free(n);
            freed = 1;
        }
    }
    return freed;
}

static void *writer(void *arg) {
    (void)arg;
    uint64_t rng = 0x1234567887654321ull;
    long ops = 0;
    while (!atomic_load(&reader_done)) {
        uint64_t r = tk_rand(&rng);
        int freed;
        if (moves && ++ops % moves == 0) {
            long a = (long)(r % (uint64_t)nnodes), b = (long)((r >> 32) % (uint64_t)nnodes);
            if (a == b)
                continue;
            freed = replace_two(a, b);
        } else if (r & 1) {
            freed = push();
        } else {
            freed = pop();
        }
        writer_commits++;
        writer_frees += freed;
        atomic_store_explicit(&writer_progress, writer_commits, memory_order_relaxed);
    }
    return NULL;
}

/* ------------------------------------------------------ --reclaim-cost
 * The cost of a free against the backlog of frees waiting for a reader: a
 * holder thread parks inside a software transaction (its snapshot holds
 * every later free back), the main thread commits transactions that each
 * free one block, and times batches of them as the backlog grows. Printed,
 * not checked (timing). */
static atomic_int holder_in, holder_release;
static long hold_word, free_count;

static void *holder(void *arg) {
    (void)arg;
    TX_ATOMIC {
        (void)TX_LOAD(&hold_word);
        atomic_store(&holder_in, 1);
        while (!atomic_load(&holder_release))
            usleep(100);
    }
    return NULL;
}

static __attribute__((noinline)) void free_one(void *p) {
    TX_ATOMIC {
        TX_STORE(&free_count, TX_LOAD(&free_count) + 1); /* a writer: the clock moves */
        tx_free(p);
    }
}

static int reclaim_cost(void) {
    pthread_t h;
    CHECK(pthread_create(&h, NULL, holder, NULL) == 0);
    while (!atomic_load(&holder_in))
        usleep(100);
    enum { BATCH = 1024 };
    static void *blocks[BATCH];
    long backlog = 0;
    const long marks[] = {1024, 4096, 16384, 65536, 131072};
    printf("backlog   ns per free (best of 3 batches of %d)\n", BATCH);
    for (unsigned m = 0; m < sizeof marks / sizeof marks[0]; m++) {
        while (backlog + 3 * BATCH < marks[m]) { /* grow the backlog, untimed */
            free_one(malloc(32));
            backlog++;
        }
        double best = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            for (int i = 0; i < BATCH; i++)
                blocks[i] = malloc(32);
            double t0 = tk_now();
            for (int i = 0; i < BATCH; i++)
                free_one(blocks[i]);
            double dt = tk_now() - t0;
            backlog += BATCH;
            if (dt < best)
                best = dt;
        }
        printf("%7ld   %8.0f\n", backlog, best * 1e9 / BATCH);
    }
    atomic_store(&holder_release, 1);
    CHECK(pthread_join(h, NULL) == 0);
    return 0;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nnodes = atol(argv[++i]);
        else if (!strcmp(argv[i], "--commits") && i + 1 < argc)
            want_commits = atol(argv[++i]);
        else if (!strcmp(argv[i], "--deadline") && i + 1 < argc)
            deadline_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--moves") && i + 1 < argc)
            moves = atol(argv[++i]);
        else if (!strcmp(argv[i], "--step") && i + 1 < argc)
            step = atol(argv[++i]);
        else if (!strcmp(argv[i], "--work") && i + 1 < argc)
            work = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--measure"))
            measure = 1;
        else if (!strcmp(argv[i], "--reclaim-cost"))
            return reclaim_cost();
        else {
            fprintf(stderr,
                    "usage: %s [--nodes N] [--commits K] [--deadline S] [--work W] [--step S] "
                    "[--moves M] [--measure]\n",
                    argv[0]);
            return 2;
        }
    }
    tk_skip_unless_method_usable(argv[0]);
    CHECK(nnodes > 1 && want_commits > 0 && step > 0);
    slots = calloc((size_t)nnodes, sizeof *slots);
    CHECK(slots);
    for (long i = 0; i < nnodes; i++) {
        slots[i] = malloc(sizeof *slots[i]);
        CHECK(slots[i]);
        slots[i]->value = TOTAL_PER_NODE;
        slots[i]->next = NULL;
    }
    double t0 = tk_now();
    pthread_t tr, tw;
    CHECK(pthread_create(&tw, NULL, writer, NULL) == 0);
    CHECK(pthread_create(&tr, NULL, reader, NULL) == 0);
    /* A livelocked reader never returns: fail with a message, not a timeout. */
    while (!atomic_load(&reader_done)) {
        CHECK_MSG(tk_now() - t0 < deadline_s + 5,
                  "the long transaction committed %ld of %ld times in %.0f s (livelock); "
                  "writer: %ld commits",
                  reader_commits, want_commits, deadline_s + 5, atomic_load(&writer_progress));
        usleep(10000);
    }
    CHECK(pthread_join(tr, NULL) == 0);
    CHECK(pthread_join(tw, NULL) == 0);
    double secs = tk_now() - t0;

    printf("reader: %ld/%ld commits (%ld attempts) in %.2f s, %.1f ms per commit; "
           "writer: %ld commits, %ld frees\n",
           reader_commits, want_commits, reader_attempts, reader_secs,
           reader_commits ? reader_secs * 1e3 / (double)reader_commits : 0.0, writer_commits,
           writer_frees);
    if (measure) {
        printf("writer: %.0f commits/s, %.0f frees/s over %.2f s; reader: %ld yields waiting\n",
               (double)writer_commits / secs, (double)writer_frees / secs, secs, handshake_yields);
        for (long i = 0; i < reader_attempts && i < 64; i++)
            printf("  attempt %ld (%s): begun at %.3f s, %s%.3f s later\n", i,
                   attempt_sw[i] ? "software" : "serial", attempt_start[i] - t0,
                   attempt_end[i] ? "committed " : "next begun ",
                   (attempt_end[i]            ? attempt_end[i]
                    : i + 1 < reader_attempts ? attempt_start[i + 1]
                                              : tk_now()) -
                       attempt_start[i]);
    }
    CHECK_MSG(reader_commits == want_commits,
              "the long transaction committed %ld of %ld times in %.1f s (livelock)",
              reader_commits, want_commits, deadline_s);
    CHECK_EQ(reader_bad_sums, 0);
    CHECK(writer_commits > 0);

    long sum = 0, count = 0;
    for (long i = 0; i < nnodes; i++)
        sum += slots[i]->value;
    CHECK_EQ(sum, nnodes * TOTAL_PER_NODE);
    for (struct node *n = stack_top; n; n = n->next)
        count++;
    CHECK_EQ(count, stack_count);
    while (stack_top) {
        struct node *n = stack_top;
        stack_top = n->next;
        free(n);
    }
    for (long i = 0; i < nnodes; i++)
        free(slots[i]);
    free(slots);
    printf("ok\n");
    return 0;
}
