/* SPDX-License-Identifier: MIT */
/* vacation.c - a travel reservation system (in the style of STAMP's
 * vacation) on red-black-tree maps: cars, flights, rooms and customers.
 *
 * Client threads run random tasks, each one transaction over several tables:
 *   - reserve: scan a few items of each kind from a random id on (an
 *     iterator on the callee's stack; a stack array of quotes filled by that
 *     transaction_safe callee), pick the priciest available of each, allocate the reservation records, and if the customer's budget
 *     is exceeded cancel the whole transaction from a callee
 *     (__transaction_cancel [[outer]]); otherwise book them, creating the
 *     customer if needed;
 *   - delete a customer: walk its reservations with an iterator on the
 *     callee's stack, give every booked unit back, free the records and the
 *     customer;
 *   - update the tables: add units (new items), or remove free units (items
 *     with no units left are deleted: never while a customer holds one).
 * Oracle (every round): each tree is a valid red-black tree; every item has
 * total = free + used; every reservation names an existing item; each item's
 * used count equals the reservations that name it; the units held equal the
 * units booked minus the units given back, counted by the clients outside
 * their transactions; a cancelled transaction left its stack quotes as they
 * were before it.
 *
 * SIZE: the number of ids of each kind (default 2048); 8 * SIZE tasks a round.
 */
#include "app_common.h"
#include "app_rbtree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CAR, FLIGHT, ROOM, NKINDS };
#define NQUERY 4    /* ids queried per kind */
#define MAX_HELD 12 /* reservations a customer may hold */

typedef struct item {
    long id, total, free, used, price;
} item;

typedef struct resv {
    int kind;
    long id, price;
    struct resv *next;
} resv;

typedef struct customer {
    long id, nresv, spent;
    resv *list;
} customer;

typedef struct quote {
    long id, price;
    item *it;
} quote;

/* A cursor over a customer's reservations: on the caller's stack. */
typedef struct resv_iter {
    resv *cur;
    long seen;
} resv_iter;

static rb_tree tables[NKINDS];
static rb_tree customers;
static long nids;

struct tally {
    long booked, released, cancelled, deleted, added, removed, tasks;
    char pad[64];
};
static struct tally *tallies;

APP_TS_NOINLINE static void resv_iter_init(resv_iter *it, customer *c) {
    it->cur = c->list;
    it->seen = 0;
}

APP_TS_NOINLINE static resv *resv_iter_next(resv_iter *it) {
    resv *r = it->cur;
    if (r) {
        it->cur = r->next;
        it->seen++;
    }
    return r;
}

/* Scans table t from key `from` on (in the table's order) with an iterator
 * on this function's stack, filling q[0..NQUERY) with the first NQUERY items
 * found (id -1 past the end; it == NULL when an item has nothing free).
 * Returns the index of the priciest available one, or -1. */
APP_TS_NOINLINE static int query(rb_tree *t, long from, quote *q) {
    rb_iter it;
    long id;
    void *v;
    int best = -1, i = 0;
    rb_iter_from(&it, t, from);
    for (; i < NQUERY && rb_iter_next(&it, &id, &v); i++) {
        item *x = v;
        q[i].id = id;
        q[i].it = x->free > 0 ? x : NULL;
        q[i].price = q[i].it ? x->price : 0;
        if (q[i].it && (best < 0 || q[i].price > q[best].price))
            best = i;
    }
    for (; i < NQUERY; i++) {
        q[i].id = -1;
        q[i].it = NULL;
        q[i].price = 0;
    }
    return best;
}

/* The customer's total bill, walking its list with a stack iterator.
 * Callable in relaxed transactions and outside them. */
__attribute__((transaction_callable, noinline)) static long customer_bill(customer *c) {
    resv_iter it;
    long sum = 0;
    resv *r;
    resv_iter_init(&it, c);
    while ((r = resv_iter_next(&it)))
        sum += r->price;
    return sum;
}

/* One reservation task: books the priciest available item of each kind for
 * customer cid, or cancels the outermost transaction when that would exceed
 * the budget or the customer's limit. Returns the units booked. */
