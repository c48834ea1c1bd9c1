/* SPDX-License-Identifier: MIT */
/* labyrinth.c - maze routing (in the style of STAMP's labyrinth): connect
 * source/destination pairs through a 3-D grid of SIZE x SIZE x DEPTH cells
 * (some of them walls), every path a chain of cells that no other path uses.
 *
 * Workers pop pairs from a shared work list (a small transaction). Each route
 * is one transaction that copies the whole shared grid into the thread's
 * private grid (memcpy inside the transaction: a large private copy, into a
 * buffer allocated once per thread outside it, so gcc instruments the writes
 * like shared ones), expands a breadth-first wave from the source over the
 * copy (more private writes: the distances and the queue), traces a shortest
 * path back, and claims its cells in the shared grid. Since the copy read the
 * whole grid, a route that commits meanwhile makes this one conflict and run
 * again; so every cell it claims must still be free, which the transaction
 * checks (a taken cell means isolation was lost). A pair without a free path
 * fails.
 * Oracle: walls are where they were; every routed pair's cells form a chain
 * of adjacent cells from its source to its destination, as long as the
 * route said, and hold its id; no other cell holds it; failed pairs own no
 * cell; routed + failed = pairs, and the threads' tallies agree.
 *
 * SIZE: the grid's side (default 32; DEPTH 3 layers).
 */
#include "app_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 3
#define WALL (-1)
#define TS_NOINLINE __attribute__((transaction_safe, noinline))

typedef struct pair {
    int src, dst; /* cell indices */
    int routed;   /* 1: routed, -1: no free path (set by its route) */
    int len;      /* cells of its path, both ends included */
} pair;

static app_cfg cfg;
static int side, ncells, npairs;
static int *grid; /* 0 free, WALL, or the id (index + 1) of the pair that owns it */
static int *walls_at_start;
static pair *pairs;
static int next_pair;

struct tally {
    long routed, failed, cells;
    char pad[64];
};
static struct tally *tallies;

/* The up to 6 neighbours of cell c; returns how many. */
TS_NOINLINE static int neighbours(int c, int *out) {
    int per = side * side, z = c / per, y = (c % per) / side, x = c % side, n = 0;
    if (x > 0)
        out[n++] = c - 1;
    if (x + 1 < side)
        out[n++] = c + 1;
    if (y > 0)
        out[n++] = c - side;
    if (y + 1 < side)
        out[n++] = c + side;
    if (z > 0)
        out[n++] = c - per;
    if (z + 1 < DEPTH)
        out[n++] = c + per;
    return n;
}

/* Breadth-first wave over the private copy: a free cell reached at distance
 * d becomes -(d + 2). Returns whether dst was reached. */
TS_NOINLINE static int expand(int *mine, int *queue, int src, int dst) {
    if (mine[src] != 0 || mine[dst] != 0)
        return 0;
    int head = 0, tail = 0, nb[6];
    mine[src] = -2;
    queue[tail++] = src;
    while (head < tail) {
        int c = queue[head++];
        int d = -mine[c] - 2;
        int n = neighbours(c, nb);
        for (int i = 0; i < n; i++) {
            if (mine[nb[i]] != 0)
                continue;
            mine[nb[i]] = -(d + 1 + 2);
            if (nb[i] == dst)
                return 1;
            queue[tail++] = nb[i];
        }
    }
    return 0;
}

/* From dst back to src along decreasing distances; fills path (dst first)
 * and returns its length. */
TS_NOINLINE static int trace(const int *mine, int *path, int src, int dst) {
    int len = 0, c = dst, nb[6];
    path[len++] = c;
    while (c != src) {
        int d = -mine[c] - 2, n = neighbours(c, nb), next = -1;
        for (int i = 0; i < n && next < 0; i++)
            if (mine[nb[i]] == -(d - 1 + 2))
                next = nb[i];
        CHECK_MSG(next >= 0, "no way back from cell %d at distance %d", c, d);
        c = next;
        path[len++] = c;
    }
    return len;
}

/* The whole route of pair p, inside one transaction. */
TS_NOINLINE static int route(int p, int *mine, int *queue, int *path) {
    memcpy(mine, grid, sizeof *grid * (size_t)ncells); /* the large private copy */
    if (!expand(mine, queue, pairs[p].src, pairs[p].dst)) {
        pairs[p].routed = -1;
        return 0;
    }
    int len = trace(mine, path, pairs[p].src, pairs[p].dst);
    for (int i = 0; i < len; i++) {
        CHECK_MSG(grid[path[i]] == 0, "pair %d claims cell %d, taken by %d", p, path[i],
                  grid[path[i]]);
        grid[path[i]] = p + 1;
    }
    pairs[p].routed = 1;
    pairs[p].len = len;
    return len;
}

static void phase_route(int tid, void *arg) {
    (void)arg;
    struct tally *ty = &tallies[tid];
    int *mine = app_xmalloc(sizeof *mine * (size_t)ncells);
    int *queue = app_xmalloc(sizeof *queue * (size_t)ncells);
    int *path = app_xmalloc(sizeof *path * (size_t)ncells);
    for (;;) {
        int p;
        __transaction_atomic { p = next_pair < npairs ? next_pair++ : -1; }
        if (p < 0)
            break;
        int len;
        __transaction_atomic { len = route(p, mine, queue, path); }
        if (len > 0) {
            ty->routed++;
            ty->cells += len;
        } else {
            ty->failed++;
        }
    }
    free(mine);
    free(queue);
    free(path);
}

