/* SPDX-License-Identifier: MIT */
/* intset_ds.h - the integer-set data structures, written once: sorted list
 * and hash set over the sorted chain of chain_ds.h, red-black tree, skip list.
 *
 * This file is included several times, by intset.c and by intset_itm.c, each
 * time with a different set of access macros, so that every method runs
 * exactly the same code; each inclusion ends by undefining them:
 *
 *   DS_NAME(x)      the name of function x in this instantiation (x_plain, x_tx)
 *   DS_LD(p)        read the shared word *p
 *   DS_ST(p, v)     write v to the shared word *p
 *   DS_ALLOC(n)     allocate a node (malloc / tx_malloc)
 *   DS_FREE(p)      free an unlinked node (free / tx_free)
 *   DS_BAD()        an impossible shape was observed (only a TM that let a
 *                   transaction see an inconsistent state could get there)
 *   DS_OOM()        a node allocation failed (does not return)
 * and optionally
 *   DS_LD_SEL(c, a, b)  read *a if c, else *b (the tree's step to a child).
 *                   Default, for every instantiation: DS_LD of both, then the
 *                   value c picks (a conditional move), which is what gcc
 *                   makes of the plain code: the node's key and both children
 *                   are loaded at once, so each level of the walk waits for
 *                   one cache miss. Loading only the selected address (by a
 *                   conditional move) waits for the key first, then the
 *                   child; a branch before one DS_LD each side costs a
 *                   barrier's worth of work at each misprediction. Red-black
 *                   tree of 4096 keys, lookups, 1 thread (txkit-bench-intset,
 *                   same minute): auto 59 -> 47 ns, stm 70 -> 59 ns per
 *                   operation against the selected address; the branch was
 *                   slower still (auto 72, stm 92); seq unchanged (gcc
 *                   already loaded both).
 *
 * A node is initialized with plain stores while it is still private; it is
 * published by one DS_ST. Every other access to shared nodes goes through
 * DS_LD / DS_ST, including keys (a deleted node's key may be overwritten by
 * the allocator once the node is freed).
 *
 * The types (struct tnode, struct snode, struct intset), TREE_MAXH, SKIP_MAXL
 * and skip_level() come from intset.h,
 * included before the first inclusion; struct lnode from chain_ds.h.
 */

#ifndef DS_LD_SEL
#define DS_LD_SEL(c, a, b)                     \
    __extension__({                            \
        __typeof__(*(a)) ds_sel_a_ = DS_LD(a); \
        __typeof__(*(b)) ds_sel_b_ = DS_LD(b); \
        (c) ? ds_sel_a_ : ds_sel_b_;           \
    })
#endif

/* ------------------------------------------------- sorted chain (list, hash) */

#include "chain_ds.h"

/* -------------------------------------------------------------- sorted list */

static int DS_NAME(list_contains)(struct intset *s, long key) {
    return DS_NAME(chain_contains)(&s->head, key);
}

static int DS_NAME(list_insert)(struct intset *s, long key) {
    return DS_NAME(chain_insert)(&s->head, key);
}

static int DS_NAME(list_delete)(struct intset *s, long key) {
    return DS_NAME(chain_delete)(&s->head, key);
}

/* ----------------------------------------------------------------- hash set */

/* The bucket array and its size never change during a run: plain reads. */
static inline struct lnode **DS_NAME(hash_bucket)(struct intset *s, long key) {
    return &s->buckets[(unsigned long)key % s->nbuckets];
}

static int DS_NAME(hash_contains)(struct intset *s, long key) {
    return DS_NAME(chain_contains)(DS_NAME(hash_bucket)(s, key), key);
}

static int DS_NAME(hash_insert)(struct intset *s, long key) {
    return DS_NAME(chain_insert)(DS_NAME(hash_bucket)(s, key), key);
}

static int DS_NAME(hash_delete)(struct intset *s, long key) {
    return DS_NAME(chain_delete)(DS_NAME(hash_bucket)(s, key), key);
}

