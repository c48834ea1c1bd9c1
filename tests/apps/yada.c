/* SPDX-License-Identifier: MIT */
/* yada.c - work-list mesh refinement (in the style of STAMP's yada) on a
 * one-dimensional mesh: a doubly linked list of segments [start, end) that
 * tiles [0, L). A segment longer than THRESH is "bad".
 *
 * Phase 1: threads push the bad segments of their slice onto a shared
 * priority heap (longest first, the order a transaction_safe function
 * pointer); the heap's array starts tiny and is reallocated inside the
 * transactions (malloc a larger one, copy, free the old one; it shrinks too).
 * Phase 2: each transaction pops the longest bad segment, builds its cavity
 * (it and its right neighbour, in a struct on the callee's stack), replaces
 * the cavity by three new segments (malloc), frees the old ones (or marks a
 * neighbour that is still on the heap dead, to be freed by whoever pops it)
 * and pushes the new bad segments. The work ends when the heap is empty.
 * Oracle: the list tiles [0, L) in order with consistent back links, every
 * segment is good, none is dead or on the heap, the heap is empty, and the
 * segment count equals the initial count plus the segments the threads
 * created minus those they freed (counted outside the transactions).
 *
 * SIZE: the number of initial segments (default 20000).
 */
#include "app_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THRESH 12
#define HEAP_MIN 4
#define TS __attribute__((transaction_safe))
#define TS_NOINLINE __attribute__((transaction_safe, noinline))

typedef struct seg {
    long start, end;
    struct seg *prev, *next;
    int in_heap, dead;
} seg;

typedef int (*seg_cmp_fn)(const seg *a, const seg *b) TS;

typedef struct heap {
    seg **a;
    long n, cap, grows, shrinks;
    seg_cmp_fn before;
} heap;

/* The cavity of a refinement: on the stack of the transaction's callee. */
typedef struct cavity {
    seg *el[2];
    int n;
    long start, end;
    seg *prev, *next;
    long cut[4]; /* cut[0] = start, cut[3] = end */
} cavity;

static struct {
    seg *head;
    long total; /* L */
} mesh;
static heap H;
static seg **initial;
static long ninitial;

struct tally {
    long created, freed, refined, popped_dead;
    char pad[64];
};
static struct tally *tallies;
static app_cfg cfg;

TS static int longer_first(const seg *a, const seg *b) {
    long la = a->end - a->start, lb = b->end - b->start;
    if (la != lb)
        return la > lb;
    return a->start < b->start;
}

/* Moves the heap's elements to a new array of cap slots (inside the
 * caller's transaction: malloc, copy, free). */
TS_NOINLINE static void heap_resize(heap *h, long cap) {
    seg **na = malloc(sizeof *na * (size_t)cap);
    memcpy(na, h->a, sizeof *na * (size_t)h->n);
    free(h->a);
    h->a = na;
    h->cap = cap;
}

TS_NOINLINE static void heap_push(heap *h, seg *s) {
    if (h->n == h->cap) {
        heap_resize(h, h->cap * 2);
        h->grows++;
    }
    seg_cmp_fn before = h->before;
    long i = h->n++;
    while (i > 0) {
        long p = (i - 1) / 2;
        if (!before(s, h->a[p]))
            break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = s;
    s->in_heap = 1;
}

TS_NOINLINE static seg *heap_pop(heap *h) {
    if (h->n == 0)
        return NULL;
    seg_cmp_fn before = h->before;
    seg *top = h->a[0];
    seg *last = h->a[--h->n];
    long i = 0;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(h->a[c + 1], h->a[c]))
            c++;
        if (!before(h->a[c], last))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0)
        h->a[i] = last;
    if (h->cap > HEAP_MIN && h->n < h->cap / 4) {
        heap_resize(h, h->cap / 2);
        h->shrinks++;
    }
    top->in_heap = 0;
    return top;
}

TS static int is_bad(const seg *s) { return s->end - s->start > THRESH; }

TS_NOINLINE static void build_cavity(cavity *cv, seg *s) {
    cv->n = 0;
    cv->el[cv->n++] = s;
    if (s->next)
        cv->el[cv->n++] = s->next;
    cv->start = s->start;
    cv->end = cv->el[cv->n - 1]->end;
    cv->prev = s->prev;
    cv->next = cv->el[cv->n - 1]->next;
    long len = cv->end - cv->start;
    uint64_t h = (uint64_t)cv->start * 0x9e3779b97f4a7c15ull ^ (uint64_t)cv->end;
    long j = (long)(h % (uint64_t)(len / 6 + 1));
    long c1 = cv->start + len / 3 - j / 2;
    long c2 = cv->start + 2 * len / 3 + (j + 1) / 2;
    if (c1 <= cv->start)
        c1 = cv->start + 1;
    if (c2 <= c1)
        c2 = c1 + 1;
    if (c2 >= cv->end)
        c2 = cv->end - 1;
    cv->cut[0] = cv->start;
    cv->cut[1] = c1;
    cv->cut[2] = c2;
    cv->cut[3] = cv->end;
}

/* Allocates the three segments that replace the cavity into nw[] (an
 * array on the caller's stack). */
TS_NOINLINE static void make_pieces(const cavity *cv, seg **nw) {
    for (int i = 0; i < 3; i++) {
        nw[i] = malloc(sizeof(seg));
        nw[i]->start = cv->cut[i];
        nw[i]->end = cv->cut[i + 1];
        nw[i]->in_heap = 0;
        nw[i]->dead = 0;
    }
}

