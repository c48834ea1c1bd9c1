/* SPDX-License-Identifier: MIT */
/* chain_ds.h - the sorted chain (linked list of increasing keys), written once
 * for the benchmarks' list and hash set (intset_ds.h) and the stress test's
 * list and hash set (tests/runtime/test_stress.c).
 *
 * Included once per instantiation, after defining:
 *
 *   DS_NAME(x)      the name of function x in this instantiation (x_plain, x_tx)
 *   DS_LD(p)        read the shared word *p
 *   DS_ST(p, v)     write v to the shared word *p
 *   DS_ALLOC(n)     allocate a node (malloc / tx_malloc)
 *   DS_FREE(p)      free an unlinked node (free / tx_free)
 *   DS_OOM()        a node allocation failed (does not return)
 * and optionally
 *   DS_CHAIN_BAD(last, key, steps)  true when a walk that saw key after last,
 *                   at its steps-th node, sees an impossible chain (keys not
 *                   increasing, too long): the walk then stops as at the end
 *                   of the chain. The tests count such inconsistent views
 *                   inside transactions; without it the walk checks nothing.
 *
 * A node is initialized with plain stores while it is still private and
 * published by one DS_ST; every other access to a shared node goes through
 * DS_LD / DS_ST, keys included (a deleted node's key may be overwritten once
 * the node is freed). The functions are static inline: the calling thread's
 * transaction (or lock) protects the chain.
 */
#ifndef TXKIT_WORKLOADS_LNODE
#define TXKIT_WORKLOADS_LNODE
struct lnode {
    long key;
    struct lnode *next;
};
#endif

#ifdef DS_CHAIN_BAD
#define DS_CHAIN_STOP_(last, key, steps) (DS_CHAIN_BAD(last, key, steps))
#else
#define DS_CHAIN_STOP_(last, key, steps) 0
#endif

/* The link where key belongs in the chain at *headp: *curp is the first node
 * with a key >= key (NULL at the end), *kp its key. */
static inline struct lnode **DS_NAME(chain_find)(struct lnode **headp, long key,
                                                 struct lnode **curp, long *kp) {
    struct lnode **pp = headp;
    struct lnode *n = DS_LD(pp);
    long k = 0, last = -1 - 0x7fffffffffffffffL, steps = 0;
    (void)last, (void)steps;
    while (n) {
        k = DS_LD(&n->key);
        if (DS_CHAIN_STOP_(last, k, ++steps)) {
            n = NULL;
            break;
        }
        if (k >= key)
            break;
        last = k;
        pp = &n->next;
        n = DS_LD(pp);
    }
    *curp = n;
    *kp = k;
    return pp;
}

/* Is key in the chain that starts at *headp? */
static inline int DS_NAME(chain_contains)(struct lnode **headp, long key) {
    struct lnode *n;
    long k;
    DS_NAME(chain_find)(headp, key, &n, &k);
    return n && k == key;
}

/* Return: 1 if key was inserted, 0 if it was there. */
static inline int DS_NAME(chain_insert)(struct lnode **headp, long key) {
    struct lnode *n;
    long k;
    struct lnode **pp = DS_NAME(chain_find)(headp, key, &n, &k);
    if (n && k == key)
        return 0;
    struct lnode *fresh = DS_ALLOC(sizeof *fresh);
    if (!fresh)
        DS_OOM();
    fresh->key = key;
    fresh->next = n;
    DS_ST(pp, fresh);
    return 1;
}

/* Return: 1 if key was removed (its node freed), 0 if it was not there. */
static inline int DS_NAME(chain_delete)(struct lnode **headp, long key) {
    struct lnode *n;
    long k;
    struct lnode **pp = DS_NAME(chain_find)(headp, key, &n, &k);
    if (!n || k != key)
        return 0;
    DS_ST(pp, DS_LD(&n->next));
    DS_FREE(n);
    return 1;
}

#undef DS_CHAIN_STOP_
