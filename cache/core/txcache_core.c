/* SPDX-License-Identifier: MIT */
/* txcache_core.c - the shared structure of the cache, written once.
 *
 * Every function that reads or writes shared state is transaction_safe and
 * this file is compiled with gcc -fgnu-tm, so the same code runs three ways
 * (only the front ends at the bottom differ):
 *   lock: plain code between pthread_mutex_lock / unlock (rwlock: under a
 *         reader-writer lock, shared by sections that only read: legacy_lock);
 *   tx:   inside __transaction_atomic, run by whichever libitm-ABI runtime
 *         the process binds (txkit, or GCC's libitm), for what hits read;
 *         a store's or removal's plan (heap, counts) in plain code under a
 *         lock hits never take, only its chain edits as a transaction
 *         (core_insert_plan says why);
 *   cx:   plain code between cx_optimistic (cx_shared for what only
 *         reads: hits) and cx_unlock (a hardware transaction where RTM
 *         works; otherwise the cx lock, held shared by hits); a store's or
 *         removal's plan under the same lock as in tx mode, only its chain
 *         edits as a cx section.
 *
 * The hit path is the hot spot (every hit of mod_mem_cache's design updated
 * the heap under the process's one lock). Here a hit's section only reads:
 * the bucket and the chain (and the GDSF clock in lock mode; tx and cx modes
 * read it after the section, txc_lookup says why). The reference and the use
 * are counted after it, per CPU (txcache.c, "references"): in tx and cx
 * modes the section and the count run inside a read-side epoch section, so
 * the entry cannot be freed in between, and a hit never writes a line
 * another CPU writes. Software transactions of hits are therefore read-only
 * (no clock to take, nothing to write back) and never conflict with each
 * other. The hit/miss statistics are relaxed atomics after the section, and
 * the heap is not sifted on hits.
 * Instead a heap key is a lower bound of the entry's priority (priorities
 * only grow: access stamps and the GDSF clock are monotonic, hits only add),
 * and eviction re-keys lazily: it recomputes the top's priority from the
 * slots, and if it grew, stores it and sifts the entry down and looks again.
 * When the top's key is exact it is the true minimum (every other priority is
 * at least its key, at least the top's), so the eviction order is exactly the
 * one LRU / GDSF define, at a cost paid by misses instead of by every hit.
 *
 * Entries the cache lets go (evicted, replaced, removed, rejected) are
 * collected by the section on a list and handed to txc_let_go() after it:
 * nothing is freed inside a section, in any mode. Lock mode frees an entry
 * at its last reference; tx and cx modes settle the per-CPU counts at once
 * (txcache.c) and free the payload at the last reference, the header after
 * a grace period.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "txcache_int.h"

/* ------------------------------------------------------- immutable reads */

/* The fields read here never change while the entry or cache is reachable,
 * so they are read without instrumentation. A header freed by a concurrent
 * transaction stays allocated until this attempt ends (see the top), except
 * when a serial-irrevocable runtime path frees it in place while this attempt
 * is stalled: then the 64-bit hash check fails on garbage (or the memory was
 * reused for the same key, same length), and validation discards the attempt. */
TXC_PURE __attribute__((noinline)) static int entry_matches(const txc_entry *e, uint64_t h,
                                                            const void *key, size_t klen) {
    return e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0;
}

TXC_PURE __attribute__((noinline)) static txc_entry **bucket_of(const txc_cache *c, uint64_t h) {
    return &c->table[h & c->mask];
}

TXC_PURE __attribute__((noinline)) static uint32_t entry_nslots(const txc_entry *e) {
    return e->nslots;
}

TXC_PURE __attribute__((noinline)) static uint32_t cache_nslots(const txc_cache *c) {
    return c->nslots;
}

/* cx mode, before an allocation that may make a system call: an optimistic
 * (hardware) section restarts holding the lock instead of aborting on it.
 * Outside a cx section (tx mode) cx_need_exclusive() does nothing. */