__attribute__((transaction_may_cancel_outer, noinline)) static long
reserve(long cid, const long from[NKINDS], quote q[NKINDS][NQUERY], long budget) {
    int pick[NKINDS];
    long cost = 0, want = 0;
    resv *fresh = NULL;
    for (int k = 0; k < NKINDS; k++) {
        pick[k] = query(&tables[k], from[k], q[k]);
        if (pick[k] >= 0) {
            resv *r = malloc(sizeof *r);
            r->kind = k;
            r->id = q[k][pick[k]].id;
            r->price = q[k][pick[k]].price;
            r->next = fresh;
            fresh = r;
            cost += r->price;
            want++;
        }
    }
    if (want == 0)
        return 0;
    customer *c = rb_get(&customers, cid, NULL);
    long held = c ? c->nresv : 0;
    long spent = c ? c->spent : 0;
    if (spent + cost > budget || held + want > MAX_HELD)
        __transaction_cancel [[outer]]; /* the fresh records are given back */
    if (!c) {
        c = malloc(sizeof *c);
        c->id = cid;
        c->nresv = 0;
        c->spent = 0;
        c->list = NULL;
        rb_insert(&customers, cid, c);
    }
    while (fresh) {
        resv *r = fresh;
        fresh = r->next;
        item *it = q[r->kind][pick[r->kind]].it;
        it->free--;
        it->used++;
        r->next = c->list;
        c->list = r;
    }
    c->nresv += want;
    c->spent += cost;
    return want;
}

/* Deletes customer cid, giving back everything it holds; returns the units
 * given back, or -1 when there is no such customer. */
APP_TS_NOINLINE static long delete_customer(long cid) {
    customer *c = rb_get(&customers, cid, NULL);
    if (!c)
        return -1;
    resv_iter it;
    resv *r;
    long n = 0;
    resv_iter_init(&it, c);
    while ((r = resv_iter_next(&it))) {
        item *i = rb_get(&tables[r->kind], r->id, NULL);
        CHECK_MSG(i != NULL, "customer %ld holds kind %d id %ld, which is gone", cid, r->kind,
                  r->id);
        i->free++;
        i->used--;
        n++;
    }
    CHECK_MSG(it.seen == c->nresv, "customer %ld: %ld records, nresv %ld", cid, it.seen, c->nresv);
    resv_iter_init(&it, c);
    while ((r = resv_iter_next(&it)))
        free(r); /* the iterator has moved past it */
    rb_remove(&customers, cid, NULL);
    free(c);
    return n;
}

/* Adds n units of (kind, id) at price (a new item when absent); returns 1
 * when the item is new. */
APP_TS_NOINLINE static int add_units(int kind, long id, long n, long price) {
    item *it = rb_get(&tables[kind], id, NULL);
    if (it) {
        it->total += n;
        it->free += n;
        it->price = price;
        return 0;
    }
    it = malloc(sizeof *it);
    it->id = id;
    it->total = n;
    it->free = n;
    it->used = 0;
    it->price = price;
    rb_insert(&tables[kind], id, it);
    return 1;
}

/* Removes n free units of (kind, id); deletes the item when none is left.
 * Returns 1 when the item was deleted. */
APP_TS_NOINLINE static int remove_units(int kind, long id, long n) {
    item *it = rb_get(&tables[kind], id, NULL);
    if (!it || it->free < n)
        return 0;
    it->total -= n;
    it->free -= n;
    if (it->total > 0)
        return 0;
    rb_remove(&tables[kind], id, NULL);
    free(it);
    return 1;
}

static app_cfg cfg;
static long tasks_per_thread;