static void setup(void) {
    uint64_t rng = app_seed(&cfg, 999, 11);
    side = cfg.size < 4 ? 4 : (int)cfg.size;
    ncells = side * side * DEPTH;
    npairs = side;
    grid = app_xmalloc(sizeof *grid * (size_t)ncells);
    walls_at_start = app_xmalloc(sizeof *walls_at_start * (size_t)ncells);
    for (int c = 0; c < ncells; c++)
        grid[c] = app_rand(&rng) % 10 == 0 ? WALL : 0; /* one cell in 10 a wall */
    memcpy(walls_at_start, grid, sizeof *grid * (size_t)ncells);
    /* endpoints: distinct free cells */
    unsigned char *used = calloc((size_t)ncells, 1);
    CHECK(used != NULL);
    pairs = app_xmalloc(sizeof *pairs * (size_t)npairs);
    for (int p = 0; p < npairs; p++) {
        int ends[2];
        for (int k = 0; k < 2; k++) {
            int c;
            do
                c = (int)(app_rand(&rng) % (uint64_t)ncells);
            while (grid[c] == WALL || used[c]);
            used[c] = 1;
            ends[k] = c;
        }
        pairs[p] = (pair){ends[0], ends[1], 0, 0};
    }
    free(used);
    next_pair = 0;
    memset(tallies, 0, sizeof *tallies * (size_t)cfg.threads);
}

static void check_and_free(void) {
    long routed = 0, failed = 0, cells = 0;
    for (int t = 0; t < cfg.threads; t++) {
        routed += tallies[t].routed;
        failed += tallies[t].failed;
        cells += tallies[t].cells;
    }
    CHECK_MSG(routed + failed == npairs, "routed %ld + failed %ld, pairs %d", routed, failed,
              npairs);
    int *owned = calloc((size_t)npairs + 1, sizeof *owned);
    CHECK(owned != NULL);
    for (int c = 0; c < ncells; c++) {
        CHECK_MSG((grid[c] == WALL) == (walls_at_start[c] == WALL), "cell %d: wall changed", c);
        CHECK_MSG(grid[c] >= WALL && grid[c] <= npairs, "cell %d holds %d", c, grid[c]);
        if (grid[c] > 0)
            owned[grid[c]]++;
    }
    long routed_pairs = 0, path_cells = 0;
    int nb[6];
    for (int p = 0; p < npairs; p++) {
        const pair *pr = &pairs[p];
        int id = p + 1;
        CHECK_MSG(pr->routed == 1 || pr->routed == -1, "pair %d never routed", p);
        if (pr->routed < 0) {
            CHECK_MSG(owned[id] == 0, "failed pair %d owns %d cells", p, owned[id]);
            continue;
        }
        routed_pairs++;
        path_cells += pr->len;
        CHECK_MSG(owned[id] == pr->len, "pair %d owns %d cells, its path has %d", p, owned[id],
                  pr->len);
        CHECK_MSG(grid[pr->src] == id && grid[pr->dst] == id, "pair %d: an end not its own", p);
        /* a chain: the ends have one neighbour of the path, the others two
         * (a shortest path on the grid never touches itself), and walking
         * from the source reaches the destination in len - 1 steps */
        int prev = -1, c = pr->src, steps = 0;
        while (c != pr->dst) {
            int n = neighbours(c, nb), next = -1, same = 0;
            for (int i = 0; i < n; i++)
                if (grid[nb[i]] == id) {
                    same++;
                    if (nb[i] != prev)
                        next = nb[i];
                }
            CHECK_MSG(same == (c == pr->src ? 1 : 2) && next >= 0,
                      "pair %d: cell %d has %d neighbours on the path", p, c, same);
            prev = c;
            c = next;
            CHECK_MSG(++steps < pr->len, "pair %d: path longer than %d", p, pr->len);
        }
        CHECK_MSG(steps == pr->len - 1, "pair %d: %d steps, length %d", p, steps, pr->len);
    }
    CHECK_MSG(routed_pairs == routed && path_cells == cells,
              "tallies: %ld routed with %ld cells; grid: %ld with %ld", routed, cells, routed_pairs,
              path_cells);
    if (cfg.round == 0)
        printf("INFO labyrinth: %d x %d x %d grid, %d pairs, %ld routed (%ld cells), %ld failed\n",
               side, side, DEPTH, npairs, routed, cells, failed);
    free(owned);
    free(grid);
    free(walls_at_start);
    free(pairs);
}

int main(int argc, char **argv) {
    app_init(&cfg, "labyrinth", argc, argv, 32);
    tallies = app_xmalloc(sizeof *tallies * (size_t)cfg.threads);
    app_rounds(&cfg, setup, phase_route, NULL, check_and_free);
    free(tallies);
    app_pass("oracle holds");
    return 0;
}
