/* SPDX-License-Identifier: MIT */
/* txcache_core.c - the shared structure of the cache, written once.
 *
 * Every function that reads or writes shared state is transaction_safe and
 * this file is compiled with gcc -fgnu-tm, so the same code runs three ways
 * (only the front ends at the bottom differ):
 *   lock: plain code between pthread_mutex_lock / unlock;
 *   tx:   inside __transaction_atomic, run by whichever libitm-ABI runtime
 *         the process binds (txkit, or GCC's libitm);
 *   cx:   plain code between cx_optimistic and cx_unlock (a hardware
 *         transaction where RTM works, the cx lock otherwise).
 *
 * The hit path is the hot spot (every hit of mod_mem_cache's design updated
 * the heap under the process's one lock). Here a hit reads the chain and
 * writes one word: the reference count of its CPU's slot in the entry (a
 * cache line of its own; the count is also GDSF's use count), plus the last
 * access in that slot when it moved. Hits on the same entry from different
 * CPUs therefore never conflict. The hit/miss statistics are relaxed atomics
 * counted after the section (never accessed transactionally), and the heap
 * is not sifted on hits.
 * Instead a heap key is a lower bound of the entry's priority (priorities
 * only grow: access stamps and the GDSF clock are monotonic, hits only add),
 * and eviction re-keys lazily: it recomputes the top's priority from the
 * slots, and if it grew, stores it and sifts the entry down and looks again.
 * When the top's key is exact it is the true minimum (every other priority is
 * at least its key, at least the top's), so the eviction order is exactly the
 * one LRU / GDSF define, at a cost paid by misses instead of by every hit.
 *
 * Dead entries (out of the cache, no reference left) are freed after the
 * section: in lock and cx mode from a list once the lock is released; in tx
 * mode the payload (meta, body: never read inside a transaction) through a
 * commit action (_ITM_addUserCommitAction) instead of being transactified, and
 * the small header through free() in the transaction, which gcc turns into
 * _ITM_free: the runtime defers it until no concurrent attempt can still be
 * reading the header (txkit's limbo list, libitm's privatization barrier).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "txcache_int.h"

#ifdef TXC_HAVE_GNU_TM
/* libitm ABI (libitm.h is not installed). GCC's libitm requires
 * resumingTransactionId == _ITM_noTransactionId (1): the action runs when the
 * outermost transaction commits (and is discarded if it aborts). */
#define TXC_ITM_NO_TRANSACTION_ID 1
extern void _ITM_addUserCommitAction(void (*fn)(void *), uint64_t resuming_id, void *arg)
    __attribute__((transaction_pure));
#endif

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
 * its last access + (1 + uses) * K / size, the insert counting as a use) and
 * the references held on it, in one pass over its slots. */
TXC_SAFE static uint64_t slot_sums(const txc_entry *e, int policy, int64_t *refs) {
    uint64_t last = e->born, acq = 0, rel = 0;
    uint32_t n = entry_nslots(e);
    for (uint32_t s = 0; s < n; s++) {
        uint64_t l = e->slot[s].last;
        if (l > last)
            last = l;
        acq += e->slot[s].acq;
        rel += e->slot[s].rel;
    }
    *refs = (int64_t)(acq - rel);
    if (policy == TXC_POLICY_LRU)
        return last;
    return prio_add(last, gdsf_weight(1 + acq, e->size));
}

TXC_SAFE static uint64_t prio_now(const txc_entry *e, int policy) {
    int64_t refs;
    return slot_sums(e, policy, &refs);
}

TXC_SAFE static int64_t refs_sum(const txc_entry *e) {
    uint64_t acq = 0, rel = 0;
    uint32_t n = entry_nslots(e);
    for (uint32_t s = 0; s < n; s++) {
        acq += e->slot[s].acq;
        rel += e->slot[s].rel;
    }
    return (int64_t)(acq - rel);
}

/* ------------------------------------------------------------------ heap */

TXC_SAFE static void heap_set(txc_cache *c, uint64_t i, struct txc_hnode n) {
    c->heap[i] = n;
    n.e->heap_pos = i;
}