/* ----------------------------------------------------------- red-black tree
 *
 * No parent pointers: each update records the path from the root in a local
 * array and walks back up it, so a rebalancing step writes only the nodes it
 * recolors or rotates. NULL children are the black leaves.
 */

static inline int DS_NAME(t_red)(const struct tnode *n) { return n && DS_LD(&n->red); }

/* Make nw take old's place under parent (NULL parent: the root). */
static inline void DS_NAME(t_replace)(struct intset *s, struct tnode *parent, struct tnode *old,
                                      struct tnode *nw) {
    if (!parent)
        DS_ST(&s->root, nw);
    else if (DS_LD(&parent->left) == old)
        DS_ST(&parent->left, nw);
    else
        DS_ST(&parent->right, nw);
}

/* x's right child y takes x's place; x becomes y's left child. */
static inline void DS_NAME(t_rotl)(struct intset *s, struct tnode *x, struct tnode *parent) {
    struct tnode *y = DS_LD(&x->right);
    DS_ST(&x->right, DS_LD(&y->left));
    DS_ST(&y->left, x);
    DS_NAME(t_replace)(s, parent, x, y);
}

/* x's left child y takes x's place; x becomes y's right child. */
static inline void DS_NAME(t_rotr)(struct intset *s, struct tnode *x, struct tnode *parent) {
    struct tnode *y = DS_LD(&x->left);
    DS_ST(&x->left, DS_LD(&y->right));
    DS_ST(&y->right, x);
    DS_NAME(t_replace)(s, parent, x, y);
}

static int DS_NAME(tree_contains)(struct intset *s, long key) {
    const struct tnode *n = DS_LD(&s->root);
    int depth = 0;
    while (n) {
        long k = DS_LD(&n->key);
        if (k == key)
            return 1;
        if (++depth > TREE_MAXH)
            DS_BAD();
        n = DS_LD_SEL(key < k, &n->left, &n->right);
    }
    return 0;
}

static int DS_NAME(tree_insert)(struct intset *s, long key) {
    struct tnode *path[TREE_MAXH + 1];
    int d = 0;
    struct tnode *n = DS_LD(&s->root);
    while (n) {
        long k = DS_LD(&n->key);
        if (k == key)
            return 0;
        if (d >= TREE_MAXH)
            DS_BAD();
        path[d++] = n;
        n = DS_LD_SEL(key < k, &n->left, &n->right);
    }
    struct tnode *z = DS_ALLOC(sizeof *z);
    if (!z)
        DS_OOM();
    z->key = key;
    z->left = z->right = NULL;
    z->red = d > 0;
    if (d == 0) {
        DS_ST(&s->root, z);
        return 1;
    }
    if (key < DS_LD(&path[d - 1]->key))
        DS_ST(&path[d - 1]->left, z);
    else
        DS_ST(&path[d - 1]->right, z);
    path[d] = z;

    /* path[i] is red; fix a red parent. A red parent is never the root, so a
     * grandparent exists whenever the loop body runs past its first test. */
    int i = d;
    while (i >= 2) {
        struct tnode *x = path[i], *p = path[i - 1];
        if (!DS_LD(&p->red))
            break;
        struct tnode *g = path[i - 2];
        struct tnode *gg = i >= 3 ? path[i - 3] : NULL;
        if (DS_LD(&g->left) == p) {
            struct tnode *u = DS_LD(&g->right);
            if (DS_NAME(t_red)(u)) {
                DS_ST(&p->red, 0);
                DS_ST(&u->red, 0);
                DS_ST(&g->red, 1);
                i -= 2;
                continue;
            }
            if (DS_LD(&p->right) == x) {
                DS_NAME(t_rotl)(s, p, g);
                p = x;
            }
            DS_NAME(t_rotr)(s, g, gg);
        } else {
            struct tnode *u = DS_LD(&g->left);
            if (DS_NAME(t_red)(u)) {
                DS_ST(&p->red, 0);
                DS_ST(&u->red, 0);
                DS_ST(&g->red, 1);
                i -= 2;
                continue;
            }
            if (DS_LD(&p->left) == x) {
                DS_NAME(t_rotr)(s, p, g);
                p = x;
            }
            DS_NAME(t_rotl)(s, g, gg);
        }
        DS_ST(&p->red, 0);
        DS_ST(&g->red, 1);
        break;
    }
    if (i == 0) /* recolored up to the root */
        DS_ST(&path[0]->red, 0);
    return 1;
}

