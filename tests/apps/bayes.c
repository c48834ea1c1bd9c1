/* SPDX-License-Identifier: MIT */
/* bayes.c - structure learner (in the style of STAMP's bayes): greedy
 * search for the parents of NVARS binary variables given NRECS records
 * generated from a hidden network (each variable the parity of its true
 * parents, with noise).
 *
 * Workers pop learning tasks from a shared list (small transactions that
 * free the task) and run each task as one long, read-mostly transaction:
 * for every candidate parent of the task's variable, a cycle check
 * (depth-first search with a stack array and a visited set on the callee's
 * stack) and a re-scoring of the variable over every record (all read
 * inside the transaction). Rarely the task improves the score and
 * writes: insert an edge (malloc two list cells) or remove one (free them).
 * After each task a worker notes a few results in a shared bounded list
 * (small transactions that malloc a record and free the oldest), so that
 * small writers that free memory commit all the time while long
 * transactions run. Thread 0 reports progress from a __transaction_relaxed that prints and
 * calls a transaction_callable summary.
 * Oracle: the network is acyclic; parent and child lists mirror each other
 * with no duplicates; every stored score equals a sequential re-scoring of
 * the final parent set; the total score and the edge count agree with the
 * nodes and with the edges the workers inserted minus those they removed.
 *
 * SIZE: the number of learning tasks (default 300).
 */
#include "app_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVARS 40
#ifndef BAYES_NRECS
#define BAYES_NRECS 2048
#endif
#define NRECS BAYES_NRECS
#define MAXP 3
#define PENALTY (NRECS / 32)
#define TS __attribute__((transaction_safe))
#define TS_NOINLINE __attribute__((transaction_safe, noinline))

typedef struct cell {
    int v;
    struct cell *next;
} cell;

typedef struct node {
    cell *parents, *children;
    int nparents;
    uint64_t pmask;
    long score;
} node;

enum { T_INSERT, T_REMOVE };
typedef struct task {
    int op, from, to;
    struct task *next;
} task;

static struct {
    node nodes[NVARS];
    long total_score, nedges;
} net;
static uint64_t *records; /* shared, read inside the transactions */
static uint64_t true_parents[NVARS];
static task *task_head;

/* The recent results, newest first, at most RECENT_MAX: every task notes a
 * few (small transactions that malloc one record and free the oldest). */
#define RECENT_MAX 32
#define NOTES_PER_TASK 8
typedef struct note {
    int v;
    long score;
    struct note *next;
    char pad[40];
} note;
static struct {
    note *head;
    long n, pushed, dropped;
} recent;
static long ntasks_done;
static app_cfg cfg;

struct tally {
    long inserted, removed, tasks, rejected_cycle, notes;
    char pad[64];
};
static struct tally *tallies;

/* How well the parity of the parents in pmask predicts v, minus a penalty
 * per parent. Reads every record. */
TS_NOINLINE static long score_of(int v, uint64_t pmask) {
    long match = 0;
    for (long r = 0; r < NRECS; r++) {
        uint64_t rec = records[r];
        int pred = __builtin_parityll(rec & pmask);
        match += pred == (int)((rec >> v) & 1);
    }
    return match - PENALTY * __builtin_popcountll(pmask);
}

/* Whether `to` is reachable from `from` along child edges; stack[] and
 * *visited belong to the caller (its stack). */
TS_NOINLINE static int reaches(int from, int to, int *stack, uint64_t *visited) {
    int sp = 0;
    *visited = 1ull << from;
    stack[sp++] = from;
    while (sp > 0) {
        int x = stack[--sp];
        if (x == to)
            return 1;
        for (cell *c = net.nodes[x].children; c; c = c->next) {
            if (!(*visited & (1ull << c->v))) {
                *visited |= 1ull << c->v;
                stack[sp++] = c->v;
            }
        }
    }
    return 0;
}

TS static cell *cell_new(int v, cell *next) {
    cell *c = malloc(sizeof *c);
    c->v = v;
    c->next = next;
    return c;
}

/* Removes the cell naming v from *list and frees it; 1 when found. */
TS_NOINLINE static int cell_remove(cell **list, int v) {
    for (cell **pp = list; *pp; pp = &(*pp)->next) {
        if ((*pp)->v == v) {
            cell *c = *pp;
            *pp = c->next;
            free(c);
            return 1;
        }
    }
    return 0;
}

/* One learning task for variable v: INSERT scores every candidate parent
 * that keeps the network acyclic and adds the best one if it improves v's
 * score; REMOVE drops the parent whose removal helps most, if any. Returns
 * +1 (edge inserted), -1 (removed) or 0; *cycles (the caller's) counts the
 * candidates refused because they would close a cycle. */
