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

/* Skip list: SKIP_MAXL levels (2^16 keys at one node in two per level). */
#define SKIP_MAXL 16

struct snode {
    long key;
    long level; /* on levels 0 .. level - 1 */
    struct snode *next[];
};

/* A key's level, 1 .. SKIP_MAXL: k with probability 2^-k (the last takes the
 * rest), from a mix of the key's bits, the same for every method and run. */
static inline int skip_level(long key) {
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return 1 + __builtin_ctzll(h | (1ull << (SKIP_MAXL - 1)));
}

enum { S_LIST, S_HASH, S_TREE, S_SKIP, S_NKINDS };

struct intset {
    /* read-only during a run */
    int kind;
    long nbuckets;
    struct lnode **buckets;
    struct snode *skip; /* the skip list's head (its next pointers change) */
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
INTSET_ITM_DECLARE(skip)
#undef INTSET_ITM_DECLARE

#endif /* TXKIT_BENCH_INTSET_H */