TXC_PURE __attribute__((noinline)) static void need_exclusive(const txc_cache *c) {
    if (c->cfg.sync == TXC_SYNC_CX)
        cx_need_exclusive();
}

/* tx mode, at the start of every section that may write: the cache privatizes nothing (it
 * frees what a section let go only after it, the headers after a grace
 * period, payloads that no section reads at their last reference), so its
 * commits need not wait for other threads' older attempts (txkit; GCC's
 * libitm has no such wait, and the call does nothing there). */
TXC_PURE __attribute__((noinline)) static void no_privatization(void) { tx_no_privatization(); }

TXC_PURE __attribute__((noinline)) static uint64_t cfg_max_objects(const txc_cache *c) {
    return c->cfg.max_objects;
}

TXC_PURE __attribute__((noinline)) static uint64_t cfg_max_bytes(const txc_cache *c) {
    return c->cfg.max_bytes;
}

/* ------------------------------------------------------------ priorities */

#define PRIO_MAX (UINT64_MAX >> 1)

TXC_SAFE static uint64_t prio_add(uint64_t a, uint64_t b) {
    return a > PRIO_MAX - b ? PRIO_MAX : a + b;
}

TXC_SAFE static uint64_t gdsf_weight(uint64_t freq, uint64_t size) {
    if (size == 0)
        size = 1;
    if (freq > PRIO_MAX / TXC_GDSF_K)
        return PRIO_MAX;
    return freq * TXC_GDSF_K / size;
}

/* The entry's priority now (LRU: its last access; GDSF: the queue clock at
 * its last access + (1 + uses) * K / size, the insert counting as a use),
 * from its slots. The slots are written by hits outside sections, so this
 * reads hints that only grow: a stale value is a lower bound. */
TXC_SAFE static uint64_t prio_now(const txc_entry *e, int policy) {
    uint64_t last = e->born, uses = 0; /* acq: lookups and references */
    uint32_t n = entry_nslots(e);
    for (uint32_t s = 0; s < n; s++) {
        uint64_t l = e->slot[s].last;
        if (l > last)
            last = l;
        uses += e->slot[s].acq;
    }
    if (policy == TXC_POLICY_LRU)
        return last;
    return prio_add(last, gdsf_weight(1 + uses, e->size));
}

/* ------------------------------------------------------------------ heap */

/* A 4-ary min-heap of (key, entry): half the levels of a binary heap, so a
 * sift writes half as many nodes (each write one node and the entry's
 * heap_pos) for the same number of key comparisons; in tx mode every write is
 * a logged store, in every mode the four children share one or two lines. */
#define HEAP_D 4
#define HEAP_PARENT(i) (((i)-1) / HEAP_D)
#define HEAP_CHILD(i) (HEAP_D * (i) + 1)

/* Field by field: a whole-node copy would be one 16-byte access, which tx
 * mode's runtime takes on its general (byte range) path, not the word one. */
TXC_SAFE static void heap_set(txc_cache *c, uint64_t i, struct txc_hnode n) {
    c->heap[i].key = n.key;
    c->heap[i].e = n.e;
    n.e->heap_pos = i;
}

TXC_SAFE static void sift_up(txc_cache *c, uint64_t i) {
    struct txc_hnode n = c->heap[i];
    while (i > 0) {
        uint64_t p = HEAP_PARENT(i);
        if (c->heap[p].key <= n.key)
            break;
        heap_set(c, i, c->heap[p]);
        i = p;
    }
    heap_set(c, i, n);
}

TXC_SAFE static void sift_down(txc_cache *c, uint64_t i) {
    struct txc_hnode n = c->heap[i];
    uint64_t len = c->heap_len;
    for (;;) {
        uint64_t l = HEAP_CHILD(i);
        if (l >= len)
            break;
        uint64_t end = l + HEAP_D < len ? l + HEAP_D : len;
        uint64_t m = l, mk = c->heap[l].key;
        for (uint64_t j = l + 1; j < end; j++) {
            uint64_t k = c->heap[j].key;
            if (k < mk)
                m = j, mk = k;
        }
        if (mk >= n.key)
            break;
        heap_set(c, i, c->heap[m]);
        i = m;
    }
    heap_set(c, i, n);
}

