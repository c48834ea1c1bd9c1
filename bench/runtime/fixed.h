/* SPDX-License-Identifier: MIT */
/* fixed.h - txkit-bench-fixed's cell and operations, shared by fixed.c (the
 * plain, locked and txkit versions) and fixed_itm.c (gcc transactions).
 *
 * Each thread works on a cell of its own, so no two threads ever conflict:
 * what an operation costs beyond the plain code is the synchronization's
 * fixed cost (begin, commit, a barrier per access), not contention.
 *   empty  a critical section with nothing in it
 *   r4     four loads of the cell, their sum returned
 *   r2w2   two words of the cell loaded and incremented
 */
#ifndef TXKIT_BENCH_FIXED_H
#define TXKIT_BENCH_FIXED_H

#include "bench_util.h"

struct fixed_cell {
    long w[4];
} __attribute__((aligned(BENCH_CACHELINE)));

enum fixed_shape { SHAPE_EMPTY = 0, SHAPE_R4, SHAPE_R2W2, SHAPE_COUNT };

/* The sum r4 returns: the words are 1, 2, 3, 4 and never written by r4. */
#define FIXED_R4_SUM 10L

/* The operations as gcc transactions (fixed_itm.c; abort() when built
 * without -fgnu-tm: the itm rows are then n/a and never call them). Each
 * returns what its shape returns (r4: the sum; otherwise 0). Owner thread of
 * the cell. */
long fixed_empty_itmop(struct fixed_cell *c);
long fixed_r4_itmop(struct fixed_cell *c);
long fixed_r2w2_itmop(struct fixed_cell *c);

#endif /* TXKIT_BENCH_FIXED_H */
