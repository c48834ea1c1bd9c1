/* SPDX-License-Identifier: MIT */
/* app_rbtree.c - red-black tree for the apps (see app_rbtree.h). Leaves are
 * NULL (black); deletion tracks the parent of the moved-up child. */
#include "app_rbtree.h"

#include <stddef.h>
#include <stdlib.h>

APP_TS int rb_cmp_long(long a, long b) { return a < b ? -1 : a > b; }
APP_TS int rb_cmp_long_desc(long a, long b) { return a > b ? -1 : a < b; }

APP_TS void rb_init(rb_tree *t, rb_cmp_fn cmp) {
    t->root = NULL;
    t->cmp = cmp;
    t->count = 0;
}

APP_TS_NOINLINE static rb_node *find_node(rb_tree *t, long key) {
    rb_cmp_fn cmp = t->cmp;
    rb_node *n = t->root;
    while (n) {
        int c = cmp(key, n->key);
        if (c == 0)
            return n;
        n = c < 0 ? n->left : n->right;
    }
    return NULL;
}

APP_TS void *rb_get(rb_tree *t, long key, int *found) {
    rb_node *n = find_node(t, key);
    if (found)
        *found = n != NULL;
    return n ? n->val : NULL;
}

/* The child of n on one side: 0 left, 1 right. Both rebalancing loops are
 * written once for a side d and its mirror !d. */
APP_TS static rb_node **child(rb_node *n, int side) { return side ? &n->right : &n->left; }

APP_TS static void transplant(rb_tree *t, rb_node *u, rb_node *v) {
    if (!u->parent)
        t->root = v;
    else if (u == u->parent->left)
        u->parent->left = v;
    else
        u->parent->right = v;
    if (v)
        v->parent = u->parent;
}

/* Rotates x down to side d: its child on side !d takes its place. */
APP_TS static void rotate(rb_tree *t, rb_node *x, int d) {
    rb_node *y = *child(x, !d);
    rb_node *inner = *child(y, d);
    *child(x, !d) = inner;
    if (inner)
        inner->parent = x;
    transplant(t, x, y);
    *child(y, d) = x;
    x->parent = y;
}

static APP_TS int is_red(rb_node *n) { return n && n->red; }

APP_TS int rb_insert(rb_tree *t, long key, void *val) {
    rb_cmp_fn cmp = t->cmp;
    rb_node *p = NULL, *n = t->root;
    int c = 0;
    while (n) {
        c = cmp(key, n->key);
        if (c == 0)
            return 0;
        p = n;
        n = c < 0 ? n->left : n->right;
    }
    rb_node *z = malloc(sizeof *z);
    z->key = key;
    z->val = val;
    z->left = z->right = NULL;
    z->parent = p;
    z->red = 1;
    if (!p)
        t->root = z;
    else if (c < 0)
        p->left = z;
    else
        p->right = z;
    t->count++;

    while ((p = z->parent) && p->red) {
        rb_node *g = p->parent;
        int d = p == g->left ? 0 : 1; /* p's side */
        rb_node *u = *child(g, !d);
        if (is_red(u)) {
            p->red = 0;
            u->red = 0;
            g->red = 1;
            z = g;
        } else {
            if (z == *child(p, !d)) {
                z = p;
                rotate(t, z, d);
                p = z->parent;
            }
            p->red = 0;
            g->red = 1;
            rotate(t, g, !d);
        }
    }
    t->root->red = 0;
    return 1;
}

