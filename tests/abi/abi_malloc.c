/* SPDX-License-Identifier: MIT */
/* abi_malloc.c - malloc, calloc and free inside transactions that abort
 * (fault injection, conflicts) or are cancelled.
 *
 * gcc turns them into _ITM_malloc, _ITM_calloc and _ITM_free: memory
 * allocated by an attempt that rolls back is freed again, and a free takes
 * effect only when the transaction commits. So:
 *   - no leak: the heap in use (mallinfo2) does not grow with the number of
 *     rolled-back attempts;
 *   - no early free: a block freed by an attempt that rolled back is still
 *     allocated and intact when the next attempt reads it (each block carries
 *     a magic number where glibc would put its free-list pointers, and is
 *     checked inside the transaction), and the retried free does not free it
 *     twice (glibc aborts on a double free; valgrind runs in CMakeLists.txt);
 *   - calloc'ed memory is zeroed.
 *
 * Threads swap a shared "current block" (read it, allocate the next, copy,
 * free the old one) and push/pop a shared list.
 *
 * usage: abi_malloc [--small]   (--small: fewer operations, for valgrind)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_common.h"

#define MAGIC1 0x5452414e53414354ull /* overwritten by glibc's tcache when freed */
#define MAGIC2 0x4d414c4c4f43424cull
#define PAYLOAD 20

struct block {
    uint64_t magic1, magic2;
    long seq;
    long payload[PAYLOAD];
};

struct node {
    uint64_t magic1, magic2;
    long value;
    struct node *next;
};

static struct block *current;
static struct node *list_head;
static long list_pushed, list_popped, list_sum_popped;
static long ops = 3000;
static unsigned long bad_blocks; /* counted inside transactions (a doomed attempt counts too) */
static unsigned long bad_calloc;
int cancel_now = 1; /* extern linkage: gcc cannot fold the cancel away */

ABI_PURE static void note_bad(unsigned long *counter) {
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* One swap: the next block replaces the current one, which is freed. */
__attribute__((noinline)) static void swap_block(void) {
    __transaction_atomic {
        abi_count_attempt();
        struct block *old = current;
        if (old->magic1 != MAGIC1 || old->magic2 != MAGIC2)
            note_bad(&bad_blocks); /* freed by an attempt that rolled back? */
        struct block *n = malloc(sizeof *n);
        n->magic1 = MAGIC1;
        n->magic2 = MAGIC2;
        n->seq = old->seq + 1;
        for (int i = 0; i < PAYLOAD; i++)
            n->payload[i] = old->payload[i] + i;
        /* zeroed memory from calloc, used and freed in the same transaction */
        long *z = calloc(16, sizeof *z);
        for (int i = 0; i < 16; i++)
            if (z[i] != 0)
                note_bad(&bad_calloc);
        z[3] = n->seq;
        n->payload[0] += z[3] - n->seq;
        free(z);
        current = n;
        free(old);
    }
}

__attribute__((noinline)) static void push_node(long v) {
    __transaction_atomic {
        struct node *n = malloc(sizeof *n);
        n->magic1 = MAGIC1;
        n->magic2 = MAGIC2;
        n->value = v;
        n->next = list_head;
        list_head = n;
        list_pushed++;
    }
}

__attribute__((noinline)) static void pop_node(void) {
    __transaction_atomic {
        struct node *n = list_head;
        if (n) {
            if (n->magic1 != MAGIC1 || n->magic2 != MAGIC2)
                note_bad(&bad_blocks);
            list_head = n->next;
            list_sum_popped += n->value;
            list_popped++;
            free(n);
        }
    }
}

/* A large block (mmapped by glibc) allocated by an attempt; freed at once. */
__attribute__((noinline)) static void big_alloc(void) {
    __transaction_atomic {
        char *big = malloc(256 * 1024);
        big[0] = 1;
        big[256 * 1024 - 1] = 2;
        current->payload[1] += big[0] + big[256 * 1024 - 1] - 3;
        free(big);
    }
}

/* Allocated, published, then cancelled: freed by the cancel, and the pointer
 * store undone. Stores only: a cancelled read-modify-write (say, a push on
 * list_head) hits a libitm defect at -O2 that abi_cancel checks by name
 * (cancel_rmw); here it would leave a freed node in the list. */
static struct node *cancelled_slot;

/* GNU libitm calls abort() when a transaction it has made irrevocable on its
 * own (after many restarts under contention) reaches __transaction_cancel
 * (_ITM_abortTransaction checks STATE_IRREVOCABLE): about 1 run in 50 under
 * the sanitizer lane's slower code. On libitm, cancels therefore run only
 * while one thread runs (no restarts); txkit cancels in both phases. */
static int cancel_in_threads;
static int threads_running;

__attribute__((noinline)) static void cancelled_alloc(void) {
    __transaction_atomic {
        struct node *n = malloc(sizeof *n);
        n->value = -1;
        n->next = NULL;
        cancelled_slot = n;
        if (cancel_now)
            __transaction_cancel;
    }
}

static void *worker(void *arg) {
    long self = (long)(intptr_t)arg;
    for (long i = 0; i < ops; i++) {
        swap_block();
        push_node(self * ops + i);
        if (i % 2)
            pop_node();
        if (i % 64 == 0)
            big_alloc();
        if (i % 8 == 0 && (threads_running == 1 || cancel_in_threads))
            cancelled_alloc();
    }
    return NULL;
}

static void run_threads(int n) {
    pthread_t th[2];
    threads_running = n;
    for (long t = 0; t < n; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t), 0);
    for (int t = 0; t < n; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);
}

