/* SPDX-License-Identifier: MIT */
/* ssca2.c - graph construction (in the style of STAMP's ssca2, kernel 1):
 * build the adjacency structure of a directed multigraph of NV vertices from
 * a stream of 8 x NV weighted edges, in thousands of tiny transactions.
 *
 * Edges are generated from the round's seed by index, with a skew: one edge
 * in eight starts at one of 16 hot vertices, so their counters conflict.
 * Phase 1 (count): threads claim chunks of edge indices from a shared cursor
 * (a one-word transaction); per edge one transaction adds to the source's
 * out-degree and folds the weight into the global maximum and its count
 * (read by every edge, written by few), and another appends the source to the target's in-list, an array that
 * grows inside the transaction (malloc the larger one, copy, free the old).
 * A chunk's weights are summed privately and added to a global floating-point
 * sum in one transaction per chunk.
 * Phase 2 (place): per edge one transaction gives the source its range of
 * the edge array at its first edge (a shared cursor advanced by its
 * out-degree, read inside the transaction) and takes the next position in
 * it; the target is written there outside any transaction (the position is
 * the thread's alone).
 * Oracle (sequential, from the same seed): every out-degree, the maximum
 * weight and its count, the weight sum (exact: halves of small integers);
 * the source ranges are disjoint and cover the edge array; each source's
 * targets and each target's in-list are, as multisets, what the edge list
 * says; the threads' edge counts add up.
 *
 * SIZE: the number of vertices (default 4096).
 */
#include "app_common.h"

#include <stdlib.h>
#include <string.h>

#define TS __attribute__((transaction_safe))
#define TS_NOINLINE __attribute__((transaction_safe, noinline))

#define EDGES_PER_VERTEX 8
#define CHUNK 64 /* edge indices per claim */
#define HOT 16   /* vertices that one edge in eight starts at */

typedef struct vec {
    long *a;
    long n, cap;
} vec;

static app_cfg cfg;
static long nv, ne;
static uint64_t round_seed;

/* shared, written inside transactions */
static long *outdeg, *fill, *base;
static vec *inlist;
static long cursor_count, cursor_place, next_base;
static struct {
    long maxw, maxcount;
    double wsum;
} glob;
/* shared, each element written by one thread outside transactions */
static long *adj;

struct tally {
    long counted, placed;
} __attribute__((aligned(64))); /* a line each: counted outside transactions */
static struct tally *tallies;

/* Edge i of this round: source, target, weight (1..255). Pure. */
static void edge(long i, long *u, long *v, long *w) {
    uint64_t s = round_seed ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
    if (!s)
        s = 1;
    uint64_t r = app_rand(&s);
    *u = (r & 7) == 0 ? (long)((r >> 3) % HOT) : (long)((r >> 3) % (uint64_t)nv);
    r = app_rand(&s);
    *v = (long)(r % (uint64_t)nv);
    *w = 1 + (long)((r >> 32) % 255);
}

/* Claim the next chunk of edge indices from *cursor; -1 when none is left. */
static long claim(long *cursor) {
    long start;
    __transaction_atomic {
        start = *cursor;
        if (start < ne)
            *cursor = start + CHUNK;
    }
    return start < ne ? start : -1;
}

/* Append x to *q, growing its array inside the caller's transaction; 0 when
 * the larger array could not be had (nothing changed). */
TS_NOINLINE static int vec_push(vec *q, long x) {
    if (q->n == q->cap) {
        long cap = q->cap ? 2 * q->cap : 2;
        long *a = malloc((size_t)cap * sizeof *a);
        if (!a)
            return 0;
        for (long k = 0; k < q->n; k++)
            a[k] = q->a[k];
        free(q->a);
        q->a = a;
        q->cap = cap;
    }
    q->a[q->n++] = x;
    return 1;
}

/* The maximum weight and its count: read by every edge, written by few
 * (once the maximum is 255, one edge in 255). */
TS static void fold_weight(long w) {
    if (w > glob.maxw) {
        glob.maxw = w;
        glob.maxcount = 1;
    } else if (w == glob.maxw) {
        glob.maxcount++;
    }
}

static void phase_count(int tid, void *arg) {
    (void)arg;
    long start;
    while ((start = claim(&cursor_count)) >= 0) {
        long end = start + CHUNK < ne ? start + CHUNK : ne;
        double sum = 0;
        for (long i = start; i < end; i++) {
            long u, v, w;
            edge(i, &u, &v, &w);
            __transaction_atomic {
                outdeg[u]++;
                fold_weight(w);
            }
            sum += (double)w * 0.5;
            int pushed;
            __transaction_atomic { pushed = vec_push(&inlist[v], u); }
            CHECK_MSG(pushed, "edge %ld: out of memory growing an in-list", i);
            tallies[tid].counted++;
        }
        __transaction_atomic { glob.wsum += sum; /* the chunk's partial sum */ }
    }
}

static void phase_place(int tid, void *arg) {
    (void)arg;
    long start;
    while ((start = claim(&cursor_place)) >= 0) {
        long end = start + CHUNK < ne ? start + CHUNK : ne;
        for (long i = start; i < end; i++) {
            long u, v, w, p;
            edge(i, &u, &v, &w);
            __transaction_atomic {
                if (base[u] < 0) {
                    base[u] = next_base;
                    next_base += outdeg[u];
                }
                p = base[u] + fill[u]++;
            }
            CHECK_MSG(p >= 0 && p < ne, "edge %ld: position %ld outside [0, %ld)", i, p, ne);
            adj[p] = v;
            tallies[tid].placed++;
        }
    }
}

static long *xcalloc(long n) {
    long *p = app_xmalloc((size_t)n * sizeof *p);
    memset(p, 0, (size_t)n * sizeof *p);
    return p;
}