APP_TS_NOINLINE static void delete_fixup(rb_tree *t, rb_node *x, rb_node *xp) {
    while (x != t->root && !is_red(x)) {
        int d = x == xp->left ? 0 : 1; /* x's side */
        rb_node *w = *child(xp, !d);
        if (w->red) {
            w->red = 0;
            xp->red = 1;
            rotate(t, xp, d);
            w = *child(xp, !d);
        }
        if (!is_red(w->left) && !is_red(w->right)) {
            w->red = 1;
            x = xp;
            xp = x->parent;
        } else {
            if (!is_red(*child(w, !d))) {
                (*child(w, d))->red = 0;
                w->red = 1;
                rotate(t, w, !d);
                w = *child(xp, !d);
            }
            w->red = xp->red;
            xp->red = 0;
            if (*child(w, !d))
                (*child(w, !d))->red = 0;
            rotate(t, xp, d);
            x = t->root;
            xp = NULL;
        }
    }
    if (x)
        x->red = 0;
}

APP_TS int rb_remove(rb_tree *t, long key, void **val) {
    rb_node *z = find_node(t, key);
    if (!z)
        return 0;
    if (val)
        *val = z->val;
    rb_node *y = z, *x, *xp;
    int y_red = y->red;
    if (!z->left) {
        x = z->right;
        xp = z->parent;
        transplant(t, z, z->right);
    } else if (!z->right) {
        x = z->left;
        xp = z->parent;
        transplant(t, z, z->left);
    } else {
        y = z->right;
        while (y->left)
            y = y->left;
        y_red = y->red;
        x = y->right;
        if (y->parent == z) {
            xp = y;
        } else {
            xp = y->parent;
            transplant(t, y, y->right);
            y->right = z->right;
            y->right->parent = y;
        }
        transplant(t, z, y);
        y->left = z->left;
        y->left->parent = y;
        y->red = z->red;
    }
    if (!y_red)
        delete_fixup(t, x, xp);
    t->count--;
    free(z);
    return 1;
}

APP_TS_NOINLINE void rb_iter_from(rb_iter *it, rb_tree *t, long from) {
    rb_cmp_fn cmp = t->cmp;
    rb_node *n = t->root, *best = NULL;
    while (n) {
        if (cmp(n->key, from) >= 0) {
            best = n;
            n = n->left;
        } else {
            n = n->right;
        }
    }
    it->next = best;
    it->visited = 0;
}

APP_TS_NOINLINE int rb_iter_next(rb_iter *it, long *key, void **val) {
    rb_node *n = it->next;
    if (!n)
        return 0;
    *key = n->key;
    *val = n->val;
    it->visited++;
    if (n->right) {
        n = n->right;
        while (n->left)
            n = n->left;
    } else {
        rb_node *p = n->parent;
        while (p && n == p->right) {
            n = p;
            p = p->parent;
        }
        n = p;
    }
    it->next = n;
    return 1;
}

static int verify_node(rb_tree *t, rb_node *n, rb_node *parent, long *count, const char **err) {
    if (!n)
        return 1;
    if (n->parent != parent)
        *err = "wrong parent pointer";
    if (n->red && is_red(n->left))
        *err = "red node with a red child";
    if (n->red && is_red(n->right))
        *err = "red node with a red child";
    if (n->left && t->cmp(n->left->key, n->key) >= 0)
        *err = "left key not smaller";
    if (n->right && t->cmp(n->right->key, n->key) <= 0)
        *err = "right key not larger";
    if (*err)
        return 0;
    (*count)++;
    int lh = verify_node(t, n->left, n, count, err);
    int rh = verify_node(t, n->right, n, count, err);
    if (!*err && lh != rh)
        *err = "unequal black heights";
    return lh + !n->red;
}

const char *rb_verify(rb_tree *t) {
    const char *err = NULL;
    long count = 0;
    if (is_red(t->root))
        return "red root";
    verify_node(t, t->root, NULL, &count, &err);
    if (!err && count != t->count)
        err = "node count differs from the tree's count";
    return err;
}

static void destroy_node(rb_node *n) {
    while (n) {
        destroy_node(n->left);
        rb_node *r = n->right;
        free(n);
        n = r;
    }
}

void rb_destroy(rb_tree *t) {
    destroy_node(t->root);
    t->root = NULL;
    t->count = 0;
}