TXC_SAFE static void sift_up(txc_cache *c, uint64_t i) {
    struct txc_hnode n = c->heap[i];
    while (i > 0) {
        uint64_t p = (i - 1) / 2;
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
        uint64_t l = 2 * i + 1;
        if (l >= len)
            break;
        uint64_t m = l;
        if (l + 1 < len && c->heap[l + 1].key < c->heap[l].key)
            m = l + 1;
        if (c->heap[m].key >= n.key)
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
    heap_set(c, i, c->heap[last]);
    if (i > 0 && c->heap[(i - 1) / 2].key > c->heap[i].key)
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

/* e is dead: no reference, not in the cache. */
TXC_SAFE static void bury(txc_entry *e, int tx, txc_entry **dead) {
#ifdef TXC_HAVE_GNU_TM
    if (tx) {
        _ITM_addUserCommitAction(txc_payload_free, TXC_ITM_NO_TRANSACTION_ID, e->pl);
        free(e); /* _ITM_free: after commit, once no attempt can read it */
        return;
    }
#else
    (void)tx;
#endif
    e->dead_next = *dead;
    *dead = e;
}

/* The cache (or the builder) lets go of e. */
TXC_SAFE static void drop(txc_entry *e, int tx, txc_entry **dead) {
    e->state = TXC_DROPPED;
    if (refs_sum(e) == 0)
        bury(e, tx, dead);
}

TXC_SAFE static void unlink_entry(txc_cache *c, txc_entry *e) {
    txc_entry **pp = bucket_of(c, e->hash);
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    heap_del(c, e->heap_pos);
    c->objects--;
    c->bytes -= e->size;
}

/* Evict the entry of lowest priority (the heap is not empty). */
TXC_SAFE static void evict_one(txc_cache *c, struct txc_cstats *st, int policy, int tx,
                               txc_entry **dead) {
    for (;;) {
        txc_entry *v = c->heap[0].e;
        int64_t refs;
        uint64_t p = slot_sums(v, policy, &refs);
        if (p > c->heap[0].key) {
            /* hit since it was keyed: re-key lazily and look again */
            c->heap[0].key = p;
            sift_down(c, 0);
            continue;
        }
        unlink_entry(c, v);
        if (policy == TXC_POLICY_GDSF && p > c->qclock)
            c->qclock = p; /* aging: later entries start from here */
        st->evictions++;
        v->state = TXC_DROPPED;
        if (refs == 0)
            bury(v, tx, dead);
        return;
    }
}

/* -------------------------------------------------------------- operations */

/* Hit path: in tx mode, reads: the bucket, the chain links, the slot's acq
 * and last (and the GDSF clock); writes: acq (and last when it moved). */
TXC_SAFE static txc_entry *core_lookup(txc_cache *c, uint64_t h, const void *key, size_t klen,
                                       unsigned s, uint64_t stamp, int policy) {
    txc_entry *e = *bucket_of(c, h);
    while (e && !entry_matches(e, h, key, klen))
        e = e->next;
    if (!e)
        return NULL;
    struct txc_slot *sl = &e->slot[s];
    sl->acq++;
    /* LRU: the request's stamp; GDSF: the queue clock (read, rarely written) */
    uint64_t last = policy == TXC_POLICY_LRU ? stamp : c->qclock;
    if (last > sl->last)
        sl->last = last;
    return e;
}

TXC_SAFE static int core_contains(txc_cache *c, uint64_t h, const void *key, size_t klen) {
    const txc_entry *e = *bucket_of(c, h);
    while (e && !entry_matches(e, h, key, klen))
        e = e->next;
    return e != NULL;
}

TXC_SAFE static void core_ref(txc_entry *e, unsigned s) { e->slot[s].acq++; }

TXC_SAFE static void core_release(txc_entry *e, unsigned s, int tx, txc_entry **dead) {
    e->slot[s].rel++;
    if (e->state == TXC_DROPPED && refs_sum(e) == 0)
        bury(e, tx, dead);
}

TXC_SAFE static void core_abandon(txc_entry *e, int tx, txc_entry **dead) {
    if (e->state == TXC_BUILDING)
        drop(e, tx, dead);
}

TXC_SAFE static int core_insert(txc_cache *c, txc_entry *e, unsigned s, uint64_t stamp, int policy,
                                int reject, int tx, txc_entry **dead) {
    struct txc_cstats *st = &c->st[s];
    if (reject) {
        st->rejected++;
        drop(e, tx, dead);
        return -ERANGE;
    }
    txc_entry **b = bucket_of(c, e->hash);
    for (txc_entry *o = *b; o; o = o->next)
        if (entry_matches(o, e->hash, e->key, e->klen)) {
            unlink_entry(c, o);
            st->replaced++;
            drop(o, tx, dead);
            break;
        }
    uint64_t mo = cfg_max_objects(c), mb = cfg_max_bytes(c);
    while (c->heap_len > 0 && ((mo && c->objects >= mo) || (mb && c->bytes + e->size > mb)))
        evict_one(c, st, policy, tx, dead);
    uint64_t born = policy == TXC_POLICY_LRU ? stamp : c->qclock;
    uint64_t key = policy == TXC_POLICY_LRU ? born : prio_add(born, gdsf_weight(1, e->size));
    if (heap_push(c, e, key) != 0) {
        drop(e, tx, dead);
        return -ENOMEM;
    }
    e->born = born;
    e->state = TXC_CACHED;
    e->next = *b;
    *b = e;
    c->objects++;
    c->bytes += e->size;
    st->inserts++;
    return 0;
}

TXC_SAFE static int core_remove(txc_cache *c, uint64_t h, const void *key, size_t klen, unsigned s,
                                int tx, txc_entry **dead) {
    txc_entry *e = *bucket_of(c, h);
    while (e && !entry_matches(e, h, key, klen))
        e = e->next;
    if (!e)
        return -ENOENT;
    unlink_entry(c, e);
    c->st[s].removals++;
    drop(e, tx, dead);
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

/* BODY runs as one critical section in the cache's sync mode. */
#ifdef TXC_HAVE_GNU_TM
#define TXC_TX_CASE(BODY)              \
    case TXC_SYNC_TX:                  \
        __transaction_atomic { BODY; } \
        break;
#else
#define TXC_TX_CASE(BODY)
#endif
#define TXC_SECTION(c, BODY)                \
    do {                                    \
        switch ((c)->cfg.sync) {            \
            TXC_TX_CASE(BODY)               \
        case TXC_SYNC_CX:                   \
            cx_optimistic(&(c)->cx);        \
            BODY;                           \
            cx_unlock(&(c)->cx);            \
            break;                          \
        default:                            \
            pthread_mutex_lock(&(c)->mu);   \
            BODY;                           \
            pthread_mutex_unlock(&(c)->mu); \
            break;                          \
        }                                   \
    } while (0)

/* Lock and cx modes: free what the section found dead, the lock released. */
static void free_dead(txc_entry *dead) {
    while (dead) {
        txc_entry *n = dead->dead_next;
        txc_entry_free_now(dead);
        dead = n;
    }
}

static int is_tx(const txc_cache *c) { return c->cfg.sync == TXC_SYNC_TX; }

txc_entry *txc_lookup(txc_cache *c, const void *key, size_t klen) {
    if (!c || !key)
        return NULL;
    uint64_t h = txc_hash(key, klen);
    unsigned s = txc_my_slot(c);
    int policy = c->cfg.policy;
    uint64_t stamp = policy == TXC_POLICY_LRU ? txc_stamp() : 0;
    txc_entry *e;
    TXC_SECTION(c, e = core_lookup(c, h, key, klen, s, stamp, policy));
    __atomic_fetch_add(e ? &c->st[s].hits : &c->st[s].misses, 1, __ATOMIC_RELAXED);
    return e;
}

int txc_contains(txc_cache *c, const void *key, size_t klen) {
    if (!c || !key)
        return 0;
    uint64_t h = txc_hash(key, klen);
    int r;
    TXC_SECTION(c, r = core_contains(c, h, key, klen));
    return r;
}

txc_entry *txc_entry_ref(txc_entry *e) {
    txc_cache *c = e->cache;
    unsigned s = txc_my_slot(c);
    TXC_SECTION(c, core_ref(e, s));
    return e;
}

void txc_entry_release(txc_entry *e) {
    if (!e)
        return;
    txc_cache *c = e->cache;
    unsigned s = txc_my_slot(c);
    int tx = is_tx(c);
    txc_entry *dead = NULL;
    TXC_SECTION(c, core_release(e, s, tx, &dead));
    free_dead(dead);
}

void txc_entry_abandon(txc_entry *e) {
    if (!e)
        return;
    txc_cache *c = e->cache;
    int tx = is_tx(c);
    txc_entry *dead = NULL;
    TXC_SECTION(c, core_abandon(e, tx, &dead));
    free_dead(dead);
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
    int policy = c->cfg.policy, tx = is_tx(c), r;
    uint64_t stamp = policy == TXC_POLICY_LRU ? txc_stamp() : 0;
    txc_entry *dead = NULL;
    TXC_SECTION(c, r = core_insert(c, e, s, stamp, policy, reject, tx, &dead));
    free_dead(dead);
    return r;
}

int txc_remove(txc_cache *c, const void *key, size_t klen) {
    if (!c || !key)
        return -EINVAL;
    uint64_t h = txc_hash(key, klen);
    unsigned s = txc_my_slot(c);
    int tx = is_tx(c), r;
    txc_entry *dead = NULL;
    TXC_SECTION(c, r = core_remove(c, h, key, klen, s, tx, &dead));
    free_dead(dead);
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
    TXC_SECTION(c, core_stats(c, &st));
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
            drop(e, 0, &dead);
            e = n;
        }
        c->table[b] = NULL;
    }
    c->heap_len = c->objects = c->bytes = 0;
    free_dead(dead);
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
        if (i > 0 && c->heap[(i - 1) / 2].key > n->key)
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
            if (refs_sum(e) < 0)
                return fail(err, errlen, "entry with %" PRId64 " references", refs_sum(e));
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
    case TXC_SYNC_CX:
        cx_exclusive(&c->cx);
        r = check_locked(c, err, errlen);
        cx_unlock(&c->cx);
        break;
    case TXC_SYNC_LOCK:
        pthread_mutex_lock(&c->mu);
        r = check_locked(c, err, errlen);
        pthread_mutex_unlock(&c->mu);
        break;
    default: /* tx: quiescent by contract, nothing runs concurrently */
        r = check_locked(c, err, errlen);
        break;
    }
    return r;
}
