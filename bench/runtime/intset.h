/* SPDX-License-Identifier: MIT */
/* intset.h - the integer-set types, shared by intset.c and intset_itm.c.
 *
 * The operations are in intset_ds.h, written once and instantiated per method
 * family: plain accesses and the txkit barriers in intset.c, plain accesses
 * inside gcc transactions (-fgnu-tm, libitm) in intset_itm.c.
 */
#ifndef TXKIT_BENCH_INTSET_H
#define TXKIT_BENCH_INTSET_H

#include "bench_util.h"

struct lnode; /* bench/workloads/chain_ds.h */

struct tnode {
    long key;
    struct tnode *left, *right;
    long red;
};

/* Height bound for the red-black tree: 2*log2(n+1) stays below this for any n
 * that fits in memory. */
#define TREE_MAXH 128

enum { S_LIST, S_HASH, S_TREE };

struct intset {
    /* read-only during a run */
    int kind;
    long nbuckets;
    struct lnode **buckets;
    char pad0[BENCH_CACHELINE];
    /* the mutable roots, away from the read-only fields */
    struct lnode *head;
    struct tnode *root;
    char pad1[BENCH_CACHELINE];
} __attribute__((aligned(BENCH_CACHELINE)));

/* intset_itm.c: each operation one __transaction_atomic around the plain
 * instantiation of intset_ds.h. Return: as the operation (1 found / inserted
 * / deleted, else 0). */
#define INTSET_ITM_DECLARE(S)                         \
    int S##_contains_itm(struct intset *s, long key); \
    int S##_insert_itm(struct intset *s, long key);   \
    int S##_delete_itm(struct intset *s, long key);
INTSET_ITM_DECLARE(list)
INTSET_ITM_DECLARE(hash)
INTSET_ITM_DECLARE(tree)
#undef INTSET_ITM_DECLARE

#endif /* TXKIT_BENCH_INTSET_H */