static void client(int tid, void *arg) {
    (void)arg;
    struct tally *ty = &tallies[tid];
    uint64_t rng = app_seed(&cfg, tid, 11);
    memset(ty, 0, sizeof *ty);
    for (long t = 0; t < tasks_per_thread; t++) {
        uint64_t r = app_rand(&rng) % 100;
        ty->tasks++;
        if (r < 80) {
            long from[NKINDS];
            quote q[NKINDS][NQUERY];
            long cid = (long)(app_rand(&rng) % (uint64_t)nids);
            long budget = 1500 + (long)(app_rand(&rng) % 4000);
            long base = (long)(app_rand(&rng) % (uint64_t)nids);
            for (int k = 0; k < NKINDS; k++) {
                from[k] = (base + (long)(app_rand(&rng) % 64)) % nids;
                for (int i = 0; i < NQUERY; i++)
                    q[k][i] = (quote){-2, -2, NULL};
            }
            long got = -1;
            __transaction_atomic [[outer]] { got = reserve(cid, from, q, budget); }
            if (got < 0) {
                ty->cancelled++;
                for (int k = 0; k < NKINDS; k++)
                    for (int i = 0; i < NQUERY; i++)
                        CHECK_MSG(q[k][i].id == -2 && q[k][i].it == NULL,
                                  "a cancelled transaction left quote [%d][%d] = id %ld", k, i,
                                  q[k][i].id);
            } else {
                ty->booked += got;
            }
        } else if (r < 90) {
            long cid = (long)(app_rand(&rng) % (uint64_t)nids);
            long n;
            __transaction_atomic { n = delete_customer(cid); }
            if (n >= 0) {
                ty->released += n;
                ty->deleted++;
            }
        } else {
            int kind = (int)(app_rand(&rng) % NKINDS);
            long id = (long)(app_rand(&rng) % (uint64_t)nids);
            long n = 1 + (long)(app_rand(&rng) % 5);
            long price = 50 + (long)(app_rand(&rng) % 500);
            int adding = app_rand(&rng) & 1;
            int changed;
            if (adding) {
                __transaction_atomic { changed = add_units(kind, id, n, price); }
                ty->added += changed;
            } else {
                __transaction_atomic { changed = remove_units(kind, id, n); }
                ty->removed += changed;
            }
        }
    }
    if (cfg.round == 0) {
        /* a relaxed transaction doing I/O: irrevocable on every runtime */
        __transaction_relaxed {
            customer *c = rb_get(&customers, (long)tid, NULL);
            long bill = c ? customer_bill(c) : 0;
            printf("INFO vacation: client %d: %ld tasks, %ld customers, customer %d bill %ld\n",
                   tid, ty->tasks, customers.count, tid, bill);
        }
    }
}

static void setup(void) {
    uint64_t rng = app_seed(&cfg, 999, 1);
    for (int k = 0; k < NKINDS; k++)
        rb_init(&tables[k], k == FLIGHT ? rb_cmp_long_desc : rb_cmp_long);
    rb_init(&customers, rb_cmp_long);
    /* shuffled ids, so that the trees are built in random order */
    long *ids = app_xmalloc(sizeof *ids * (size_t)nids);
    for (int k = 0; k < NKINDS; k++) {
        for (long i = 0; i < nids; i++)
            ids[i] = i;
        for (long i = nids - 1; i > 0; i--) {
            long j = (long)(app_rand(&rng) % (uint64_t)(i + 1));
            long x = ids[i];
            ids[i] = ids[j];
            ids[j] = x;
        }
        for (long i = 0; i < nids; i++)
            if (app_rand(&rng) % 4 != 0)
                add_units(k, ids[i], 1 + (long)(app_rand(&rng) % 8),
                          50 + (long)(app_rand(&rng) % 500));
    }
    free(ids);
}

