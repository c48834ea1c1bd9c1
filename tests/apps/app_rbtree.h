/* SPDX-License-Identifier: MIT */
/* app_rbtree.h - a red-black tree map (long key -> void *) for the apps,
 * written to be used inside gcc -fgnu-tm transactions: every operation is
 * transaction_safe, the key order is a transaction_safe function pointer
 * kept in the tree, and iterators are small structs that live on the
 * caller's stack. Nodes are malloc'd and freed by the operations (inside
 * the caller's transaction when there is one).
 *
 * Concurrency: none of its own; callers run every operation on a shared
 * tree inside a transaction (or while no other thread touches the tree). */
#ifndef TXKIT_TESTS_APPS_RBTREE_H
#define TXKIT_TESTS_APPS_RBTREE_H

#define APP_TS __attribute__((transaction_safe))
#define APP_TS_NOINLINE __attribute__((transaction_safe, noinline))

typedef int (*rb_cmp_fn)(long a, long b) APP_TS;

typedef struct rb_node {
    long key;
    void *val;
    struct rb_node *left, *right, *parent;
    int red;
} rb_node;

typedef struct rb_tree {
    rb_node *root;
    rb_cmp_fn cmp;
    long count;
} rb_tree;

/* An in-order cursor: lives on the caller's stack. */
typedef struct rb_iter {
    rb_node *next;
    long visited;
} rb_iter;

APP_TS int rb_cmp_long(long a, long b);
APP_TS int rb_cmp_long_desc(long a, long b);

APP_TS void rb_init(rb_tree *t, rb_cmp_fn cmp);
/* The value for key, or NULL (*found says which when values may be NULL). */
APP_TS void *rb_get(rb_tree *t, long key, int *found);
/* Inserts key -> val; 0 when the key was already there (nothing changed). */
APP_TS int rb_insert(rb_tree *t, long key, void *val);
/* Removes key; 1 and *val (may be NULL) when it was there, else 0. */
APP_TS int rb_remove(rb_tree *t, long key, void **val);
/* Positions it at the first key >= from (in the tree's order). */
APP_TS void rb_iter_from(rb_iter *it, rb_tree *t, long from);
/* Next pair in order: 1 and *key, *val, or 0 at the end. */
APP_TS int rb_iter_next(rb_iter *it, long *key, void **val);

/* Checks every invariant (order, parents, colours, black height, count);
 * returns NULL or a description of the first violation. Not in a
 * transaction. */
const char *rb_verify(rb_tree *t);
/* Frees every node (values untouched). Not in a transaction. */
void rb_destroy(rb_tree *t);

#endif /* TXKIT_TESTS_APPS_RBTREE_H */