static int DS_NAME(tree_delete)(struct intset *s, long key) {
    struct tnode *path[TREE_MAXH + 2];
    int d = 0;
    struct tnode *z = DS_LD(&s->root);
    while (z) {
        long k = DS_LD(&z->key);
        if (k == key)
            break;
        if (d >= TREE_MAXH)
            DS_BAD();
        path[d++] = z;
        z = DS_LD_SEL(key < k, &z->left, &z->right);
    }
    if (!z)
        return 0;

    struct tnode *zl = DS_LD(&z->left), *zr = DS_LD(&z->right);
    if (zl && zr) {
        /* Two children: move the successor's key here and remove the successor. */
        if (d >= TREE_MAXH)
            DS_BAD();
        path[d++] = z;
        struct tnode *y = zr, *yl;
        while ((yl = DS_LD(&y->left)) != NULL) {
            if (d >= TREE_MAXH)
                DS_BAD();
            path[d++] = y;
            y = yl;
        }
        DS_ST(&z->key, DS_LD(&y->key));
        z = y;
        zl = NULL;
        zr = DS_LD(&y->right);
    }

    /* z has at most one child; path[0..d-1] are its ancestors. */
    struct tnode *child = zl ? zl : zr;
    struct tnode *parent = d ? path[d - 1] : NULL;
    int left = parent && DS_LD(&parent->left) == z;
    DS_NAME(t_replace)(s, parent, z, child);
    int zred = (int)DS_LD(&z->red);
    DS_FREE(z);
    if (zred)
        return 1;
    if (DS_NAME(t_red)(child)) {
        DS_ST(&child->red, 0);
        return 1;
    }

    /* The subtree at child (possibly NULL), a left child iff left, is short of
     * one black node; path[pi] is its parent. */
    int pi = d - 1;
    while (pi >= 0) {
        struct tnode *p = path[pi];
        struct tnode *gp = pi > 0 ? path[pi - 1] : NULL;
        if (left) {
            struct tnode *w = DS_LD(&p->right);
            if (!w)
                DS_BAD();
            if (DS_LD(&w->red)) {
                DS_ST(&w->red, 0);
                DS_ST(&p->red, 1);
                DS_NAME(t_rotl)(s, p, gp);
                path[pi] = w;
                path[pi + 1] = p;
                gp = w;
                pi++;
                w = DS_LD(&p->right);
            }
            struct tnode *wl = DS_LD(&w->left), *wr = DS_LD(&w->right);
            if (!DS_NAME(t_red)(wl) && !DS_NAME(t_red)(wr)) {
                DS_ST(&w->red, 1);
                if (DS_LD(&p->red)) {
                    DS_ST(&p->red, 0);
                    return 1;
                }
                pi--;
                if (pi >= 0)
                    left = DS_LD(&path[pi]->left) == p;
                continue;
            }
            if (!DS_NAME(t_red)(wr)) {
                DS_ST(&wl->red, 0);
                DS_ST(&w->red, 1);
                DS_NAME(t_rotr)(s, w, p);
                wr = w;
                w = wl;
            }
            DS_ST(&w->red, DS_LD(&p->red));
            DS_ST(&p->red, 0);
            DS_ST(&wr->red, 0);
            DS_NAME(t_rotl)(s, p, gp);
            return 1;
        } else {
            struct tnode *w = DS_LD(&p->left);
            if (!w)
                DS_BAD();
            if (DS_LD(&w->red)) {
                DS_ST(&w->red, 0);
                DS_ST(&p->red, 1);
                DS_NAME(t_rotr)(s, p, gp);
                path[pi] = w;
                path[pi + 1] = p;
                gp = w;
                pi++;
                w = DS_LD(&p->left);
            }
            struct tnode *wl = DS_LD(&w->left), *wr = DS_LD(&w->right);
            if (!DS_NAME(t_red)(wl) && !DS_NAME(t_red)(wr)) {
                DS_ST(&w->red, 1);
                if (DS_LD(&p->red)) {
                    DS_ST(&p->red, 0);
                    return 1;
                }
                pi--;
                if (pi >= 0)
                    left = DS_LD(&path[pi]->left) == p;
                continue;
            }
            if (!DS_NAME(t_red)(wl)) {
                DS_ST(&wr->red, 0);
                DS_ST(&w->red, 1);
                DS_NAME(t_rotl)(s, w, p);
                wl = w;
                w = wr;
            }
            DS_ST(&w->red, DS_LD(&p->red));
            DS_ST(&p->red, 0);
            DS_ST(&wl->red, 0);
            DS_NAME(t_rotr)(s, p, gp);
            return 1;
        }
    }
    return 1;
}