static void setup(void) {
    nv = cfg.size;
    ne = nv * EDGES_PER_VERTEX;
    round_seed = app_seed(&cfg, 0, 0x55ca2);
    outdeg = xcalloc(nv);
    fill = xcalloc(nv);
    base = xcalloc(nv);
    for (long u = 0; u < nv; u++)
        base[u] = -1;
    adj = xcalloc(ne);
    for (long p = 0; p < ne; p++)
        adj[p] = -1;
    inlist = app_xmalloc((size_t)nv * sizeof *inlist);
    memset(inlist, 0, (size_t)nv * sizeof *inlist);
    cursor_count = cursor_place = next_base = 0;
    memset(&glob, 0, sizeof glob);
    memset(tallies, 0, sizeof *tallies * (size_t)cfg.threads);
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void check_and_free(void) {
    /* the expected graph, sequentially: out-degrees, weights, and both
     * adjacencies in compressed form (start offsets, then the lists) */
    long *deg = xcalloc(nv), *indeg = xcalloc(nv);
    long maxw = 0, maxcount = 0;
    double wsum = 0;
    for (long i = 0; i < ne; i++) {
        long u, v, w;
        edge(i, &u, &v, &w);
        deg[u]++;
        indeg[v]++;
        if (w > maxw) {
            maxw = w;
            maxcount = 1;
        } else if (w == maxw) {
            maxcount++;
        }
        wsum += (double)w * 0.5;
    }
    long *off = xcalloc(nv + 1), *inoff = xcalloc(nv + 1);
    for (long u = 0; u < nv; u++) {
        off[u + 1] = off[u] + deg[u];
        inoff[u + 1] = inoff[u] + indeg[u];
    }
    long *out = xcalloc(ne), *in = xcalloc(ne), *pos = xcalloc(nv), *inpos = xcalloc(nv);
    for (long i = 0; i < ne; i++) {
        long u, v, w;
        edge(i, &u, &v, &w);
        out[off[u] + pos[u]++] = v;
        in[inoff[v] + inpos[v]++] = u;
    }

    long counted = 0, placed = 0;
    for (int t = 0; t < cfg.threads; t++) {
        counted += tallies[t].counted;
        placed += tallies[t].placed;
    }
    CHECK_EQ(counted, ne);
    CHECK_EQ(placed, ne);
    CHECK_EQ(glob.maxw, maxw);
    CHECK_EQ(glob.maxcount, maxcount);
    CHECK_MSG(glob.wsum == wsum, "weight sum %.1f, expected %.1f", glob.wsum, wsum);
    CHECK_EQ(next_base, ne);

    /* the ranges: each source's is [base, base + degree), disjoint, covering */
    long *owner = xcalloc(ne);
    for (long p = 0; p < ne; p++)
        owner[p] = -1;
    for (long u = 0; u < nv; u++) {
        CHECK_MSG(outdeg[u] == deg[u], "vertex %ld: out-degree %ld, expected %ld", u, outdeg[u],
                  deg[u]);
        CHECK_MSG(fill[u] == deg[u], "vertex %ld: %ld placed, expected %ld", u, fill[u], deg[u]);
        if (deg[u] == 0) {
            CHECK_MSG(base[u] == -1, "vertex %ld: no edges but a range at %ld", u, base[u]);
            continue;
        }
        CHECK_MSG(base[u] >= 0 && base[u] + deg[u] <= ne, "vertex %ld: range [%ld, +%ld)", u,
                  base[u], deg[u]);
        for (long p = base[u]; p < base[u] + deg[u]; p++) {
            CHECK_MSG(owner[p] == -1, "position %ld in the ranges of %ld and %ld", p, owner[p], u);
            owner[p] = u;
        }
        /* the targets, as a multiset */
        qsort(adj + base[u], (size_t)deg[u], sizeof *adj, cmp_long);
        qsort(out + off[u], (size_t)deg[u], sizeof *out, cmp_long);
        CHECK_MSG(memcmp(adj + base[u], out + off[u], (size_t)deg[u] * sizeof *out) == 0,
                  "vertex %ld: its targets differ from the edge list's", u);
    }
    for (long v = 0; v < nv; v++) {
        vec *q = &inlist[v];
        CHECK_MSG(q->n == indeg[v], "vertex %ld: in-list of %ld, expected %ld", v, q->n, indeg[v]);
        CHECK_MSG(q->n <= q->cap, "vertex %ld: in-list of %ld in %ld", v, q->n, q->cap);
        if (q->n) {
            qsort(q->a, (size_t)q->n, sizeof *q->a, cmp_long);
            qsort(in + inoff[v], (size_t)q->n, sizeof *in, cmp_long);
            CHECK_MSG(memcmp(q->a, in + inoff[v], (size_t)q->n * sizeof *in) == 0,
                      "vertex %ld: its in-list differs from the edge list's", v);
        }
        free(q->a);
    }

    free(owner);
    free(out);
    free(in);
    free(pos);
    free(inpos);
    free(off);
    free(inoff);
    free(deg);
    free(indeg);
    free(inlist);
    free(adj);
    free(base);
    free(fill);
    free(outdeg);
}

int main(int argc, char **argv) {
    app_init(&cfg, "ssca2", argc, argv, 4096);
    CHECK_MSG(cfg.size >= HOT, "SIZE must be at least %d vertices", HOT);
    if (posix_memalign((void **)&tallies, 64, sizeof *tallies * (size_t)cfg.threads) != 0)
        tallies = NULL;
    CHECK_MSG(tallies != NULL, "out of memory");
    app_rounds(&cfg, setup, phase_count, phase_place, check_and_free);
    free(tallies);
    app_pass("oracle holds");
    return 0;
}