TS_NOINLINE static int learn(int op, int v, long *cycles) {
    node *nv = &net.nodes[v];
    long best = nv->score;
    int bu = -1;
    if (op == T_INSERT) {
        if (nv->nparents >= MAXP)
            return 0;
        int stack[NVARS];
        uint64_t visited = 0;
        for (int u = 0; u < NVARS; u++) {
            uint64_t bit = 1ull << u;
            if (u == v || (nv->pmask & bit))
                continue;
            if (reaches(v, u, stack, &visited)) {
                (*cycles)++;
                continue;
            }
            long s = score_of(v, nv->pmask | bit);
            if (s > best) {
                best = s;
                bu = u;
            }
        }
        if (bu < 0)
            return 0;
        nv->parents = cell_new(bu, nv->parents);
        net.nodes[bu].children = cell_new(v, net.nodes[bu].children);
        nv->nparents++;
        nv->pmask |= 1ull << bu;
        net.total_score += best - nv->score;
        nv->score = best;
        net.nedges++;
        return 1;
    }
    for (cell *c = nv->parents; c; c = c->next) {
        long s = score_of(v, nv->pmask & ~(1ull << c->v));
        if (s >= best) {
            best = s;
            bu = c->v;
        }
    }
    if (bu < 0)
        return 0;
    CHECK_MSG(cell_remove(&nv->parents, bu), "edge %d->%d: no parent cell", bu, v);
    CHECK_MSG(cell_remove(&net.nodes[bu].children, v), "edge %d->%d: no child cell", bu, v);
    nv->nparents--;
    nv->pmask &= ~(1ull << bu);
    net.total_score += best - nv->score;
    nv->score = best;
    net.nedges--;
    return -1;
}

/* Notes (v, its score now) in the recent results, dropping the oldest. */
TS_NOINLINE static void note_result(int v) {
    note *r = malloc(sizeof *r);
    r->v = v;
    r->score = net.nodes[v].score;
    r->next = recent.head;
    recent.head = r;
    recent.n++;
    recent.pushed++;
    if (recent.n > RECENT_MAX) {
        note **pp = &recent.head;
        while ((*pp)->next)
            pp = &(*pp)->next;
        free(*pp);
        *pp = NULL;
        recent.n--;
        recent.dropped++;
    }
}

/* Edges and total score by walking the network. Callable from relaxed
 * transactions and outside. */
__attribute__((transaction_callable, noinline)) static long network_summary(long *total) {
    long edges = 0, sum = 0;
    for (int v = 0; v < NVARS; v++) {
        for (cell *c = net.nodes[v].parents; c; c = c->next)
            edges++;
        sum += net.nodes[v].score;
    }
    *total = sum;
    return edges;
}

static void worker(int tid, void *arg) {
    (void)arg;
    struct tally *ty = &tallies[tid];
    memset(ty, 0, sizeof *ty);
    for (;;) {
        task t = {0, 0, 0, NULL};
        int got;
        long done;
        __transaction_atomic {
            task *p = task_head;
            got = p != NULL;
            if (p) {
                task_head = p->next;
                t = *p;
                free(p);
                done = ++ntasks_done;
            }
        }
        if (!got)
            break;
        int r;
        long cycles = 0;
        __transaction_atomic { r = learn(t.op, t.to, &cycles); }
        ty->tasks++;
        ty->inserted += r == 1;
        ty->removed += r == -1;
        ty->rejected_cycle += cycles;
        for (int k = 0; k < NOTES_PER_TASK; k++) {
            int v = (t.to + k) % NVARS;
            __transaction_atomic { note_result(v); }
            ty->notes++;
        }
        if (tid == 0 && cfg.round == 0 && done % 128 == 0) {
            __transaction_relaxed {
                long total, edges = network_summary(&total);
                printf("INFO bayes: %ld tasks done, %ld edges, score %ld\n", done, edges, total);
            }
        }
    }
}

static void setup(void) {
    uint64_t rng = app_seed(&cfg, 999, 3);
    memset(&net, 0, sizeof net);
    memset(true_parents, 0, sizeof true_parents);
    for (int v = 6; v < NVARS; v++) {
        int k = 1 + (int)(app_rand(&rng) % 2);
        for (int i = 0; i < k; i++)
            true_parents[v] |= 1ull << (app_rand(&rng) % (uint64_t)v);
    }
    records = app_xmalloc(sizeof *records * NRECS);
    for (long r = 0; r < NRECS; r++) {
        uint64_t rec = app_rand(&rng) & ((1ull << 6) - 1);
        for (int v = 6; v < NVARS; v++) {
            int bit = __builtin_parityll(rec & true_parents[v]);
            if (app_rand(&rng) % 10 == 0)
                bit ^= 1;
            rec |= (uint64_t)bit << v;
        }
        records[r] = rec;
    }
    for (int v = 0; v < NVARS; v++) {
        net.nodes[v].score = score_of(v, 0);
        net.total_score += net.nodes[v].score;
    }
    task_head = NULL;
    ntasks_done = 0;
    memset(&recent, 0, sizeof recent);
    for (long i = 0; i < cfg.size; i++) {
        task *t = app_xmalloc(sizeof *t);
        t->op = app_rand(&rng) % 100 >= 85 ? T_REMOVE : T_INSERT;
        t->from = -1;
        t->to = (int)(app_rand(&rng) % NVARS);
        t->next = task_head;
        task_head = t;
    }
}