int main(int argc, char **argv) {
    abi_init("abi_malloc");
    cancel_in_threads = abi_on_txkit();
    if (argc > 1 && strcmp(argv[1], "--small") == 0)
        ops = 300;
    current = calloc(1, sizeof *current);
    CHECK(current != NULL);
    current->magic1 = MAGIC1;
    current->magic2 = MAGIC2;

    /* warm up: the runtimes' own logs and caches reach their working size */
    run_threads(1);
    size_t before = abi_heap_in_use();
    long pushed_before = list_pushed, popped_before = list_popped;
    run_threads(2);
    size_t after = abi_heap_in_use();

    /* blocks still allocated: the current block and the list's nodes */
    long live_nodes = (list_pushed - list_popped) - (pushed_before - popped_before);
    size_t expected = (size_t)live_nodes * (sizeof(struct node) + 16);
    size_t grew = after > before ? after - before : 0;
    printf("INFO abi_malloc: heap in use grew by %zu bytes (%ld more live nodes); "
           "%llu attempts\n",
           grew, live_nodes, (unsigned long long)abi_attempts());
    CHECK_EQ(bad_blocks, 0);
    CHECK_EQ(bad_calloc, 0);
    CHECK(cancelled_slot == NULL);
    CHECK_EQ(current->magic1, MAGIC1);
    CHECK_EQ(current->seq, 3 * ops);
    /* a leak of every rolled-back or cancelled allocation would be ~100 bytes
     * times thousands of attempts */
    ABI_EXPECT("no_leak", grew <= expected + 128 * 1024, "the heap grew more than the live data");

    /* the list: bounded walk (a lost update could leave a cycle) */
    long count = 0, sum = 0, bad_nodes = 0;
    for (struct node *n = list_head; n && count <= list_pushed; n = n->next) {
        bad_nodes += n->magic1 != MAGIC1 || n->magic2 != MAGIC2 || n->value < 0;
        count++;
        sum += n->value;
    }
    printf("INFO abi_malloc: list: %ld nodes (%ld pushed, %ld popped), %ld bad\n", count,
           list_pushed, list_popped, bad_nodes);
    CHECK_EQ(bad_nodes, 0);
    CHECK_EQ(count, list_pushed - list_popped);
    CHECK_EQ(list_pushed, 3 * ops);
    CHECK_EQ(list_popped, 3 * (ops / 2));
    long all = 0;
    for (long i = 0; i < ops; i++)
        all += i + (ops + i) + i; /* thread 0 twice (warm-up, then with thread 1) */
    CHECK_EQ(sum + list_sum_popped, all);

    uint64_t h = abi_hash(ABI_HASH_INIT, current->payload, sizeof current->payload);
    abi_summary("swaps=%ld pushed=%ld popped=%ld left=%ld bad_blocks=%lu bad_calloc=%lu "
                "payload_hash=%016llx",
                current->seq, list_pushed, list_popped, count, bad_blocks, bad_calloc,
                (unsigned long long)h);

    while (list_head) {
        struct node *n = list_head;
        list_head = n->next;
        free(n);
    }
    free(current);
    return abi_finish();
}