TXC_SAFE static void heap_del(txc_cache *c, uint64_t i) {
    uint64_t last = --c->heap_len;
    if (i == last)
        return;
    struct txc_hnode n = {c->heap[last].key, c->heap[last].e};
    heap_set(c, i, n);
    if (i > 0 && c->heap[HEAP_PARENT(i)].key > c->heap[i].key)
        sift_up(c, i);
    else
        sift_down(c, i);
}

TXC_SAFE static int heap_push(txc_cache *c, txc_entry *e, uint64_t key) {
    if (c->heap_len == c->heap_cap) {
        /* only without an object limit (or a large one): rare, doubling */
        need_exclusive(c);
        uint64_t cap = c->heap_cap * 2;
        struct txc_hnode *h = malloc(cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        for (uint64_t i = 0; i < c->heap_len; i++)
            h[i] = c->heap[i];
        free(c->heap);
        c->heap = h;
        c->heap_cap = cap;
    }
    uint64_t i = c->heap_len++;
    c->heap[i].key = key;
    c->heap[i].e = e;
    e->heap_pos = i;
    sift_up(c, i);
    return 0;
}

/* ------------------------------------------------------- entry lifetime */

/* The cache (or a rejected builder) lets go of e: its reference is dropped
 * after the section (txc_let_go), never inside, where atomics cannot run. */
TXC_SAFE static void drop(txc_entry *e, txc_entry **dead) {
    e->state = TXC_DROPPED;
    e->dead_next = *dead;
    *dead = e;
}

/* Out of the counts; its hash chain is core_relink's, its heap node the
 * caller's. */
TXC_SAFE static void uncount_entry(txc_cache *c, txc_entry *e) {
    c->objects--;
    c->bytes -= e->size;
}

/* Out of the counts and the heap (replaced, removed). */
TXC_SAFE static void unlink_entry(txc_cache *c, txc_entry *e) {
    uncount_entry(c, e);
    heap_del(c, e->heap_pos);
}

/* Evict the entry of lowest priority (the heap is not empty), leaving its
 * node at the top of the heap as a hole for the caller: filled by the entry
 * being inserted (one sift down from the top, which a new entry's low key
 * ends early) or taken out with heap_del before the next eviction. That
 * spares the full-depth sift of the heap's last node into the top and the
 * new entry's sift up, in every mode the larger part of a miss's section. */
TXC_SAFE static void evict_one(txc_cache *c, struct txc_cstats *st, int policy, txc_entry **dead) {
    for (;;) {
        txc_entry *v = c->heap[0].e;
        uint64_t p = prio_now(v, policy);
        if (p > c->heap[0].key) {
            /* hit since it was keyed: re-key lazily and look again */
            c->heap[0].key = p;
            sift_down(c, 0);
            continue;
        }
        uncount_entry(c, v);
        if (policy == TXC_POLICY_GDSF && p > c->qclock)
            c->qclock = p; /* aging: later entries start from here */
        st->evictions++;
        drop(v, dead);
        return;
    }
}

/* -------------------------------------------------------------- operations */

/* Hit path: reads the bucket and the chain links (and, given qclock, the
 * GDSF clock into it); writes nothing. The caller takes the reference and
 * counts the use after the section. */
TXC_SAFE static txc_entry *core_lookup(txc_cache *c, uint64_t h, const void *key, size_t klen,
                                       int policy, uint64_t *qclock) {
    txc_entry *e = *bucket_of(c, h);
    while (e && !entry_matches(e, h, key, klen))
        e = e->next;
    if (e && qclock && policy == TXC_POLICY_GDSF)
        *qclock = c->qclock;
    return e;
}

TXC_SAFE static int core_contains(txc_cache *c, uint64_t h, const void *key, size_t klen) {
    const txc_entry *e = *bucket_of(c, h);
    while (e && !entry_matches(e, h, key, klen))
        e = e->next;
    return e != NULL;
}

/* Stores and removals in two steps: the plan (counts, heap, limits, the GDSF
 * clock, statistics; every entry let go goes on dead) and core_relink (the
 * hash chains: out with what is on dead, in with the new entry). Lock mode
 * runs both in one section; tx and cx modes run the plan under c->mu, which
 * only stores, removals and statistics take (txc_plans_apart), and only the
 * relink as a transaction or cx section: the chains are all a hit reads, and
 * the heap work of a miss (sifts of a few hundred words) then costs what it
 * costs in plain code, not a software transaction's logged accesses or a
 * hardware section's read and write sets (which hits' hardware sections
 * conflicted with: cx with RTM, s = 1, 2 threads, 8% of its sections aborted,
 * 1.5x the lock; 1.8x with the plans apart), nor a section that holds the cx
 * lock exclusively for it (without RTM), while hits stay lock-free. */
TXC_SAFE static int core_insert_plan(txc_cache *c, txc_entry *e, unsigned s, uint64_t stamp,
                                     int policy, int reject, txc_entry **dead) {
    struct txc_cstats *st = &c->st[s];
    if (reject) {
        st->rejected++;
        drop(e, dead);
        return -ERANGE;
    }
    for (txc_entry *o = *bucket_of(c, e->hash); o; o = o->next)
        if (entry_matches(o, e->hash, e->key, e->klen)) {
            unlink_entry(c, o);
            st->replaced++;
            drop(o, dead);
            break;
        }
    uint64_t mo = cfg_max_objects(c), mb = cfg_max_bytes(c);
    int hole = 0; /* heap[0] belongs to an entry evicted here (evict_one) */
    while (c->heap_len > (uint64_t)hole &&
           ((mo && c->objects >= mo) || (mb && c->bytes + e->size > mb))) {
        if (hole)
            heap_del(c, 0);
        evict_one(c, st, policy, dead);
        hole = 1;
    }
    uint64_t born = policy == TXC_POLICY_LRU ? stamp : c->qclock;
    uint64_t key = policy == TXC_POLICY_LRU ? born : prio_add(born, gdsf_weight(1, e->size));
    if (hole) {
        struct txc_hnode n = {key, e};
        heap_set(c, 0, n);
        sift_down(c, 0);
    } else if (heap_push(c, e, key) != 0) {
        drop(e, dead);
        return -ENOMEM;
    }
    e->born = born;
    e->state = TXC_CACHED;
    c->objects++;
    c->bytes += e->size;
    st->inserts++;
    return 0;
}

/* The chains after a plan: every entry on dead but skip leaves its chain
 * (skip: the new entry, on dead when the plan failed: never linked); link,
 * if not NULL, goes in at the head of its bucket. */
TXC_SAFE static void core_relink(txc_cache *c, txc_entry *dead, const txc_entry *skip,
                                 txc_entry *link) {
    for (; dead; dead = dead->dead_next) {
        if (dead == skip)
            continue;
        txc_entry **pp = bucket_of(c, dead->hash);
        while (*pp != dead)
            pp = &(*pp)->next;
        *pp = dead->next;
    }
    if (link) {
        txc_entry **b = bucket_of(c, link->hash);
        link->next = *b;
        *b = link;
    }
}

TXC_SAFE static int core_remove_plan(txc_cache *c, uint64_t h, const void *key, size_t klen,
                                     unsigned s, txc_entry **dead) {
    txc_entry *e = *bucket_of(c, h);
    while (e && !entry_matches(e, h, key, klen))
        e = e->next;
    if (!e)
        return -ENOENT;
    unlink_entry(c, e);
    c->st[s].removals++;
    drop(e, dead);
    return 0;
}

TXC_SAFE static void core_stats(txc_cache *c, struct txc_stats *out) {
    uint64_t v[8] = {0};
    uint32_t n = cache_nslots(c);
    for (uint32_t s = 0; s < n; s++) {
        const struct txc_cstats *st = &c->st[s];
        v[3] += st->inserts;
        v[4] += st->replaced;
        v[5] += st->rejected;
        v[6] += st->evictions;
        v[7] += st->removals;
    }
    out->inserts = v[3];
    out->replaced = v[4];
    out->rejected = v[5];
    out->evictions = v[6];
    out->removals = v[7];
    out->objects = c->objects;
    out->bytes = c->bytes;
}

/* -------------------------------------------------------------- front ends */

/* __transaction_atomic begins with a returns_twice call, so gcc's
 * -Wclobbered flags the front ends' locals. A false positive here: on restart
 * the runtime restores the callee-saved registers saved at the begin, and gcc
 * logs the locals a transaction writes (_ITM_LU*), so each attempt starts
 * from the same values. */
#pragma GCC diagnostic ignored "-Wclobbered"

/* BODY runs as one critical section in the cache's sync mode; in tx and cx
 * modes inside a read-side epoch section (txcache.c), so that no entry it
 * reaches is freed under it (entries are retired outside any section). */
#ifdef TXC_HAVE_GNU_TM
#define TXC_TX_CASE(SHARED, EPOCH, BODY) \
    case TXC_SYNC_TX:                    \
        if (EPOCH)                       \
            txc_rd_enter();              \
        __transaction_atomic {           \
            if (!(SHARED))               \
                no_privatization();      \
            BODY;                        \
        }                                \
        if (EPOCH)                       \
            txc_rd_exit();               \
        break;
#else
#define TXC_TX_CASE(SHARED, EPOCH, BODY)
#endif
/* The legacy design's lock (lock and rwlock modes: txc_legacy); shared: a
 * section that only reads, which rwlock mode lets run side by side. */
static void legacy_lock(txc_cache *c, int shared) {
    if (c->cfg.sync != TXC_SYNC_RWLOCK)
        pthread_mutex_lock(&c->mu);
    else if (shared)
        txc_rw_rdlock(&c->rw);
    else
        txc_rw_wrlock(&c->rw);
}

static void legacy_unlock(txc_cache *c, int shared) {
    if (c->cfg.sync != TXC_SYNC_RWLOCK)
        pthread_mutex_unlock(&c->mu);
    else if (shared)
        txc_rw_rdunlock(&c->rw);
    else
        txc_rw_wrunlock(&c->rw);
}

#define TXC_SECTION_K(c, SHARED, EPOCH, BODY) \
    do {                                      \
        switch ((c)->cfg.sync) {              \
            TXC_TX_CASE(SHARED, EPOCH, BODY)  \
        case TXC_SYNC_CX:                     \
            if (EPOCH)                        \
                txc_rd_enter();               \
            if (SHARED)                       \
                cx_shared(&(c)->cx);          \
            else                              \
                cx_optimistic(&(c)->cx);      \
            BODY;                             \
            cx_unlock(&(c)->cx);              \
            if (EPOCH)                        \
                txc_rd_exit();                \
            break;                            \
        default:                              \
            legacy_lock((c), (SHARED));       \
            BODY;                             \
            legacy_unlock((c), (SHARED));     \
            break;                            \
        }                                     \
    } while (0)
#define TXC_SECTION(c, BODY) TXC_SECTION_K(c, 0, 1, BODY)
#define TXC_SECTION_RD(c, BODY) TXC_SECTION_K(c, 1, 1, BODY)
/* TXC_SECTION_RD for a caller already inside a read-side epoch section (the
 * lookup, which takes its reference after the section): no nested one. */
#define TXC_SECTION_RD_IN_EPOCH(c, BODY) TXC_SECTION_K(c, 1, 0, BODY)

/* After a section: the cache lets go of what it dropped. */
static void let_go(txc_entry *dead) {
    while (dead) {
        txc_entry *n = dead->dead_next; /* before txc_let_go reuses the link */
        txc_let_go(dead);
        dead = n;
    }
}

/* Record a hit's access in its CPU's slot (LRU stamp or GDSF clock; the use
 * itself is the reference counted in acq), only ever forward. */
static void count_use(txc_entry *e, unsigned s, uint64_t last) {
    struct txc_slot *sl = &e->slot[s];
    uint64_t o = __atomic_load_n(&sl->last, __ATOMIC_RELAXED);
    while (o < last &&
           !__atomic_compare_exchange_n(&sl->last, &o, last, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

txc_entry *txc_lookup(txc_cache *c, const void *key, size_t klen) {
    if (!c || !key)
        return NULL;
    uint64_t h = txc_hash(key, klen);
    unsigned s = txc_my_slot(c);
    int policy = c->cfg.policy;
    uint64_t stamp = policy == TXC_POLICY_LRU ? txc_stamp() : 0;
    txc_entry *e;
    uint64_t q = 0;
    if (txc_legacy(c)) {
        /* the legacy design: the reference is taken under the lock (rwlock:
         * shared, the count an atomic increment) */
        legacy_lock(c, 1);
        e = core_lookup(c, h, key, klen, policy, &q);
        if (e)
            txc_ref_get(e, s);
        legacy_unlock(c, 1);
    } else {
        /* a read-only section; the reference after it, still inside the
         * epoch section that keeps e's header allocated (the section runs
         * in it, with no epoch section of its own). An entry whose counts
         * the cache folded in between left it: look again. */
        for (int tries = 0;; tries++) {
            txc_rd_enter();
            TXC_SECTION_RD_IN_EPOCH(c, e = core_lookup(c, h, key, klen, policy, NULL));
            int ok = !e || txc_ref_found(e, s);
            txc_rd_exit();
            if (ok)
                break;
            if (tries == 8) {
                e = NULL;
                break;
            }
        }
    }
    if (e) {
        /* In tx and cx modes GDSF's clock is read here, after the section,
         * like the slots' hints: every eviction moves it and its line holds
         * the heap's counts, so read inside it would make hits conflict with
         * every insert (hardware sections abort on the line, software ones
         * revalidate). Any value it held during the lookup is right: the use
         * is counted now. (A write-through runtime, GCC's libitm ml_wt, may
         * show a value of an eviction that then rolls back: a clock a little
         * ahead, which delays that entry's eviction, never breaks an
         * invariant: priorities only grow.) */
        if (!txc_legacy(c) && policy == TXC_POLICY_GDSF)
            q = __atomic_load_n(&c->qclock, __ATOMIC_RELAXED);
        count_use(e, s, policy == TXC_POLICY_LRU ? stamp : q);
    }
    __atomic_fetch_add(e ? &c->st[s].hits : &c->st[s].misses, 1, __ATOMIC_RELAXED);
    return e;
}

int txc_contains(txc_cache *c, const void *key, size_t klen) {
    if (!c || !key)
        return 0;
    uint64_t h = txc_hash(key, klen);
    int r;
    TXC_SECTION_RD(c, r = core_contains(c, h, key, klen));
    return r;
}

txc_entry *txc_entry_ref(txc_entry *e) {
    txc_ref_get(e, txc_my_slot(e->cache));
    return e;
}

void txc_entry_release(txc_entry *e) {
    if (e)
        txc_ref_put(e, txc_my_slot(e->cache));
}

void txc_entry_abandon(txc_entry *e) {
    /* still private to its builder: nobody else can reach it */
    if (e && e->state == TXC_BUILDING) {
        e->state = TXC_DROPPED;
        txc_let_go(e);
    }
}

int txc_insert(txc_cache *c, txc_entry *e) {
    if (!c || !e || e->cache != c || e->state != TXC_BUILDING)
        return -EINVAL;
    /* still private: checked and sized outside the section */
    const struct txc_payload *pl = e->pl;
    e->size = e->klen + pl->meta_len + pl->body_len;
    int reject = pl->body_len < c->cfg.min_object_size || pl->body_len > c->cfg.max_object_size ||
                 (c->cfg.max_bytes && e->size > c->cfg.max_bytes) ||
                 (e->declared >= 0 && (uint64_t)e->declared != pl->body_len);
    unsigned s = txc_my_slot(c);
    int policy = c->cfg.policy, r;
    uint64_t stamp = policy == TXC_POLICY_LRU ? txc_stamp() : 0;
    txc_ref_publish(e);
    txc_entry *dead = NULL;
    if (txc_plans_apart(c->cfg.sync)) {
        pthread_mutex_lock(&c->mu);
        r = core_insert_plan(c, e, s, stamp, policy, reject, &dead);
        if (r == 0 || dead != e || e->dead_next) /* anything to relink */
            TXC_SECTION(c, core_relink(c, dead, e, r == 0 ? e : NULL));
        pthread_mutex_unlock(&c->mu);
    } else {
        TXC_SECTION(c, r = core_insert_plan(c, e, s, stamp, policy, reject, &dead);
                    core_relink(c, dead, e, r == 0 ? e : NULL));
    }
    let_go(dead);
    return r;
}

int txc_remove(txc_cache *c, const void *key, size_t klen) {
    if (!c || !key)
        return -EINVAL;
    uint64_t h = txc_hash(key, klen);
    unsigned s = txc_my_slot(c);
    int r;
    txc_entry *dead = NULL;
    if (txc_plans_apart(c->cfg.sync)) {
        pthread_mutex_lock(&c->mu);
        r = core_remove_plan(c, h, key, klen, s, &dead);
        if (dead)
            TXC_SECTION(c, core_relink(c, dead, NULL, NULL));
        pthread_mutex_unlock(&c->mu);
    } else {
        TXC_SECTION(c, r = core_remove_plan(c, h, key, klen, s, &dead);
                    core_relink(c, dead, NULL, NULL));
    }
    let_go(dead);
    return r;
}

static void add_hits(txc_cache *c, struct txc_stats *st) {
    for (uint32_t s = 0; s < c->nslots; s++) {
        st->hits += __atomic_load_n(&c->st[s].hits, __ATOMIC_RELAXED);
        st->misses += __atomic_load_n(&c->st[s].misses, __ATOMIC_RELAXED);
    }
    st->lookups = st->hits + st->misses;
}

void txc_stats_get(txc_cache *c, struct txc_stats *out) {
    struct txc_stats st;
    memset(&st, 0, sizeof st);
    if (txc_plans_apart(c->cfg.sync)) { /* what core_stats reads, the plans write under mu */
        pthread_mutex_lock(&c->mu);
        core_stats(c, &st);
        pthread_mutex_unlock(&c->mu);
    } else {
        TXC_SECTION_RD(c, core_stats(c, &st));
    }
    add_hits(c, &st);
    uint64_t refs = __atomic_load_n(&c->refs, __ATOMIC_RELAXED);
    st.live_entries = refs ? refs - 1 : 0;
    *out = st;
}

void txc_destroy(txc_cache *c) {
    if (!c)
        return;
    /* quiescent: no other call on this cache runs (txc.h); references held
     * elsewhere keep their entries (and c, through c->refs) alive */
    txc_entry *dead = NULL;
    for (uint64_t b = 0; b <= c->mask; b++) {
        txc_entry *e = c->table[b];
        while (e) {
            txc_entry *n = e->next;
            drop(e, &dead);
            e = n;
        }
        c->table[b] = NULL;
    }
    c->heap_len = c->objects = c->bytes = 0;
    let_go(dead);
    txc_reclaim(1); /* the headers retired by this cache's last operations */
    free(c->table);
    free(c->heap);
    c->table = NULL;
    c->heap = NULL;
    txc_cache_unref_internal(c);
}

/* ------------------------------------------------------------------ check */

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
                                                      ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -EFAULT;
}

static int check_locked(txc_cache *c, char *err, size_t errlen) {
    int policy = c->cfg.policy;
    if (c->heap_len != c->objects)
        return fail(err, errlen, "heap holds %" PRIu64 " entries, objects is %" PRIu64, c->heap_len,
                    c->objects);
    for (uint64_t i = 0; i < c->heap_len; i++) {
        const struct txc_hnode *n = &c->heap[i];
        if (!n->e || n->e->heap_pos != i)
            return fail(err, errlen, "heap[%" PRIu64 "] and its entry's position disagree", i);
        if (i > 0 && c->heap[HEAP_PARENT(i)].key > n->key)
            return fail(err, errlen, "heap order broken at %" PRIu64, i);
        if (n->key > prio_now(n->e, policy))
            return fail(err, errlen, "heap key above the priority of its entry at %" PRIu64, i);
    }
    uint64_t count = 0, bytes = 0;
    for (uint64_t b = 0; b <= c->mask; b++) {
        for (const txc_entry *e = c->table[b]; e; e = e->next) {
            if ((e->hash & c->mask) != b)
                return fail(err, errlen, "entry in bucket %" PRIu64 " hashes elsewhere", b);
            if (e->hash != txc_hash(e->key, e->klen))
                return fail(err, errlen, "entry hash does not match its key");
            if (e->state != TXC_CACHED || e->cache != c)
                return fail(err, errlen, "entry in the table in state %d", e->state);
            if (e->heap_pos >= c->heap_len || c->heap[e->heap_pos].e != e)
                return fail(err, errlen, "entry not at its heap position");
            if (txc_ref_count(e) < 1)
                return fail(err, errlen, "cached entry with %" PRId64 " references",
                            txc_ref_count(e));
            if (e->size != e->klen + e->pl->meta_len + e->pl->body_len)
                return fail(err, errlen, "entry size does not match its parts");
            for (const txc_entry *o = e->next; o; o = o->next)
                if (o->klen == e->klen && memcmp(o->key, e->key, e->klen) == 0)
                    return fail(err, errlen, "key cached twice");
            count++;
            bytes += e->size;
        }
    }
    if (count != c->objects)
        return fail(err, errlen, "table holds %" PRIu64 " entries, objects is %" PRIu64, count,
                    c->objects);
    if (bytes != c->bytes)
        return fail(err, errlen, "entries hold %" PRIu64 " bytes, bytes is %" PRIu64, bytes,
                    c->bytes);
    if (c->cfg.max_objects && c->objects > c->cfg.max_objects)
        return fail(err, errlen, "%" PRIu64 " objects over the limit %" PRIu64, c->objects,
                    c->cfg.max_objects);
    if (c->cfg.max_bytes && c->bytes > c->cfg.max_bytes)
        return fail(err, errlen, "%" PRIu64 " bytes over the limit %" PRIu64, c->bytes,
                    c->cfg.max_bytes);
    struct txc_stats st;
    memset(&st, 0, sizeof st);
    core_stats(c, &st);
    add_hits(c, &st);
    if (st.inserts - st.replaced - st.evictions - st.removals != c->objects)
        return fail(err, errlen,
                    "inserts %" PRIu64 " - replaced %" PRIu64 " - evictions %" PRIu64
                    " - removals %" PRIu64 " != objects %" PRIu64,
                    st.inserts, st.replaced, st.evictions, st.removals, c->objects);
    uint64_t refs = __atomic_load_n(&c->refs, __ATOMIC_RELAXED);
    if (refs < 1 + c->objects)
        return fail(err, errlen, "%" PRIu64 " live entries for %" PRIu64 " objects", refs - 1,
                    c->objects);
    return 0;
}

int txc_check(txc_cache *c, char *err, size_t errlen) {
    if (!c)
        return fail(err, errlen, "no cache");
    int r;
    switch (c->cfg.sync) {
    case TXC_SYNC_CX: /* the plans' state and the chains */
        pthread_mutex_lock(&c->mu);
        cx_exclusive(&c->cx);
        r = check_locked(c, err, errlen);
        cx_unlock(&c->cx);
        pthread_mutex_unlock(&c->mu);
        break;
    case TXC_SYNC_LOCK:
    case TXC_SYNC_RWLOCK:
        legacy_lock(c, 0);
        r = check_locked(c, err, errlen);
        legacy_unlock(c, 0);
        break;
    default: /* tx: quiescent by contract, nothing runs concurrently */
        r = check_locked(c, err, errlen);
        break;
    }
    return r;
}