static void check_and_free(void) {
    long edges = 0, sum = 0, inserted = 0, removed = 0, tasks = 0, cyc = 0, notes = 0, nrecent = 0;
    int indeg[NVARS], order = 0, queue[NVARS], qh = 0, qt = 0;
    CHECK_MSG(task_head == NULL, "tasks left over");
    CHECK_MSG(ntasks_done == cfg.size, "%ld tasks done of %ld", ntasks_done, cfg.size);
    for (int v = 0; v < NVARS; v++) {
        node *n = &net.nodes[v];
        uint64_t seen = 0;
        int np = 0;
        for (cell *c = n->parents; c; c = c->next) {
            CHECK_MSG(c->v >= 0 && c->v < NVARS && c->v != v, "node %d: bad parent %d", v, c->v);
            CHECK_MSG(!(seen & (1ull << c->v)), "node %d: parent %d twice", v, c->v);
            seen |= 1ull << c->v;
            int mirrored = 0;
            for (cell *d = net.nodes[c->v].children; d; d = d->next)
                mirrored += d->v == v;
            CHECK_MSG(mirrored == 1, "edge %d->%d: %d child cells", c->v, v, mirrored);
            np++;
        }
        int nc = 0;
        for (cell *d = n->children; d; d = d->next)
            nc++;
        (void)nc;
        CHECK_MSG(seen == n->pmask && np == n->nparents && np <= MAXP,
                  "node %d: parents %d/%d, mask differs %d", v, np, n->nparents, seen != n->pmask);
        long s = score_of(v, n->pmask);
        CHECK_MSG(s == n->score, "node %d: stored score %ld, recomputed %ld", v, n->score, s);
        edges += np;
        sum += s;
        indeg[v] = np;
    }
    long total;
    CHECK_MSG(network_summary(&total) == edges && total == sum, "summary differs");
    CHECK_MSG(sum == net.total_score, "total score %ld, nodes sum to %ld", net.total_score, sum);
    CHECK_MSG(edges == net.nedges, "edge count %ld, lists hold %ld", net.nedges, edges);
    for (int t = 0; t < cfg.threads; t++) {
        inserted += tallies[t].inserted;
        removed += tallies[t].removed;
        tasks += tallies[t].tasks;
        cyc += tallies[t].rejected_cycle;
        notes += tallies[t].notes;
    }
    for (note *r = recent.head; r; r = r->next)
        nrecent++;
    CHECK_MSG(recent.pushed == notes && recent.pushed - recent.dropped == recent.n &&
                  nrecent == recent.n && recent.n == (notes < RECENT_MAX ? notes : RECENT_MAX),
              "recent results: pushed %ld (notes %ld), dropped %ld, n %ld, listed %ld",
              recent.pushed, notes, recent.dropped, recent.n, nrecent);
    CHECK_MSG(tasks == cfg.size, "workers ran %ld tasks of %ld", tasks, cfg.size);
    CHECK_MSG(edges == inserted - removed, "%ld edges, inserted %ld - removed %ld", edges, inserted,
              removed);
    /* acyclic: Kahn's algorithm consumes every node */
    for (int v = 0; v < NVARS; v++)
        if (indeg[v] == 0)
            queue[qt++] = v;
    while (qh < qt) {
        int x = queue[qh++];
        order++;
        for (cell *d = net.nodes[x].children; d; d = d->next)
            if (--indeg[d->v] == 0)
                queue[qt++] = d->v;
    }
    CHECK_MSG(order == NVARS, "the network has a cycle (%d of %d nodes sorted)", order, NVARS);
    if (cfg.round == 0)
        printf("INFO bayes: %ld edges (%ld inserted, %ld removed, %ld cycles refused), score "
               "%ld\n",
               edges, inserted, removed, cyc, sum);
    for (int v = 0; v < NVARS; v++) {
        while (net.nodes[v].parents)
            cell_remove(&net.nodes[v].parents, net.nodes[v].parents->v);
        while (net.nodes[v].children)
            cell_remove(&net.nodes[v].children, net.nodes[v].children->v);
    }
    while (recent.head) {
        note *r = recent.head;
        recent.head = r->next;
        free(r);
    }
    free(records);
}

int main(int argc, char **argv) {
    app_init(&cfg, "bayes", argc, argv, 300);
    tallies = app_xmalloc(sizeof *tallies * (size_t)cfg.threads);
    app_rounds(&cfg, setup, worker, NULL, check_and_free);
    free(tallies);
    app_pass("oracle holds");
    return 0;
}