/* One refinement step. Returns -1 when the heap is empty, else
 * created * 16 + freed (0 created for a dead segment). */
TS_NOINLINE static long refine_one(void) {
    seg *s = heap_pop(&H);
    if (!s)
        return -1;
    if (s->dead) {
        free(s);
        return 1;
    }
    CHECK_MSG(is_bad(s), "good segment [%ld, %ld) on the heap", s->start, s->end);
    cavity cv;
    build_cavity(&cv, s);
    seg *nw[3];
    make_pieces(&cv, nw);
    for (int i = 0; i < 3; i++) {
        nw[i]->prev = i > 0 ? nw[i - 1] : cv.prev;
        nw[i]->next = i < 2 ? nw[i + 1] : cv.next;
    }
    if (cv.prev)
        cv.prev->next = nw[0];
    else
        mesh.head = nw[0];
    if (cv.next)
        cv.next->prev = nw[2];
    long freed = 0;
    for (int i = 0; i < cv.n; i++) {
        if (cv.el[i]->in_heap) {
            cv.el[i]->dead = 1; /* whoever pops it frees it */
        } else {
            free(cv.el[i]);
            freed++;
        }
    }
    for (int i = 0; i < 3; i++)
        if (is_bad(nw[i]))
            heap_push(&H, nw[i]);
    return 3 * 16 + freed;
}

static void phase_push(int tid, void *arg) {
    (void)arg;
    long lo = ninitial * tid / cfg.threads, hi = ninitial * (tid + 1) / cfg.threads;
    for (long i = lo; i < hi; i++) {
        seg *s = initial[i];
        if (is_bad(s))
            __transaction_atomic { heap_push(&H, s); }
    }
}

static void phase_refine(int tid, void *arg) {
    (void)arg;
    struct tally *ty = &tallies[tid];
    memset(ty, 0, sizeof *ty);
    for (;;) {
        long r;
        __transaction_atomic { r = refine_one(); }
        if (r < 0)
            break;
        ty->created += r / 16;
        ty->freed += r % 16;
        if (r / 16)
            ty->refined++;
        else
            ty->popped_dead++;
    }
}

static void setup(void) {
    uint64_t rng = app_seed(&cfg, 999, 2);
    ninitial = cfg.size;
    initial = app_xmalloc(sizeof *initial * (size_t)ninitial);
    long at = 0;
    seg *prev = NULL;
    for (long i = 0; i < ninitial; i++) {
        seg *s = app_xmalloc(sizeof *s);
        s->start = at;
        at += 1 + (long)(app_rand(&rng) % (4 * THRESH));
        s->end = at;
        s->prev = prev;
        s->next = NULL;
        s->in_heap = s->dead = 0;
        if (prev)
            prev->next = s;
        else
            mesh.head = s;
        prev = s;
        initial[i] = s;
    }
    mesh.total = at;
    H.a = app_xmalloc(sizeof *H.a * HEAP_MIN);
    H.n = 0;
    H.cap = HEAP_MIN;
    H.grows = H.shrinks = 0;
    H.before = longer_first;
}

static void check_and_free(void) {
    long n = 0, at = 0, created = 0, freed = 0, refined = 0;
    seg *prev = NULL;
    CHECK_MSG(H.n == 0, "heap holds %ld segments at the end", H.n);
    for (seg *s = mesh.head; s; s = s->next) {
        CHECK_MSG(s->start == at, "segment %ld starts at %ld, expected %ld", n, s->start, at);
        CHECK_MSG(s->end > s->start, "empty segment at %ld", s->start);
        CHECK_MSG(!is_bad(s), "bad segment [%ld, %ld) left", s->start, s->end);
        CHECK_MSG(!s->dead && !s->in_heap, "segment at %ld: dead %d in_heap %d", s->start, s->dead,
                  s->in_heap);
        CHECK_MSG(s->prev == prev, "segment at %ld: wrong back link", s->start);
        at = s->end;
        prev = s;
        n++;
    }
    CHECK_MSG(at == mesh.total, "the mesh ends at %ld, expected %ld", at, mesh.total);
    for (int t = 0; t < cfg.threads; t++) {
        created += tallies[t].created;
        freed += tallies[t].freed;
        refined += tallies[t].refined;
    }
    CHECK_MSG(n == ninitial + created - freed, "%ld segments, expected %ld + %ld - %ld", n,
              ninitial, created, freed);
    CHECK_MSG(H.grows > 0, "the heap never grew");
    if (cfg.round == 0)
        printf("INFO yada: %ld -> %ld segments, %ld refinements, heap grew %ld and shrank %ld "
               "times\n",
               ninitial, n, refined, H.grows, H.shrinks);
    while (mesh.head) {
        seg *s = mesh.head;
        mesh.head = s->next;
        free(s);
    }
    free(H.a);
    free(initial);
}

int main(int argc, char **argv) {
    app_init(&cfg, "yada", argc, argv, 20000);
    tallies = app_xmalloc(sizeof *tallies * (size_t)cfg.threads);
    app_rounds(&cfg, setup, phase_push, phase_refine, check_and_free);
    free(tallies);
    app_pass("oracle holds");
    return 0;
}