static void check_and_free(void) {
    for (int k = 0; k < NKINDS; k++) {
        const char *e = rb_verify(&tables[k]);
        CHECK_MSG(!e, "table %d: %s", k, e);
    }
    const char *e = rb_verify(&customers);
    CHECK_MSG(!e, "customers: %s", e);

    /* per item: the reservations that name it */
    long *held[NKINDS];
    for (int k = 0; k < NKINDS; k++) {
        held[k] = app_xmalloc(sizeof(long) * (size_t)nids);
        memset(held[k], 0, sizeof(long) * (size_t)nids);
    }
    rb_iter ci;
    long cid, nres = 0;
    void *v;
    rb_iter_from(&ci, &customers, -1);
    while (rb_iter_next(&ci, &cid, &v)) {
        customer *c = v;
        long n = 0, spent = 0;
        CHECK_MSG(c->id == cid, "customer key %ld holds customer %ld", cid, c->id);
        for (resv *r = c->list; r; r = r->next) {
            CHECK_MSG(r->kind >= 0 && r->kind < NKINDS && r->id >= 0 && r->id < nids,
                      "customer %ld: bad reservation (%d, %ld)", cid, r->kind, r->id);
            held[r->kind][r->id]++;
            spent += r->price;
            n++;
        }
        CHECK_MSG(n == c->nresv, "customer %ld: %ld records, nresv %ld", cid, n, c->nresv);
        CHECK_MSG(spent == c->spent, "customer %ld: records cost %ld, spent %ld", cid, spent,
                  c->spent);
        CHECK_MSG(customer_bill(c) == spent, "customer %ld: bill differs", cid);
        CHECK_MSG(n > 0 && n <= MAX_HELD, "customer %ld holds %ld", cid, n);
        nres += n;
    }
    long used = 0;
    for (int k = 0; k < NKINDS; k++) {
        rb_iter it;
        long id;
        rb_iter_from(&it, &tables[k], k == FLIGHT ? nids : -1);
        long prev = k == FLIGHT ? nids : -1;
        while (rb_iter_next(&it, &id, &v)) {
            item *i = v;
            CHECK_MSG(k == FLIGHT ? id < prev : id > prev, "table %d: iterator out of order", k);
            prev = id;
            CHECK_MSG(i->id == id, "table %d: key %ld holds item %ld", k, id, i->id);
            CHECK_MSG(i->free >= 0 && i->used >= 0 && i->total == i->free + i->used && i->total > 0,
                      "table %d item %ld: total %ld free %ld used %ld", k, id, i->total, i->free,
                      i->used);
            CHECK_MSG(i->used == held[k][id], "table %d item %ld: used %ld but %ld reservations", k,
                      id, i->used, held[k][id]);
            held[k][id] = -1;
            used += i->used;
        }
        CHECK_MSG(it.visited == tables[k].count, "table %d: iterated %ld of %ld", k, it.visited,
                  tables[k].count);
        for (long id2 = 0; id2 < nids; id2++)
            CHECK_MSG(held[k][id2] <= 0, "table %d: %ld reservations of missing item %ld", k,
                      held[k][id2], id2);
    }
    long booked = 0, released = 0, cancelled = 0, tasks = 0;
    for (int t = 0; t < cfg.threads; t++) {
        booked += tallies[t].booked;
        released += tallies[t].released;
        cancelled += tallies[t].cancelled;
        tasks += tallies[t].tasks;
    }
    CHECK_MSG(used == nres, "items used %ld, reservations %ld", used, nres);
    CHECK_MSG(used == booked - released, "items used %ld, booked %ld - released %ld", used, booked,
              released);
    if (cfg.round == 0)
        printf("INFO vacation: %ld tasks, %ld units booked, %ld released, %ld cancelled, %ld "
               "customers\n",
               tasks, booked, released, cancelled, customers.count);

    for (int k = 0; k < NKINDS; k++) {
        rb_iter it;
        long id;
        rb_iter_from(&it, &tables[k], k == FLIGHT ? nids : -1);
        while (rb_iter_next(&it, &id, &v))
            free(v);
        rb_destroy(&tables[k]);
        free(held[k]);
    }
    rb_iter_from(&ci, &customers, -1);
    while (rb_iter_next(&ci, &cid, &v)) {
        customer *c = v;
        while (c->list) {
            resv *r = c->list;
            c->list = r->next;
            free(r);
        }
        free(c);
    }
    rb_destroy(&customers);
}

int main(int argc, char **argv) {
    app_init(&cfg, "vacation", argc, argv, 2048);
    nids = cfg.size < 16 ? 16 : cfg.size;
    tasks_per_thread = 8 * nids / cfg.threads + 1;
    tallies = app_xmalloc(sizeof *tallies * (size_t)cfg.threads);
    app_rounds(&cfg, setup, client, NULL, check_and_free);
    free(tallies);
    app_pass("oracle holds");
    return 0;
}