/* -------------------------------------------------------------- skip list
 *
 * Levels 0 .. SKIP_MAXL - 1 below a sentinel head (s->skip: key -1, every
 * level; the pointer never changes during a run); a node is on levels
 * 0 .. level - 1, its level a function of its key (skip_level, intset.h), so
 * every method builds the same shape. An insert initializes the new node
 * privately and then links it in at each of its levels; a delete unlinks it
 * at each level and frees it.
 */

/* Walk down to key: preds[l] is the last node of level l with a smaller key;
 * returns the first node of level 0 whose key is >= key, or NULL. Keys grow
 * along every level: a walk that sees otherwise saw an inconsistent state. */
static inline struct snode *DS_NAME(s_find)(struct intset *s, long key, struct snode **preds) {
    struct snode *x = s->skip, *n = NULL;
    long xkey = -1;
    for (int l = SKIP_MAXL - 1; l >= 0; l--) {
        while ((n = DS_LD(&x->next[l])) != NULL) {
            long k = DS_LD(&n->key);
            if (k <= xkey)
                DS_BAD();
            if (k >= key)
                break;
            x = n;
            xkey = k;
        }
        preds[l] = x;
    }
    return n;
}

static int DS_NAME(skip_contains)(struct intset *s, long key) {
    struct snode *preds[SKIP_MAXL];
    struct snode *n = DS_NAME(s_find)(s, key, preds);
    return n && DS_LD(&n->key) == key;
}

static int DS_NAME(skip_insert)(struct intset *s, long key) {
    struct snode *preds[SKIP_MAXL];
    struct snode *n = DS_NAME(s_find)(s, key, preds);
    if (n && DS_LD(&n->key) == key)
        return 0;
    int level = skip_level(key);
    struct snode *nw = DS_ALLOC(sizeof *nw + (size_t)level * sizeof nw->next[0]);
    if (!nw)
        DS_OOM();
    nw->key = key;
    nw->level = level;
    for (int l = 0; l < level; l++)
        nw->next[l] = DS_LD(&preds[l]->next[l]);
    for (int l = 0; l < level; l++)
        DS_ST(&preds[l]->next[l], nw);
    return 1;
}

static int DS_NAME(skip_delete)(struct intset *s, long key) {
    struct snode *preds[SKIP_MAXL];
    struct snode *n = DS_NAME(s_find)(s, key, preds);
    if (!n || DS_LD(&n->key) != key)
        return 0;
    long level = DS_LD(&n->level);
    if (level < 1 || level > SKIP_MAXL)
        DS_BAD();
    for (long l = level - 1; l >= 0; l--) {
        if (DS_LD(&preds[l]->next[l]) != n) /* n is on each of its levels */
            DS_BAD();
        DS_ST(&preds[l]->next[l], DS_LD(&n->next[l]));
    }
    DS_FREE(n);
    return 1;
}

#undef DS_NAME
#undef DS_LD
#undef DS_LD_SEL
#undef DS_ST
#undef DS_ALLOC
#undef DS_FREE
#undef DS_BAD
#undef DS_OOM
